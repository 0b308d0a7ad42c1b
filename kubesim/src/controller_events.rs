//! The Events the simulated controllers record, as kube-controller-manager's event
//! recorders write them (core `v1` Events with `source.component`, seen by `kubectl
//! describe` and `kubectl get events`): `ScalingReplicaSet` on Deployments
//! (`Scaled up replica set web-… from 0 to 2`), `SuccessfulCreate`/`SuccessfulDelete` on the
//! owners of Pods (`Created pod: web-…-…`; StatefulSets word them `create Pod web-0 in
//! StatefulSet web successful`).

use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Value, json};

use crate::store::{EventType, Store};
use crate::util::{new_uid, now_rfc3339};

const EVENTS: &str = "/events";

/// Makes event names unique within one nanosecond tick.
static SEQUENCE: AtomicU64 = AtomicU64::new(0);

/// The controller that owns Pods of `kind`.
fn component(kind: &str) -> &'static str {
    match kind {
        "Deployment" => "deployment-controller",
        "ReplicaSet" => "replicaset-controller",
        "StatefulSet" => "statefulset-controller",
        "DaemonSet" => "daemonset-controller",
        "Job" => "job-controller",
        _ => "kube-controller-manager",
    }
}

/// Records one Normal Event about `object` with `reason` and `message`.
pub fn record(store: &mut Store, object: &Value, reason: &str, message: &str) {
    let meta = &object["metadata"];
    let name = meta["name"].as_str().unwrap_or_default();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let unique = nanos.wrapping_add(SEQUENCE.fetch_add(1, Ordering::Relaxed));
    let kind = object["kind"].as_str().unwrap_or_default();
    let source = component(kind);
    let now = now_rfc3339();
    let event = json!({
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": format!("{name}.{unique:x}"),
            "namespace": meta["namespace"],
            "uid": new_uid(),
            "creationTimestamp": now,
        },
        "involvedObject": {
            "apiVersion": object["apiVersion"],
            "kind": kind,
            "namespace": meta["namespace"],
            "name": name,
            "uid": meta["uid"],
            "resourceVersion": meta["resourceVersion"],
        },
        "reason": reason,
        "message": message,
        "source": {"component": source},
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
        "type": "Normal",
        "eventTime": null,
        "reportingComponent": source,
        "reportingInstance": "",
    });
    store.put(EVENTS, event, EventType::Added);
}

/// `ScalingReplicaSet` on `deployment` for a ReplicaSet scaled from `from` to `to`.
pub fn scaled_replica_set(store: &mut Store, deployment: &Value, rs: &str, from: i64, to: i64) {
    if from == to {
        return;
    }
    let direction = if to > from { "up" } else { "down" };
    record(
        store,
        deployment,
        "ScalingReplicaSet",
        &format!("Scaled {direction} replica set {rs} from {from} to {to}"),
    );
}

/// `SuccessfulCreate` (`created`) or `SuccessfulDelete` on `owner` for its Pod `pod`.
pub fn pod_changed(store: &mut Store, owner: &Value, pod: &str, created: bool) {
    let kind = owner["kind"].as_str().unwrap_or_default();
    let owner_name = owner["metadata"]["name"].as_str().unwrap_or_default();
    let (reason, message) = match (kind, created) {
        ("StatefulSet", true) => (
            "SuccessfulCreate",
            format!("create Pod {pod} in StatefulSet {owner_name} successful"),
        ),
        ("StatefulSet", false) => (
            "SuccessfulDelete",
            format!("delete Pod {pod} in StatefulSet {owner_name} successful"),
        ),
        (_, true) => ("SuccessfulCreate", format!("Created pod: {pod}")),
        (_, false) => ("SuccessfulDelete", format!("Deleted pod: {pod}")),
    };
    record(store, owner, reason, &message);
}
