//! `GET /api/v1/shards` (viewer): the replicas of a sharded fleet as this replica sees them,
//! each with its Lease's expiry and the destination clusters (and how many Apps) it owns.
//! Unsharded, `{"sharded": false, "replicas": []}`.

use axum::Json;
use axum::extract::State;
use serde_json::{Value, json};

use super::AppState;

/// Lists the live replicas, their clusters and Lease expiry.
pub async fn list(State(state): State<AppState>) -> Json<Value> {
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
    Json(json!({
        "sharded": me.is_some(),
        "replica": me,
        "replicas": replicas,
    }))
}
