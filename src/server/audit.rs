//! `GET /api/v1/audit`: the audit entries and the chain head, for display and verification.

use axum::Json;
use axum::extract::State;

use super::AppState;
use super::error::ApiError;

/// `GET /api/v1/audit` → `{"entries": [...], "head": {seq, hash} | null}`.
pub async fn list(State(state): State<AppState>) -> Result<Json<serde_json::Value>, ApiError> {
    let (entries, head) = state.store().audit_log().await?;
    Ok(Json(
        serde_json::json!({ "entries": entries, "head": head }),
    ))
}
