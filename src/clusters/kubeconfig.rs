//! Validation of kubeconfigs submitted for registration. Each rejection names the field and
//! the reason, and never quotes the kubeconfig's contents (they may hold credentials).

use http::Uri;
use serde::Deserialize;
use serde::de::IgnoredAny;

use crate::redact::hidden;

/// Largest kubeconfig accepted, in bytes.
pub const MAX_KUBECONFIG_BYTES: usize = 256 * 1024;
/// Names that would collide with fixed routes under `/api/v1/clusters/`.
pub const RESERVED_NAMES: &[&str] = &["test", "reseal"];
/// The name Apps use for the management cluster (the one wardn runs in); never registrable.
pub const MANAGEMENT_CLUSTER: &str = "local";

/// A rejected registration field: rendered as `FIELD: REASON` and answered with 400.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct ValidationError {
    /// The offending field, e.g. `kubeconfig` or `namespaces[1]`.
    pub field: String,
    /// Why it was rejected.
    pub reason: String,
}

fn invalid(field: impl Into<String>, reason: impl Into<String>) -> ValidationError {
    ValidationError {
        field: field.into(),
        reason: reason.into(),
    }
}

/// The parts of a kubeconfig wardn inspects; everything else is passed through untouched.
#[derive(Debug, Deserialize)]
pub struct Kubeconfig {
    /// Named clusters.
    #[serde(default)]
    pub clusters: Vec<NamedCluster>,
    /// Named users (credentials).
    #[serde(default)]
    pub users: Vec<NamedUser>,
}

/// A `clusters[]` entry.
#[derive(Debug, Deserialize)]
pub struct NamedCluster {
    /// Entry name.
    #[serde(default)]
    pub name: String,
    /// Connection details.
    pub cluster: ClusterEntry,
}

/// A cluster's connection details.
#[derive(Deserialize)]
pub struct ClusterEntry {
    /// API server URL.
    #[serde(default)]
    pub server: String,
    /// A CA file path on the machine reading the kubeconfig (rejected).
    #[serde(rename = "certificate-authority")]
    pub certificate_authority: Option<IgnoredAny>,
    /// Skips verifying the server's certificate (refused unless the registration allows it).
    #[serde(rename = "insecure-skip-tls-verify", default)]
    pub insecure_skip_tls_verify: bool,
    /// The proxy the cluster is reached through (`http://` or `socks5://`; see
    /// [`super::proxy`]).
    #[serde(rename = "proxy-url")]
    pub proxy_url: Option<String>,
}

impl std::fmt::Debug for ClusterEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterEntry")
            .field("server", &self.server)
            .field("certificate_authority", &self.certificate_authority)
            .field("insecure_skip_tls_verify", &self.insecure_skip_tls_verify)
            // A proxy URL may carry the proxy's user and password.
            .field("proxy_url", &hidden(&self.proxy_url))
            .finish()
    }
}

impl Kubeconfig {
    /// The index of the first cluster entry that skips TLS verification, if any.
    pub fn insecure_cluster(&self) -> Option<usize> {
        self.clusters
            .iter()
            .position(|named| named.cluster.insecure_skip_tls_verify)
    }
}

/// Whether a stored (already validated) kubeconfig skips TLS verification; unparseable text
/// counts as not skipping it.
pub fn skips_tls_verify(kubeconfig: &str) -> bool {
    serde_saphyr::from_str::<Kubeconfig>(kubeconfig)
        .ok()
        .and_then(|parsed| parsed.insecure_cluster())
        .is_some()
}

/// Refuses a kubeconfig that skips TLS verification unless `allow_insecure_tls` (the
/// registration's explicit opt-in); returns whether it skips it.
pub fn check_tls(parsed: &Kubeconfig, allow_insecure_tls: bool) -> Result<bool, ValidationError> {
    match parsed.insecure_cluster() {
        None => Ok(false),
        Some(_) if allow_insecure_tls => Ok(true),
        Some(index) => Err(invalid(
            format!("kubeconfig.clusters[{index}].cluster.insecure-skip-tls-verify"),
            "skips verifying the server certificate; embed certificate-authority-data, or \
             register with \"allow_insecure_tls\": true to accept this",
        )),
    }
}

/// A `users[]` entry.
#[derive(Debug, Deserialize)]
pub struct NamedUser {
    /// Entry name.
    #[serde(default)]
    pub name: String,
    /// Credentials.
    pub user: UserEntry,
}

/// Credentials of a user entry.
#[derive(Default, Deserialize)]
pub struct UserEntry {
    /// An exec credential plugin (rejected: the server never runs commands from user input).
    pub exec: Option<IgnoredAny>,
    /// An auth-provider plugin (rejected likewise).
    #[serde(rename = "auth-provider")]
    pub auth_provider: Option<IgnoredAny>,
    /// A token file path on the server (rejected: it would read server files).
    #[serde(rename = "tokenFile")]
    pub token_file: Option<IgnoredAny>,
    /// A client certificate file path on the server (rejected).
    #[serde(rename = "client-certificate")]
    pub client_certificate: Option<IgnoredAny>,
    /// A client key file path on the server (rejected).
    #[serde(rename = "client-key")]
    pub client_key: Option<IgnoredAny>,
    /// Base64 PEM client certificate (its notAfter is the credential expiry).
    #[serde(rename = "client-certificate-data")]
    pub client_certificate_data: Option<String>,
    /// Bearer token (its JWT `exp`, if any, is the credential expiry).
    pub token: Option<String>,
}

impl std::fmt::Debug for UserEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UserEntry")
            .field("exec", &self.exec)
            .field("auth_provider", &self.auth_provider)
            .field("token_file", &self.token_file)
            .field("client_certificate", &self.client_certificate)
            .field("client_key", &self.client_key)
            .field("client_certificate_data", &self.client_certificate_data)
            .field("token", &hidden(&self.token))
            .finish()
    }
}

/// Checks a cluster name or namespace is an RFC 1123 DNS label.
pub fn check_dns_label(field: &str, value: &str) -> Result<(), ValidationError> {
    if crate::object::is_dns_label(value) {
        Ok(())
    } else {
        Err(invalid(
            field,
            "must be a DNS label: 1-63 lowercase letters, digits or '-', starting and ending \
             with a letter or digit",
        ))
    }
}

/// Checks a cluster name: a DNS label that is not reserved (route names, and
/// [`MANAGEMENT_CLUSTER`]).
pub fn check_name(name: &str) -> Result<(), ValidationError> {
    check_dns_label("name", name)?;
    if name == MANAGEMENT_CLUSTER {
        return Err(invalid(
            "name",
            "\"local\" is reserved for the management cluster (the one wardn runs in)",
        ));
    }
    if RESERVED_NAMES.contains(&name) {
        return Err(invalid("name", "is reserved for an API route"));
    }
    Ok(())
}

/// Checks every namespace of an allowlist is a DNS label.
pub fn check_namespaces(namespaces: &[String]) -> Result<(), ValidationError> {
    for (index, namespace) in namespaces.iter().enumerate() {
        check_dns_label(&format!("namespaces[{index}]"), namespace)?;
    }
    Ok(())
}

/// Checks `server_url` is an absolute `https://` URL with a host.
pub fn check_server_url(server_url: &str) -> Result<(), ValidationError> {
    let uri: Uri = server_url
        .parse()
        .map_err(|_| invalid("server_url", "is not a valid URL"))?;
    if uri.scheme_str() != Some("https") {
        return Err(invalid("server_url", "must use https://"));
    }
    if uri.host().is_none_or(str::is_empty) {
        return Err(invalid("server_url", "has no host"));
    }
    Ok(())
}

fn same_server(a: &str, b: &str) -> bool {
    a.trim_end_matches('/') == b.trim_end_matches('/')
}

/// Parses and checks a kubeconfig registered for `server_url`: not empty or oversized, valid
/// YAML, at least one cluster, every cluster's server equal to `server_url`, any `proxy-url` one
/// wardn tunnels through, and no user with an exec or auth-provider plugin or credentials read
/// from server-side files.
pub fn validate(kubeconfig: &str, server_url: &str) -> Result<Kubeconfig, ValidationError> {
    if kubeconfig.len() > MAX_KUBECONFIG_BYTES {
        return Err(invalid(
            "kubeconfig",
            format!("is larger than {MAX_KUBECONFIG_BYTES} bytes"),
        ));
    }
    if kubeconfig.trim().is_empty() {
        return Err(invalid("kubeconfig", "is empty"));
    }
    let parsed: Kubeconfig = serde_saphyr::from_str(kubeconfig)
        .map_err(|_| invalid("kubeconfig", "is not a parseable kubeconfig YAML document"))?;
    // Refused now what every connection would refuse later (an entry without its name, say).
    kube::config::Kubeconfig::from_yaml(kubeconfig)
        .map_err(|err| invalid("kubeconfig", super::connect::unreadable(&err)))?;
    if parsed.clusters.is_empty() {
        return Err(invalid("kubeconfig", "has no clusters"));
    }
    for (index, named) in parsed.clusters.iter().enumerate() {
        let field = format!("kubeconfig.clusters[{index}].cluster");
        if !same_server(&named.cluster.server, server_url) {
            return Err(invalid(
                format!("{field}.server"),
                "differs from server_url",
            ));
        }
        if let Some(proxy) = &named.cluster.proxy_url {
            let field = format!("{field}.proxy-url");
            let url: http::Uri = proxy.parse().map_err(|_| invalid(&field, "is not a URL"))?;
            // Refused here for what the connections would refuse, with the field named.
            let tcp = hyper_util::client::legacy::connect::HttpConnector::new();
            if let Err(refused) = super::proxy::Dial::new(tcp, Some(&url)) {
                return Err(invalid(field, refused.reason));
            }
        }
        if named.cluster.certificate_authority.is_some() {
            return Err(invalid(
                format!("{field}.certificate-authority"),
                "reads a file on the server; embed certificate-authority-data instead",
            ));
        }
    }
    for (index, named) in parsed.users.iter().enumerate() {
        let field = format!("kubeconfig.users[{index}].user");
        let user = &named.user;
        if user.exec.is_some() {
            return Err(invalid(
                format!("{field}.exec"),
                "exec credential plugins are not allowed",
            ));
        }
        if user.auth_provider.is_some() {
            return Err(invalid(
                format!("{field}.auth-provider"),
                "auth-provider plugins are not allowed",
            ));
        }
        for (present, key, data) in [
            (user.token_file.is_some(), "tokenFile", "token"),
            (
                user.client_certificate.is_some(),
                "client-certificate",
                "client-certificate-data",
            ),
            (user.client_key.is_some(), "client-key", "client-key-data"),
        ] {
            if present {
                return Err(invalid(
                    format!("{field}.{key}"),
                    format!("reads a file on the server; embed {data} instead"),
                ));
            }
        }
    }
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    const URL: &str = "https://staging.example.com:6443";

    fn kubeconfig(server: &str, user: &str) -> String {
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {server}\n\
             users:\n- name: u\n  user:\n{user}\ncontexts:\n- name: x\n  context: {{cluster: c, user: u}}\n\
             current-context: x\n"
        )
    }

    fn field_of(result: Result<Kubeconfig, ValidationError>) -> String {
        result.unwrap_err().field
    }

    #[test]
    fn accepts_a_token_kubeconfig() {
        let parsed = validate(&kubeconfig(URL, "    token: abc"), URL).unwrap();
        assert_eq!(parsed.users[0].user.token.as_deref(), Some("abc"));
        validate(&kubeconfig(&format!("{URL}/"), "    token: abc"), URL).unwrap();
    }

    #[test]
    fn rejects_plugins_and_server_files_naming_the_field() {
        let exec =
            "    exec:\n      command: /bin/sh\n      apiVersion: client.authentication.k8s.io/v1";
        assert_eq!(
            field_of(validate(&kubeconfig(URL, exec), URL)),
            "kubeconfig.users[0].user.exec"
        );
        let provider = "    auth-provider:\n      name: gcp";
        assert_eq!(
            field_of(validate(&kubeconfig(URL, provider), URL)),
            "kubeconfig.users[0].user.auth-provider"
        );
        assert_eq!(
            field_of(validate(
                &kubeconfig(URL, "    tokenFile: /etc/shadow"),
                URL
            )),
            "kubeconfig.users[0].user.tokenFile"
        );
        assert_eq!(
            field_of(validate(&kubeconfig(URL, "    client-key: /root/key"), URL)),
            "kubeconfig.users[0].user.client-key"
        );
    }

    #[test]
    fn takes_http_and_socks5_proxies_and_refuses_others_naming_the_field_never_the_password() {
        let with_proxy = |proxy: &str| {
            kubeconfig(URL, "    token: a").replacen(
                &format!("    server: {URL}\n"),
                &format!("    server: {URL}\n    proxy-url: {proxy}\n"),
                1,
            )
        };
        assert!(validate(&with_proxy("http://ops:secret@proxy.corp:3128"), URL).is_ok());
        assert!(validate(&with_proxy("socks5://ops:secret@proxy.corp:1080"), URL).is_ok());
        for (proxy, reason) in [
            (
                "socks4://ops:secret@proxy.corp:1080",
                "socks4:// proxies are not supported",
            ),
            (
                "https://ops:secret@proxy.corp:3128",
                "https:// proxies are not supported",
            ),
            (
                "proxy.corp:3128",
                "must be an absolute http:// or socks5:// URL",
            ),
            ("not a url", "is not a URL"),
            (
                "socks5://ops:secret%FF@proxy.corp:1080",
                "its user information is not UTF-8",
            ),
        ] {
            let err = validate(&with_proxy(proxy), URL).unwrap_err();
            assert_eq!(err.field, "kubeconfig.clusters[0].cluster.proxy-url");
            assert!(err.reason.starts_with(reason), "{proxy}: {err}");
            assert!(!err.to_string().contains("secret"), "{err}");
        }
    }

    #[test]
    fn rejects_mismatched_empty_unparseable_and_oversized() {
        let other = kubeconfig("https://prod.example.com:6443", "    token: a");
        let err = validate(&other, URL).unwrap_err();
        assert_eq!(err.field, "kubeconfig.clusters[0].cluster.server");
        assert_eq!(
            err.to_string(),
            "kubeconfig.clusters[0].cluster.server: differs from server_url"
        );
        assert_eq!(field_of(validate("", URL)), "kubeconfig");
        assert_eq!(field_of(validate("  \n", URL)), "kubeconfig");
        let bad = validate("clusters: [unclosed\n  token: s3cr3t", URL).unwrap_err();
        assert_eq!(bad.field, "kubeconfig");
        assert!(!bad.to_string().contains("s3cr3t"), "{bad}");
        assert_eq!(
            field_of(validate("apiVersion: v1\nkind: Config\n", URL)),
            "kubeconfig"
        );
        let huge = "#".repeat(MAX_KUBECONFIG_BYTES + 1);
        assert!(
            validate(&huge, URL)
                .unwrap_err()
                .reason
                .contains("larger than")
        );
    }

    #[test]
    fn checks_urls_names_and_namespaces() {
        check_server_url(URL).unwrap();
        assert_eq!(
            check_server_url("http://x:6443").unwrap_err().field,
            "server_url"
        );
        assert_eq!(
            check_server_url("staging:6443").unwrap_err().field,
            "server_url"
        );
        assert_eq!(
            check_server_url("not a url").unwrap_err().field,
            "server_url"
        );
        check_name("staging-2").unwrap();
        for bad in [
            "",
            "Staging",
            "-a",
            "a-",
            "a_b",
            &"a".repeat(64),
            "test",
            "local",
        ] {
            assert_eq!(check_name(bad).unwrap_err().field, "name", "{bad:?}");
        }
        check_namespaces(&["staging".into(), "default".into()]).unwrap();
        assert_eq!(
            check_namespaces(&["ok".into(), "Not_OK".into()])
                .unwrap_err()
                .field,
            "namespaces[1]"
        );
    }

    #[test]
    fn insecure_tls_is_refused_naming_the_field_unless_allowed() {
        let text = format!(
            "clusters:\n- name: a\n  cluster:\n    server: {URL}\n\
             - name: b\n  cluster:\n    server: {URL}\n    insecure-skip-tls-verify: true\n"
        );
        let parsed = validate(&text, URL).unwrap();
        let err = check_tls(&parsed, false).unwrap_err();
        assert_eq!(
            err.field,
            "kubeconfig.clusters[1].cluster.insecure-skip-tls-verify"
        );
        assert!(err.to_string().contains("allow_insecure_tls"), "{err}");
        assert_eq!(check_tls(&parsed, true), Ok(true));
        let secure = validate(&kubeconfig(URL, "    token: abc"), URL).unwrap();
        assert_eq!(check_tls(&secure, false), Ok(false));
        assert_eq!(check_tls(&secure, true), Ok(false));
        let explicit_false = text.replace("verify: true", "verify: false");
        assert_eq!(
            check_tls(&validate(&explicit_false, URL).unwrap(), false),
            Ok(false)
        );
    }

    /// 10,000 careless or hostile edits of a kubeconfig that carries a token and a proxy
    /// password: validation never panics, every refusal names a field of the kubeconfig, and
    /// no refusal quotes a secret. Both answers must occur, so the edits reach past the parser.
    /// Each accepted one then goes where a registration sends it, the client builder of the
    /// connection test and the reconciler: it builds a client or fails with an error, never
    /// a panic, and that error quotes no secret either.
    #[tokio::test]
    async fn mutated_kubeconfigs_are_refused_by_field_and_never_quoted() {
        use crate::test_rng::Rng;
        const SECRET: &str = "Qz7vK2";
        // As the binary does at start (both ring and aws-lc are linked in).
        let _ = rustls::crypto::ring::default_provider().install_default();
        let base = kubeconfig(URL, &format!("    token: tok-{SECRET}")).replace(
            &format!("server: {URL}\n"),
            &format!("server: {URL}\n    proxy-url: http://ops:pw-{SECRET}@proxy.corp:3128\n"),
        );
        validate(&base, URL).unwrap();
        let pieces = [
            ":",
            " ",
            "\n",
            "\n- ",
            "-",
            "[",
            "]",
            "{",
            "}",
            "\"",
            "'",
            "&a ",
            "*a",
            "!!str ",
            "%",
            "@",
            "#",
            "\t",
            "\u{0}",
            "é",
            "//",
            "socks5://",
            "https://",
            "socks4://",
            "exec: {}",
            "tokenFile: x",
            "proxy-url: ",
            "~",
            "null",
            "0x",
            "\\",
            "%zz",
            ":0",
            "[::1]",
            "auth-provider: {}",
            "certificate-authority: f",
            "<<: *a",
        ];
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let (mut accepted, mut refused, mut built) = (0, 0, 0);
        for step in 0..10_000 {
            let mut text = base.clone();
            rng.mutate(&mut text, &pieces);
            match validate(&text, URL) {
                // A client's TLS set-up costs milliseconds: every eighth accepted one is built.
                Ok(_) if accepted % 8 != 0 => accepted += 1,
                Ok(_) => {
                    accepted += 1;
                    let timeout = std::time::Duration::from_secs(1);
                    match super::super::connect::client_from_kubeconfig(&text, timeout).await {
                        Ok(_) => built += 1,
                        Err(err) => {
                            assert!(!err.to_string().contains(SECRET), "step {step}: {err}")
                        }
                    }
                }
                Err(err) => {
                    refused += 1;
                    assert!(
                        err.field.starts_with("kubeconfig"),
                        "step {step}: {err} for {text:?}"
                    );
                    assert!(!err.to_string().contains(SECRET), "step {step}: {err}");
                }
            }
        }
        assert!(
            accepted > 400 && refused > 400 && built > 50,
            "{accepted} accepted ({built} built a client), {refused} refused"
        );
    }
}
