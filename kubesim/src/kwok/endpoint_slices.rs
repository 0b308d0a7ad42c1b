//! The EndpointSlice controller: the EndpointSlices (`discovery.k8s.io/v1`) of a Service with
//! a selector list the Pods it selects with their IPv4 addresses and `ready`, `serving` and
//! `terminating` conditions (terminating Pods stay listed, not ready), one slice per distinct
//! set of resolved ports, labelled `kubernetes.io/service-name` and
//! `endpointslice.kubernetes.io/managed-by` on top of the Service's labels and owned by the
//! Service. A Service that selects nothing gets one placeholder slice with no endpoints.

use serde_json::{Map, Value, json};

use super::endpoints::{Backends, backends, endpoint_port, ready};
use super::fields::owner_reference;

/// The label naming a slice's Service.
pub const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";
/// The label naming the controller that manages a slice.
pub const MANAGED_BY_LABEL: &str = "endpointslice.kubernetes.io/managed-by";
/// The EndpointSlice controller's `managed-by` value.
pub const CONTROLLER: &str = "endpointslice-controller.k8s.io";

/// A Service port as an EndpointSlice port for `pod` (unnamed ports carry `name: ""`, as
/// the controller writes them).
fn slice_port(port: &Value, pod: &Value) -> Option<Value> {
    let mut p = endpoint_port(port, pod)?;
    if p.get("name").is_none() {
        p["name"] = json!("");
    }
    Some(p)
}

fn endpoint(pod: &Value) -> Value {
    let terminating = pod.pointer("/metadata/deletionTimestamp").is_some();
    let serving = ready(pod);
    let mut e = json!({
        "addresses": [pod["status"]["podIP"]],
        "conditions": {"ready": serving && !terminating, "serving": serving, "terminating": terminating},
        "targetRef": {"kind": "Pod", "namespace": pod["metadata"]["namespace"],
            "name": pod["metadata"]["name"], "uid": pod["metadata"]["uid"]},
    });
    if let Some(node) = pod.pointer("/spec/nodeName").filter(|n| n.is_string()) {
        e["nodeName"] = node.clone();
    }
    e
}

/// The slices the controller keeps for `service` given the Pods of its namespace, without
/// names (the caller keeps existing names and generates new ones); None for a Service
/// without a selector or of type ExternalName, whose slices are the user's.
pub fn endpoint_slices_for(service: &Value, pods: &[&Value]) -> Option<Vec<Value>> {
    let Backends {
        meta,
        ports,
        pods: selected,
    } = backends(service, pods)?;
    let mut groups: Vec<(Vec<Value>, Vec<Value>)> = Vec::new();
    for pod in selected {
        let pod_ports: Vec<Value> = ports.iter().filter_map(|p| slice_port(p, pod)).collect();
        if pod_ports.is_empty() && !ports.is_empty() {
            continue;
        }
        match groups.iter_mut().find(|(p, _)| *p == pod_ports) {
            Some((_, endpoints)) => endpoints.push(endpoint(pod)),
            None => groups.push((pod_ports, vec![endpoint(pod)])),
        }
    }
    let mut labels: Map<String, Value> = meta
        .get("labels")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    labels.insert(SERVICE_NAME_LABEL.into(), meta["name"].clone());
    labels.insert(MANAGED_BY_LABEL.into(), json!(CONTROLLER));
    let slice = |ports: Option<Vec<Value>>, endpoints: Value| {
        let mut s = json!({
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {
                "namespace": meta["namespace"],
                "generateName": format!("{}-", meta["name"].as_str().unwrap_or_default()),
                "labels": labels,
                "ownerReferences": [owner_reference(service)],
            },
            "addressType": "IPv4",
            "endpoints": endpoints,
        });
        if let Some(ports) = ports {
            s["ports"] = json!(ports);
        }
        s
    };
    if groups.is_empty() {
        return Some(vec![slice(None, Value::Null)]);
    }
    Some(
        groups
            .into_iter()
            .map(|(ports, endpoints)| slice(Some(ports), json!(endpoints)))
            .collect(),
    )
}
