//! Workload status as the real controllers write it for Deployments, StatefulSets,
//! DaemonSets, ReplicaSets and Jobs, including the Deployment conditions Available and
//! Progressing with their real reasons and messages.

use serde_json::{Map, Value, json};

use super::deployments::{fenceposts, replica_set_name};
use super::fields::{generation, int_at, str_at};
use super::names::template_hash;

/// A condition that keeps its previous `lastTransitionTime` when its status did not change
/// (and, with `update_time`, its `lastUpdateTime` when nothing changed), as controllers do.
fn condition(
    previous: &Value,
    kind: &str,
    status: &str,
    reason: &str,
    message: &str,
    now: &str,
    update_time: bool,
) -> Value {
    let old = previous
        .pointer("/conditions")
        .and_then(Value::as_array)
        .and_then(|conditions| {
            conditions
                .iter()
                .find(|c| c.get("type").and_then(Value::as_str) == Some(kind))
        });
    let same_status = old.is_some_and(|c| str_at(c, "/status") == status);
    let unchanged = same_status
        && old.is_some_and(|c| str_at(c, "/reason") == reason && str_at(c, "/message") == message);
    let keep = |field: &str, keep: bool| {
        old.filter(|_| keep)
            .and_then(|c| c.get(field))
            .filter(|t| t.is_string())
            .cloned()
            .unwrap_or_else(|| json!(now))
    };
    let mut condition = Map::new();
    if update_time {
        condition.insert(
            "lastTransitionTime".into(),
            keep("lastTransitionTime", same_status),
        );
        condition.insert("lastUpdateTime".into(), keep("lastUpdateTime", unchanged));
    } else {
        condition.insert(
            "lastTransitionTime".into(),
            keep("lastTransitionTime", same_status),
        );
    }
    condition.insert("message".into(), json!(message));
    condition.insert("reason".into(), json!(reason));
    condition.insert("status".into(), json!(status));
    condition.insert("type".into(), json!(kind));
    Value::Object(condition)
}

/// Inserts `key: value` unless the value is 0 (the controllers' omitempty counters).
fn counter(status: &mut Map<String, Value>, key: &str, value: i64) {
    if value != 0 {
        status.insert(key.into(), json!(value));
    }
}

/// The status the real controller writes for a workload, given whether its ready delay has
/// elapsed since its last generation change (`ready`), the number of nodes (DaemonSets run
/// one Pod per node) and the current time (RFC 3339, for conditions). The previous status
/// (in `object`) keeps unchanged conditions' times. Kinds other than Deployment,
/// StatefulSet, DaemonSet, ReplicaSet and Job get None.
pub fn workload_status(object: &Value, ready: bool, node_count: usize, now: &str) -> Option<Value> {
    let kind = str_at(object, "/kind");
    let previous = object.get("status").cloned().unwrap_or_else(|| json!({}));
    let generation = generation(object);
    let replicas = int_at(object, "/spec/replicas", 1);
    let ready_count = if ready { replicas } else { 0 };
    let mut status = Map::new();
    match kind {
        "Deployment" => {
            let (_, max_unavailable) = fenceposts(object, replicas);
            counter(&mut status, "availableReplicas", ready_count);
            let available = ready_count >= replicas.saturating_sub(max_unavailable);
            let rs = replica_set_name(object);
            let available_condition = if available {
                condition(
                    &previous,
                    "Available",
                    "True",
                    "MinimumReplicasAvailable",
                    "Deployment has minimum availability.",
                    now,
                    true,
                )
            } else {
                condition(
                    &previous,
                    "Available",
                    "False",
                    "MinimumReplicasUnavailable",
                    "Deployment does not have minimum availability.",
                    now,
                    true,
                )
            };
            let progressing =
                if object.pointer("/spec/paused").and_then(Value::as_bool) == Some(true) {
                    condition(
                        &previous,
                        "Progressing",
                        "Unknown",
                        "DeploymentPaused",
                        "Deployment is paused",
                        now,
                        true,
                    )
                } else if ready {
                    condition(
                        &previous,
                        "Progressing",
                        "True",
                        "NewReplicaSetAvailable",
                        &format!("ReplicaSet {rs:?} has successfully progressed."),
                        now,
                        true,
                    )
                } else {
                    condition(
                        &previous,
                        "Progressing",
                        "True",
                        "ReplicaSetUpdated",
                        &format!("ReplicaSet {rs:?} is progressing."),
                        now,
                        true,
                    )
                };
            status.insert(
                "conditions".into(),
                json!([available_condition, progressing]),
            );
            status.insert("observedGeneration".into(), json!(generation));
            counter(&mut status, "readyReplicas", ready_count);
            counter(&mut status, "replicas", replicas);
            counter(&mut status, "unavailableReplicas", replicas - ready_count);
            counter(&mut status, "updatedReplicas", replicas);
            if let Some(collisions) = previous.get("collisionCount") {
                status.insert("collisionCount".into(), collisions.clone());
            }
        }
        "StatefulSet" => {
            let revision = format!(
                "{}-{}",
                str_at(object, "/metadata/name"),
                template_hash(object.pointer("/spec/template").unwrap_or(&Value::Null), 0)
            );
            status.insert("availableReplicas".into(), json!(ready_count));
            status.insert(
                "collisionCount".into(),
                json!(int_at(&previous, "/collisionCount", 0)),
            );
            counter(&mut status, "currentReplicas", replicas);
            status.insert("currentRevision".into(), json!(revision));
            status.insert("observedGeneration".into(), json!(generation));
            counter(&mut status, "readyReplicas", ready_count);
            status.insert("replicas".into(), json!(replicas));
            status.insert("updateRevision".into(), json!(revision));
            counter(&mut status, "updatedReplicas", replicas);
        }
        "DaemonSet" => {
            let desired = i64::try_from(node_count).unwrap_or(i64::MAX);
            let ready_pods = if ready { desired } else { 0 };
            status.insert("currentNumberScheduled".into(), json!(desired));
            status.insert("desiredNumberScheduled".into(), json!(desired));
            counter(&mut status, "numberAvailable", ready_pods);
            status.insert("numberMisscheduled".into(), json!(0));
            status.insert("numberReady".into(), json!(ready_pods));
            counter(&mut status, "numberUnavailable", desired - ready_pods);
            status.insert("observedGeneration".into(), json!(generation));
            counter(&mut status, "updatedNumberScheduled", desired);
        }
        "ReplicaSet" => {
            counter(&mut status, "availableReplicas", ready_count);
            counter(&mut status, "fullyLabeledReplicas", replicas);
            status.insert("observedGeneration".into(), json!(generation));
            counter(&mut status, "readyReplicas", ready_count);
            status.insert("replicas".into(), json!(replicas));
        }
        "Job" => return Some(job_status(object, &previous, ready, now)),
        _ => return None,
    }
    Some(Value::Object(status))
}

/// The completions a Job waits for and the Pods it runs at once.
pub(super) fn job_counts(job: &Value) -> (i64, i64) {
    let parallelism = int_at(job, "/spec/parallelism", 1);
    let completions = int_at(job, "/spec/completions", 1);
    (completions, parallelism.min(completions).max(0))
}

/// A Job's status: suspended, running (`active` Pods, ready once the delay elapsed) or, once
/// the delay elapsed, complete with the `SuccessCriteriaMet` and `Complete` conditions the
/// v1.32 job controller writes.
fn job_status(job: &Value, previous: &Value, ready: bool, now: &str) -> Value {
    let start = previous
        .get("startTime")
        .cloned()
        .unwrap_or_else(|| json!(now));
    let (completions, active) = job_counts(job);
    if job.pointer("/spec/suspend").and_then(Value::as_bool) == Some(true) {
        let suspended = condition(
            previous,
            "Suspended",
            "True",
            "JobSuspended",
            "Job suspended",
            now,
            false,
        );
        let mut suspended = suspended;
        suspended["lastProbeTime"] = json!(now);
        return json!({"conditions": [suspended], "ready": 0, "terminating": 0, "uncountedTerminatedPods": {}});
    }
    if !ready {
        let mut status = Map::new();
        counter(&mut status, "active", active);
        status.insert("ready".into(), json!(0));
        status.insert("startTime".into(), start);
        status.insert("terminating".into(), json!(0));
        status.insert("uncountedTerminatedPods".into(), json!({}));
        return Value::Object(status);
    }
    let completed = |kind: &str| {
        let mut c = condition(
            previous,
            kind,
            "True",
            "CompletionsReached",
            "Reached expected number of succeeded pods",
            now,
            false,
        );
        c["lastProbeTime"] = json!(now);
        c
    };
    let completion_time = previous
        .get("completionTime")
        .cloned()
        .unwrap_or_else(|| json!(now));
    let mut status = json!({
        "completionTime": completion_time,
        "conditions": [completed("SuccessCriteriaMet"), completed("Complete")],
        "ready": 0,
        "startTime": start,
        "succeeded": completions,
        "terminating": 0,
        "uncountedTerminatedPods": {}
    });
    if str_at(job, "/spec/completionMode") == "Indexed" && completions >= 1 {
        let indexes = if completions == 1 {
            "0".to_string()
        } else {
            format!("0-{}", completions - 1)
        };
        status["completedIndexes"] = json!(indexes);
    }
    status
}
