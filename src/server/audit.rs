//! `GET /api/v1/audit`: one page of the audit entries and the chain head, filtered by action,
//! actor and target; `GET /api/v1/audit/verify`: the chain verified where the audit key is.

use axum::Json;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use serde::Deserialize;

use super::AppState;
use super::error::ApiError;
use crate::store::audit::{Head, PageQuery};

/// `GET /api/v1/audit?limit=&before=SEQ&action=&actor=&target=` →
/// `{"entries": [...], "next_before": SEQ | null, "head": {seq, hash} | null}`: the newest
/// matching entries before `before`, oldest first (`limit` defaults to 100, at most 1000;
/// `action` ending in `.` matches as a prefix, the other filters exactly).
pub async fn list(
    State(state): State<AppState>,
    Query(query): Query<PageQuery>,
) -> Result<Json<serde_json::Value>, ApiError> {
    if query.limit.is_some_and(|limit| limit < 1) {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "limit: must be at least 1",
        ));
    }
    let page = state.store().audit_page(&query).await?;
    let head = state.store().audit_head();
    Ok(Json(serde_json::json!({
        "entries": page.entries,
        "next_before": page.next_before,
        "head": head,
    })))
}

/// The query of `GET /api/v1/audit/verify`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct VerifyQuery {
    /// A head recorded elsewhere, `SEQ:MAC`: the log must reach it with that MAC.
    pub expect_head: Option<String>,
}

/// `GET /api/v1/audit/verify?expect_head=SEQ:MAC` → `{"intact": true, "entries", "head",
/// "key"}` or `{"intact": false, "error", "first_bad_seq"}`: the MAC chain checked under the
/// server's audit key (the current one, else the previous one during a rotation).
pub async fn verify(
    State(state): State<AppState>,
    Query(query): Query<VerifyQuery>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let expect: Option<Head> = query
        .expect_head
        .as_deref()
        .map(str::parse)
        .transpose()
        .map_err(|err: crate::store::audit::HeadParseError| {
            ApiError::new(StatusCode::BAD_REQUEST, format!("expect_head: {err}"))
        })?;
    let result = state
        .store()
        .verify_audit_configured(expect.as_ref())
        .await?;
    Ok(Json(match result {
        Ok(verified) => serde_json::json!({
            "intact": true,
            "entries": verified.entries,
            "head": verified.head,
            "key": verified.key,
        }),
        Err(err) => serde_json::json!({
            "intact": false,
            "error": err.to_string(),
            "first_bad_seq": err.seq(),
        }),
    }))
}
