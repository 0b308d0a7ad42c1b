//! kube-apiserver's printers for HorizontalPodAutoscalers (`printHorizontalPodAutoscaler`:
//! Reference, Targets, MinPods, MaxPods, Replicas; whichever version is addressed),
//! EndpointSlices (`printEndpointSlice`: AddressType, Ports, Endpoints) and APIServices
//! (the aggregator's printer: Service, Available) and Events (`printEvent`: Last Seen, Type,
//! Reason, Object, Message and the wide columns; no leading Name).

use chrono::{DateTime, Utc};
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
        ("" | "events.k8s.io", "Event") => vec![
            ("Last Seen", "string", 0),
            ("Type", "string", 0),
            ("Reason", "string", 0),
            ("Object", "string", 0),
            ("Subobject", "string", 1),
            ("Source", "string", 1),
            ("Message", "string", 0),
            ("First Seen", "string", 1),
            ("Count", "string", 1),
            ("Name", "string", 1),
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

/// An Event's cells (printEvent, wide): Last Seen, Type, Reason, Object, Subobject, Source,
/// Message, First Seen, Count, Name.
fn event_cells(info: &ResourceInfo, obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let core = if crate::resources::is_events_view(info) {
        crate::event_versions::to_core(obj)
    } else {
        obj.clone()
    };
    let age = |pointer: &str| {
        DateTime::parse_from_rfc3339(&text(&core, pointer))
            .ok()
            .map(|t| {
                super::human_duration(
                    now.signed_duration_since(t.with_timezone(&Utc))
                        .num_seconds(),
                )
            })
    };
    let first = age("/firstTimestamp")
        .or_else(|| age("/eventTime"))
        .unwrap_or_else(|| "<unknown>".into());
    let mut last = age("/lastTimestamp").unwrap_or_else(|| first.clone());
    let mut count = core.get("count").and_then(Value::as_i64).unwrap_or(0);
    if let Some(series) = core.get("series").filter(|s| s.is_object()) {
        last = age("/series/lastObservedTime").unwrap_or(last);
        count = series.get("count").and_then(Value::as_i64).unwrap_or(count);
    } else if count == 0 {
        count = 1;
    }
    let kind = text(&core, "/involvedObject/kind").to_ascii_lowercase();
    let name = text(&core, "/involvedObject/name");
    let target = if name.is_empty() {
        kind
    } else {
        format!("{kind}/{name}")
    };
    let first_set = |a: &str, b: &str| {
        let a = text(&core, a);
        if a.is_empty() { text(&core, b) } else { a }
    };
    let component = first_set("/source/component", "/reportingComponent");
    let instance = first_set("/source/host", "/reportingInstance");
    let source = match (component.is_empty(), instance.is_empty()) {
        (true, _) => String::new(),
        (false, true) => component,
        (false, false) => format!("{component}, {instance}"),
    };
    vec![
        json!(last),
        json!(text(&core, "/type")),
        json!(text(&core, "/reason")),
        json!(target),
        json!(text(&core, "/involvedObject/fieldPath")),
        json!(source),
        json!(text(&core, "/message").trim()),
        json!(first),
        json!(count),
        json!(text(&core, "/metadata/name")),
    ]
}

/// The cells after Name (Age given), for an object of a kind [`columns`] knows.
pub fn cells(info: &ResourceInfo, obj: &Value, age: Value, now: DateTime<Utc>) -> Vec<Value> {
    if info.kind == "APIService" {
        return api_service_cells(obj, age);
    }
    if info.kind == "Event" {
        return event_cells(info, obj, now);
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
