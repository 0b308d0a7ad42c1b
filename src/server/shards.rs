//! `GET /api/v1/shards` (viewer): the replicas of a sharded fleet as this replica sees them,
//! each with its Lease's expiry and the destination clusters (and how many Apps) it owns.
//! Unsharded, `{"sharded": false, "replicas": []}`. On a `--role server` process, which
//! reconciles nothing, `operators` lists the operators that report to it (sharded or not),
//! each with when it was last heard from and the clusters and Apps of its reports.

use axum::Json;
use axum::extract::State;
use serde_json::{Value, json};

use super::AppState;
use super::error::ApiError;
use crate::store::operator_apps::REPORTED_FOR_MS;

/// Lists the live replicas, their clusters and Lease expiry, and a server's operators.
pub async fn list(State(state): State<AppState>) -> Result<Json<Value>, ApiError> {
    let runner = state.runner();
    let me = runner.sharding().map(|m| m.replica_id().to_string());
    let replicas: Vec<Value> = runner
        .shards()
        .into_iter()
        .map(|entry| {
            json!({
                "replica": entry.replica,
                "lease_expires_at": crate::time::rfc3339(entry.lease_expires_at),
                "clusters": entry.clusters,
                "apps": entry.apps,
            })
        })
        .collect();
    let mut operators = Vec::new();
    if !state.reconciles_apps() {
        let since = jiff::Timestamp::now().as_millisecond() - REPORTED_FOR_MS;
        let mut shares = runner.operator_shares();
        for (operator, heard_ms) in state.store().operators_heard(since).await? {
            let share = shares.remove(&operator).unwrap_or_default();
            let heard = jiff::Timestamp::from_millisecond(heard_ms)
                .map(crate::time::rfc3339)
                .ok();
            operators.push(json!({
                "operator": operator,
                "reported_at": heard,
                "clusters": share.clusters,
                "apps": share.apps,
            }));
        }
    }
    Ok(Json(json!({
        "sharded": me.is_some(),
        "replica": me,
        "replicas": replicas,
        "operators": operators,
    })))
}
