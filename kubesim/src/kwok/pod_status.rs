//! A simulated Pod's status: pending (ContainerCreating) before the ready delay, Running and
//! Ready (or Succeeded for Jobs) after it, with Pod IPs on the node's CIDR and container
//! statuses as containerd reports them.

use serde_json::{Value, json};

use crate::defaults;

use super::fields::str_at;
use super::images::{image_id, normalize_image};
use super::names::{fnv32a, sha256_hex};

/// A Pod IP on the node's pod CIDR, stable for the pod name.
fn pod_ip(node: &Value, pod_name: &str) -> String {
    let cidr = str_at(node, "/spec/podCIDR");
    let prefix = cidr.strip_suffix(".0/24").unwrap_or("10.244.0").to_string();
    let host = 2 + fnv32a(pod_name.as_bytes()) % 252;
    format!("{prefix}.{host}")
}

pub(super) fn pod_status(
    pod: &Value,
    node: Option<&Value>,
    ready: bool,
    succeeded: bool,
    now: &str,
) -> Value {
    let spec = pod.get("spec").cloned().unwrap_or_else(|| json!({}));
    let qos = defaults::qos_class(&spec);
    let Some(node) = node else {
        return json!({
            "conditions": [{"lastProbeTime": null, "lastTransitionTime": now,
                "message": "no nodes available to schedule pods", "reason": "Unschedulable",
                "status": "False", "type": "PodScheduled"}],
            "phase": "Pending",
            "qosClass": qos
        });
    };
    let pod_name = str_at(pod, "/metadata/name");
    let names: Vec<String> = spec
        .get("containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| str_at(c, "/name").to_string())
        .collect();
    let running = ready && !succeeded;
    let cond = |kind: &str, status: bool, reason: Option<&str>, message: Option<String>| {
        let mut c = json!({"lastProbeTime": null, "lastTransitionTime": now,
            "status": if status { "True" } else { "False" }, "type": kind});
        if let Some(reason) = reason {
            c["reason"] = json!(reason);
        }
        if let Some(message) = message {
            c["message"] = json!(message);
        }
        c
    };
    let not_ready_message = format!("containers with unready status: [{}]", names.join(" "));
    let conditions = if succeeded {
        json!([
            cond("PodReadyToStartContainers", false, None, None),
            cond("Initialized", true, Some("PodCompleted"), None),
            cond("Ready", false, Some("PodCompleted"), None),
            cond("ContainersReady", false, Some("PodCompleted"), None),
            cond("PodScheduled", true, None, None)
        ])
    } else if running {
        json!([
            cond("PodReadyToStartContainers", true, None, None),
            cond("Initialized", true, None, None),
            cond("Ready", true, None, None),
            cond("ContainersReady", true, None, None),
            cond("PodScheduled", true, None, None)
        ])
    } else {
        json!([
            cond("PodReadyToStartContainers", false, None, None),
            cond("Initialized", true, None, None),
            cond(
                "Ready",
                false,
                Some("ContainersNotReady"),
                Some(not_ready_message.clone())
            ),
            cond(
                "ContainersReady",
                false,
                Some("ContainersNotReady"),
                Some(not_ready_message)
            ),
            cond("PodScheduled", true, None, None)
        ])
    };
    let container_statuses: Vec<Value> = spec
        .get("containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|container| {
            let name = str_at(container, "/name");
            let image = str_at(container, "/image");
            let container_id = format!("containerd://{}", sha256_hex(&format!("{pod_name}/{name}")));
            let (state, started) = if succeeded {
                (json!({"terminated": {"containerID": container_id, "exitCode": 0, "finishedAt": now,
                    "reason": "Completed", "startedAt": now}}), false)
            } else if running {
                (json!({"running": {"startedAt": now}}), true)
            } else {
                (json!({"waiting": {"reason": "ContainerCreating"}}), false)
            };
            let mut status = json!({
                "image": normalize_image(image),
                "imageID": if running || succeeded { image_id(image) } else { String::new() },
                "lastState": {},
                "name": name,
                "ready": running,
                "restartCount": 0,
                "started": started,
                "state": state
            });
            if running || succeeded {
                status["containerID"] = json!(container_id);
            }
            if let Some(mounts) = container.get("volumeMounts").and_then(Value::as_array) {
                let mounts: Vec<Value> = mounts
                    .iter()
                    .map(|m| {
                        let mut mount = json!({"mountPath": str_at(m, "/mountPath"), "name": str_at(m, "/name")});
                        if m.get("readOnly").and_then(Value::as_bool) == Some(true) {
                            mount["readOnly"] = json!(true);
                            mount["recursiveReadOnly"] = json!("Disabled");
                        }
                        mount
                    })
                    .collect();
                status["volumeMounts"] = json!(mounts);
            }
            status
        })
        .collect();
    let host_ip = node
        .pointer("/status/addresses")
        .and_then(Value::as_array)
        .and_then(|addresses| {
            addresses
                .iter()
                .find(|a| str_at(a, "/type") == "InternalIP")
        })
        .map(|a| str_at(a, "/address").to_string())
        .unwrap_or_default();
    let ip = if spec.get("hostNetwork").and_then(Value::as_bool) == Some(true) {
        host_ip.clone()
    } else {
        pod_ip(node, pod_name)
    };
    let phase = if succeeded {
        "Succeeded"
    } else if running {
        "Running"
    } else {
        "Pending"
    };
    let mut status = json!({
        "conditions": conditions,
        "containerStatuses": container_statuses,
        "hostIP": host_ip,
        "hostIPs": [{"ip": host_ip}],
        "phase": phase,
        "qosClass": qos,
        "startTime": now
    });
    if running || succeeded {
        status["podIP"] = json!(ip);
        status["podIPs"] = json!([{"ip": ip}]);
    }
    status
}
