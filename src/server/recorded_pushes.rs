//! Push webhooks on a `--role server` process, which reconciles nothing: every authenticated
//! push is recorded in the store ([`RecordedPushes`], the webhook's targets) and the operators
//! read the recent ones from [`internal_pushes`] (`GET /internal/pushes`, internal token), then
//! poll the repositories they use (`crate::sources::server_pushes`). The server cannot know
//! which repositories the operators poll, so it records every repository a delivery's secret
//! vouches for: each one the payload names under the server secret (a forge names its https,
//! ssh and git URLs), the repository alone under its own secret.

use axum::Json;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use futures_util::future::BoxFuture;
use jiff::Timestamp;
use serde::Deserialize;

use super::AppState;
use super::error::ApiError;
use crate::sources::server_pushes::{InternalPush, InternalPushes, MAX_PUSHES_PER_ANSWER};
use crate::sources::url::SourceKey;
use crate::sources::webhook::{PushError, PushTargets};
use crate::store::Store;

/// The webhook's targets on a server-role process: the store, read by the operators.
pub struct RecordedPushes {
    store: Store,
}

impl RecordedPushes {
    /// Targets recording into `store`.
    pub fn new(store: Store) -> Self {
        Self { store }
    }
}

impl PushTargets for RecordedPushes {
    /// Every repository: the operators decide which they poll.
    fn uses(&self, _key: &SourceKey) -> bool {
        true
    }

    fn trigger<'a>(
        &'a self,
        key: &'a SourceKey,
        covered: &'a [SourceKey],
    ) -> BoxFuture<'a, Result<bool, PushError>> {
        // `covered` holds `key` and the other spellings its secret vouches for.
        let repositories: Vec<&str> = covered.iter().map(SourceKey::as_str).collect();
        Box::pin(async move {
            let now_ms = Timestamp::now().as_millisecond();
            self.store
                .record_push(&repositories, now_ms)
                .await
                .map_err(|e| PushError {
                    repository: key.clone(),
                    reason: format!("cannot record it for the operators: {e}"),
                })?;
            Ok(true)
        })
    }
}

/// The query of `GET /internal/pushes`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PushesQuery {
    /// Only the pushes received at or after this time (Unix milliseconds; 0 by default: every
    /// push still recorded, ten minutes' worth).
    pub since_ms: Option<i64>,
}

/// `GET /internal/pushes?since_ms=` → `{"pushes": [{repository, id, pushed_ms}]}`: the
/// repositories pushed to since `since_ms`, each with its latest push, oldest first, at most
/// [`MAX_PUSHES_PER_ANSWER`].
pub async fn internal_pushes(
    State(state): State<AppState>,
    Query(query): Query<PushesQuery>,
) -> Result<Json<InternalPushes>, ApiError> {
    let since_ms = query.since_ms.unwrap_or(0);
    if since_ms < 0 {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "since_ms: must be at least 0 (Unix milliseconds)",
        ));
    }
    let rows = state
        .store()
        .pushes_since(since_ms, MAX_PUSHES_PER_ANSWER as i64)
        .await?;
    let pushes = rows
        .into_iter()
        .map(|row| InternalPush {
            repository: row.repository,
            id: row.push_id,
            pushed_ms: row.pushed_ms,
        })
        .collect();
    Ok(Json(InternalPushes { pushes }))
}
