//! Registration edges: kubeconfigs that skip TLS verification need an explicit opt-in (shown
//! and audited), `local` is the management cluster's name, and an empty allowlist is shown as
//! unrestricted; a kubeconfig kube cannot read is refused by position, its contents never shown.

mod support;

use reqwest::{Client, StatusCode};
use serde_json::{Value, json};
use support::server::{TestServer, kubeconfig};

const URL: &str = "https://staging.example.com:6443";

async fn send(request: reqwest::RequestBuilder) -> (StatusCode, Value) {
    let response = request.send().await.unwrap();
    let status = response.status();
    let text = response.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

fn insecure_kubeconfig() -> String {
    kubeconfig(URL, "tok-123").replace(
        "    certificate-authority-data: TUlTU0lOR19DQV9EQVRBX0ZPUl9URVNUUw==\n",
        "    insecure-skip-tls-verify: true\n",
    )
}

#[tokio::test]
async fn insecure_tls_needs_an_explicit_opt_in_shown_and_audited() {
    let server = TestServer::start(None).await;
    let token = server.token().await;
    let http = Client::new();
    let insecure = insecure_kubeconfig();
    assert!(insecure.contains("insecure-skip-tls-verify: true"));
    let post = |body: Value| {
        http.post(server.url("/api/v1/clusters"))
            .bearer_auth(&token)
            .json(&body)
    };
    let (status, body) = send(post(json!({"name": "staging", "server_url": URL,
                                         "kubeconfig": insecure})))
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let message = body["error"].as_str().unwrap();
    assert!(
        message.starts_with("kubeconfig.clusters[0].cluster.insecure-skip-tls-verify: "),
        "{message}"
    );
    // The connection test refuses it likewise.
    let (status, body) = send(
        http.post(server.url("/api/v1/clusters/test"))
            .bearer_auth(&token)
            .json(&json!({"server_url": URL, "kubeconfig": insecure})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");

    let (status, view) = send(post(json!({"name": "staging", "server_url": URL,
                                         "kubeconfig": insecure, "allow_insecure_tls": true})))
    .await;
    assert_eq!(status, StatusCode::CREATED, "{view}");
    assert_eq!(view["insecure_tls"], true, "{view}");
    let (_, got) = send(
        http.get(server.url("/api/v1/clusters/staging"))
            .bearer_auth(&token),
    )
    .await;
    assert_eq!(got["insecure_tls"], true, "{got}");

    // A secure cluster says so.
    let (status, view) = send(post(json!({"name": "prod", "server_url": URL,
                                         "kubeconfig": kubeconfig(URL, "t")})))
    .await;
    assert_eq!(status, StatusCode::CREATED, "{view}");
    assert_eq!(view["insecure_tls"], false, "{view}");

    // Updating an insecure cluster keeps its allowance unless withdrawn.
    let put = |body: Value| {
        http.put(server.url("/api/v1/clusters/staging"))
            .bearer_auth(&token)
            .json(&body)
    };
    let (status, view) = send(put(json!({"kubeconfig": insecure}))).await;
    assert_eq!(status, StatusCode::OK, "{view}");
    let (status, body) = send(put(json!({"allow_insecure_tls": false}))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let (status, view) = send(put(json!({"kubeconfig": kubeconfig(URL, "t"),
                                        "allow_insecure_tls": false})))
    .await;
    assert_eq!(status, StatusCode::OK, "{view}");
    assert_eq!(view["insecure_tls"], false, "{view}");

    let (_, log) = send(http.get(server.url("/api/v1/audit")).bearer_auth(&token)).await;
    let insecure_entries: Vec<&Value> = log["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"] == "cluster.insecure_tls")
        .collect();
    assert_eq!(insecure_entries.len(), 2, "{log}"); // register, then the first update
    assert_eq!(insecure_entries[0]["target"], "staging");
    let text = log.to_string();
    assert!(!text.contains("tok-123"), "credentials in the audit log");
}

#[tokio::test]
async fn local_is_reserved_and_an_empty_allowlist_is_shown_unrestricted() {
    let server = TestServer::start(None).await;
    let token = server.token().await;
    let http = Client::new();
    let post = |body: Value| {
        http.post(server.url("/api/v1/clusters"))
            .bearer_auth(&token)
            .json(&body)
    };
    let (status, body) = send(post(json!({"name": "local", "server_url": URL,
                                         "kubeconfig": kubeconfig(URL, "t")})))
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let message = body["error"].as_str().unwrap();
    assert!(
        message.starts_with("name: ") && message.contains("management cluster"),
        "{message}"
    );

    let (status, open) = send(post(json!({"name": "open", "server_url": URL,
                                         "kubeconfig": kubeconfig(URL, "t")})))
    .await;
    assert_eq!(status, StatusCode::CREATED, "{open}");
    assert_eq!(
        (&open["namespaces"], &open["unrestricted"]),
        (&json!([]), &json!(true))
    );
    let (status, empty) = send(post(json!({"name": "empty", "server_url": URL,
                                          "kubeconfig": kubeconfig(URL, "t"), "namespaces": []})))
    .await;
    assert_eq!(status, StatusCode::CREATED, "{empty}");
    assert_eq!(empty["unrestricted"], true, "{empty}");
    let (status, scoped) = send(post(json!({"name": "scoped", "server_url": URL,
                                           "kubeconfig": kubeconfig(URL, "t"),
                                           "namespaces": ["team-a"]})))
    .await;
    assert_eq!(status, StatusCode::CREATED, "{scoped}");
    assert_eq!(
        (&scoped["namespaces"], &scoped["unrestricted"]),
        (&json!(["team-a"]), &json!(false))
    );
    let (_, listed) = send(http.get(server.url("/api/v1/clusters")).bearer_auth(&token)).await;
    let flags: Vec<(&str, bool)> = listed["clusters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap(),
                c["unrestricted"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        flags,
        [("empty", true), ("open", true), ("scoped", false)],
        "{listed}"
    );
}

/// A kubeconfig wardn's own checks pass but kube cannot read (here a user entry without its
/// name) is refused at registration and by the connection test with a 400 that names the
/// kubeconfig and the position, never the lines there (the token), and nothing is stored.
#[tokio::test]
async fn a_kubeconfig_kube_cannot_read_is_refused_by_position_without_its_token() {
    let server = TestServer::start(None).await;
    let token = server.token().await;
    let http = Client::new();
    let unreadable = kubeconfig(URL, "tok-Qz7vK2").replace("- name: wardn\n  user:", "- user:");
    assert_ne!(unreadable, kubeconfig(URL, "tok-Qz7vK2"));
    for (path, body) in [
        (
            "/api/v1/clusters",
            json!({"name": "staging", "server_url": URL, "kubeconfig": unreadable}),
        ),
        (
            "/api/v1/clusters/test",
            json!({"server_url": URL, "kubeconfig": unreadable}),
        ),
    ] {
        let (status, answer) =
            send(http.post(server.url(path)).bearer_auth(&token).json(&body)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{path}: {answer}");
        let message = answer["error"].as_str().unwrap();
        assert!(
            message.starts_with("kubeconfig: is not a kubeconfig kube can read (line "),
            "{path}: {message}"
        );
        assert!(!answer.to_string().contains("Qz7vK2"), "{path}: {answer}");
    }
    let (status, list) = send(http.get(server.url("/api/v1/clusters")).bearer_auth(&token)).await;
    assert_eq!((status, list), (StatusCode::OK, json!({"clusters": []})));
}
