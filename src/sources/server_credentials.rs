//! Registered repository credentials for operator-role processes, which hold no store.
//!
//! The server answers them on [`ROUTE`] (`GET /internal/repositories/{id}/credentials`,
//! internal token only), and [`ServerCredentials`] asks before every fetch, just as the poller
//! of a `--role all` process asks the registry: credentials added or rotated through the API
//! reach every operator at its next poll, and are held in the clear only for that fetch.

use std::fmt;

use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};

use super::credentials::{Credentials, CredentialsProvider, LookupError};
use super::url::SourceKey;
use crate::redact::hidden;
use crate::server_link::ServerLink;

/// The server's route; `{id}` is the repository's API id (the digest of its normalised URL).
pub const ROUTE: &str = "/internal/repositories/{id}/credentials";

/// The internal route's answer: the repository's normalised URL and its credentials.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InternalCredentials {
    /// The normalised URL, so that an operator never uses another repository's credentials.
    pub url: String,
    /// `none`, `basic` or `bearer` ([`Credentials::kind`]).
    pub auth: String,
    /// The user name of `basic` credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    /// The password of `basic` credentials or the token of `bearer` ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
}

impl fmt::Debug for InternalCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InternalCredentials")
            .field("url", &self.url)
            .field("auth", &self.auth)
            .field("username", &self.username)
            .field("secret", &hidden(&self.secret))
            .finish()
    }
}

impl InternalCredentials {
    /// The answer for the repository `url` registered with `credentials`.
    pub fn new(url: String, credentials: Option<Credentials>) -> Self {
        let credentials = credentials.unwrap_or_default();
        let auth = credentials.kind().to_string();
        let (username, secret) = match credentials {
            Credentials::Anonymous => (None, None),
            Credentials::Basic { username, password } => (Some(username), Some(password)),
            Credentials::Bearer { token } => (None, Some(token)),
        };
        Self {
            url,
            auth,
            username,
            secret,
        }
    }

    /// The credentials this answer gives `key`: `None` when it registers none, or when it is
    /// another repository's (two URLs with one id).
    pub fn credentials_for(self, key: &SourceKey) -> Result<Option<Credentials>, LookupError> {
        if self.url != key.as_str() {
            return Ok(None);
        }
        let missing = |field: &str| LookupError {
            repository: key.to_string(),
            reason: format!("the server's answer has no {field}"),
        };
        match self.auth.as_str() {
            "none" => Ok(None),
            "basic" => Ok(Some(Credentials::Basic {
                username: self.username.ok_or_else(|| missing("username"))?,
                password: self.secret.ok_or_else(|| missing("secret"))?,
            })),
            "bearer" => Ok(Some(Credentials::Bearer {
                token: self.secret.ok_or_else(|| missing("secret"))?,
            })),
            other => Err(LookupError {
                repository: key.to_string(),
                reason: format!("the server answered an unknown auth kind {other:?}"),
            }),
        }
    }
}

/// The [`CredentialsProvider`] of an operator-role process: the wardn server's registry, read
/// through [`ROUTE`] with the internal token.
#[derive(Debug)]
pub struct ServerCredentials {
    server: ServerLink,
}

impl ServerCredentials {
    /// Reads credentials from `server`.
    pub fn new(server: ServerLink) -> Self {
        Self { server }
    }

    async fn lookup(&self, key: &SourceKey) -> Result<Option<Credentials>, LookupError> {
        let failed = |reason: String| LookupError {
            repository: key.to_string(),
            reason,
        };
        let response = self
            .server
            .get(&ROUTE.replace("{id}", &key.digest()))
            .await
            .map_err(|e| failed(format!("the server could not be asked: {e}")))?;
        match response.status() {
            reqwest::StatusCode::NOT_FOUND => Ok(None),
            status if !status.is_success() => Err(failed(format!("server answered {status}"))),
            _ => response
                .json::<InternalCredentials>()
                .await
                .map_err(|e| failed(format!("unreadable answer from the server: {e}")))?
                .credentials_for(key),
        }
    }
}

impl CredentialsProvider for ServerCredentials {
    fn credentials<'a>(
        &'a self,
        key: &'a SourceKey,
    ) -> BoxFuture<'a, Result<Option<Credentials>, LookupError>> {
        Box::pin(self.lookup(key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::url::parse_repo_url;

    fn key(url: &str) -> SourceKey {
        parse_repo_url(url).unwrap().key
    }

    #[test]
    fn answers_read_back_as_the_credentials_they_carry() {
        let repo = key("https://git.example/org/app.git");
        for credentials in [
            None,
            Some(Credentials::Basic {
                username: "x-access-token".into(),
                password: "ghp-secret-1".into(),
            }),
            Some(Credentials::Bearer {
                token: "glpat-secret-2".into(),
            }),
        ] {
            let answer = InternalCredentials::new(repo.as_str().to_string(), credentials.clone());
            let wire = serde_json::to_string(&answer).unwrap();
            let read: InternalCredentials = serde_json::from_str(&wire).unwrap();
            assert_eq!(read.credentials_for(&repo).unwrap(), credentials, "{wire}");
            assert!(!format!("{answer:?}").contains("-secret"), "{answer:?}");
        }
    }

    /// Hostile: answers that are another repository's, incomplete or of an unknown kind give
    /// no credentials, or an error naming the repository, never a panic.
    #[test]
    fn foreign_or_broken_answers_give_no_credentials() {
        let repo = key("https://git.example/org/app");
        let other = InternalCredentials::new(
            "https://git.example/org/other".into(),
            Some(Credentials::Bearer { token: "t".into() }),
        );
        assert_eq!(other.credentials_for(&repo).unwrap(), None);
        let broken = [
            r#"{"url":"https://git.example/org/app","auth":"basic","secret":"pw"}"#,
            r#"{"url":"https://git.example/org/app","auth":"basic","username":"u"}"#,
            r#"{"url":"https://git.example/org/app","auth":"bearer"}"#,
            r#"{"url":"https://git.example/org/app","auth":"ntlm","secret":"pw"}"#,
        ];
        for text in broken {
            let answer: InternalCredentials = serde_json::from_str(text).unwrap();
            let err = answer.credentials_for(&repo).unwrap_err();
            assert!(err.to_string().contains("git.example/org/app"), "{err}");
            assert!(!err.to_string().contains("pw"), "{err}");
        }
    }
}
