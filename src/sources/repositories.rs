//! The repository registry: Git credentials and per-repository webhook secrets registered
//! through the API (`/api/v1/repositories`), validated, sealed with the kubeconfig key
//! ([`crate::seal::Sealer`]), audited as `repository.add|update|remove`, and handed
//! to the poller and the webhook through [`CredentialsProvider`] and [`WebhookSecretProvider`]
//! at each fetch or delivery, and to operator-role processes through the server's internal
//! route ([`super::server_credentials`]).
//!
//! A repository is identified by its normalised URL ([`super::url`]): `…/repo`, `…/repo.git`
//! and `…/repo/` are one repository. Its API id is the short digest of that URL
//! ([`repository_id`]), the same name its mirror has on disk. Plain secrets live only in
//! memory, for the duration of one request or fetch; `Debug` never prints them.

use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};

use super::credentials::{Credentials, CredentialsProvider, LookupError};
use super::url::{RepoUrl, SourceKey, parse_repo_url};
use super::webhook::WebhookSecretProvider;
use crate::redact::hidden;
use crate::seal::{SealError, Sealer};
use crate::store::repositories::RepositoryRecord;
use crate::store::{Store, StoreError};
use crate::time::now_rfc3339;

/// `POST /api/v1/repositories` body.
#[derive(Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "RepositoryAddRequest")]
pub struct AddRequest {
    /// The repository URL, any spelling.
    pub url: String,
    /// User name for HTTP basic authentication (with `password`).
    pub username: Option<String>,
    /// Password or personal access token sent with basic authentication (https only).
    pub password: Option<String>,
    /// Token sent as `Authorization: Bearer` (https only).
    pub token: Option<String>,
    /// Secret of push webhooks for this repository (replaces `WARDN_WEBHOOK_SECRET` for it).
    pub webhook_secret: Option<String>,
}

/// `PUT /api/v1/repositories/{id}` body (rotation). Giving `username`, `password` or `token`
/// replaces the authentication (a lone `password` keeps the stored user name); a
/// `webhook_secret` replaces the webhook secret, an empty one removes it; absent fields keep
/// their stored value.
#[derive(Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "RepositoryUpdateRequest")]
pub struct UpdateRequest {
    /// New user name.
    pub username: Option<String>,
    /// New password.
    pub password: Option<String>,
    /// New bearer token.
    pub token: Option<String>,
    /// New webhook secret (`""` removes it).
    pub webhook_secret: Option<String>,
}

impl std::fmt::Debug for AddRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AddRequest")
            .field("username", &self.username)
            .field("password", &hidden(&self.password))
            .field("token", &hidden(&self.token))
            .field("webhook_secret", &hidden(&self.webhook_secret))
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for UpdateRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UpdateRequest")
            .field("username", &self.username)
            .field("password", &hidden(&self.password))
            .field("token", &hidden(&self.token))
            .field("webhook_secret", &hidden(&self.webhook_secret))
            .finish()
    }
}

/// A repository as the API shows it: never a secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RepositoryView {
    /// Short stable id ([`repository_id`]).
    pub id: String,
    /// The normalised URL.
    pub url: String,
    /// `none`, `basic` or `bearer`.
    pub auth: String,
    /// The basic-authentication user name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    /// Whether a per-repository webhook secret is set.
    pub has_webhook_secret: bool,
    /// Registration time (RFC 3339).
    pub created_at: String,
    /// Last change (RFC 3339).
    pub updated_at: String,
}

/// Errors of repository operations, each mapped to one HTTP status by the server.
#[derive(Debug, thiserror::Error)]
pub enum RepositoryError {
    /// Invalid input (400).
    #[error("{field}: {reason}")]
    Invalid {
        /// The request field.
        field: &'static str,
        /// What is wrong (never the secret itself).
        reason: String,
    },
    /// The repository is registered already (409).
    #[error("repository {0} is already registered (PUT /api/v1/repositories/{{id}} rotates it)")]
    Duplicate(String),
    /// No such repository (404).
    #[error("repository {0:?} not found")]
    NotFound(String),
    /// Sealing or unsealing failed (500).
    #[error(transparent)]
    Seal(#[from] SealError),
    /// The store failed (500).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Registered secrets could not be unsealed (500).
    #[error(transparent)]
    Unreadable(#[from] LookupError),
}

fn invalid(field: &'static str, reason: impl Into<String>) -> RepositoryError {
    RepositoryError::Invalid {
        field,
        reason: reason.into(),
    }
}

/// Parses a repository URL for registration, naming the `url` field; URLs carrying
/// credentials are refused by [`parse_repo_url`], so secrets only travel in the secret fields.
pub fn parse_url(url: &str) -> Result<RepoUrl, RepositoryError> {
    parse_repo_url(url).map_err(|e| invalid("url", e.reason))
}

/// The API id of the repository `url` (any spelling): the digest of its normalised URL.
pub fn repository_id(url: &str) -> Result<String, RepositoryError> {
    Ok(parse_url(url)?.key.digest())
}

fn non_empty(
    field: &'static str,
    value: Option<String>,
) -> Result<Option<String>, RepositoryError> {
    match value {
        Some(v) if v.is_empty() => Err(invalid(field, "must not be empty")),
        other => Ok(other),
    }
}

/// The credentials the auth fields describe, checked against the URL's transport.
fn credentials_from(
    url: &RepoUrl,
    username: Option<String>,
    password: Option<String>,
    token: Option<String>,
) -> Result<Credentials, RepositoryError> {
    let username = non_empty("username", username)?;
    let password = non_empty("password", password)?;
    let token = non_empty("token", token)?;
    if let Some(user) = &username
        && user.chars().any(|c| c == ':' || c.is_control())
    {
        return Err(invalid(
            "username",
            "must not contain ':' or control characters",
        ));
    }
    let credentials = match (username, password, token) {
        (None, None, None) => Credentials::Anonymous,
        (None, None, Some(token)) => Credentials::Bearer { token },
        (_, _, Some(_)) => {
            return Err(invalid(
                "token",
                "give either a token, or a username and password, not both",
            ));
        }
        (Some(username), Some(password), None) => Credentials::Basic { username, password },
        (None, Some(_), None) => return Err(invalid("username", "required with a password")),
        (Some(_), None, None) => return Err(invalid("password", "required with a username")),
    };
    credentials
        .check_transport(url)
        .map_err(|e| invalid("url", e.to_string()))?;
    Ok(credentials)
}

/// The registry of repositories over the store, sealing with the kubeconfig key.
#[derive(Clone)]
pub struct Repositories {
    store: Store,
    sealer: Sealer,
}

impl std::fmt::Debug for Repositories {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Repositories").finish_non_exhaustive()
    }
}

impl Repositories {
    /// A registry over `store`, sealing with `sealer`.
    pub fn new(store: Store, sealer: Sealer) -> Repositories {
        Repositories { store, sealer }
    }

    fn seal(&self, secret: Option<&str>) -> Result<Option<String>, RepositoryError> {
        Ok(secret.map(|s| self.sealer.seal(s)).transpose()?)
    }

    /// Fills the auth columns of `record` from `credentials`.
    fn set_credentials(
        &self,
        record: &mut RepositoryRecord,
        credentials: &Credentials,
    ) -> Result<(), RepositoryError> {
        record.auth_kind = credentials.kind().to_string();
        (record.username, record.secret_sealed) = match credentials {
            Credentials::Anonymous => (None, None),
            Credentials::Basic { username, password } => {
                (Some(username.clone()), self.seal(Some(password))?)
            }
            Credentials::Bearer { token } => (None, self.seal(Some(token))?),
        };
        Ok(())
    }

    /// Registers a repository (audited as `repository.add`).
    pub async fn add(
        &self,
        actor: &str,
        request: AddRequest,
    ) -> Result<RepositoryView, RepositoryError> {
        let target = parse_url(&request.url)
            .map(|u| u.key.to_string())
            .unwrap_or_else(|_| "(invalid url)".to_string());
        let result = self.add_inner(request).await;
        self.store
            .audited(actor, "repository.add", &target, result)
            .await
    }

    async fn add_inner(&self, request: AddRequest) -> Result<RepositoryView, RepositoryError> {
        let url = parse_url(&request.url)?;
        let credentials =
            credentials_from(&url, request.username, request.password, request.token)?;
        let webhook_secret = non_empty("webhook_secret", request.webhook_secret)?;
        let now = now_rfc3339();
        let mut record = RepositoryRecord {
            id: url.key.digest(),
            url: url.key.to_string(),
            auth_kind: String::new(),
            username: None,
            secret_sealed: None,
            webhook_secret_sealed: self.seal(webhook_secret.as_deref())?,
            created_at: now.clone(),
            updated_at: now,
        };
        self.set_credentials(&mut record, &credentials)?;
        if let Err(e) = self.store.insert_repository(&record).await {
            return Err(match e {
                StoreError::Duplicate(_) => RepositoryError::Duplicate(record.url),
                e => e.into(),
            });
        }
        Ok(view(&record))
    }

    async fn record(&self, id: &str) -> Result<RepositoryRecord, RepositoryError> {
        // Ids are 24 lower-case hex digits: anything else names no repository, and never
        // reaches the store (PostgreSQL refuses text with NUL in it).
        if id.len() != 24 || !id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return Err(RepositoryError::NotFound(audit_id(id)));
        }
        self.store
            .get_repository(id)
            .await?
            .ok_or_else(|| RepositoryError::NotFound(id.to_string()))
    }

    /// Rotates a repository's credentials or webhook secret (audited as `repository.update`).
    pub async fn update(
        &self,
        actor: &str,
        id: &str,
        request: UpdateRequest,
    ) -> Result<RepositoryView, RepositoryError> {
        let (target, result) = match self.record(id).await {
            Ok(record) => (record.url.clone(), self.update_inner(record, request).await),
            Err(e) => (audit_id(id), Err(e)),
        };
        self.store
            .audited(actor, "repository.update", &target, result)
            .await
    }

    async fn update_inner(
        &self,
        mut record: RepositoryRecord,
        request: UpdateRequest,
    ) -> Result<RepositoryView, RepositoryError> {
        let UpdateRequest {
            username,
            password,
            token,
            webhook_secret,
        } = request;
        let auth_given = username.is_some() || password.is_some() || token.is_some();
        if !auth_given && webhook_secret.is_none() {
            return Err(invalid(
                "body",
                "give username/password, token or webhook_secret to change",
            ));
        }
        if auth_given {
            let url = parse_url(&record.url)?;
            // A lone password rotates the password of the stored user.
            let username = match (&username, &password, &token) {
                (None, Some(_), None) if record.auth_kind == "basic" => record.username.clone(),
                _ => username,
            };
            let credentials = credentials_from(&url, username, password, token)?;
            self.set_credentials(&mut record, &credentials)?;
        }
        if let Some(secret) = webhook_secret {
            record.webhook_secret_sealed =
                self.seal(Some(secret.as_str()).filter(|s| !s.is_empty()))?;
        }
        record.updated_at = now_rfc3339();
        if !self.store.update_repository(&record).await? {
            return Err(RepositoryError::NotFound(record.id));
        }
        Ok(view(&record))
    }

    /// Removes a repository (audited as `repository.remove`).
    pub async fn remove(&self, actor: &str, id: &str) -> Result<(), RepositoryError> {
        let (target, result) = match self.record(id).await {
            Ok(record) => match self.store.delete_repository(id).await {
                Ok(true) => (record.url, Ok(())),
                Ok(false) => (record.url, Err(RepositoryError::NotFound(id.to_string()))),
                Err(e) => (record.url, Err(e.into())),
            },
            Err(e) => (audit_id(id), Err(e)),
        };
        self.store
            .audited(actor, "repository.remove", &target, result)
            .await
    }

    /// Rewrites every sealed secret under the current key, after a key rotation (audited as
    /// `repository.reseal`); returns how many repositories were rewritten.
    pub async fn reseal(&self, actor: &str) -> Result<usize, RepositoryError> {
        let result = match self
            .store
            .reseal_repositories(|blob| self.sealer.reseal(blob))
            .await
        {
            Ok(Ok(count)) => Ok(count),
            Ok(Err(err)) => Err(err.into()),
            Err(err) => Err(err.into()),
        };
        self.store
            .audited(actor, "repository.reseal", "*", result)
            .await
    }

    /// Every registered repository, without secrets.
    pub async fn list(&self) -> Result<Vec<RepositoryView>, RepositoryError> {
        Ok(self
            .store
            .list_repositories()
            .await?
            .iter()
            .map(view)
            .collect())
    }

    /// One registered repository, without secrets.
    pub async fn get(&self, id: &str) -> Result<RepositoryView, RepositoryError> {
        Ok(view(&self.record(id).await?))
    }

    /// The registered record of `key`, if any (the id is the key's digest; the URL is
    /// compared too).
    async fn lookup(&self, key: &SourceKey) -> Result<Option<RepositoryRecord>, LookupError> {
        let found = self
            .store
            .get_repository(&key.digest())
            .await
            .map_err(|e| lookup_error(key, &e))?;
        Ok(found.filter(|r| r.url == key.as_str()))
    }

    /// The repository with the API id `id` and its credentials in the clear (`None` when it
    /// has none), for the server's internal route: an operator-role process fetches with them.
    pub async fn credentials_by_id(
        &self,
        id: &str,
    ) -> Result<(String, Option<Credentials>), RepositoryError> {
        let record = self.record(id).await?;
        let credentials = self.unsealed(&record.url, &record)?;
        Ok((record.url, credentials))
    }

    /// The credentials of `record` (the repository `key`) in the clear; `None` when it
    /// registers none.
    fn unsealed(
        &self,
        key: &dyn std::fmt::Display,
        record: &RepositoryRecord,
    ) -> Result<Option<Credentials>, LookupError> {
        let secret = || self.open(key, record.secret_sealed.as_deref());
        match record.auth_kind.as_str() {
            "none" => Ok(None),
            "basic" => Ok(Some(Credentials::Basic {
                username: record.username.clone().unwrap_or_default(),
                password: secret()?,
            })),
            "bearer" => Ok(Some(Credentials::Bearer { token: secret()? })),
            other => Err(LookupError {
                repository: key.to_string(),
                reason: format!("unknown stored auth kind {other:?}"),
            }),
        }
    }

    fn open(
        &self,
        key: &dyn std::fmt::Display,
        sealed: Option<&str>,
    ) -> Result<String, LookupError> {
        let sealed = sealed.ok_or_else(|| LookupError {
            repository: key.to_string(),
            reason: "the stored secret is missing".to_string(),
        })?;
        self.sealer.open(sealed).map_err(|e| lookup_error(key, &e))
    }
}

/// An unknown id as an audit target: caller-supplied, so kept short.
fn audit_id(id: &str) -> String {
    if id.len() <= 64 {
        id.to_string()
    } else {
        "(invalid id)".to_string()
    }
}

fn lookup_error(key: &dyn std::fmt::Display, error: &dyn std::fmt::Display) -> LookupError {
    LookupError {
        repository: key.to_string(),
        reason: error.to_string(),
    }
}

fn view(record: &RepositoryRecord) -> RepositoryView {
    RepositoryView {
        id: record.id.clone(),
        url: record.url.clone(),
        auth: record.auth_kind.clone(),
        username: record.username.clone(),
        has_webhook_secret: record.webhook_secret_sealed.is_some(),
        created_at: record.created_at.clone(),
        updated_at: record.updated_at.clone(),
    }
}

impl CredentialsProvider for Repositories {
    fn credentials<'a>(
        &'a self,
        key: &'a SourceKey,
    ) -> BoxFuture<'a, Result<Option<Credentials>, LookupError>> {
        Box::pin(async move {
            match self.lookup(key).await? {
                Some(record) => self.unsealed(key, &record),
                None => Ok(None),
            }
        })
    }
}

impl WebhookSecretProvider for Repositories {
    fn webhook_secret<'a>(
        &'a self,
        key: &'a SourceKey,
    ) -> BoxFuture<'a, Result<Option<Vec<u8>>, LookupError>> {
        Box::pin(async move {
            match self.lookup(key).await? {
                Some(record) if record.webhook_secret_sealed.is_some() => Ok(Some(
                    self.open(key, record.webhook_secret_sealed.as_deref())?
                        .into_bytes(),
                )),
                _ => Ok(None),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn creds(
        url: &str,
        user: Option<&str>,
        pass: Option<&str>,
        token: Option<&str>,
    ) -> Result<Credentials, RepositoryError> {
        let url = parse_url(url)?;
        let s = |v: Option<&str>| v.map(str::to_string);
        credentials_from(&url, s(user), s(pass), s(token))
    }

    fn field(result: Result<Credentials, RepositoryError>) -> &'static str {
        match result {
            Err(RepositoryError::Invalid { field, .. }) => field,
            other => panic!("expected Invalid, got {other:?}"),
        }
    }

    #[test]
    fn auth_fields_are_validated_naming_the_field() {
        let https = "https://git.example.com/org/repo";
        assert_eq!(
            creds(https, Some("u"), Some("p"), None).unwrap(),
            Credentials::Basic {
                username: "u".into(),
                password: "p".into()
            }
        );
        assert_eq!(
            creds(https, None, None, Some("t")).unwrap().kind(),
            "bearer"
        );
        assert_eq!(
            creds("http://h/o/r", None, None, None).unwrap().kind(),
            "none"
        );
        assert_eq!(field(creds("http://h/o/r", None, None, Some("t"))), "url");
        assert_eq!(
            field(creds("git@h:o/r.git", Some("u"), Some("p"), None)),
            "url"
        );
        assert_eq!(
            field(creds(https, Some("u"), Some("p"), Some("t"))),
            "token"
        );
        assert_eq!(field(creds(https, None, Some("p"), None)), "username");
        assert_eq!(field(creds(https, Some("u"), None, None)), "password");
        assert_eq!(field(creds(https, Some("u"), Some(""), None)), "password");
        assert_eq!(
            field(creds(https, Some("a:b"), Some("p"), None)),
            "username"
        );
        assert_eq!(field(creds("https://u:pw@h/o/r", None, None, None)), "url");
        assert_eq!(field(creds("u:pw@h:o/r.git", None, None, None)), "url");
        assert_eq!(
            creds("git@h:o/r.git", None, None, None).unwrap().kind(),
            "none"
        );
    }

    #[test]
    fn every_spelling_has_one_id_and_requests_never_print_secrets() {
        let id = repository_id("https://Git.example.com/org/repo").unwrap();
        assert_eq!(
            id,
            repository_id("https://git.example.com:443/org/repo.git").unwrap()
        );
        assert_eq!(
            id,
            repository_id("https://git.example.com/org/repo/").unwrap()
        );
        assert_eq!(id.len(), 24);
        let request = AddRequest {
            url: "https://h/o/r".into(),
            username: Some("u".into()),
            password: Some("hunter2".into()),
            token: None,
            webhook_secret: Some("whsec".into()),
        };
        let printed = format!("{request:?}");
        assert!(
            !printed.contains("hunter2") && !printed.contains("whsec"),
            "{printed}"
        );
    }

    #[tokio::test]
    async fn an_over_long_audit_target_is_truncated() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), None).await.unwrap();
        store
            .init_audit(crate::store::audit::tests::test_keys())
            .await
            .unwrap();
        let repositories = Repositories::new(store.clone(), Sealer::new(&[7; 32], None));
        let url = format!("https://git.example.com/org/{}", "r".repeat(400));
        let request = AddRequest {
            url: url.clone(),
            username: None,
            password: None,
            token: None,
            webhook_secret: None,
        };
        repositories.add("admin", request).await.unwrap();
        let (entries, _) = store.audit_log().await.unwrap();
        assert_eq!(entries[0].action, "repository.add");
        assert_eq!(entries[0].outcome, "success");
        assert!(url.starts_with(&entries[0].target), "{}", entries[0].target);
        assert_eq!(
            entries[0].target.chars().count(),
            crate::store::audit::MAX_FIELD_CHARS
        );
        store.close().await;
    }
}
