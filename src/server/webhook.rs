//! `POST /api/v1/webhooks/git`: the HTTP side of push webhooks. The request's signature is
//! checked and the poll triggered by `crate::sources::webhook`; this module maps the outcome to
//! a status code and a JSON answer.

use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::sources::poller::Poller;
use crate::sources::webhook::{MAX_BODY, ROUTE, WebhookOutcome, WebhookSecrets, handle_request};

/// State of the webhook route: the poller to trigger and the secrets to check.
#[derive(Clone)]
pub struct WebhookState {
    /// The scheduler.
    pub poller: Poller,
    /// The secrets.
    pub secrets: Arc<WebhookSecrets>,
}

/// The axum handler for `POST /api/v1/webhooks/git`.
pub async fn git_webhook(
    State(state): State<WebhookState>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let outcome = match handle_request(&state.poller, &state.secrets, &headers, &body).await {
        Ok(outcome) => outcome,
        Err(e) => {
            // Fail closed: without the registered secret the request cannot be checked.
            tracing::error!(error = %e, "webhook: cannot read the repository's secret");
            let json = serde_json::json!({"error": e.to_string()});
            return (StatusCode::SERVICE_UNAVAILABLE, Json(json)).into_response();
        }
    };
    let (status, json) = match &outcome {
        WebhookOutcome::Triggered { repository, .. } => {
            tracing::info!(repository = %repository, "webhook: poll triggered");
            (
                StatusCode::OK,
                serde_json::json!({"status": "triggered", "repository": repository}),
            )
        }
        WebhookOutcome::UnknownRepository => (
            StatusCode::ACCEPTED,
            serde_json::json!({"status": "ignored", "reason": "no App uses this repository"}),
        ),
        WebhookOutcome::Unauthorized(e) => {
            tracing::warn!(error = %e, "webhook: rejected");
            (
                StatusCode::UNAUTHORIZED,
                serde_json::json!({"error": e.to_string()}),
            )
        }
        WebhookOutcome::BadPayload(e) => (StatusCode::BAD_REQUEST, serde_json::json!({"error": e})),
    };
    (status, Json(json)).into_response()
}

/// A router with the webhook route (`POST /api/v1/webhooks/git`, 25 MB body limit), ready to
/// be merged into the server's router.
pub fn router(state: WebhookState) -> axum::Router {
    axum::Router::new()
        .route(ROUTE, axum::routing::post(git_webhook))
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .with_state(state)
}
