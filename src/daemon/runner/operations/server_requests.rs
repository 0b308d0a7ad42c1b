//! Operations handed to an operator through its server: a `--role server` process records an
//! approval, sync, diff or any other operation on an operator's App in the store's
//! `app_requests`, as between sharded replicas; the operator reads the open ones through
//! `GET /internal/app-requests`, claims one with `POST …/{id}/claim` (one claim wins) and
//! answers it with `PUT …/{id}/outcome`, all with the internal token.

use futures_util::future::BoxFuture;
use reqwest::Method;

use super::handover::{OpenRequest, Requests};
use crate::server_link::ServerLink;
use crate::store::Store;

/// The route listing the open requests.
pub const ROUTE: &str = "/internal/app-requests";
/// The route claiming request `{id}`.
pub const CLAIM_ROUTE: &str = "/internal/app-requests/{id}/claim";
/// The route answering request `{id}`.
pub const OUTCOME_ROUTE: &str = "/internal/app-requests/{id}/outcome";

/// The answer of [`ROUTE`].
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct OpenRequests {
    /// The requests no operator claimed yet, oldest first.
    pub requests: Vec<OpenRequest>,
}

/// The body of [`CLAIM_ROUTE`].
#[derive(Debug, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Claim {
    /// The claiming operator's replica id.
    pub replica: String,
}

/// The answer of [`CLAIM_ROUTE`].
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct Claimed {
    /// Whether this claim won (false: another operator's did).
    pub claimed: bool,
}

/// The body of [`OUTCOME_ROUTE`].
#[derive(Debug, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Finished {
    /// The outcome as the asker reads it (JSON text).
    pub outcome: String,
}

/// Whether `id` has the form of a request id (32 lowercase hex digits).
pub fn is_request_id(id: &str) -> bool {
    id.len() == 32 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The requests of the server behind a link.
pub struct ServerRequests {
    server: ServerLink,
}

impl ServerRequests {
    /// The requests of `server`.
    pub fn new(server: ServerLink) -> Self {
        Self { server }
    }
}

impl Requests for ServerRequests {
    fn open(&self) -> BoxFuture<'_, Result<Vec<OpenRequest>, String>> {
        Box::pin(async move {
            let open: OpenRequests = self
                .server
                .get_json(ROUTE)
                .await
                .map_err(|e| e.to_string())?;
            Ok(open.requests)
        })
    }

    fn claim<'a>(&'a self, id: &'a str, replica: &'a str) -> BoxFuture<'a, Result<bool, String>> {
        Box::pin(async move {
            let path = CLAIM_ROUTE.replace("{id}", id);
            let claim = Claim {
                replica: replica.to_string(),
            };
            let claimed: Claimed = self
                .server
                .exchange(Method::POST, &path, Some(&claim))
                .await
                .map_err(|e| e.to_string())?;
            Ok(claimed.claimed)
        })
    }

    fn finish<'a>(&'a self, id: &'a str, outcome: &'a str) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            let path = OUTCOME_ROUTE.replace("{id}", id);
            let finished = Finished {
                outcome: outcome.to_string(),
            };
            self.server
                .exchange::<_, serde::de::IgnoredAny>(Method::PUT, &path, Some(&finished))
                .await
                .map(|_| ())
                .map_err(|e| e.to_string())
        })
    }

    /// The server deletes its stale requests itself.
    fn sweep(&self, _age: std::time::Duration) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}

/// The server's side of [`ROUTE`]: the open requests of `store` (the server deletes the
/// stale ones as it follows the operators: [`crate::daemon::runner::Runner::follow_operators`]).
pub async fn open_requests(store: &Store) -> Result<OpenRequests, String> {
    Ok(OpenRequests {
        requests: Requests::open(store).await?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hostile: only a request id's own form is taken for one.
    #[test]
    fn only_request_ids_pass() {
        assert!(is_request_id("0123456789abcdef0123456789abcdef"));
        for bad in [
            "",
            "0123456789ABCDEF0123456789ABCDEF",
            "0123456789abcdef0123456789abcde",
            "0123456789abcdef0123456789abcdef0",
            "../../../../etc/passwd/aaaaaaaaaaa",
            "0123456789abcdef0123456789abcdeg",
        ] {
            assert!(!is_request_id(bad), "{bad}");
        }
    }
}
