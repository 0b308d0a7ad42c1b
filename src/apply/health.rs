//! Health: whether an applied object has rolled out (Deployment, StatefulSet, DaemonSet),
//! completed (Job), or reports a `Ready` condition; the wait for all of them, with a
//! timeout; and each object's health as read now (the API's `…/resources`).

use std::collections::HashMap;
use std::time::Duration;

use serde_json::Value;

use super::ApplyError;
use crate::app::HealthState;
use crate::object::ObjectRef;
use crate::object::kinds::Resolver;

/// The health of one object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Health {
    /// Ready (or a kind without a health notion).
    Healthy,
    /// Still rolling out; the message says what is missing.
    Progressing(String),
    /// Failed; the message says why.
    Degraded(String),
}

fn int(v: &Value, pointer: &str) -> i64 {
    v.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

fn condition<'a>(v: &'a Value, type_: &str) -> Option<&'a Value> {
    v.pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(type_))
}

fn condition_is(v: &Value, type_: &str, status: &str) -> bool {
    condition(v, type_)
        .and_then(|c| c.get("status"))
        .and_then(Value::as_str)
        == Some(status)
}

fn observed(v: &Value) -> bool {
    int(v, "/status/observedGeneration") >= int(v, "/metadata/generation")
}

/// Assesses one live object.
pub fn assess(object: &Value) -> Health {
    let kind = object.get("kind").and_then(Value::as_str).unwrap_or("");
    let desired = object
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    match kind {
        "Deployment" => {
            if condition(object, "Progressing")
                .and_then(|c| c.get("reason"))
                .and_then(Value::as_str)
                == Some("ProgressDeadlineExceeded")
            {
                return Health::Degraded("rollout exceeded its progress deadline".into());
            }
            let (updated, available) = (
                int(object, "/status/updatedReplicas"),
                int(object, "/status/availableReplicas"),
            );
            if observed(object) && updated >= desired && available >= desired {
                Health::Healthy
            } else {
                Health::Progressing(format!(
                    "{available}/{desired} replicas available, {updated} updated"
                ))
            }
        }
        "StatefulSet" => {
            let (ready, updated) = (
                int(object, "/status/readyReplicas"),
                int(object, "/status/updatedReplicas"),
            );
            if observed(object) && ready >= desired && updated >= desired {
                Health::Healthy
            } else {
                Health::Progressing(format!(
                    "{ready}/{desired} replicas ready, {updated} updated"
                ))
            }
        }
        "DaemonSet" => {
            let want = int(object, "/status/desiredNumberScheduled");
            let (ready, updated) = (
                int(object, "/status/numberReady"),
                int(object, "/status/updatedNumberScheduled"),
            );
            if observed(object)
                && ready >= want
                && updated >= want
                && object.pointer("/status/desiredNumberScheduled").is_some()
            {
                Health::Healthy
            } else {
                Health::Progressing(format!("{ready}/{want} pods ready, {updated} updated"))
            }
        }
        "Job" => {
            if condition_is(object, "Failed", "True") {
                Health::Degraded("job failed".into())
            } else if condition_is(object, "Complete", "True") {
                Health::Healthy
            } else {
                Health::Progressing("job not complete".into())
            }
        }
        _ => match condition(object, "Ready")
            .and_then(|c| c.get("status"))
            .and_then(Value::as_str)
        {
            Some("False") | Some("Unknown") => {
                Health::Progressing("Ready condition is not True".into())
            }
            _ => Health::Healthy,
        },
    }
}

/// One object as read from its cluster.
enum Live {
    /// The live object.
    Found(Value),
    /// The cluster does not serve its kind: nothing to assess (counted healthy).
    NoHealth,
    /// The cluster has no such object.
    Missing,
}

/// Reads `id` from the cluster.
async fn read(resolver: &mut Resolver, id: &ObjectRef) -> Result<Live, ApplyError> {
    let failed = ApplyError::about(id);
    let Some(resolved) = resolver
        .resolve(&id.api_version, &id.kind)
        .await
        .map_err(&failed)?
    else {
        return Ok(Live::NoHealth);
    };
    let api = resolver.api(&resolved, id.namespace.as_deref());
    let Some(live) = api.get_opt(&id.name).await.map_err(&failed)? else {
        return Ok(Live::Missing);
    };
    serde_json::to_value(live)
        .map(Live::Found)
        .map_err(|e| failed(kube::Error::SerdeError(e)))
}

/// The health of each of `objects` as read now, in order: `None` for an object the cluster
/// does not have (the UI's object tree shows each object's health).
pub async fn current(
    resolver: &mut Resolver,
    objects: &[ObjectRef],
) -> Result<Vec<Option<Health>>, ApplyError> {
    let mut found = Vec::with_capacity(objects.len());
    for id in objects {
        found.push(match read(resolver, id).await? {
            Live::Found(live) => Some(assess(&live)),
            Live::NoHealth => Some(Health::Healthy),
            Live::Missing => None,
        });
    }
    Ok(found)
}

/// Each of `objects` as the cluster holds it now, in order; objects it does not have (or
/// of kinds it does not serve) are left out.
pub async fn live(
    resolver: &mut Resolver,
    objects: &[ObjectRef],
) -> Result<Vec<Value>, ApplyError> {
    let mut found = Vec::new();
    for id in objects {
        if let Live::Found(live) = read(resolver, id).await? {
            found.push(live);
        }
    }
    Ok(found)
}

/// The outcome of waiting for health.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HealthReport {
    /// Healthy, or Degraded (a failure, or not ready before the timeout).
    pub state: HealthState,
    /// What is not healthy, empty when healthy.
    pub message: String,
}

/// The first pause between health checks: most objects are healthy moments after the apply
/// (ConfigMaps at once, quick rollouts within a second), so checks start fast and back off.
const FIRST_POLL: Duration = Duration::from_millis(50);

/// The pause after `current`: doubled, at most `poll`.
pub fn next_poll(current: Duration, poll: Duration) -> Duration {
    (current * 2).min(poll)
}

/// Polls `objects` until all are healthy, one is degraded, or `timeout` passes (→ Degraded,
/// naming what was still progressing). `seen` holds objects whose live state is already at
/// hand (the server's answers to the apply): they are assessed without a request first. An
/// object found healthy is not read again. Pauses start at 50 ms and double up to `poll`.
pub async fn wait(
    resolver: &mut Resolver,
    objects: &[ObjectRef],
    seen: &HashMap<ObjectRef, Value>,
    timeout: Duration,
    poll: Duration,
) -> Result<HealthReport, ApplyError> {
    let deadline = tokio::time::Instant::now() + timeout;
    let mut pause = FIRST_POLL.min(poll);
    let mut pending: Vec<&ObjectRef> = objects.iter().collect();
    let mut first = true;
    loop {
        let mut waiting = Vec::new();
        let mut still = Vec::new();
        for id in pending {
            let fetched;
            let live = match seen.get(id).filter(|_| first) {
                Some(live) => live,
                None => match read(resolver, id).await? {
                    Live::Found(live) => {
                        fetched = live;
                        &fetched
                    }
                    Live::NoHealth => continue,
                    Live::Missing => {
                        waiting.push(format!("{id}: not found"));
                        still.push(id);
                        continue;
                    }
                },
            };
            match assess(live) {
                Health::Healthy => {}
                Health::Progressing(why) => {
                    waiting.push(format!("{id}: {why}"));
                    still.push(id);
                }
                Health::Degraded(why) => {
                    return Ok(HealthReport {
                        state: HealthState::Degraded,
                        message: format!("{id}: {why}"),
                    });
                }
            }
        }
        if waiting.is_empty() {
            return Ok(HealthReport {
                state: HealthState::Healthy,
                message: String::new(),
            });
        }
        if tokio::time::Instant::now() >= deadline {
            return Ok(HealthReport {
                state: HealthState::Degraded,
                message: format!(
                    "not healthy after {}s: {}",
                    timeout.as_secs(),
                    waiting.join("; ")
                ),
            });
        }
        pending = still;
        first = false;
        tokio::time::sleep(pause).await;
        pause = next_poll(pause, poll);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn health_checks_start_fast_and_back_off_to_the_poll_interval() {
        let poll = Duration::from_secs(2);
        let mut pause = FIRST_POLL.min(poll);
        let mut pauses = vec![pause];
        for _ in 0..7 {
            pause = next_poll(pause, poll);
            pauses.push(pause);
        }
        let ms: Vec<u128> = pauses.iter().map(Duration::as_millis).collect();
        assert_eq!(ms, [50, 100, 200, 400, 800, 1600, 2000, 2000]);
        assert_eq!(
            next_poll(Duration::from_millis(10), Duration::from_millis(15)).as_millis(),
            15
        );
    }

    #[test]
    fn deployment_rollout() {
        let mut d = json!({"kind": "Deployment", "metadata": {"generation": 2}, "spec": {"replicas": 2},
            "status": {"observedGeneration": 1, "updatedReplicas": 2, "availableReplicas": 2}});
        assert!(
            matches!(assess(&d), Health::Progressing(_)),
            "old generation observed"
        );
        d["status"]["observedGeneration"] = json!(2);
        assert_eq!(assess(&d), Health::Healthy);
        d["status"]["availableReplicas"] = json!(1);
        assert_eq!(
            assess(&d),
            Health::Progressing("1/2 replicas available, 2 updated".into())
        );
        d["status"]["conditions"] = json!([{"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded"}]);
        assert!(matches!(assess(&d), Health::Degraded(_)));
    }

    #[test]
    fn statefulset_and_daemonset() {
        let s = json!({"kind": "StatefulSet", "spec": {"replicas": 3}, "status": {"readyReplicas": 3, "updatedReplicas": 3}});
        assert_eq!(assess(&s), Health::Healthy);
        let s = json!({"kind": "StatefulSet", "spec": {"replicas": 3}, "status": {"readyReplicas": 1, "updatedReplicas": 3}});
        assert!(matches!(assess(&s), Health::Progressing(_)));
        let ds = json!({"kind": "DaemonSet", "status": {"desiredNumberScheduled": 2, "numberReady": 2, "updatedNumberScheduled": 2}});
        assert_eq!(assess(&ds), Health::Healthy);
        assert!(matches!(
            assess(&json!({"kind": "DaemonSet"})),
            Health::Progressing(_)
        ));
    }

    #[test]
    fn jobs_and_ready_conditions() {
        let j = |t: &str| json!({"kind": "Job", "status": {"conditions": [{"type": t, "status": "True"}]}});
        assert_eq!(assess(&j("Complete")), Health::Healthy);
        assert!(matches!(assess(&j("Failed")), Health::Degraded(_)));
        assert!(matches!(
            assess(&json!({"kind": "Job"})),
            Health::Progressing(_)
        ));
        let cr = json!({"kind": "Widget", "status": {"conditions": [{"type": "Ready", "status": "False"}]}});
        assert!(matches!(assess(&cr), Health::Progressing(_)));
        assert_eq!(assess(&json!({"kind": "ConfigMap"})), Health::Healthy);
    }
}
