//! The endpoints controller: the Endpoints of a Service with a selector list the IPs of the
//! Pods it selects (Ready ones in `addresses`, others in `notReadyAddresses`, terminating
//! ones left out), with the Service's ports resolved against each Pod (a named `targetPort`
//! is looked up among the Pod's container ports), labelled like the Service.

use serde_json::{Map, Value, json};

/// Whether `pod`'s labels satisfy a Service's equality selector.
pub(super) fn selects(selector: &Map<String, Value>, pod: &Value) -> bool {
    let labels = pod.pointer("/metadata/labels").and_then(Value::as_object);
    selector
        .iter()
        .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v))
}

pub(super) fn ready(pod: &Value) -> bool {
    pod.pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Ready" && c["status"] == "True")
}

/// A Service port as an Endpoints port for `pod`; None when a named targetPort is not one
/// of the Pod's container ports.
pub(super) fn endpoint_port(port: &Value, pod: &Value) -> Option<Value> {
    let number = match port.get("targetPort") {
        Some(Value::Number(n)) => n.as_i64()?,
        Some(Value::String(name)) => pod
            .pointer("/spec/containers")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .flat_map(|c| {
                c.get("ports")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
            })
            .find(|p| p.get("name").and_then(Value::as_str) == Some(name))
            .and_then(|p| p.get("containerPort").and_then(Value::as_i64))?,
        _ => port.get("port").and_then(Value::as_i64)?,
    };
    let mut out = json!({
        "port": number,
        "protocol": port.get("protocol").and_then(Value::as_str).unwrap_or("TCP"),
    });
    if let Some(name) = port
        .get("name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
    {
        out["name"] = json!(name);
    }
    Some(out)
}

/// Whether `service` has endpoints its controllers keep (a selector, not ExternalName) and
/// they would list `pod` (its labels match the selector; IP and readiness aside).
pub fn service_selects(service: &Value, pod: &Value) -> bool {
    service
        .pointer("/spec/selector")
        .and_then(Value::as_object)
        .filter(|s| !s.is_empty())
        .is_some_and(|selector| {
            service.pointer("/spec/type").and_then(Value::as_str) != Some("ExternalName")
                && selects(selector, pod)
        })
}

/// What the endpoint controllers build from: a Service's metadata and ports, and the Pods it
/// selects that have an IP (terminating ones included), ordered by IP.
pub(super) struct Backends<'a> {
    /// The Service's `metadata`.
    pub meta: &'a Value,
    /// The Service's `spec.ports`.
    pub ports: Vec<Value>,
    /// The selected Pods with an IP, by IP.
    pub pods: Vec<&'a Value>,
}

/// The [`Backends`] of `service` among `pods` (its namespace's); None for a Service without a
/// selector or of type ExternalName, whose endpoints are the user's.
pub(super) fn backends<'a>(service: &'a Value, pods: &[&'a Value]) -> Option<Backends<'a>> {
    let selector = service
        .pointer("/spec/selector")
        .and_then(Value::as_object)
        .filter(|s| !s.is_empty())?;
    if service.pointer("/spec/type").and_then(Value::as_str) == Some("ExternalName") {
        return None;
    }
    let ports: Vec<Value> = service
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut selected: Vec<&Value> = pods
        .iter()
        .copied()
        .filter(|p| selects(selector, p))
        .filter(|p| {
            p.pointer("/status/podIP")
                .and_then(Value::as_str)
                .is_some_and(|ip| !ip.is_empty())
        })
        .collect();
    selected.sort_by_key(|p| {
        p.pointer("/status/podIP")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    });
    Some(Backends {
        meta: &service["metadata"],
        ports,
        pods: selected,
    })
}

/// The Endpoints the controller keeps for `service` given the Pods of its namespace (None:
/// a Service without a selector, whose Endpoints are the user's).
pub fn endpoints_for(service: &Value, pods: &[&Value]) -> Option<Value> {
    let Backends {
        meta,
        ports,
        pods: mut selected,
    } = backends(service, pods)?;
    selected.retain(|p| p.pointer("/metadata/deletionTimestamp").is_none());
    // one subset per distinct port set, as RepackSubsets groups them
    let mut subsets: Vec<(Vec<Value>, Vec<Value>, Vec<Value>)> = Vec::new();
    for pod in selected {
        let pod_ports: Vec<Value> = ports.iter().filter_map(|p| endpoint_port(p, pod)).collect();
        if pod_ports.is_empty() && !ports.is_empty() {
            continue;
        }
        let mut address = json!({
            "ip": pod["status"]["podIP"],
            "targetRef": {"kind": "Pod", "namespace": pod["metadata"]["namespace"],
                "name": pod["metadata"]["name"], "uid": pod["metadata"]["uid"]},
        });
        if let Some(node) = pod.pointer("/spec/nodeName").filter(|n| n.is_string()) {
            address["nodeName"] = node.clone();
        }
        let at = match subsets.iter().position(|(p, _, _)| *p == pod_ports) {
            Some(i) => i,
            None => {
                subsets.push((pod_ports, Vec::new(), Vec::new()));
                subsets.len() - 1
            }
        };
        if ready(pod) {
            subsets[at].1.push(address);
        } else {
            subsets[at].2.push(address);
        }
    }
    let mut endpoints = json!({
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {"name": meta["name"], "namespace": meta["namespace"]},
    });
    if let Some(labels) = meta.get("labels").filter(|l| l.is_object()) {
        endpoints["metadata"]["labels"] = labels.clone();
    }
    let subsets: Vec<Value> = subsets
        .into_iter()
        .map(|(ports, ready, not_ready)| {
            let mut s = json!({});
            if !ready.is_empty() {
                s["addresses"] = json!(ready);
            }
            if !not_ready.is_empty() {
                s["notReadyAddresses"] = json!(not_ready);
            }
            if !ports.is_empty() {
                s["ports"] = json!(ports);
            }
            s
        })
        .collect();
    if !subsets.is_empty() {
        endpoints["subsets"] = json!(subsets);
    }
    Some(endpoints)
}
