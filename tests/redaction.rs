//! No secret reaches `Debug` output. Every request body, credential and kubeconfig entry that
//! carries a password, token, kubeconfig or webhook secret prints `***` in its place (and
//! still shows the fields that help a reader: names, URLs, whether a secret is set); the
//! daemon's settings and `wardn serve`'s arguments, which hold the database URL and the
//! shared tokens, have no `Debug` at all. Each body is built the way a hostile or careless
//! client would send it: through its JSON deserializer, secrets in every field that takes one.

use serde::de::DeserializeOwned;

use wardn::clusters::bootstrap::Bootstrapped;
use wardn::clusters::kubeconfig::Kubeconfig;
use wardn::clusters::registry::{RegisterRequest, ResolvedCluster, TestRequest};
use wardn::sources::credentials::Credentials;
use wardn::sources::webhook::WebhookSecrets;

/// A value no legitimate field would hold, so finding it in output can only be a leak.
const SECRET: &str = "s3cr3t-Qz7vK2";

/// `T` parsed from `json`, every `SECRET` placeholder in it filled in.
fn body<T: DeserializeOwned>(json: &str) -> T {
    let json = json.replace("SECRET", SECRET);
    serde_json::from_str(&json).unwrap_or_else(|e| panic!("{json}: {e}"))
}

/// Asserts `value`'s `Debug` output, plain and pretty, hides the secret and marks where it
/// was, and that the plain one shows each of `shown`.
fn assert_hidden(value: &impl std::fmt::Debug, shown: &[&str]) {
    for text in [format!("{value:?}"), format!("{value:#?}")] {
        assert!(!text.contains(SECRET), "a secret in Debug output: {text}");
        assert!(text.contains("***"), "no *** where the secret was: {text}");
    }
    let text = format!("{value:?}");
    for expected in shown {
        assert!(text.contains(expected), "{expected:?} missing from {text}");
    }
}

#[test]
fn login_password_and_user_bodies_hide_passwords() {
    let login: wardn::server::auth::LoginRequest =
        body(r#"{"username": "alice", "password": "SECRET"}"#);
    assert_hidden(&login, &["alice"]);
    let change: wardn::server::account::PasswordChange =
        body(r#"{"current_password": "SECRET", "new_password": "SECRET-new"}"#);
    assert_hidden(&change, &["current_password", "new_password"]);
    let user: wardn::server::users::CreateUser = body(
        r#"{"username": "bob", "password": "SECRET", "role": "approver",
            "clusters": ["prod"], "email": "bob@example.com"}"#,
    );
    assert_hidden(&user, &["bob", "approver", "prod", "bob@example.com"]);
}

#[test]
fn cluster_bodies_hide_the_kubeconfig() {
    let register: RegisterRequest = body(
        r#"{"name": "prod", "server_url": "https://10.0.0.1:6443",
            "kubeconfig": "users: [{name: u, user: {token: SECRET}}]", "namespaces": ["team-a"]}"#,
    );
    assert_hidden(&register, &["prod", "https://10.0.0.1:6443", "team-a"]);
    let update: wardn::clusters::registry::UpdateRequest =
        body(r#"{"kubeconfig": "token: SECRET", "namespaces": ["team-b"]}"#);
    assert_hidden(&update, &["Some(***)", "team-b"]);
    let unchanged: wardn::clusters::registry::UpdateRequest = body(r#"{"namespaces": []}"#);
    assert!(format!("{unchanged:?}").contains("kubeconfig: None"));
    let test: TestRequest =
        body(r#"{"server_url": "https://10.0.0.1:6443", "kubeconfig": "token: SECRET"}"#);
    assert_hidden(&test, &["https://10.0.0.1:6443"]);
    let resolved: ResolvedCluster = body(
        r#"{"name": "prod", "server_url": "https://10.0.0.1:6443",
            "kubeconfig": "token: SECRET", "namespaces": ["team-a"]}"#,
    );
    assert_hidden(&resolved, &["prod", "team-a"]);
    let bootstrapped = Bootstrapped {
        token: SECRET.to_string(),
        ca_data: "LS0tLS1CRUdJTg==".to_string(),
    };
    assert_hidden(&bootstrapped, &["LS0tLS1CRUdJTg=="]);
}

#[test]
fn kubeconfig_entries_hide_tokens_and_proxy_passwords() {
    let text = format!(
        "clusters:\n- name: c\n  cluster:\n    server: https://10.0.0.1:6443\n    \
         proxy-url: http://ops:{SECRET}@proxy.corp:3128\n\
         users:\n- name: u\n  user:\n    token: {SECRET}\n    \
         client-certificate-data: Q0VSVA==\n"
    );
    let parsed: Kubeconfig = serde_saphyr::from_str(&text).unwrap();
    assert_eq!(parsed.users[0].user.token.as_deref(), Some(SECRET));
    assert_hidden(
        &parsed,
        &["https://10.0.0.1:6443", "Q0VSVA==", "proxy_url: Some(***)"],
    );
}

#[test]
fn repository_credentials_and_bodies_hide_secrets() {
    let add: wardn::sources::repositories::AddRequest = body(
        r#"{"url": "https://git.example.com/a.git", "username": "ci", "password": "SECRET",
            "token": "SECRET", "webhook_secret": "SECRET"}"#,
    );
    assert_hidden(&add, &["ci"]);
    let rotate: wardn::sources::repositories::UpdateRequest =
        body(r#"{"password": "SECRET", "webhook_secret": "SECRET"}"#);
    assert_hidden(&rotate, &["token: None"]);
    let basic = Credentials::Basic {
        username: "ci".to_string(),
        password: SECRET.to_string(),
    };
    assert_hidden(&basic, &["ci"]);
    assert_hidden(
        &Credentials::Bearer {
            token: SECRET.to_string(),
        },
        &["Bearer"],
    );
    assert_hidden(&WebhookSecrets::new(Some(SECRET)), &["server: Some(***)"]);
}

#[test]
fn client_credentials_hide_the_token() {
    let saved: wardn::cli::client::SavedCredentials =
        body(r#"{"server": "https://wardn.example.com", "token": "SECRET"}"#);
    assert_hidden(&saved, &["https://wardn.example.com"]);
    let args = wardn::cli::client::ConnectionArgs {
        server: Some("https://wardn.example.com".to_string()),
        token: Some(SECRET.to_string()),
    };
    assert_hidden(&args, &["https://wardn.example.com", "Some(***)"]);
}

/// Whether a concrete type implements `Debug`, decided at compile time: method lookup takes
/// the by-value candidate (`Debug` types) before the auto-referenced one (every type).
macro_rules! implements_debug {
    ($type:ty) => {{
        struct Probe<T>(std::marker::PhantomData<T>);
        // Each expansion answers through one of the two traits only.
        #[allow(dead_code)]
        trait WithDebug {
            fn implements_debug(&self) -> bool {
                true
            }
        }
        impl<T: std::fmt::Debug> WithDebug for Probe<T> {}
        #[allow(dead_code)]
        trait WithoutDebug {
            fn implements_debug(&self) -> bool {
                false
            }
        }
        impl<T> WithoutDebug for &Probe<T> {}
        (&Probe::<$type>(std::marker::PhantomData)).implements_debug()
    }};
}

#[test]
fn settings_that_hold_the_database_url_and_tokens_have_no_debug() {
    // The probe itself tells the two apart.
    assert!(implements_debug!(RegisterRequest));
    struct Opaque;
    assert!(!implements_debug!(Opaque));
    // `wardn serve`'s arguments (`--database-url`), and with them the command line's parsed
    // commands; the daemon's and the operator's settings (admin password, internal token).
    assert!(!implements_debug!(wardn::cli::serve::ServeArgs));
    assert!(!implements_debug!(wardn::daemon::ServeOptions));
    assert!(!implements_debug!(wardn::daemon::operator::OperatorOptions));
}
