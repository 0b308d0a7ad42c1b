//! kube-apiserver's printers for HorizontalPodAutoscalers (`printHorizontalPodAutoscaler`:
//! Reference, Targets, MinPods, MaxPods, Replicas; whichever version is addressed),
//! EndpointSlices (`printEndpointSlice`: AddressType, Ports, Endpoints) and APIServices
//! (the aggregator's printer: Service, Available).

use serde_json::{Value, json};

use crate::resources::ResourceInfo;

/// A column: header, OpenAPI type, priority.
type Column = (&'static str, &'static str, i64);

/// The columns after Name, or None when `info` is neither kind.
pub fn columns(info: &ResourceInfo) -> Option<Vec<Column>> {
    Some(match (info.group.as_str(), info.kind.as_str()) {
        ("autoscaling", "HorizontalPodAutoscaler") => vec![
            ("Reference", "string", 0),
            ("Targets", "string", 0),
            ("MinPods", "string", 0),
            ("MaxPods", "integer", 0),
            ("Replicas", "integer", 0),
            ("Age", "string", 0),
        ],
        ("apiregistration.k8s.io", "APIService") => vec![
            ("Service", "string", 0),
            ("Available", "string", 0),
            ("Age", "string", 0),
        ],
        ("discovery.k8s.io", "EndpointSlice") => vec![
            ("AddressType", "string", 0),
            ("Ports", "string", 0),
            ("Endpoints", "string", 0),
            ("Age", "string", 0),
        ],
        _ => return None,
    })
}

fn text(v: &Value, pointer: &str) -> String {
    match v.pointer(pointer) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => String::new(),
    }
}

fn list<'a>(v: &'a Value, pointer: &str) -> &'a [Value] {
    v.pointer(pointer)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// `current/target` of one metric (formatHPAMetrics), `status` the metric's status if any.
fn metric(spec: &Value, status: Option<&Value>) -> String {
    let kind = text(spec, "/type");
    let key = match kind.as_str() {
        "Resource" => "resource",
        "ContainerResource" => "containerResource",
        "Pods" => "pods",
        "Object" => "object",
        "External" => "external",
        _ => return "<unknown type>".into(),
    };
    let source = &spec[key];
    let current = |field: &str| {
        status
            .map(|s| text(s, &format!("/{key}/current/{field}")))
            .filter(|c| !c.is_empty())
            .unwrap_or_else(|| "<unknown>".into())
    };
    let target = |field: &str| text(source, &format!("/target/{field}"));
    let average = source.pointer("/target/averageValue").is_some();
    match key {
        "resource" | "containerResource" => {
            let name = text(source, "/name");
            if average {
                format!(
                    "{name}: {}/{}",
                    current("averageValue"),
                    target("averageValue")
                )
            } else {
                let now = status
                    .and_then(|s| s.pointer(&format!("/{key}/current/averageUtilization")))
                    .and_then(Value::as_i64)
                    .map_or("<unknown>".to_string(), |u| format!("{u}%"));
                let goal = source
                    .pointer("/target/averageUtilization")
                    .and_then(Value::as_i64)
                    .map_or("<auto>".to_string(), |u| format!("{u}%"));
                format!("{name}: {now}/{goal}")
            }
        }
        "pods" => format!("{}/{}", current("averageValue"), target("averageValue")),
        _ if average => format!(
            "{}/{} (avg)",
            current("averageValue"),
            target("averageValue")
        ),
        _ => format!("{}/{}", current("value"), target("value")),
    }
}

/// The Targets cell: at most two metrics, then `+ N more...`.
fn targets(hpa: &Value) -> String {
    let specs = list(hpa, "/spec/metrics");
    if specs.is_empty() {
        return "<none>".into();
    }
    let statuses = list(hpa, "/status/currentMetrics");
    let shown: Vec<String> = specs
        .iter()
        .enumerate()
        .take(2)
        .map(|(i, m)| metric(m, statuses.get(i)))
        .collect();
    let text = shown.join(", ");
    match specs.len() {
        n if n > 2 => format!("{text} + {} more...", n - 2),
        _ => text,
    }
}

/// The Ports and Endpoints cells of a slice (formatDiscoveryPorts/Endpoints).
fn slice_cells(slice: &Value) -> (String, String) {
    let cap = |items: Vec<String>| match items.len() {
        0 => "<unset>".to_string(),
        n if n > 3 => format!("{} + {} more...", items[..3].join(","), n - 3),
        _ => items.join(","),
    };
    let ports = list(slice, "/ports")
        .iter()
        .map(|p| text(p, "/port"))
        .collect();
    let addresses = list(slice, "/endpoints")
        .iter()
        .flat_map(|e| list(e, "/addresses").iter().filter_map(Value::as_str))
        .map(String::from)
        .collect();
    (cap(ports), cap(addresses))
}

/// An APIService's Service (`Local` or `namespace/name`) and Available (`True`, or the
/// status with its reason in parentheses) cells.
fn api_service_cells(obj: &Value, age: Value) -> Vec<Value> {
    let service = match obj.pointer("/spec/service").filter(|s| !s.is_null()) {
        Some(s) => format!("{}/{}", text(s, "/namespace"), text(s, "/name")),
        None => "Local".into(),
    };
    let available = list(obj, "/status/conditions")
        .iter()
        .find(|c| text(c, "/type") == "Available")
        .map_or("Unknown".to_string(), |c| {
            match text(c, "/status").as_str() {
                "True" => "True".into(),
                other => format!("{other} ({})", text(c, "/reason")),
            }
        });
    vec![json!(service), json!(available), age]
}

/// The cells after Name (Age given), for an object of a kind [`columns`] knows.
pub fn cells(info: &ResourceInfo, obj: &Value, age: Value) -> Vec<Value> {
    if info.kind == "APIService" {
        return api_service_cells(obj, age);
    }
    if info.kind == "EndpointSlice" {
        let (ports, endpoints) = slice_cells(obj);
        return vec![
            json!(text(obj, "/addressType")),
            json!(ports),
            json!(endpoints),
            age,
        ];
    }
    let hpa = if info.version == "v1" {
        crate::hpa_versions::to_v2(obj)
    } else {
        obj.clone()
    };
    let min = match hpa.pointer("/spec/minReplicas").and_then(Value::as_i64) {
        Some(n) => n.to_string(),
        None => "<unset>".into(),
    };
    vec![
        json!(format!(
            "{}/{}",
            text(&hpa, "/spec/scaleTargetRef/kind"),
            text(&hpa, "/spec/scaleTargetRef/name")
        )),
        json!(targets(&hpa)),
        json!(min),
        json!(
            hpa.pointer("/spec/maxReplicas")
                .and_then(Value::as_i64)
                .unwrap_or(0)
        ),
        json!(
            hpa.pointer("/status/currentReplicas")
                .and_then(Value::as_i64)
                .unwrap_or(0)
        ),
        age,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hpa_targets_print_as_kubectl_shows_them() {
        let hpa = json!({"spec": {"metrics": [
            {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}}},
            {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "1Gi"}}},
            {"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "10"}}}]},
            "status": {"currentMetrics": [{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 42}}}]}});
        assert_eq!(
            targets(&hpa),
            "cpu: 42%/60%, memory: <unknown>/1Gi + 1 more..."
        );
        assert_eq!(targets(&json!({"spec": {}})), "<none>");
    }

    #[test]
    fn slices_print_ports_and_addresses() {
        let slice = json!({"addressType": "IPv4", "ports": [{"port": 80}],
            "endpoints": [{"addresses": ["10.0.0.1"]}, {"addresses": ["10.0.0.2"]},
                {"addresses": ["10.0.0.3"]}, {"addresses": ["10.0.0.4"]}]});
        assert_eq!(
            slice_cells(&slice),
            (
                "80".to_string(),
                "10.0.0.1,10.0.0.2,10.0.0.3 + 1 more...".to_string()
            )
        );
        assert_eq!(
            slice_cells(&json!({"endpoints": null})),
            ("<unset>".to_string(), "<unset>".to_string())
        );
    }
}
