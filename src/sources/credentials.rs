//! Credentials for fetching a repository over HTTPS.
//!
//! The registry stores them sealed (like kubeconfigs) and hands them to a mirror in the clear
//! only in memory. They are refused for any transport but `https://`, so a token can never leave
//! over plain HTTP, and `Debug` never prints a secret.

use std::fmt;

use futures_util::future::BoxFuture;

use super::url::{RepoUrl, Scheme, SourceKey};
use crate::redact::Hidden;

/// How a mirror authenticates to its remote.
#[derive(Clone, Default, PartialEq, Eq)]
pub enum Credentials {
    /// No authentication (public repositories, local paths, ssh keys of the daemon's user).
    #[default]
    Anonymous,
    /// HTTP basic authentication, answered when the server asks (e.g. a user and a personal
    /// access token; GitHub accepts `x-access-token` and a token).
    Basic {
        /// The user name.
        username: String,
        /// The password or token.
        password: String,
    },
    /// `Authorization: Bearer <token>` sent with every request.
    Bearer {
        /// The token.
        token: String,
    },
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Credentials::Anonymous => f.write_str("Anonymous"),
            Credentials::Basic { username, .. } => f
                .debug_struct("Basic")
                .field("username", username)
                .field("password", &Hidden)
                .finish(),
            Credentials::Bearer { .. } => f.debug_struct("Bearer").field("token", &Hidden).finish(),
        }
    }
}

/// Credentials were configured for a URL that would send them unencrypted or ignore them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{url}: credentials are only sent over https:// (refusing to send them over {scheme}); use an https URL or remove the credentials"
)]
pub struct InsecureCredentials {
    /// The repository URL.
    pub url: String,
    /// The transport that was refused.
    pub scheme: &'static str,
}

/// Registered secrets could not be read (store unavailable, key cannot unseal them).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot read the registered credentials of {repository}: {reason}")]
pub struct LookupError {
    /// The repository.
    pub repository: String,
    /// Why (never secret material).
    pub reason: String,
}

/// Where the secrets of registered repositories come from (the repository registry). The
/// poller asks before every fetch and the webhook before every check, so credentials added or
/// rotated take effect at the next poll or delivery without re-subscribing anything.
pub trait CredentialsProvider: Send + Sync {
    /// The credentials registered for `key`; `None` when the repository is not registered.
    fn credentials<'a>(
        &'a self,
        key: &'a SourceKey,
    ) -> BoxFuture<'a, Result<Option<Credentials>, LookupError>>;
}

impl Credentials {
    /// The authentication kind as the API names it: `none`, `basic` or `bearer`.
    pub fn kind(&self) -> &'static str {
        match self {
            Credentials::Anonymous => "none",
            Credentials::Basic { .. } => "basic",
            Credentials::Bearer { .. } => "bearer",
        }
    }

    /// Whether any secret is configured.
    pub fn is_anonymous(&self) -> bool {
        matches!(self, Credentials::Anonymous)
    }

    /// Refuses credentials for anything but `https://`.
    pub fn check_transport(&self, url: &RepoUrl) -> Result<(), InsecureCredentials> {
        if self.is_anonymous() || url.scheme == Scheme::Https {
            return Ok(());
        }
        let scheme = match url.scheme {
            Scheme::Http => "plain http://",
            Scheme::Ssh => "ssh (use the daemon's ssh keys)",
            Scheme::Git => "git://",
            Scheme::File => "a local path",
            Scheme::Https => "https://",
        };
        Err(InsecureCredentials {
            url: url.fetch_url.clone(),
            scheme,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::url::parse_repo_url;

    #[test]
    fn credentials_only_over_https_and_never_printed() {
        let basic = Credentials::Basic {
            username: "u".into(),
            password: "hunter2".into(),
        };
        let bearer = Credentials::Bearer {
            token: "tok123".into(),
        };
        let https = parse_repo_url("https://h/o/r").unwrap();
        let http = parse_repo_url("http://h/o/r").unwrap();
        assert!(basic.check_transport(&https).is_ok());
        let err = bearer.check_transport(&http).unwrap_err().to_string();
        assert!(err.contains("only sent over https"), "{err}");
        assert!(Credentials::Anonymous.check_transport(&http).is_ok());
        assert!(!format!("{basic:?}{bearer:?}").contains("hunter2"));
        assert!(!format!("{bearer:?}").contains("tok123"));
    }
}
