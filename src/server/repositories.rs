//! Handlers of the repositories API (`/api/v1/repositories…`): Git credentials and webhook
//! secrets, sealed at rest, never answered back. `{id}` is the repository's short id
//! ([`crate::sources::repositories::repository_id`]).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};

use super::AppState;
use super::auth::Actor;
use super::body::JsonBody;
use super::error::ApiError;
use crate::sources::repositories::{AddRequest, RepositoryView, UpdateRequest};
use crate::sources::server_credentials::InternalCredentials;

/// `GET /api/v1/repositories` → `{"repositories": [...]}` (no secrets).
pub async fn list(State(state): State<AppState>) -> Result<Json<serde_json::Value>, ApiError> {
    let repositories = state.repositories().list().await?;
    Ok(Json(serde_json::json!({ "repositories": repositories })))
}

/// `POST /api/v1/repositories`: registers credentials and/or a webhook secret (201).
pub async fn create(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    JsonBody(body): JsonBody<AddRequest>,
) -> Result<Response, ApiError> {
    let view = state.repositories().add(&actor.0, body).await?;
    Ok((StatusCode::CREATED, Json(view)).into_response())
}

/// `GET /api/v1/repositories/{id}`.
pub async fn get(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<RepositoryView>, ApiError> {
    Ok(Json(state.repositories().get(&id).await?))
}

/// `PUT /api/v1/repositories/{id}`: rotates credentials or the webhook secret.
pub async fn update(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<UpdateRequest>,
) -> Result<Json<RepositoryView>, ApiError> {
    Ok(Json(
        state.repositories().update(&actor.0, &id, body).await?,
    ))
}

/// `DELETE /api/v1/repositories/{id}` (204).
pub async fn remove(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    state.repositories().remove(&actor.0, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `POST /api/v1/repositories/reseal`: rewrites every sealed secret under the current key.
pub async fn reseal(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let count = state.repositories().reseal(&actor.0).await?;
    Ok(Json(serde_json::json!({ "resealed": count })))
}

/// `GET /internal/repositories/{id}/credentials`: the registered credentials in the clear, for
/// operator-role processes (internal token only; 404 when the repository is not registered).
pub async fn internal_credentials(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<InternalCredentials>, ApiError> {
    let (url, credentials) = state.repositories().credentials_by_id(&id).await?;
    Ok(Json(InternalCredentials::new(url, credentials)))
}
