//! Handlers of the clusters API (`/api/v1/clusters…`) and the internal kubeconfig endpoint.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};

use super::AppState;
use super::auth::Actor;
use super::body::JsonBody;
use super::error::ApiError;
use crate::clusters::access::{CheckReport, CheckRequest};
use crate::clusters::registry::{
    ClusterView, RegisterRequest, ResolvedCluster, TestRequest, UpdateRequest,
};
use crate::clusters::status::Status;

/// `GET /api/v1/clusters` (with `declarationErrors` when declarations of the `--clusters` file
/// could not be applied): every cluster with its cached status (never waits on a cluster).
pub async fn list(State(state): State<AppState>) -> Result<Json<serde_json::Value>, ApiError> {
    let clusters = state.registry().list().await?;
    let problems = state.registry().declaration_problems();
    Ok(Json(if problems.is_empty() {
        serde_json::json!({ "clusters": clusters })
    } else {
        serde_json::json!({ "clusters": clusters, "declarationErrors": problems })
    }))
}

/// `POST /api/v1/clusters`: registers a cluster and probes it in the background.
pub async fn create(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    JsonBody(body): JsonBody<RegisterRequest>,
) -> Result<Response, ApiError> {
    let view = state.registry().register(&actor.0, body).await?;
    probe_soon(state.registry(), &view.name);
    Ok((StatusCode::CREATED, Json(view)).into_response())
}

/// `GET /api/v1/clusters/{name}`.
pub async fn get(
    State(state): State<AppState>,
    Path(name): Path<String>,
) -> Result<Json<ClusterView>, ApiError> {
    Ok(Json(state.registry().get(&name).await?))
}

/// `PUT /api/v1/clusters/{name}`: updates fields given, drops the cached client, re-probes.
pub async fn update(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(name): Path<String>,
    JsonBody(body): JsonBody<UpdateRequest>,
) -> Result<Json<ClusterView>, ApiError> {
    let view = state.registry().update(&actor.0, &name, body).await?;
    probe_soon(state.registry(), &view.name);
    Ok(Json(view))
}

/// `DELETE /api/v1/clusters/{name}`.
pub async fn remove(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(name): Path<String>,
) -> Result<StatusCode, ApiError> {
    state.registry().remove(&actor.0, &name).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `POST /api/v1/clusters/test`: connects with the given kubeconfig, stores nothing.
pub async fn test(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    JsonBody(body): JsonBody<TestRequest>,
) -> Result<Json<Status>, ApiError> {
    Ok(Json(state.registry().test(&actor.0, body).await?))
}

/// `POST /api/v1/clusters/reseal`: rewrites every sealed kubeconfig under the current key,
/// then re-chains the audit log under the current key if it is still under the previous one
/// (audited as `audit.rechain`; a chain that does not verify is left alone: 409).
pub async fn reseal(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let count = state.registry().reseal(&actor.0).await?;
    let rechained = state.store().rechain_audit(&actor.0).await?;
    Ok(Json(
        serde_json::json!({ "resealed": count, "audit_rechained": rechained }),
    ))
}

/// `POST /api/v1/clusters/{name}/check`: access reviews with the stored credentials.
pub async fn check(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(name): Path<String>,
    JsonBody(body): JsonBody<CheckRequest>,
) -> Result<Json<CheckReport>, ApiError> {
    Ok(Json(
        state.registry().check_access(&actor.0, &name, body).await?,
    ))
}

/// `GET /internal/clusters/{name}/kubeconfig`: the unsealed kubeconfig and allowlist, for the
/// operator role (internal token only).
pub async fn internal_kubeconfig(
    State(state): State<AppState>,
    Path(name): Path<String>,
) -> Result<Json<ResolvedCluster>, ApiError> {
    Ok(Json(state.registry().resolve(&name).await?))
}

fn probe_soon(registry: &Arc<crate::clusters::registry::Registry>, name: &str) {
    let registry = Arc::clone(registry);
    let name = name.to_string();
    tokio::spawn(async move {
        registry.probe(&name).await;
    });
}
