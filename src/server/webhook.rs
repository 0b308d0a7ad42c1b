//! `POST /api/v1/webhooks/git`: the HTTP side of push webhooks. The request's signature is
//! checked and the poll triggered by `crate::sources::webhook`; this module maps the outcome to
//! a status code and a JSON answer.
//!
//! What an unauthenticated sender can cost is bounded here: a request whose signature header
//! is missing or malformed, or that no configured secret could accept, is refused before its
//! body is read ([`refuse_unread`]); at most [`MAX_BODIES_IN_FLIGHT`] bodies (each at most
//! [`MAX_BODY`] bytes) are received at once, and a request that finds no slot within
//! [`BODY_WAIT`] gets 503 with `Retry-After`. A body is never held in memory whole: it
//! streams through the HMAC into a [`super::spool::Spool`] (memory up to
//! [`super::spool::SPOOL_MEMORY`], a temporary file beyond), refused as soon as it passes
//! [`MAX_BODY`], and dropped as soon as its answer is known.

use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::body::Body;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;
use tokio::sync::Semaphore;

use super::spool::{self, ReceiveError};
use crate::sources::poller::Poller;
use crate::sources::webhook::{
    MAX_BODY, PushTargets, ROUTE, WebhookOutcome, WebhookSecrets, handle_request, refuse_unread,
};

/// Webhook bodies received and checked at once (each up to [`MAX_BODY`], spooled).
pub const MAX_BODIES_IN_FLIGHT: usize = 4;
/// How long a delivery waits for a slot before it is refused with 503.
pub const BODY_WAIT: Duration = Duration::from_secs(10);

/// How long a delivery may take to send its body once it holds a slot.
pub const BODY_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// State of the webhook route: where pushes go, the secrets to check and the slots for
/// bodies in flight.
#[derive(Clone)]
pub struct WebhookState {
    /// The scheduler (also read for commit authors).
    pub poller: Poller,
    /// Where pushes go: the poller, or the runner of a sharded fleet ([`Self::with_targets`]).
    pub targets: Arc<dyn PushTargets>,
    /// The secrets.
    pub secrets: Arc<WebhookSecrets>,
    bodies: Arc<Semaphore>,
    /// Deliveries answered, by status code.
    deliveries: Family<CodeLabel, Counter>,
}

/// The `code` label of `wardn_webhook_deliveries_total`: the answer's HTTP status.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CodeLabel {
    code: u16,
}

impl WebhookState {
    /// State triggering `poller`, checking against `secrets`.
    pub fn new(poller: Poller, secrets: Arc<WebhookSecrets>) -> WebhookState {
        WebhookState {
            targets: Arc::new(poller.clone()),
            poller,
            secrets,
            bodies: Arc::new(Semaphore::new(MAX_BODIES_IN_FLIGHT)),
            deliveries: Family::default(),
        }
    }

    /// `wardn_webhook_deliveries_total{code}`: the deliveries this process answered, by HTTP
    /// status (200 polled or recorded, 202 no App uses the repository, 401 not signed, 503
    /// not passed on, …), in the Prometheus text format.
    pub fn metrics_text(&self) -> String {
        let mut registry = Registry::default();
        registry.register(
            "wardn_webhook_deliveries",
            "Git push webhook deliveries answered by this process, by HTTP status",
            self.deliveries.clone(),
        );
        crate::telemetry::prometheus_text(&[&registry])
    }

    /// Sends pushes to `targets` instead of the poller alone.
    pub fn with_targets(mut self, targets: Arc<dyn PushTargets>) -> WebhookState {
        self.targets = targets;
        self
    }
}

fn error(status: StatusCode, message: impl std::fmt::Display) -> Response {
    (
        status,
        Json(serde_json::json!({"error": message.to_string()})),
    )
        .into_response()
}

/// The axum handler for `POST /api/v1/webhooks/git`: [`answer`], counted by status code.
pub async fn git_webhook(
    State(state): State<WebhookState>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let response = answer(&state, headers, body).await;
    state
        .deliveries
        .get_or_create(&CodeLabel {
            code: response.status().as_u16(),
        })
        .inc();
    response
}

/// The answer to one delivery.
async fn answer(state: &WebhookState, headers: HeaderMap, body: Body) -> Response {
    if let Some(refused) = refuse_unread(&headers, &state.secrets) {
        tracing::warn!(error = %refused, "webhook: rejected before reading the body");
        return error(StatusCode::UNAUTHORIZED, refused);
    }
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|len| len > MAX_BODY as u64) {
        return error(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("webhook body larger than {MAX_BODY} bytes"),
        );
    }
    let Ok(Ok(_slot)) = tokio::time::timeout(BODY_WAIT, state.bodies.acquire()).await else {
        let busy = error(
            StatusCode::SERVICE_UNAVAILABLE,
            "too many webhook deliveries in progress",
        );
        return (
            [(header::RETRY_AFTER, BODY_WAIT.as_secs().to_string())],
            busy,
        )
            .into_response();
    };
    let received = spool::receive(body, MAX_BODY, state.secrets.server_secret());
    let body = match tokio::time::timeout(BODY_READ_TIMEOUT, received).await {
        Ok(Ok(body)) => body,
        Err(_) => {
            return error(
                StatusCode::REQUEST_TIMEOUT,
                format!(
                    "webhook body not received within {} s",
                    BODY_READ_TIMEOUT.as_secs()
                ),
            );
        }
        Ok(Err(e @ ReceiveError::Spool(_))) => {
            tracing::error!(error = %e, "webhook: cannot spool a body");
            return error(StatusCode::SERVICE_UNAVAILABLE, e);
        }
        Ok(Err(e)) => return error(StatusCode::PAYLOAD_TOO_LARGE, e),
    };
    tracing::debug!(
        bytes = body.len(),
        spilled = body.spilled(),
        "webhook: body received"
    );
    let outcome =
        match handle_request(state.targets.as_ref(), &state.secrets, &headers, &body).await {
            Ok(outcome) => outcome,
            Err(e) => {
                // Fail closed: without the registered secret (or the spooled body) the request
                // cannot be checked.
                tracing::error!(error = %e, "webhook: cannot check a delivery");
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
    drop(body);
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
