//! HorizontalPodAutoscalers are one resource served at two versions, as in the API server:
//! `autoscaling/v2` is the storage form and `autoscaling/v1` a view of the same objects. v1
//! knows only a CPU utilization target (`targetCPUUtilizationPercentage`), so what v2 says
//! beyond it travels in v1 annotations, as kube-apiserver's conversion does it
//! (`pkg/apis/autoscaling/v1/conversion.go`): the other metrics (v1 `MetricSpec` form) in
//! `autoscaling.alpha.kubernetes.io/metrics`, the current metrics in `…/current-metrics`, the
//! conditions in `…/conditions` and the behavior (Go field names, the internal type has no
//! JSON tags) in `…/behavior`. Writing a v1 object lifts them back out, so a read-modify-write
//! through v1 keeps every v2 field; a v1 HPA with no metric at all gets CPU at 80%.

use serde_json::{Map, Value, json};

const METRICS: &str = "autoscaling.alpha.kubernetes.io/metrics";
const CURRENT_METRICS: &str = "autoscaling.alpha.kubernetes.io/current-metrics";
const CONDITIONS: &str = "autoscaling.alpha.kubernetes.io/conditions";
const BEHAVIOR: &str = "autoscaling.alpha.kubernetes.io/behavior";

/// The CPU utilization kube-apiserver targets when a v1 HPA names none.
const DEFAULT_CPU_UTILIZATION: i64 = 80;

fn obj(v: &Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap_or_default()
}

/// Copies `keys` of `from` into `to` under new names (`(from key, to key)`), when present.
fn carry(from: &Value, to: &mut Map<String, Value>, keys: &[(&str, &str)]) {
    for (src, dst) in keys {
        if let Some(v) = from.get(*src).filter(|v| !v.is_null()) {
            to.insert((*dst).to_string(), v.clone());
        }
    }
}

/// Whether a v2 metric is the CPU utilization target v1 shows as a field.
fn is_cpu_utilization(metric: &Value) -> bool {
    metric.get("type").and_then(Value::as_str) == Some("Resource")
        && metric.pointer("/resource/name").and_then(Value::as_str) == Some("cpu")
        && metric
            .pointer("/resource/target/averageUtilization")
            .is_some()
}

/// The key of a metric's source object (`Resource` → `resource`).
fn source_key(kind: &str) -> String {
    let mut chars = kind.chars();
    chars
        .next()
        .map(|c| c.to_ascii_lowercase().to_string() + chars.as_str())
        .unwrap_or_default()
}

/// One v2 `MetricSpec` in v1's annotation form.
fn spec_to_v1(metric: &Value) -> Value {
    let kind = metric
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let key = source_key(kind);
    let src = metric.get(&key).cloned().unwrap_or(Value::Null);
    let target = src.get("target").cloned().unwrap_or(Value::Null);
    let name = src.pointer("/metric/name").cloned();
    let selector = src.pointer("/metric/selector").cloned();
    let mut out = Map::new();
    match kind {
        "Resource" | "ContainerResource" => {
            carry(
                &src,
                &mut out,
                &[("name", "name"), ("container", "container")],
            );
            carry(
                &target,
                &mut out,
                &[
                    ("averageUtilization", "targetAverageUtilization"),
                    ("averageValue", "targetAverageValue"),
                ],
            );
        }
        "Pods" => {
            carry(&target, &mut out, &[("averageValue", "targetAverageValue")]);
        }
        "Object" => {
            carry(&src, &mut out, &[("describedObject", "target")]);
            carry(
                &target,
                &mut out,
                &[("value", "targetValue"), ("averageValue", "averageValue")],
            );
        }
        "External" => {
            carry(
                &target,
                &mut out,
                &[
                    ("value", "targetValue"),
                    ("averageValue", "targetAverageValue"),
                ],
            );
        }
        _ => {}
    }
    if let Some(n) = name {
        out.insert("metricName".into(), n);
    }
    if let Some(s) = selector {
        let field = if kind == "External" {
            "metricSelector"
        } else {
            "selector"
        };
        out.insert(field.into(), s);
    }
    json!({"type": kind, key: out})
}

/// One v1 annotation `MetricSpec` in the v2 form.
fn spec_to_v2(metric: &Value) -> Value {
    let kind = metric
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let key = source_key(kind);
    let src = metric.get(&key).cloned().unwrap_or(Value::Null);
    let mut target = Map::new();
    let mut out = Map::new();
    let metric_id = |selector_key: &str| {
        let mut m = Map::new();
        carry(
            &src,
            &mut m,
            &[("metricName", "name"), (selector_key, "selector")],
        );
        Value::Object(m)
    };
    match kind {
        "Resource" | "ContainerResource" => {
            carry(
                &src,
                &mut out,
                &[("name", "name"), ("container", "container")],
            );
            let utilization = src.get("targetAverageUtilization").is_some();
            target.insert(
                "type".into(),
                json!(if utilization {
                    "Utilization"
                } else {
                    "AverageValue"
                }),
            );
            carry(
                &src,
                &mut target,
                &[
                    ("targetAverageUtilization", "averageUtilization"),
                    ("targetAverageValue", "averageValue"),
                ],
            );
        }
        "Pods" => {
            out.insert("metric".into(), metric_id("selector"));
            target.insert("type".into(), json!("AverageValue"));
            carry(&src, &mut target, &[("targetAverageValue", "averageValue")]);
        }
        "Object" => {
            carry(&src, &mut out, &[("target", "describedObject")]);
            out.insert("metric".into(), metric_id("selector"));
            let average = src.get("averageValue").is_some();
            target.insert(
                "type".into(),
                json!(if average { "AverageValue" } else { "Value" }),
            );
            carry(
                &src,
                &mut target,
                &[("targetValue", "value"), ("averageValue", "averageValue")],
            );
        }
        "External" => {
            out.insert("metric".into(), metric_id("metricSelector"));
            let average = src.get("targetAverageValue").is_some();
            target.insert(
                "type".into(),
                json!(if average { "AverageValue" } else { "Value" }),
            );
            carry(
                &src,
                &mut target,
                &[
                    ("targetValue", "value"),
                    ("targetAverageValue", "averageValue"),
                ],
            );
        }
        _ => {}
    }
    out.insert("target".into(), Value::Object(target));
    json!({"type": kind, key: out})
}

/// One v2 `MetricStatus` in v1's annotation form.
fn status_to_v1(metric: &Value) -> Value {
    let kind = metric
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let key = source_key(kind);
    let src = metric.get(&key).cloned().unwrap_or(Value::Null);
    let current = src.get("current").cloned().unwrap_or(Value::Null);
    let mut out = Map::new();
    carry(
        &src,
        &mut out,
        &[
            ("name", "name"),
            ("container", "container"),
            ("describedObject", "target"),
        ],
    );
    let renames: &[(&str, &str)] = match kind {
        "Resource" | "ContainerResource" => &[
            ("averageUtilization", "currentAverageUtilization"),
            ("averageValue", "currentAverageValue"),
        ],
        "Pods" => &[("averageValue", "currentAverageValue")],
        "Object" => &[("value", "currentValue"), ("averageValue", "averageValue")],
        "External" => &[
            ("value", "currentValue"),
            ("averageValue", "currentAverageValue"),
        ],
        _ => &[],
    };
    carry(&current, &mut out, renames);
    let selector = if kind == "External" {
        "metricSelector"
    } else {
        "selector"
    };
    carry(
        src.get("metric").unwrap_or(&Value::Null),
        &mut out,
        &[("name", "metricName"), ("selector", selector)],
    );
    json!({"type": kind, key: out})
}

/// One v1 annotation `MetricStatus` in the v2 form.
fn status_to_v2(metric: &Value) -> Value {
    let kind = metric
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let key = source_key(kind);
    let src = metric.get(&key).cloned().unwrap_or(Value::Null);
    let mut out = Map::new();
    carry(
        &src,
        &mut out,
        &[
            ("name", "name"),
            ("container", "container"),
            ("target", "describedObject"),
        ],
    );
    let mut current = Map::new();
    carry(
        &src,
        &mut current,
        &[
            ("currentAverageUtilization", "averageUtilization"),
            ("currentAverageValue", "averageValue"),
            ("currentValue", "value"),
            ("averageValue", "averageValue"),
        ],
    );
    out.insert("current".into(), Value::Object(current));
    if matches!(kind, "Pods" | "Object" | "External") {
        let selector = if kind == "External" {
            "metricSelector"
        } else {
            "selector"
        };
        let mut id = Map::new();
        carry(
            &src,
            &mut id,
            &[("metricName", "name"), (selector, "selector")],
        );
        out.insert("metric".into(), Value::Object(id));
    }
    json!({"type": kind, key: out})
}

/// Renames every object key of `v` with `f` (the behavior annotation's Go field names).
fn rename_keys(v: &Value, f: &dyn Fn(&str) -> String) -> Value {
    match v {
        Value::Object(m) => {
            Value::Object(m.iter().map(|(k, v)| (f(k), rename_keys(v, f))).collect())
        }
        Value::Array(a) => Value::Array(a.iter().map(|v| rename_keys(v, f)).collect()),
        other => other.clone(),
    }
}

fn with_first(key: &str, upper: bool) -> String {
    let mut chars = key.chars();
    match chars.next() {
        Some(c) if upper => c.to_ascii_uppercase().to_string() + chars.as_str(),
        Some(c) => c.to_ascii_lowercase().to_string() + chars.as_str(),
        None => String::new(),
    }
}

/// A stored (`autoscaling/v2`) HPA as `autoscaling/v1` shows it.
pub fn to_v1(hpa: &Value) -> Value {
    let mut out = obj(hpa);
    out.insert("apiVersion".into(), json!("autoscaling/v1"));
    let spec = hpa.get("spec").cloned().unwrap_or(Value::Null);
    let status = hpa.get("status").cloned().unwrap_or(Value::Null);
    let metrics = spec.get("metrics").and_then(Value::as_array).cloned();
    let metrics = metrics.unwrap_or_default();
    let mut annotations: Map<String, Value> = Map::new();

    let mut v1_spec = Map::new();
    carry(
        &spec,
        &mut v1_spec,
        &[
            ("scaleTargetRef", "scaleTargetRef"),
            ("minReplicas", "minReplicas"),
            ("maxReplicas", "maxReplicas"),
        ],
    );
    if let Some(cpu) = metrics.iter().find(|m| is_cpu_utilization(m)) {
        carry(
            cpu.pointer("/resource/target").unwrap_or(&Value::Null),
            &mut v1_spec,
            &[("averageUtilization", "targetCPUUtilizationPercentage")],
        );
    }
    let others: Vec<Value> = metrics
        .iter()
        .filter(|m| !is_cpu_utilization(m))
        .map(spec_to_v1)
        .collect();
    if !others.is_empty() {
        annotations.insert(METRICS.into(), json!(Value::Array(others).to_string()));
    }
    if let Some(behavior) = spec.get("behavior").filter(|b| !b.is_null()) {
        let go = rename_keys(behavior, &|k| with_first(k, true));
        annotations.insert(BEHAVIOR.into(), json!(go.to_string()));
    }

    let mut v1_status = Map::new();
    carry(
        &status,
        &mut v1_status,
        &[
            ("observedGeneration", "observedGeneration"),
            ("lastScaleTime", "lastScaleTime"),
            ("currentReplicas", "currentReplicas"),
            ("desiredReplicas", "desiredReplicas"),
        ],
    );
    for key in ["currentReplicas", "desiredReplicas"] {
        v1_status.entry(key).or_insert(json!(0));
    }
    let current = status
        .get("currentMetrics")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if let Some(cpu) = current.iter().find(|m| {
        m.get("type").and_then(Value::as_str) == Some("Resource")
            && m.pointer("/resource/name").and_then(Value::as_str) == Some("cpu")
    }) {
        carry(
            cpu.pointer("/resource/current").unwrap_or(&Value::Null),
            &mut v1_status,
            &[("averageUtilization", "currentCPUUtilizationPercentage")],
        );
    }
    if !current.is_empty() {
        let v1: Vec<Value> = current.iter().map(status_to_v1).collect();
        annotations.insert(CURRENT_METRICS.into(), json!(Value::Array(v1).to_string()));
    }
    if let Some(conditions) = status
        .get("conditions")
        .and_then(Value::as_array)
        .filter(|c| !c.is_empty())
    {
        annotations.insert(
            CONDITIONS.into(),
            json!(Value::Array(conditions.clone()).to_string()),
        );
    }

    out.insert("spec".into(), Value::Object(v1_spec));
    if hpa.get("status").is_some() {
        out.insert("status".into(), Value::Object(v1_status));
    }
    if !annotations.is_empty() {
        let meta = out.entry("metadata").or_insert_with(|| json!({}));
        if let Some(meta) = meta.as_object_mut() {
            let existing = meta.entry("annotations").or_insert_with(|| json!({}));
            if let Some(existing) = existing.as_object_mut() {
                existing.extend(annotations);
            }
        }
    }
    Value::Object(out)
}

/// Removes and parses one conversion annotation (a JSON list or object), if present.
fn take_annotation(out: &mut Map<String, Value>, key: &str) -> Option<Value> {
    let annotations = out
        .get_mut("metadata")
        .and_then(|m| m.get_mut("annotations"))
        .and_then(Value::as_object_mut)?;
    let text = annotations.remove(key)?;
    let empty = annotations.is_empty();
    if empty && let Some(meta) = out.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("annotations");
    }
    serde_json::from_str(text.as_str()?).ok()
}

/// An `autoscaling/v1` HPA in the storage (`autoscaling/v2`) form.
pub fn to_v2(hpa: &Value) -> Value {
    let mut out = obj(hpa);
    out.insert("apiVersion".into(), json!("autoscaling/v2"));
    let spec = hpa.get("spec").cloned().unwrap_or(Value::Null);
    let status = hpa.get("status").cloned().unwrap_or(Value::Null);
    let other_metrics = take_annotation(&mut out, METRICS);
    let current_metrics = take_annotation(&mut out, CURRENT_METRICS);
    let conditions = take_annotation(&mut out, CONDITIONS);
    let behavior = take_annotation(&mut out, BEHAVIOR);

    let mut v2_spec = Map::new();
    carry(
        &spec,
        &mut v2_spec,
        &[
            ("scaleTargetRef", "scaleTargetRef"),
            ("minReplicas", "minReplicas"),
            ("maxReplicas", "maxReplicas"),
        ],
    );
    let mut metrics = Vec::new();
    if let Some(cpu) = spec
        .get("targetCPUUtilizationPercentage")
        .filter(|v| !v.is_null())
    {
        metrics.push(json!({"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": cpu}}}));
    }
    if let Some(Value::Array(others)) = other_metrics {
        metrics.extend(others.iter().map(spec_to_v2));
    }
    if metrics.is_empty() {
        metrics.push(json!({"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": DEFAULT_CPU_UTILIZATION}}}));
    }
    v2_spec.insert("metrics".into(), Value::Array(metrics));
    if let Some(b) = behavior.filter(Value::is_object) {
        v2_spec.insert(
            "behavior".into(),
            rename_keys(&b, &|k| with_first(k, false)),
        );
    }

    let mut v2_status = Map::new();
    carry(
        &status,
        &mut v2_status,
        &[
            ("observedGeneration", "observedGeneration"),
            ("lastScaleTime", "lastScaleTime"),
            ("currentReplicas", "currentReplicas"),
            ("desiredReplicas", "desiredReplicas"),
        ],
    );
    match current_metrics {
        Some(Value::Array(current)) => {
            let v2: Vec<Value> = current.iter().map(status_to_v2).collect();
            v2_status.insert("currentMetrics".into(), Value::Array(v2));
        }
        _ => {
            if let Some(cpu) = status.get("currentCPUUtilizationPercentage") {
                v2_status.insert(
                    "currentMetrics".into(),
                    json!([{"type": "Resource", "resource": {"name": "cpu",
                        "current": {"averageUtilization": cpu}}}]),
                );
            }
        }
    }
    if let Some(c) = conditions.filter(Value::is_array) {
        v2_status.insert("conditions".into(), c);
    }
    out.insert("spec".into(), Value::Object(v2_spec));
    if hpa.get("status").is_some() || !v2_status.is_empty() {
        out.insert("status".into(), Value::Object(v2_status));
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_target_is_the_v1_field_and_other_metrics_ride_in_annotations() {
        let v2 = json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web", "namespace": "n"},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "minReplicas": 2, "maxReplicas": 5,
                "metrics": [
                    {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}}},
                    {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "1Gi"}}},
                    {"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "10"}}}],
                "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60, "selectPolicy": "Max",
                    "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}}},
            "status": {"currentReplicas": 2, "desiredReplicas": 3,
                "currentMetrics": [{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 42, "averageValue": "120m"}}}],
                "conditions": [{"type": "AbleToScale", "status": "True", "reason": "ReadyForNewScale"}]}});
        let v1 = to_v1(&v2);
        assert_eq!(v1["apiVersion"], "autoscaling/v1");
        assert_eq!(v1["spec"]["targetCPUUtilizationPercentage"], 60);
        assert!(v1["spec"].get("metrics").is_none());
        assert_eq!(v1["status"]["currentCPUUtilizationPercentage"], 42);
        let ann = &v1["metadata"]["annotations"];
        let others: Value = serde_json::from_str(ann[METRICS].as_str().unwrap()).unwrap();
        assert_eq!(
            others[0]["resource"],
            json!({"name": "memory", "targetAverageValue": "1Gi"})
        );
        assert_eq!(
            others[1]["pods"],
            json!({"metricName": "qps", "targetAverageValue": "10"})
        );
        assert!(
            ann[BEHAVIOR]
                .as_str()
                .unwrap()
                .contains("\"StabilizationWindowSeconds\":60")
        );
        assert!(
            ann[CONDITIONS]
                .as_str()
                .unwrap()
                .contains("ReadyForNewScale")
        );
        // Back through v1: every v2 field comes home.
        assert_eq!(to_v2(&v1), v2);
    }

    #[test]
    fn a_v1_hpa_without_target_gets_cpu_80() {
        let v1 = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "w", "annotations": {METRICS: "not json"}},
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "w"}, "maxReplicas": 3}});
        let v2 = to_v2(&v1);
        assert_eq!(
            v2["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"],
            80
        );
        assert!(v2["metadata"].get("annotations").is_none());
        assert!(v2.get("status").is_none());
    }
}
