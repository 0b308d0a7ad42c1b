//! An operator-role process's link to its wardn server: the server's base URL, the internal
//! token, and one HTTP client that also trusts the CA certificates of `--server-ca-file` (a
//! server serving `https://` under a private CA). Every request an operator sends to the
//! server's `/internal` routes goes through it: cluster kubeconfigs, repository credentials and
//! the recorded pushes, and the Apps, statuses and operation outcomes it reports. Kubeconfigs
//! and credentials travel in the clear inside these answers, so a server outside the
//! operator's own network should be reached over `https://`.

use std::fmt;
use std::time::Duration;

/// Why a link could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum ServerLinkError {
    /// The server URL is not `http://` or `https://`.
    #[error("--server {0:?}: expected an http:// or https:// URL of the wardn server")]
    Url(String),
    /// The CA bundle holds no usable certificate.
    #[error("--server-ca-file: {0}")]
    Ca(String),
}

/// The server, the token and the client. Not `Debug`-printing the token.
#[derive(Clone)]
pub struct ServerLink {
    http: reqwest::Client,
    /// The server's base URL, without a trailing `/`.
    base: String,
    internal_token: String,
    timeout: Duration,
}

impl fmt::Debug for ServerLink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerLink")
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

impl ServerLink {
    /// A link to the server at `base` (e.g. `https://wardn.wardn.svc`) with `internal_token`,
    /// trusting the certificates of the PEM bundle `ca_pem` besides the system's; each request
    /// gives up after `timeout`.
    pub fn new(
        base: &str,
        internal_token: &str,
        ca_pem: Option<&[u8]>,
        timeout: Duration,
    ) -> Result<ServerLink, ServerLinkError> {
        let base = base.trim().trim_end_matches('/');
        let scheme = base.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
        if !matches!(scheme.as_deref(), Some("http" | "https")) {
            return Err(ServerLinkError::Url(base.to_string()));
        }
        let mut builder = reqwest::Client::builder();
        if let Some(pem) = ca_pem {
            let certs = reqwest::Certificate::from_pem_bundle(pem)
                .map_err(|e| ServerLinkError::Ca(e.to_string()))?;
            if certs.is_empty() {
                return Err(ServerLinkError::Ca("no PEM certificate in it".into()));
            }
            builder = builder.tls_certs_merge(certs);
        }
        let http = builder
            .build()
            .map_err(|e| ServerLinkError::Ca(e.to_string()))?;
        Ok(ServerLink {
            http,
            base: base.to_string(),
            internal_token: internal_token.to_string(),
            timeout,
        })
    }

    /// The server's base URL (no trailing `/`), for messages.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// Sends a GET of `path` (starting with `/`) to the server, with the internal token and
    /// the link's timeout; any answer is returned, whatever its status.
    pub async fn get(&self, path: &str) -> Result<reqwest::Response, SendError> {
        self.request(reqwest::Method::GET, path)
            .send()
            .await
            .map_err(|err| SendError::of(&err))
    }

    /// Sends `method` of `path`, with `body` as JSON when given, and reads the JSON answer as
    /// `A` (a 204 reads as `null`; [`serde::de::IgnoredAny`] reads nothing): every report an
    /// operator sends and every answer it reads but the two whose statuses mean something
    /// (kubeconfigs, credentials: [`ServerLink::get`]). An answer other than 2xx is an error
    /// naming the path and the status.
    pub async fn exchange<B, A>(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&B>,
    ) -> Result<A, ExchangeError>
    where
        B: serde::Serialize + ?Sized,
        A: serde::de::DeserializeOwned,
    {
        let mut request = self.request(method, path);
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = request
            .send()
            .await
            .map_err(|err| ExchangeError::NoAnswer(SendError::of(&err)))?;
        let unreadable = |reason: String| ExchangeError::Unreadable {
            path: path.to_string(),
            reason,
        };
        match response.status() {
            reqwest::StatusCode::NO_CONTENT => {
                serde_json::from_str("null").map_err(|e| unreadable(e.to_string()))
            }
            status if status.is_success() => {
                response.json().await.map_err(|e| unreadable(e.to_string()))
            }
            status => Err(ExchangeError::Status {
                path: path.to_string(),
                status,
            }),
        }
    }

    /// [`ServerLink::exchange`] of a `GET` of `path`.
    pub async fn get_json<A: serde::de::DeserializeOwned>(
        &self,
        path: &str,
    ) -> Result<A, ExchangeError> {
        self.exchange(reqwest::Method::GET, path, None::<&()>).await
    }

    /// A request of `method` on `path` with the token and the timeout.
    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.http
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(&self.internal_token)
            .timeout(self.timeout)
    }
}

/// Why an [`ServerLink::exchange`] failed.
#[derive(Debug, thiserror::Error)]
pub enum ExchangeError {
    /// No answer came.
    #[error("the server could not be asked: {0}")]
    NoAnswer(SendError),
    /// The server answered with a status other than 2xx.
    #[error("{path}: server answered {status}")]
    Status {
        /// The path asked for.
        path: String,
        /// The status.
        status: reqwest::StatusCode,
    },
    /// The answer was not the JSON expected.
    #[error("{path}: unreadable answer from the server: {reason}")]
    Unreadable {
        /// The path asked for.
        path: String,
        /// What was wrong with it.
        reason: String,
    },
}

/// Why a request got no answer: the error and its causes on one line (reqwest's own message
/// names only the URL; the cause, such as an untrusted certificate, is in its sources).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct SendError(String);

impl SendError {
    fn of(err: &(dyn std::error::Error + 'static)) -> SendError {
        let mut parts: Vec<String> = Vec::new();
        let mut current = Some(err);
        while let Some(error) = current {
            let text = error.to_string();
            if parts.last() != Some(&text) {
                parts.push(text);
            }
            current = error.source();
        }
        SendError(parts.join(": "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hostile: a server URL of another scheme, or a CA file that holds no certificate, is
    /// refused naming the flag; the token never shows in `Debug`.
    #[test]
    fn bad_urls_and_ca_files_are_refused_naming_the_flag() {
        let timeout = Duration::from_secs(5);
        for url in ["", "wardn:8080", "ftp://wardn", "file:///etc/passwd"] {
            let err = ServerLink::new(url, "t", None, timeout).unwrap_err();
            assert!(err.to_string().starts_with("--server "), "{url}: {err}");
        }
        for pem in [
            &b""[..],
            b"not a certificate",
            b"-----BEGIN CERTIFICATE-----\nxx\n",
        ] {
            let err = ServerLink::new("https://wardn", "t", Some(pem), timeout).unwrap_err();
            assert!(err.to_string().starts_with("--server-ca-file: "), "{err}");
        }
        let link = ServerLink::new("HTTPS://wardn/ ", "secret-token", None, timeout).unwrap();
        assert_eq!(link.base(), "HTTPS://wardn");
        assert!(!format!("{link:?}").contains("secret-token"));
    }
}
