//! The Apps API: list and show the in-memory status of the Apps `wardn serve --apps` runs,
//! show a fresh plan, approve or reject a Held plan (audited), and ask for a manual sync.
//! Apps are addressed as `{cluster}/{name}`, `local` being the management cluster.

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use serde::Deserialize;
use serde_json::{Value, json};

use super::AppState;
use super::auth::Actor;
use super::error::ApiError;
use crate::app::{App, AppStatus};
use crate::clusters::registry::now_rfc3339;
use crate::reconcile::decide::Trigger;
use crate::runner::{Completed, Operation, OperationError};

impl From<OperationError> for ApiError {
    fn from(err: OperationError) -> ApiError {
        let status = match &err {
            OperationError::NotFound(_) => StatusCode::NOT_FOUND,
            OperationError::Task(_) => StatusCode::INTERNAL_SERVER_ERROR,
            OperationError::Stopped => StatusCode::SERVICE_UNAVAILABLE,
            OperationError::NotRendered(_) => StatusCode::CONFLICT,
            OperationError::Destination(_) => StatusCode::BAD_GATEWAY,
            OperationError::Reconcile(e) => {
                StatusCode::from_u16(e.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
            }
        };
        ApiError::new(status, err.to_string())
    }
}

/// Filters of `GET /api/v1/apps`.
#[derive(Debug, Deserialize)]
pub struct ListQuery {
    /// Only Apps deployed to this cluster segment (`local`: the management cluster).
    pub cluster: Option<String>,
    /// Only Apps in this phase (e.g. `Held`).
    pub phase: Option<String>,
}

/// Body of `POST …/approve`: the plan the approver reviewed (optional).
#[derive(Debug, Default, Deserialize)]
pub struct ApproveBody {
    /// The hash of the reviewed plan; the approval is refused (409) when it changed.
    pub plan_hash: Option<String>,
}

fn view(app: &App, status: &AppStatus) -> Value {
    json!({
        "name": app.metadata.name,
        "namespace": app.metadata.namespace,
        "cluster": app.spec.destination.cluster_segment(),
        "destinationNamespace": app.spec.destination.namespace,
        "phase": status.phase,
        "status": status,
    })
}

fn completed(done: Completed) -> Value {
    match done {
        Completed::Status(status) => json!({ "status": status }),
        Completed::Plan(plan) => json!({ "plan": plan, "text": plan.text() }),
    }
}

/// `GET /api/v1/apps[?cluster=&phase=]`; `errors` lists the problems of the `--apps`
/// directory (invalid files keep their previous Apps running).
pub async fn list(State(state): State<AppState>, Query(query): Query<ListQuery>) -> Json<Value> {
    let runner = state.runner();
    let apps: Vec<Value> = runner
        .apps()
        .iter()
        .map(|(key, app)| view(app, &runner.status(key).unwrap_or_default()))
        .filter(|v| query.cluster.as_deref().is_none_or(|c| v["cluster"] == c))
        .filter(|v| query.phase.as_deref().is_none_or(|p| v["phase"] == p))
        .collect();
    Json(json!({ "apps": apps, "errors": runner.file_errors() }))
}

/// The key of the App at `{cluster}/{name}`, or 404.
fn key(state: &AppState, cluster: &str, name: &str) -> Result<String, ApiError> {
    state
        .runner()
        .find(cluster, name)
        .ok_or_else(|| ApiError::new(StatusCode::NOT_FOUND, format!("no App {cluster}/{name}")))
}

/// `GET /api/v1/apps/{cluster}/{name}`.
pub async fn get(
    State(state): State<AppState>,
    Path((cluster, name)): Path<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    let key = key(&state, &cluster, &name)?;
    let runner = state.runner();
    let app = runner
        .app(&key)
        .ok_or_else(|| ApiError::new(StatusCode::NOT_FOUND, format!("no App {key}")))?;
    Ok(Json(view(&app, &runner.status(&key).unwrap_or_default())))
}

/// `GET /api/v1/apps/{cluster}/{name}/diff`: a fresh plan, without deciding or applying.
pub async fn diff(
    State(state): State<AppState>,
    Path((cluster, name)): Path<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    let key = key(&state, &cluster, &name)?;
    let done = state.runner().operate(&key, Operation::Plan).await?;
    Ok(Json(completed(done)))
}

/// `POST /api/v1/apps/{cluster}/{name}/approve` with optional `{"plan_hash"}`; audited as
/// `app.approve` with the actor and the plan hash.
pub async fn approve(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path((cluster, name)): Path<(String, String)>,
    body: Bytes,
) -> Result<Json<Value>, ApiError> {
    let key = key(&state, &cluster, &name)?;
    let body: ApproveBody = if body.iter().all(u8::is_ascii_whitespace) {
        ApproveBody::default()
    } else {
        serde_json::from_slice(&body)
            .map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, format!("request body: {e}")))?
    };
    let held = state.runner().status(&key).and_then(|s| s.plan_hash);
    let result = state
        .runner()
        .operate(&key, Operation::Approve(body.plan_hash.clone()))
        .await;
    let plan = body.plan_hash.or(held).unwrap_or_default();
    let outcome = match &result {
        Ok(_) => format!("success plan={plan}"),
        Err(e) => format!("refused plan={plan}: {e}"),
    };
    let target = format!("{cluster}/{name}");
    state
        .store()
        .record_audit(&actor.0, "app.approve", &target, &outcome, &now_rfc3339())
        .await;
    Ok(Json(completed(result?)))
}

/// `POST /api/v1/apps/{cluster}/{name}/reject`; audited as `app.reject` with the plan hash.
pub async fn reject(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path((cluster, name)): Path<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    let key = key(&state, &cluster, &name)?;
    let plan = state
        .runner()
        .status(&key)
        .and_then(|s| s.plan_hash)
        .unwrap_or_default();
    let result = state.runner().operate(&key, Operation::Reject).await;
    let outcome = match &result {
        Ok(_) => format!("success plan={plan}"),
        Err(e) => format!("refused plan={plan}: {e}"),
    };
    let target = format!("{cluster}/{name}");
    state
        .store()
        .record_audit(&actor.0, "app.reject", &target, &outcome, &now_rfc3339())
        .await;
    Ok(Json(completed(result?)))
}

/// `POST /api/v1/apps/{cluster}/{name}/sync`: a manual pass (sync windows still apply).
pub async fn sync(
    State(state): State<AppState>,
    Path((cluster, name)): Path<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    let key = key(&state, &cluster, &name)?;
    let trigger = Trigger::Manual {
        override_windows: false,
    };
    let done = state
        .runner()
        .operate(&key, Operation::Pass(trigger))
        .await?;
    Ok(Json(completed(done)))
}
