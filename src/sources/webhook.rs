//! Push webhooks: `POST /api/v1/webhooks/git` triggers an immediate poll of the repository a
//! forge reports a push for.
//!
//! Accepted signatures, checked against the raw body (the whole document is never built, and
//! a body is never read without a signature header; see [`handle_request`] for the order):
//! - GitHub: `X-Hub-Signature-256: sha256=<hex HMAC-SHA256(secret, body)>`;
//! - GitLab: `X-Gitlab-Token: <secret>` (compared in constant time);
//! - generic: `X-Wardn-Signature: sha256=<hex HMAC-SHA256(secret, body)>`.
//!
//! The secret is `WARDN_WEBHOOK_SECRET`, or a per-repository secret that replaces it for that
//! repository (given to [`WebhookSecrets::with_repository`], or registered through the API and
//! read from the [`WebhookSecretProvider`] at each delivery, so a rotation applies at once). The
//! repository is matched by any of the payload's clone, HTML or SSH URLs
//! (GitHub `repository.*`, GitLab `project.*`/`repository.*`, or a top-level `repoURL`), in
//! any spelling (see [`super::url`]). Outcomes: valid signature and a polled repository →
//! 200 and an immediate poll (on a `--role server` process, whose [`PushTargets`] use every
//! repository: the push recorded for the operators); missing or bad signature → 401, nothing
//! happens; valid signature for a repository no App uses → 202, nothing happens.
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

use futures_util::future::BoxFuture;

use super::capped_json::CappedStrings;
use super::credentials::LookupError;
use super::poller::Poller;
use super::url::{SourceKey, parse_repo_url};
use crate::redact::hidden;

/// The route the handler is meant to be mounted at.
pub const ROUTE: &str = "/api/v1/webhooks/git";
/// The environment variable holding the server-wide webhook secret.
pub const SECRET_ENV: &str = "WARDN_WEBHOOK_SECRET";
/// The largest payload accepted (GitHub caps payloads at 25 MB).
pub const MAX_BODY: usize = 25 << 20;

/// Where pushes go: which repositories Apps use, and how to poll one now. The [`Poller`] is
/// one (the repositories this process polls); in a sharded fleet the runner is another, which
/// also hands a push to the replicas polling the repository for the Apps they own.
pub trait PushTargets: Send + Sync {
    /// Whether an App uses the repository `key`.
    fn uses(&self, key: &SourceKey) -> bool;

    /// Polls the repository `key` now wherever it is polled (or records the push for the
    /// processes that poll it); `false` when no App uses it. `covered` are the repositories
    /// of the payload the delivery's secret vouches for (`key` among them): every one it
    /// names under the server secret (the other spellings of one repository: a forge sends
    /// its https, ssh and git URLs), `key` alone under a repository's own secret.
    fn trigger<'a>(
        &'a self,
        key: &'a SourceKey,
        covered: &'a [SourceKey],
    ) -> BoxFuture<'a, Result<bool, PushError>>;
}

/// Why a push could not be passed on to where the repository is polled (the webhook answers
/// 503, so the forge delivers it again).
#[derive(Debug, thiserror::Error)]
#[error("cannot pass on the push of {repository}: {reason}")]
pub struct PushError {
    /// The repository pushed to.
    pub repository: SourceKey,
    /// What failed.
    pub reason: String,
}

impl PushTargets for Poller {
    fn uses(&self, key: &SourceKey) -> bool {
        self.polls(key)
    }

    fn trigger<'a>(
        &'a self,
        key: &'a SourceKey,
        _covered: &'a [SourceKey],
    ) -> BoxFuture<'a, Result<bool, PushError>> {
        Box::pin(std::future::ready(Ok(Poller::trigger(self, key))))
    }
}

/// Where the webhook secrets of registered repositories come from (the repository registry):
/// read at each delivery, so a rotation applies at once.
pub trait WebhookSecretProvider: Send + Sync {
    /// The webhook secret registered for `key`; `None` when it has none.
    fn webhook_secret<'a>(
        &'a self,
        key: &'a SourceKey,
    ) -> BoxFuture<'a, Result<Option<Vec<u8>>, LookupError>>;
}

/// Webhook secrets: one for the server, optionally one per repository.
#[derive(Clone, Default)]
pub struct WebhookSecrets {
    server: Option<Vec<u8>>,
    per_repository: HashMap<SourceKey, Vec<u8>>,
    provider: Option<Arc<dyn WebhookSecretProvider>>,
}

impl std::fmt::Debug for WebhookSecrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookSecrets")
            .field("server", &hidden(&self.server))
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
    pub fn with_provider(mut self, provider: Arc<dyn WebhookSecretProvider>) -> Self {
        self.provider = Some(provider);
        self
    }

    /// The server-wide secret, if any (the server computes the body's MAC under it while
    /// the body streams in).
    pub fn server_secret(&self) -> Option<&[u8]> {
        self.server.as_deref()
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

    /// The first of `keys` with a secret of its own (configured, then registered with the
    /// provider) and that secret; `None` when none of them has one (the server secret applies).
    pub async fn own_secret<'k>(
        &self,
        keys: &'k [SourceKey],
    ) -> Result<Option<(&'k SourceKey, Vec<u8>)>, LookupError> {
        for key in keys {
            if let Some(secret) = self.per_repository.get(key) {
                return Ok(Some((key, secret.clone())));
            }
            if let Some(provider) = &self.provider
                && let Some(secret) = provider.webhook_secret(key).await?
            {
                return Ok(Some((key, secret)));
            }
        }
        Ok(None)
    }
}

/// The distinct repositories `urls` name, in their order (URLs that do not parse name none).
fn repository_keys(urls: &[String]) -> Vec<SourceKey> {
    let mut keys: Vec<SourceKey> = Vec::new();
    for key in urls
        .iter()
        .filter_map(|url| parse_repo_url(url).ok())
        .map(|url| url.key)
    {
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    keys
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

/// The signature a request claims: which convention, its header's name and value.
struct Claim<'h> {
    provider: Provider,
    name: &'static str,
    value: &'h [u8],
}

impl Claim<'_> {
    /// The request's claim; [`SignatureError::Missing`] without a signature header.
    fn of(headers: &HeaderMap) -> Result<Claim<'_>, SignatureError> {
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
        Ok(Claim {
            provider,
            name,
            value,
        })
    }

    /// The MAC the header claims, for the HMAC conventions; `None` for GitLab's token.
    fn expected_mac(&self) -> Result<Option<Vec<u8>>, SignatureError> {
        if self.provider == Provider::GitLab {
            return Ok(None);
        }
        let hex_sig = self
            .value
            .strip_prefix(b"sha256=")
            .ok_or(SignatureError::Malformed(self.name))?;
        hex::decode(hex_sig)
            .map(Some)
            .map_err(|_| SignatureError::Malformed(self.name))
    }

    /// Whether the claim holds: GitLab's token equals `secret`, or the claimed MAC equals
    /// `computed` (the body's MAC under `secret`); both compared in constant time.
    fn settle(
        &self,
        secret: &[u8],
        expected: Option<&[u8]>,
        computed: Option<&[u8]>,
    ) -> Result<Provider, SignatureError> {
        let matches = match (expected, computed) {
            (Some(expected), Some(computed)) => bool::from(expected.ct_eq(computed)),
            _ => bool::from(self.value.ct_eq(secret)),
        };
        if matches {
            Ok(self.provider)
        } else {
            Err(SignatureError::Mismatch(self.name))
        }
    }
}

/// HMAC-SHA256 of `body` under `secret`.
fn hmac(secret: &[u8], body: &[u8]) -> Vec<u8> {
    new_mac(secret)
        .map(|mut mac| {
            mac.update(body);
            mac.finalize().into_bytes().to_vec()
        })
        .unwrap_or_default()
}

/// An HMAC-SHA256 under `secret`, to feed a body to chunk by chunk. HMAC takes keys of any
/// length, so this is always `Some`; were a key refused, callers use an empty MAC, which
/// matches no signature.
pub fn new_mac(secret: &[u8]) -> Option<Hmac<Sha256>> {
    Hmac::<Sha256>::new_from_slice(secret).ok()
}

/// Checks the request's signature over the raw `body` with `secret`.
pub fn verify_signature(
    headers: &HeaderMap,
    body: &[u8],
    secret: Option<&[u8]>,
) -> Result<Provider, SignatureError> {
    let claim = Claim::of(headers)?;
    let secret = secret.ok_or(SignatureError::NoSecret)?;
    let expected = claim.expected_mac()?;
    let computed = expected.as_ref().map(|_| hmac(secret, body));
    claim.settle(secret, expected.as_deref(), computed.as_deref())
}

/// [`verify_signature`] over any [`RawBody`]: the MAC is computed only for the HMAC
/// conventions, and only once the header is well-formed.
pub async fn verify_body<B: RawBody + ?Sized>(
    headers: &HeaderMap,
    body: &B,
    secret: Option<&[u8]>,
) -> Result<Result<Provider, SignatureError>, BodyError> {
    let checked = async {
        let claim = Claim::of(headers)?;
        let secret = secret.ok_or(SignatureError::NoSecret)?;
        let expected = claim.expected_mac()?;
        Ok((claim, secret, expected))
    };
    let (claim, secret, expected) = match checked.await {
        Ok(found) => found,
        Err(e) => return Ok(Err(e)),
    };
    let computed = match &expected {
        Some(_) => Some(body.mac(secret).await?),
        None => None,
    };
    Ok(claim.settle(secret, expected.as_deref(), computed.as_deref()))
}

/// Why a request is refused before its body is read, if it can be: no signature header, a
/// malformed one, no secret that could check it, or (without per-repository secrets) a
/// GitLab token that is not the server secret. `None`: the body must be read to decide.
pub fn refuse_unread(headers: &HeaderMap, secrets: &WebhookSecrets) -> Option<SignatureError> {
    let claim = match Claim::of(headers) {
        Ok(claim) => claim,
        Err(e) => return Some(e),
    };
    let expected = match claim.expected_mac() {
        Ok(expected) => expected,
        Err(e) => return Some(e),
    };
    if has_repository_secrets(secrets) {
        return None;
    }
    let server = match secrets.server.as_deref() {
        Some(server) => server,
        None => return Some(SignatureError::NoSecret),
    };
    match expected {
        None => claim.settle(server, None, None).err(),
        Some(_) => None,
    }
}

/// Why a body could not be read back (the temporary file of a spooled body).
#[derive(Debug, thiserror::Error)]
#[error("cannot read the webhook body back: {0}")]
pub struct BodyError(#[from] pub std::io::Error);

/// A request body as the checks read it: a byte slice, or a body the server spooled while it
/// streamed in (`server/spool.rs`), read back as a stream. Only the HMAC and the
/// bounded URL reader ever read it, so no check needs the whole body in memory.
pub trait RawBody: Sync {
    /// HMAC-SHA256 of the whole body under `secret`.
    fn mac<'a>(&'a self, secret: &'a [u8]) -> BoxFuture<'a, Result<Vec<u8>, BodyError>>;

    /// The repository URLs the body names, as [`payload_urls_raw`] reads them (the inner
    /// error when the body is not JSON).
    #[allow(clippy::type_complexity)]
    fn urls(&self) -> BoxFuture<'_, Result<Result<Vec<String>, serde_json::Error>, BodyError>>;
}

impl RawBody for [u8] {
    fn mac<'a>(&'a self, secret: &'a [u8]) -> BoxFuture<'a, Result<Vec<u8>, BodyError>> {
        Box::pin(async move { Ok(hmac(secret, self)) })
    }

    fn urls(&self) -> BoxFuture<'_, Result<Result<Vec<String>, serde_json::Error>, BodyError>> {
        Box::pin(async move { Ok(payload_urls_raw(self)) })
    }
}

/// `sha256=<hex>` HMAC-SHA256 of `body` under `secret`: the value of `X-Hub-Signature-256`
/// and `X-Wardn-Signature` (for senders and tests).
pub fn sign(secret: &[u8], body: &[u8]) -> String {
    format!("sha256={}", hex::encode(hmac(secret, body)))
}

/// The fields of `repository` and `project` objects that name the repository.
const URL_FIELDS: [(&str, &[&str]); 2] = [
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

/// The longest repository URL read from a payload; longer values are ignored.
pub const MAX_URL_CHARS: usize = 2048;

/// The repository URLs of a raw payload, read without building the document: every other
/// value is skipped as it is scanned, and only string URLs of at most [`MAX_URL_CHARS`] are
/// kept, so the memory used is bounded whatever the body (at most a few dozen short
/// strings): `repository.*` and `project.*` URL fields (GitHub's and GitLab's names), then a
/// top-level `repoURL`; an error if the body is not JSON.
pub fn payload_urls_raw(body: &[u8]) -> Result<Vec<String>, serde_json::Error> {
    serde_json::from_slice(body).map(urls_of)
}

/// [`payload_urls_raw`] over a reader (a body spooled to a file), through
/// [`CappedStrings`]: the reader's scratch buffer never holds more than one cut string, so
/// the memory used stays bounded however long the body's strings are. `reader` should be
/// buffered.
pub fn payload_urls_reader(reader: impl std::io::Read) -> Result<Vec<String>, serde_json::Error> {
    let capped = std::io::BufReader::new(CappedStrings::new(reader));
    serde_json::from_reader(capped).map(urls_of)
}

/// The URLs a payload's top level names, in the documented order.
fn urls_of(top: raw::Top) -> Vec<String> {
    let mut urls = Vec::new();
    for (name, fields) in URL_FIELDS {
        let object = match name {
            "repository" => &top.repository,
            _ => &top.project,
        };
        for field in fields {
            if let Some(url) = object.get(field) {
                urls.push(url.clone());
            }
        }
    }
    urls.extend(top.repo_url);
    urls
}

/// Minimal, bounded deserialisation of push payloads (see [`payload_urls_raw`]).
mod raw {
    use std::collections::HashMap;
    use std::fmt;

    use serde::Deserialize;
    use serde::de::{self, IgnoredAny, MapAccess, Visitor};

    use super::{MAX_URL_CHARS, URL_FIELDS};

    /// Visitor methods for the values a visitor does not look for: scalars and null answer
    /// `$empty`, and arrays are skipped element by element (never built) before answering it.
    macro_rules! skip_other_values {
        ($de:lifetime, $value:ty, $empty:expr) => {
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<$value, E> {
                Ok($empty)
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<$value, E> {
                Ok($empty)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<$value, E> {
                Ok($empty)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<$value, E> {
                Ok($empty)
            }
            fn visit_unit<E: de::Error>(self) -> Result<$value, E> {
                Ok($empty)
            }
            fn visit_seq<A: de::SeqAccess<$de>>(self, mut seq: A) -> Result<$value, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok($empty)
            }
        };
    }

    /// Any value: a string of at most [`MAX_URL_CHARS`] characters, else nothing.
    pub(super) struct Url(pub(super) Option<String>);

    impl<'de> Deserialize<'de> for Url {
        fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Url, D::Error> {
            struct V;
            impl<'de> Visitor<'de> for V {
                type Value = Url;
                fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    f.write_str("any value")
                }
                fn visit_str<E: de::Error>(self, v: &str) -> Result<Url, E> {
                    Ok(Url(
                        (v.chars().count() <= MAX_URL_CHARS).then(|| v.to_string())
                    ))
                }
                skip_other_values!('de, Url, Url(None));
                fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Url, A::Error> {
                    while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                    Ok(Url(None))
                }
            }
            d.deserialize_any(V)
        }
    }

    /// Any value: for an object, its URL fields (those of either object kind); else nothing.
    #[derive(Default)]
    pub(super) struct Fields(HashMap<&'static str, String>);

    impl Fields {
        pub(super) fn get(&self, field: &str) -> Option<&String> {
            self.0.get(field)
        }
    }

    fn known_field(name: &str) -> Option<&'static str> {
        URL_FIELDS
            .iter()
            .flat_map(|(_, fields)| fields.iter())
            .find(|f| **f == name)
            .copied()
    }

    impl<'de> Deserialize<'de> for Fields {
        fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Fields, D::Error> {
            struct V;
            impl<'de> Visitor<'de> for V {
                type Value = Fields;
                fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    f.write_str("any value")
                }
                fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Fields, A::Error> {
                    let mut fields = HashMap::new();
                    while let Some(key) = map.next_key::<Key>()? {
                        match key.0.and_then(|k| known_field(&k)) {
                            Some(name) => {
                                if let Url(Some(url)) = map.next_value()? {
                                    fields.insert(name, url);
                                }
                            }
                            None => {
                                map.next_value::<IgnoredAny>()?;
                            }
                        }
                    }
                    Ok(Fields(fields))
                }
                fn visit_str<E: de::Error>(self, _: &str) -> Result<Fields, E> {
                    Ok(Fields::default())
                }
                skip_other_values!('de, Fields, Fields::default());
            }
            d.deserialize_any(V)
        }
    }

    /// A map key, kept only when it is short enough to be one of the names looked for.
    struct Key(Option<String>);

    impl<'de> Deserialize<'de> for Key {
        fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Key, D::Error> {
            struct V;
            impl<'de> Visitor<'de> for V {
                type Value = Key;
                fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    f.write_str("a key")
                }
                fn visit_str<E: de::Error>(self, v: &str) -> Result<Key, E> {
                    Ok(Key((v.len() <= 32).then(|| v.to_string())))
                }
            }
            d.deserialize_str(V)
        }
    }

    /// The top level of a payload: `repository`, `project` and `repoURL`.
    #[derive(Default)]
    pub(super) struct Top {
        pub(super) repository: Fields,
        pub(super) project: Fields,
        pub(super) repo_url: Option<String>,
    }

    impl<'de> Deserialize<'de> for Top {
        fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Top, D::Error> {
            struct V;
            impl<'de> Visitor<'de> for V {
                type Value = Top;
                fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    f.write_str("a JSON object")
                }
                fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Top, A::Error> {
                    let mut top = Top::default();
                    while let Some(key) = map.next_key::<Key>()? {
                        match key.0.as_deref() {
                            Some("repository") => top.repository = map.next_value()?,
                            Some("project") => top.project = map.next_value()?,
                            Some("repoURL") => top.repo_url = map.next_value::<Url>()?.0,
                            _ => {
                                map.next_value::<IgnoredAny>()?;
                            }
                        }
                    }
                    Ok(top)
                }
            }
            d.deserialize_map(V)
        }
    }
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

/// Whether the request carries one of the signature headers at all (checked before its body
/// is read: without one the request is refused unread).
pub fn has_signature(headers: &HeaderMap) -> bool {
    ["x-hub-signature-256", "x-gitlab-token", "x-wardn-signature"]
        .iter()
        .any(|name| headers.contains_key(*name))
}

/// Whether per-repository secrets may apply (configured ones, or a provider of registered
/// ones).
fn has_repository_secrets(secrets: &WebhookSecrets) -> bool {
    !secrets.per_repository.is_empty() || secrets.provider.is_some()
}

/// Why a delivery could not be checked at all (the caller answers 503: fail closed).
#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    /// A repository's registered secret could not be read.
    #[error(transparent)]
    Lookup(#[from] LookupError),
    /// The spooled body could not be read back.
    #[error(transparent)]
    Body(#[from] BodyError),
    /// The push could not be passed on.
    #[error(transparent)]
    Push(#[from] PushError),
}

/// The first steps of every delivery, on the raw body: a signature header must be present;
/// then the server secret is checked. Only a body the server secret signs, or — when
/// per-repository secrets may apply — a body that carries a signature header, has its
/// repository URLs read, by the bounded reader (never the whole document). Returns the URLs
/// and, when the server secret signed the body, its provider.
async fn authenticate_server<B: RawBody + ?Sized>(
    secrets: &WebhookSecrets,
    headers: &HeaderMap,
    body: &B,
) -> Result<Result<(Vec<String>, Option<Provider>), WebhookOutcome>, BodyError> {
    if !has_signature(headers) {
        return Ok(Err(WebhookOutcome::Unauthorized(SignatureError::Missing)));
    }
    let server = match secrets.server.as_deref() {
        Some(secret) => Some(verify_body(headers, body, Some(secret)).await?),
        None => None,
    };
    Ok(match server {
        Some(Ok(provider)) => match body.urls().await? {
            Ok(urls) => Ok((urls, Some(provider))),
            Err(e) => Err(WebhookOutcome::BadPayload(format!("body is not JSON: {e}"))),
        },
        Some(Err(e)) if !has_repository_secrets(secrets) => Err(WebhookOutcome::Unauthorized(e)),
        None if !has_repository_secrets(secrets) => {
            Err(WebhookOutcome::Unauthorized(SignatureError::NoSecret))
        }
        // Not the server secret: perhaps a repository's own. An unreadable body names no
        // repository, so it is checked against the server secret (and refused).
        _ => Ok((body.urls().await?.unwrap_or_default(), None)),
    })
}

/// Authenticates a webhook delivery with every secret source (configured, and registered
/// with the provider) and, when valid for a polled repository, triggers a poll.
///
/// Order: no signature header → 401; the server secret is checked over the raw body; the
/// repository URLs are then read with the bounded reader [`payload_urls_raw`] and the secret
/// that applies to them (a repository's own replaces the server secret) must sign the body.
/// The full document is never built, and a body is read at all only when it carries a
/// signature header (and either the server secret signed it or per-repository secrets may
/// apply). A body that is not JSON is a 400 only once the server secret signed it.
pub async fn handle_request<B: RawBody + ?Sized>(
    targets: &dyn PushTargets,
    secrets: &WebhookSecrets,
    headers: &HeaderMap,
    body: &B,
) -> Result<WebhookOutcome, WebhookError> {
    let (urls, provider) = match authenticate_server(secrets, headers, body).await? {
        Ok(found) => found,
        Err(outcome) => return Ok(outcome),
    };
    // The repository to poll is chosen first; only its own secret (or, without one, the
    // server's) may authenticate the delivery: the first of the used repositories the payload
    // names with a secret of its own, else the first used one under the server secret.
    let keys = repository_keys(&urls);
    let used: Vec<SourceKey> = keys
        .iter()
        .filter(|key| targets.uses(key))
        .cloned()
        .collect();
    let candidates = if used.is_empty() { &keys } else { &used };
    let (target, secret, covered) = match secrets.own_secret(candidates).await? {
        Some((key, secret)) => (
            used.contains(key).then(|| key.clone()),
            Some(secret),
            vec![key.clone()],
        ),
        None => (used.first().cloned(), secrets.server.clone(), keys),
    };
    let provider = match provider {
        Some(provider) if secret.as_deref() == secrets.server.as_deref() => provider,
        _ => match verify_body(headers, body, secret.as_deref()).await? {
            Ok(provider) => provider,
            Err(e) => return Ok(WebhookOutcome::Unauthorized(e)),
        },
    };
    trigger(targets, provider, target, &covered).await
}

/// Triggers `target` (the polled repository the payload names), once the request is
/// authenticated; `covered` are the repositories the authenticating secret vouches for.
async fn trigger(
    targets: &dyn PushTargets,
    provider: Provider,
    target: Option<SourceKey>,
    covered: &[SourceKey],
) -> Result<WebhookOutcome, WebhookError> {
    Ok(match target {
        Some(repository) if targets.trigger(&repository, covered).await? => {
            WebhookOutcome::Triggered {
                repository,
                provider,
            }
        }
        _ => WebhookOutcome::UnknownRepository,
    })
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

    /// The URLs a fully parsed payload names: the oracle the bounded reader is checked against.
    fn payload_urls(payload: &serde_json::Value) -> Vec<String> {
        let mut urls = Vec::new();
        for (object, fields) in URL_FIELDS {
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

    #[test]
    fn the_bounded_reader_finds_the_same_urls_and_skips_the_rest() {
        let payloads = [
            serde_json::json!({"ref": "x", "commits": [{"a": [1, 2, {"b": null}]}],
                "repository": {"clone_url": "https://github.com/o/r.git", "html_url": "https://github.com/o/r",
                    "owner": {"url": "https://github.com/o"}, "ssh_url": "git@github.com:o/r.git"}}),
            serde_json::json!({"project": {"git_http_url": "https://gitlab.com/o/r.git",
                "web_url": "https://gitlab.com/o/r"}, "repository": "not an object"}),
            serde_json::json!({"repoURL": "https://h/o/r", "repository": {"url": 42}}),
        ];
        for payload in payloads {
            let raw = serde_json::to_vec(&payload).unwrap();
            assert_eq!(
                payload_urls_raw(&raw).unwrap(),
                payload_urls(&payload),
                "{payload}"
            );
        }
        let long = serde_json::json!({"repoURL": "h".repeat(MAX_URL_CHARS + 1)});
        assert!(
            payload_urls_raw(&serde_json::to_vec(&long).unwrap())
                .unwrap()
                .is_empty()
        );
        assert!(payload_urls_raw(b"not json").is_err());
        assert!(payload_urls_raw(b"[1, 2]").is_err());
    }

    /// A provider with one registered secret, or failing lookups.
    struct Registered(Option<(&'static str, &'static str)>);

    impl WebhookSecretProvider for Registered {
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
        let provider = Arc::new(Registered(Some(("https://h/o/reg", "registered"))));
        let secrets = WebhookSecrets::new(Some("server"))
            .with_repository("https://h/o/static", "static")
            .unwrap()
            .with_provider(provider);
        for (url, want) in [
            ("https://h/o/reg.git", Some("registered")),
            ("https://h/o/static", Some("static")),
            ("https://h/o/other", None),
        ] {
            let keys = repository_keys(&[url.to_string()]);
            let got = secrets.own_secret(&keys).await.unwrap();
            let want = want.map(|secret| (&keys[0], secret.as_bytes().to_vec()));
            assert_eq!(got, want, "{url}");
        }

        let failing = WebhookSecrets::new(Some("server")).with_provider(Arc::new(Registered(None)));
        let (poller, _rx) = Poller::new(super::super::poller::PollerConfig::new(
            super::super::git::GitSettings::default(),
        ));
        let body = br#"{"repoURL": "https://h/o/reg"}"#;
        let signed = headers("x-wardn-signature", &sign(b"server", body));
        assert!(
            handle_request(&poller, &failing, &signed, &body[..])
                .await
                .is_err(),
            "without the registered secret nothing is accepted"
        );
    }

    /// Targets that use every repository and record what they are asked to trigger (as a
    /// `--role server` process records pushes for its operators).
    #[derive(Default)]
    struct Recording(parking_lot::Mutex<Vec<(String, Vec<String>)>>);

    impl PushTargets for Recording {
        fn uses(&self, _key: &SourceKey) -> bool {
            true
        }

        fn trigger<'a>(
            &'a self,
            key: &'a SourceKey,
            covered: &'a [SourceKey],
        ) -> BoxFuture<'a, Result<bool, PushError>> {
            let covered = covered.iter().map(|k| k.to_string()).collect();
            self.0.lock().push((key.to_string(), covered));
            Box::pin(std::future::ready(Ok(true)))
        }
    }

    /// Hostile: what a delivery's secret vouches for. Under the server secret, every
    /// repository the payload names (a forge's spellings of one repository); under a
    /// repository's own secret, that repository alone, although the payload names another
    /// first; and a payload signed with the server secret for a repository with its own is
    /// refused, recording nothing.
    #[tokio::test]
    async fn a_delivery_covers_only_what_its_secret_vouches_for() {
        let body = serde_json::json!({
            "repository": {"clone_url": "https://h/o/a.git", "ssh_url": "git@h:o/a.git"},
            "repoURL": "https://h/o/a",
        })
        .to_string();
        let targets = Recording::default();
        let server_only = WebhookSecrets::new(Some("server"));
        let signed = |secret: &[u8]| headers("x-wardn-signature", &sign(secret, body.as_bytes()));
        let outcome = handle_request(&targets, &server_only, &signed(b"server"), body.as_bytes())
            .await
            .unwrap();
        assert!(
            matches!(outcome, WebhookOutcome::Triggered { .. }),
            "{outcome:?}"
        );
        assert_eq!(
            targets.0.lock().pop().unwrap(),
            (
                "https://h/o/a".to_string(),
                vec!["https://h/o/a".to_string(), "ssh://h/o/a".to_string()]
            )
        );

        let own = WebhookSecrets::new(Some("server"))
            .with_provider(Arc::new(Registered(Some(("git@h:o/a.git", "own")))));
        let outcome = handle_request(&targets, &own, &signed(b"own"), body.as_bytes())
            .await
            .unwrap();
        assert!(
            matches!(outcome, WebhookOutcome::Triggered { .. }),
            "{outcome:?}"
        );
        assert_eq!(
            targets.0.lock().pop().unwrap(),
            ("ssh://h/o/a".to_string(), vec!["ssh://h/o/a".to_string()])
        );
        let refused = handle_request(&targets, &own, &signed(b"server"), body.as_bytes())
            .await
            .unwrap();
        assert!(
            matches!(refused, WebhookOutcome::Unauthorized(_)),
            "{refused:?}"
        );
        assert!(targets.0.lock().is_empty());
    }
}
