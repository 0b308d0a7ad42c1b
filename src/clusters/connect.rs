//! Connecting to a cluster from a kubeconfig, probing it (version, node count), and naming the
//! cause when that fails: DNS, connection refused, TLS, credentials, forbidden or timeout; and
//! the [`Connectivity`] a probe leaves a cluster in.

use std::time::Duration;

use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, ListParams};
use kube::config::{KubeConfigOptions, Kubeconfig, KubeconfigError};
use serde::{Deserialize, Serialize};

use super::proxy::ProxyError;
use super::throttle::ThrottleLayer;
use super::transport::{self, Keepalive, TransportError};

/// `connected` or `disconnected`, as the API spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Connectivity {
    /// The last probe succeeded.
    Connected,
    /// The last probe failed, or none has finished yet.
    Disconnected,
}

/// What a successful probe learned about a cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeReport {
    /// The API server's `gitVersion`, e.g. `v1.32.0`.
    pub version: String,
    /// How many Nodes the credentials can see.
    pub node_count: u64,
}

/// Why a connection or probe failed; the message is what the API's `error` field shows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConnectError {
    /// The kubeconfig could not be turned into a client configuration.
    #[error("kubeconfig: {0}")]
    Config(String),
    /// The host name does not resolve.
    #[error("DNS failure: cannot resolve the server's host name ({0})")]
    Dns(String),
    /// The proxy of the kubeconfig's `proxy-url` did not open a tunnel to the API server
    /// (unreachable, refused the credentials, or answered otherwise).
    #[error("proxy failure: no tunnel to the server through the kubeconfig's proxy-url ({0})")]
    Proxy(String),
    /// Nothing accepts connections at the address.
    #[error(
        "connection refused: nothing listens at the server address, or a firewall blocks it ({0})"
    )]
    Refused(String),
    /// The TLS handshake failed (unknown CA, wrong host name, not TLS).
    #[error("TLS error: {0}")]
    Tls(String),
    /// The API server rejected the credentials (401).
    #[error("credentials rejected or expired (401 Unauthorized): {0}")]
    Unauthorized(String),
    /// The credentials lack a permission the probe needs (403).
    #[error("forbidden (403): {0}")]
    Forbidden(String),
    /// No answer within the time limit.
    #[error("timeout: {0}")]
    Timeout(String),
    /// Anything else.
    #[error("request failed: {0}")]
    Other(String),
}

impl From<TransportError> for ConnectError {
    fn from(err: TransportError) -> ConnectError {
        match err {
            TransportError::Config(text) => ConnectError::Config(text),
            TransportError::Tls(text) => ConnectError::Tls(text),
        }
    }
}

/// Builds a client for the kubeconfig's current context (or its only context) with the given
/// connect timeout.
pub async fn client_from_kubeconfig(
    kubeconfig: &str,
    timeout: Duration,
) -> Result<kube::Client, ConnectError> {
    let config = config_from_kubeconfig(kubeconfig, timeout).await?;
    Ok(transport::client(&config, None, Keepalive::default())?)
}

/// Like [`client_from_kubeconfig`], with every request passing through `throttle` (the
/// destination cluster's rate limit, shared by all of its clients).
pub async fn throttled_client_from_kubeconfig(
    kubeconfig: &str,
    timeout: Duration,
    throttle: &ThrottleLayer,
) -> Result<kube::Client, ConnectError> {
    let config = config_from_kubeconfig(kubeconfig, timeout).await?;
    Ok(transport::client(
        &config,
        Some(throttle),
        Keepalive::default(),
    )?)
}

async fn config_from_kubeconfig(
    kubeconfig: &str,
    timeout: Duration,
) -> Result<kube::Config, ConnectError> {
    let parsed =
        Kubeconfig::from_yaml(kubeconfig).map_err(|err| ConnectError::Config(unreadable(&err)))?;
    let mut config = kube::Config::from_custom_kubeconfig(parsed, &KubeConfigOptions::default())
        .await
        .map_err(|err| ConnectError::Config(unreadable(&err)))?;
    // Only connecting is bounded here: the reconciler's watches keep reads open for minutes
    // (kube's default read timeout stays); probes bound the whole exchange themselves.
    config.connect_timeout = Some(timeout);
    no_hidden_retries(&mut config);
    Ok(config)
}

/// Why kube cannot read a kubeconfig, its parse errors by position only: the YAML parser's
/// message shows the lines around the fault, and serde's quote the offending value; either
/// may be a token or a proxy password, and this text reaches the API, statuses and logs.
pub fn unreadable(err: &KubeconfigError) -> String {
    match err {
        KubeconfigError::Parse(parse) => match parse.location() {
            Some(at) => format!(
                "is not a kubeconfig kube can read (line {}, column {})",
                at.line(),
                at.column()
            ),
            None => "is not a kubeconfig kube can read".to_string(),
        },
        other => other.to_string(),
    }
}

/// Turns off kube's built-in retry of 429/503/504 (up to 15 attempts with growing delays):
/// it would hold a worker on a sick cluster and hide the failure and its `Retry-After` from
/// the reconcile backoff, which retries per App without blocking others. Also sets the
/// User-Agent (see [`set_replica`]).
pub fn no_hidden_retries(config: &mut kube::Config) {
    config.default_retry = false;
    identify(config);
}

/// This process's replica id in a sharded fleet, named in every request's User-Agent.
static REPLICA: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Names this process as replica `id` in the User-Agent of every client built afterwards
/// (`wardn/VERSION (replica ID)`), so a cluster's audit log shows which replica wrote what.
/// Only the first call counts.
pub fn set_replica(id: &str) {
    let _ = REPLICA.set(id.to_string());
}

/// Sets the User-Agent of `config`: `wardn/VERSION`, with the replica id when sharded. The
/// program name stays `wardn`, which API servers take as the default field manager.
fn identify(config: &mut kube::Config) {
    let agent = match REPLICA.get() {
        Some(id) => format!("wardn/{} (replica {id})", env!("CARGO_PKG_VERSION")),
        None => format!("wardn/{}", env!("CARGO_PKG_VERSION")),
    };
    if let Ok(value) = http::HeaderValue::from_str(&agent) {
        config.headers.push((http::header::USER_AGENT, value));
    }
}

/// Asks the cluster for its version and its Nodes, giving up after `timeout`.
pub async fn probe(client: &kube::Client, timeout: Duration) -> Result<ProbeReport, ConnectError> {
    let work = async {
        let info = client.apiserver_version().await.map_err(|e| classify(&e))?;
        let nodes = Api::<Node>::all(client.clone())
            .list_metadata(&ListParams::default())
            .await
            .map_err(|e| classify(&e))?;
        Ok(ProbeReport {
            version: info.git_version,
            node_count: nodes.items.len() as u64,
        })
    };
    tokio::time::timeout(timeout, work)
        .await
        .map_err(|_| ConnectError::Timeout(format!("no answer within {timeout:?}")))?
}

/// Names the cause of a client error by its status code or its chain of sources.
pub fn classify(err: &kube::Error) -> ConnectError {
    if let kube::Error::Api(status) = err {
        return match status.code {
            401 => ConnectError::Unauthorized(status.message.clone()),
            403 => ConnectError::Forbidden(status.message.clone()),
            _ => ConnectError::Other(format!("{} ({})", status.message, status.code)),
        };
    }
    let mut chain = Vec::new();
    let mut refused = false;
    let mut timed_out = false;
    let mut proxy = false;
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(current) = source {
        if let Some(io) = current.downcast_ref::<std::io::Error>() {
            refused |= io.kind() == std::io::ErrorKind::ConnectionRefused;
            timed_out |= io.kind() == std::io::ErrorKind::TimedOut;
        }
        proxy |= current.is::<ProxyError>();
        chain.push(current.to_string());
        source = current.source();
    }
    let text = chain.join(": ");
    let lower = text.to_lowercase();
    if proxy {
        ConnectError::Proxy(text)
    } else if refused || lower.contains("connection refused") {
        ConnectError::Refused(text)
    } else if lower.contains("dns error")
        || lower.contains("failed to lookup address")
        || lower.contains("name or service not known")
    {
        ConnectError::Dns(text)
    } else if lower.contains("certificate")
        || lower.contains("tls")
        || lower.contains("handshake")
        || lower.contains("invalidcontenttype")
        || lower.contains("corrupt message")
    {
        ConnectError::Tls(text)
    } else if timed_out || lower.contains("timed out") || lower.contains("elapsed") {
        ConnectError::Timeout(text)
    } else {
        ConnectError::Other(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stored kubeconfig kube cannot read (one registered before registration asked kube,
    /// or edited where it is declared) is named by position, never by the lines around the
    /// fault nor the value serde found there: here a token and a proxy password.
    #[tokio::test]
    async fn unreadable_kubeconfigs_are_named_by_position_without_their_contents() {
        let cases = [
            // An entry without its name: the parser shows the lines around it.
            "clusters:\n- cluster:\n    server: https://10.0.0.1:6443\n    \
             proxy-url: http://ops:pw-Qz7vK2@proxy.corp:3128\n",
            // A value of the wrong type: serde quotes it.
            "clusters: []\nusers: tok-Qz7vK2\n",
            "users:\n- name: u\n  user: {token: [tok-Qz7vK2]}\n",
        ];
        for text in cases {
            let err = client_from_kubeconfig(text, Duration::from_secs(1))
                .await
                .err()
                .unwrap_or_else(|| panic!("{text:?} built a client"));
            let shown = err.to_string();
            assert!(!shown.contains("Qz7vK2"), "{shown}");
            assert!(
                shown.starts_with("kubeconfig: is not a kubeconfig kube can read (line "),
                "{shown}"
            );
        }
    }
}
