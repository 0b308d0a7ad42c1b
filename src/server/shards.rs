//! `GET /api/v1/shards` (viewer): the replicas of a sharded fleet as this replica sees them,
//! each with its Lease's expiry and the destination clusters (and how many Apps) it owns.
//! Unsharded, `{"sharded": false, "replicas": []}`. On a `--role server` process, which
//! reconciles nothing, `operators` lists the operators that report to it (sharded or not),
//! each with when it was last heard from, its Lease's expiry (sharded operators) and the
//! clusters and Apps of its reports; `replicas` lists its sharded operators' live Leases with
//! the clusters each claims, read from the management cluster (`lease_error` says why not
//! when they cannot be read).

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use serde_json::{Value, json};

use super::AppState;
use super::error::ApiError;
use crate::shard::Replica;
use crate::store::operator_apps::REPORTED_FOR_MS;

/// Lists the live replicas, their clusters and Lease expiry, and a server's operators.
pub async fn list(State(state): State<AppState>) -> Result<Json<Value>, ApiError> {
    let runner = state.runner();
    let me = runner.sharding().map(|m| m.replica_id().to_string());
    let mut replicas: Vec<Value> = runner
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
    let mut body = serde_json::Map::new();
    let mut operators = Vec::new();
    if !state.reconciles_apps() {
        let leases = match state.operator_leases() {
            Some(observer) => match observer.replicas().await {
                Ok(live) => live,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot list the operators' Leases");
                    body.insert("lease_error".into(), json!(e.to_string()));
                    Arc::default()
                }
            },
            None => Arc::default(),
        };
        let expiry: BTreeMap<&str, String> = leases
            .iter()
            .map(|r| (r.id.as_str(), crate::time::rfc3339(r.expires_at)))
            .collect();
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
                "lease_expires_at": expiry.get(operator.as_str()),
                "clusters": share.clusters,
                "apps": share.apps,
            }));
        }
        replicas = claimed(&leases, &runner.apps_per_cluster());
    }
    body.insert("sharded".into(), json!(me.is_some()));
    body.insert("replica".into(), json!(me));
    body.insert("replicas".into(), json!(replicas));
    body.insert("operators".into(), json!(operators));
    Ok(Json(Value::Object(body)))
}

/// The live Leases `leases` as `replicas` entries: each replica's Lease expiry, the clusters
/// it claims (sorted; none for a Lease without readable claims) and how many of the Apps
/// `apps` (by cluster) deploy to them.
fn claimed(leases: &[Replica], apps: &BTreeMap<String, usize>) -> Vec<Value> {
    leases
        .iter()
        .map(|replica| {
            let clusters: Vec<&String> = replica
                .claims
                .as_deref()
                .map(|claims| claims.keys().collect())
                .unwrap_or_default();
            let count: usize = clusters.iter().filter_map(|c| apps.get(*c)).sum();
            json!({
                "replica": replica.id,
                "lease_expires_at": crate::time::rfc3339(replica.expires_at),
                "clusters": clusters,
                "apps": count,
            })
        })
        .collect()
}
