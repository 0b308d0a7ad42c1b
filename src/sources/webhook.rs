//! Push webhooks: `POST /api/v1/webhooks/git` triggers an immediate poll of the repository a
//! forge reports a push for.
//!
//! Accepted signatures, checked against the raw body before anything else happens:
//! - GitHub: `X-Hub-Signature-256: sha256=<hex HMAC-SHA256(secret, body)>`;
//! - GitLab: `X-Gitlab-Token: <secret>` (compared in constant time);
//! - generic: `X-Wardn-Signature: sha256=<hex HMAC-SHA256(secret, body)>`.
//!
//! The secret is `WARDN_WEBHOOK_SECRET`, or a per-repository secret that replaces it for that
//! repository (given to [`WebhookSecrets::with_repository`], or registered through the API and
//! read from the [`CredentialsProvider`] at each delivery, so a rotation applies at once). The
//! repository is matched by any of the payload's clone, HTML or SSH URLs
//! (GitHub `repository.*`, GitLab `project.*`/`repository.*`, or a top-level `repoURL`), in
//! any spelling (see [`super::url`]). Outcomes: valid signature and a polled repository →
//! 200 and an immediate poll; missing or bad signature → 401, nothing happens; valid signature
//! for a repository no App uses → 202, nothing happens.
//!
//! The secret checked is the one of the repository that would be polled (its own, else the
//! server's), chosen before the signature is checked: a payload that also names another
//! repository cannot borrow that repository's secret, so a per-repository secret only ever
//! triggers polls of its own repository.

use std::collections::HashMap;
use std::sync::Arc;

use hmac::{Hmac, Mac};
use http::HeaderMap;
use sha2::Sha256;
use subtle::ConstantTimeEq;

use super::credentials::{CredentialsProvider, LookupError};
use super::poller::Poller;
use super::url::{SourceKey, parse_repo_url};

/// The route the handler is meant to be mounted at.
pub const ROUTE: &str = "/api/v1/webhooks/git";
/// The environment variable holding the server-wide webhook secret.
pub const SECRET_ENV: &str = "WARDN_WEBHOOK_SECRET";
/// The largest payload accepted (GitHub caps payloads at 25 MB).
pub const MAX_BODY: usize = 25 << 20;

/// Webhook secrets: one for the server, optionally one per repository.
#[derive(Clone, Default)]
pub struct WebhookSecrets {
    server: Option<Vec<u8>>,
    per_repository: HashMap<SourceKey, Vec<u8>>,
    provider: Option<Arc<dyn CredentialsProvider>>,
}

impl std::fmt::Debug for WebhookSecrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookSecrets")
            .field("server", &self.server.as_ref().map(|_| "***"))
            .field(
                "repositories",
                &self.per_repository.keys().collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl WebhookSecrets {
    /// Secrets with the given server-wide secret (empty strings count as none).
    pub fn new(server: Option<&str>) -> Self {
        Self {
            server: server
                .filter(|s| !s.is_empty())
                .map(|s| s.as_bytes().to_vec()),
            per_repository: HashMap::new(),
            provider: None,
        }
    }

    /// Also reads per-repository secrets from `provider` (the repository registry) at each
    /// delivery; a registered secret replaces the server secret for its repository.
    pub fn with_provider(mut self, provider: Arc<dyn CredentialsProvider>) -> Self {
        self.provider = Some(provider);
        self
    }

    /// Reads the server-wide secret from `WARDN_WEBHOOK_SECRET`.
    pub fn from_env() -> Self {
        Self::new(std::env::var(SECRET_ENV).ok().as_deref())
    }

    /// Sets the secret of one repository (any spelling of its URL); it replaces the server
    /// secret for that repository.
    pub fn with_repository(
        mut self,
        repo_url: &str,
        secret: &str,
    ) -> Result<Self, super::url::UrlError> {
        let key = parse_repo_url(repo_url)?.key;
        self.per_repository.insert(key, secret.as_bytes().to_vec());
        Ok(self)
    }

    /// The secret for a payload naming `urls`: the first named repository's own secret, else
    /// the server secret.
    fn for_urls(&self, urls: &[String]) -> Option<&[u8]> {
        urls.iter()
            .filter_map(|u| parse_repo_url(u).ok())
            .find_map(|u| self.per_repository.get(&u.key))
            .or(self.server.as_ref())
            .map(Vec::as_slice)
    }

    /// The secret that authenticates payloads for the repository `key`: its own secret, else
    /// the server secret (never another repository's).
    fn for_key(&self, key: &SourceKey) -> Option<&[u8]> {
        self.per_repository
            .get(key)
            .or(self.server.as_ref())
            .map(Vec::as_slice)
    }

    /// [`Self::for_key`] including secrets registered with the provider.
    pub async fn resolve_key(&self, key: &SourceKey) -> Result<Option<Vec<u8>>, LookupError> {
        if let Some(secret) = self.per_repository.get(key) {
            return Ok(Some(secret.clone()));
        }
        if let Some(provider) = &self.provider
            && let Some(secret) = provider.webhook_secret(key).await?
        {
            return Ok(Some(secret));
        }
        Ok(self.server.clone())
    }

    /// The secret for a payload naming `urls`, including secrets registered with the
    /// provider: the first named repository's own secret (configured, then registered), else
    /// the server secret.
    pub async fn resolve(&self, urls: &[String]) -> Result<Option<Vec<u8>>, LookupError> {
        let keys: Vec<SourceKey> = urls
            .iter()
            .filter_map(|u| parse_repo_url(u).ok())
            .map(|u| u.key)
            .collect();
        for key in &keys {
            if let Some(secret) = self.per_repository.get(key) {
                return Ok(Some(secret.clone()));
            }
            if let Some(provider) = &self.provider
                && let Some(secret) = provider.webhook_secret(key).await?
            {
                return Ok(Some(secret));
            }
        }
        Ok(self.server.clone())
    }
}

/// Which forge convention authenticated a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    /// `X-Hub-Signature-256`.
    GitHub,
    /// `X-Gitlab-Token`.
    GitLab,
    /// `X-Wardn-Signature`.
    Generic,
}

/// Why a request was not authenticated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    /// None of the signature headers is present.
    #[error("missing signature: send X-Hub-Signature-256, X-Gitlab-Token or X-Wardn-Signature")]
    Missing,
    /// No secret is configured to check the request against.
    #[error("no webhook secret configured (set WARDN_WEBHOOK_SECRET)")]
    NoSecret,
    /// The header is not of the form `sha256=<hex>`.
    #[error("malformed {0} header: expected sha256=<hex>")]
    Malformed(&'static str),
    /// The signature or token does not match.
    #[error("{0} signature does not match")]
    Mismatch(&'static str),
}

/// Checks the request's signature over the raw `body` with `secret`.
pub fn verify_signature(
    headers: &HeaderMap,
    body: &[u8],
    secret: Option<&[u8]>,
) -> Result<Provider, SignatureError> {
    let header = |name: &str| headers.get(name).map(|v| v.as_bytes());
    let (provider, name, value) = if let Some(v) = header("x-hub-signature-256") {
        (Provider::GitHub, "X-Hub-Signature-256", v)
    } else if let Some(v) = header("x-gitlab-token") {
        (Provider::GitLab, "X-Gitlab-Token", v)
    } else if let Some(v) = header("x-wardn-signature") {
        (Provider::Generic, "X-Wardn-Signature", v)
    } else {
        return Err(SignatureError::Missing);
    };
    let secret = secret.ok_or(SignatureError::NoSecret)?;
    match provider {
        Provider::GitLab => {
            if bool::from(value.ct_eq(secret)) {
                Ok(provider)
            } else {
                Err(SignatureError::Mismatch(name))
            }
        }
        Provider::GitHub | Provider::Generic => {
            let hex_sig = value
                .strip_prefix(b"sha256=")
                .ok_or(SignatureError::Malformed(name))?;
            let sig = hex::decode(hex_sig).map_err(|_| SignatureError::Malformed(name))?;
            let mut mac = Hmac::<Sha256>::new_from_slice(secret)
                .map_err(|_| SignatureError::Mismatch(name))?;
            mac.update(body);
            mac.verify_slice(&sig)
                .map(|()| provider)
                .map_err(|_| SignatureError::Mismatch(name))
        }
    }
}

/// `sha256=<hex>` HMAC-SHA256 of `body` under `secret`: the value of `X-Hub-Signature-256`
/// and `X-Wardn-Signature` (for senders and tests).
pub fn sign(secret: &[u8], body: &[u8]) -> String {
    let mut mac = match Hmac::<Sha256>::new_from_slice(secret) {
        Ok(mac) => mac,
        // HMAC accepts keys of any length; this arm is never taken.
        Err(_) => return String::new(),
    };
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

/// The repository URLs a push payload names (GitHub, GitLab or generic).
pub fn payload_urls(payload: &serde_json::Value) -> Vec<String> {
    const FIELDS: [(&str, &[&str]); 2] = [
        (
            "repository",
            &[
                "clone_url",
                "html_url",
                "ssh_url",
                "git_url",
                "git_http_url",
                "git_ssh_url",
                "url",
                "homepage",
            ],
        ),
        (
            "project",
            &[
                "git_http_url",
                "git_ssh_url",
                "web_url",
                "http_url",
                "ssh_url",
                "url",
            ],
        ),
    ];
    let mut urls = Vec::new();
    for (object, fields) in FIELDS {
        for field in fields {
            if let Some(url) = payload[object][field].as_str() {
                urls.push(url.to_string());
            }
        }
    }
    if let Some(url) = payload["repoURL"].as_str() {
        urls.push(url.to_string());
    }
    urls
}

/// What a webhook request led to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WebhookOutcome {
    /// Authenticated, and the repository is polled: a poll was triggered.
    Triggered {
        /// The repository.
        repository: SourceKey,
        /// Which convention authenticated it.
        provider: Provider,
    },
    /// Authenticated, but no App uses the repository: nothing happens.
    UnknownRepository,
    /// Not authenticated: nothing happens.
    Unauthorized(SignatureError),
    /// Authenticated, but the body is not JSON.
    BadPayload(String),
}

/// Authenticates a webhook request against the configured secrets (not the provider's) and,
/// when valid for a polled repository, triggers a poll.
pub fn handle(
    poller: &Poller,
    secrets: &WebhookSecrets,
    headers: &HeaderMap,
    body: &[u8],
) -> WebhookOutcome {
    let payload: Result<serde_json::Value, _> = serde_json::from_slice(body);
    let urls = payload.as_ref().map(payload_urls).unwrap_or_default();
    let target = poller.find_repository(urls.iter().map(String::as_str));
    let secret = match &target {
        Some(key) => secrets.for_key(key),
        None => secrets.for_urls(&urls),
    };
    handle_with_secret(poller, secret, headers, body, payload, target)
}

/// [`handle`] with every secret source, the provider's registered secrets included.
pub async fn handle_request(
    poller: &Poller,
    secrets: &WebhookSecrets,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<WebhookOutcome, LookupError> {
    let payload: Result<serde_json::Value, _> = serde_json::from_slice(body);
    let urls = payload.as_ref().map(payload_urls).unwrap_or_default();
    let target = poller.find_repository(urls.iter().map(String::as_str));
    let secret = match &target {
        Some(key) => secrets.resolve_key(key).await?,
        None => secrets.resolve(&urls).await?,
    };
    Ok(handle_with_secret(
        poller,
        secret.as_deref(),
        headers,
        body,
        payload,
        target,
    ))
}

/// Checks the signature with `secret` (the secret of `target`, the polled repository the
/// payload names, when there is one), then triggers `target`.
fn handle_with_secret(
    poller: &Poller,
    secret: Option<&[u8]>,
    headers: &HeaderMap,
    body: &[u8],
    payload: Result<serde_json::Value, serde_json::Error>,
    target: Option<SourceKey>,
) -> WebhookOutcome {
    let provider = match verify_signature(headers, body, secret) {
        Ok(p) => p,
        Err(e) => return WebhookOutcome::Unauthorized(e),
    };
    if let Err(e) = payload {
        return WebhookOutcome::BadPayload(format!("body is not JSON: {e}"));
    }
    match target {
        Some(repository) if poller.trigger(&repository) => WebhookOutcome::Triggered {
            repository,
            provider,
        },
        _ => WebhookOutcome::UnknownRepository,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn headers(name: &'static str, value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(name, HeaderValue::from_str(value).unwrap());
        h
    }

    #[test]
    fn github_signature_matches_the_documented_example() {
        // The example from GitHub's "Validating webhook deliveries" documentation.
        let sig = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";
        let h = headers("x-hub-signature-256", sig);
        assert_eq!(sign(b"It's a Secret to Everybody", b"Hello, World!"), sig);
        assert_eq!(
            verify_signature(&h, b"Hello, World!", Some(b"It's a Secret to Everybody")),
            Ok(Provider::GitHub)
        );
        assert_eq!(
            verify_signature(&h, b"Hello, World?", Some(b"It's a Secret to Everybody")),
            Err(SignatureError::Mismatch("X-Hub-Signature-256"))
        );
    }

    #[test]
    fn gitlab_generic_missing_and_malformed() {
        let body = b"{}";
        assert_eq!(
            verify_signature(&headers("x-gitlab-token", "s"), body, Some(b"s")),
            Ok(Provider::GitLab)
        );
        assert!(verify_signature(&headers("x-gitlab-token", "x"), body, Some(b"s")).is_err());
        let generic = headers("x-wardn-signature", &sign(b"k", body));
        assert_eq!(
            verify_signature(&generic, body, Some(b"k")),
            Ok(Provider::Generic)
        );
        assert_eq!(
            verify_signature(&HeaderMap::new(), body, Some(b"k")),
            Err(SignatureError::Missing)
        );
        assert_eq!(
            verify_signature(&headers("x-wardn-signature", "md5=00"), body, Some(b"k")),
            Err(SignatureError::Malformed("X-Wardn-Signature"))
        );
        assert_eq!(
            verify_signature(&generic, body, None),
            Err(SignatureError::NoSecret)
        );
    }

    #[test]
    fn payload_urls_cover_github_gitlab_and_generic() {
        let github = serde_json::json!({"repository": {
            "clone_url": "https://github.com/o/r.git", "html_url": "https://github.com/o/r",
            "ssh_url": "git@github.com:o/r.git"}});
        assert_eq!(payload_urls(&github).len(), 3);
        let gitlab = serde_json::json!({"project": {
            "git_http_url": "https://gitlab.com/o/r.git", "web_url": "https://gitlab.com/o/r"}});
        assert_eq!(payload_urls(&gitlab)[0], "https://gitlab.com/o/r.git");
        let generic = serde_json::json!({"repoURL": "https://h/o/r"});
        assert_eq!(payload_urls(&generic), ["https://h/o/r"]);
    }

    /// A provider with one registered secret, or failing lookups.
    struct Registered(Option<(&'static str, &'static str)>);

    impl CredentialsProvider for Registered {
        fn credentials<'a>(
            &'a self,
            _key: &'a SourceKey,
        ) -> futures_util::future::BoxFuture<
            'a,
            Result<Option<crate::sources::credentials::Credentials>, LookupError>,
        > {
            Box::pin(async { Ok(None) })
        }

        fn webhook_secret<'a>(
            &'a self,
            key: &'a SourceKey,
        ) -> futures_util::future::BoxFuture<'a, Result<Option<Vec<u8>>, LookupError>> {
            Box::pin(async move {
                match self.0 {
                    Some((url, secret)) if parse_repo_url(url).unwrap().key == *key => {
                        Ok(Some(secret.as_bytes().to_vec()))
                    }
                    Some(_) => Ok(None),
                    None => Err(LookupError {
                        repository: key.to_string(),
                        reason: "store down".into(),
                    }),
                }
            })
        }
    }

    #[tokio::test]
    async fn registered_secrets_replace_the_server_secret_and_lookup_failures_fail_closed() {
        let urls = |u: &str| vec![u.to_string()];
        let provider = Arc::new(Registered(Some(("https://h/o/reg", "registered"))));
        let secrets = WebhookSecrets::new(Some("server"))
            .with_repository("https://h/o/static", "static")
            .unwrap()
            .with_provider(provider);
        for (url, want) in [
            ("https://h/o/reg.git", "registered"),
            ("https://h/o/static", "static"),
            ("https://h/o/other", "server"),
        ] {
            let got = secrets.resolve(&urls(url)).await.unwrap();
            assert_eq!(got, Some(want.as_bytes().to_vec()), "{url}");
        }

        let failing = WebhookSecrets::new(Some("server")).with_provider(Arc::new(Registered(None)));
        let (poller, _rx) = Poller::new(super::super::poller::PollerConfig::new(
            super::super::git::GitSettings::default(),
        ));
        let body = br#"{"repoURL": "https://h/o/reg"}"#;
        let signed = headers("x-wardn-signature", &sign(b"server", body));
        assert!(
            handle_request(&poller, &failing, &signed, body)
                .await
                .is_err(),
            "without the registered secret nothing is accepted"
        );
    }
}
