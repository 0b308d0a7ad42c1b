//! `GET /metrics`: the reconcile metrics in the Prometheus text format. Public, as Prometheus
//! scrapes without a session: it shows only aggregate numbers and cluster names.

use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;

use super::AppState;
use crate::reconcile::metrics::CONTENT_TYPE;

/// Renders the runner's metrics.
pub async fn scrape(State(state): State<AppState>) -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, CONTENT_TYPE)],
        state.runner().metrics_text(),
    )
}
