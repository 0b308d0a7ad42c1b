//! Defaults of the remaining core and extension kinds: Namespaces, PersistentVolumeClaims,
//! HorizontalPodAutoscalers v2, CustomResourceDefinitions, RBAC bindings, Secrets and
//! NetworkPolicies.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map, Value, json};

use super::fields::{array_objects, child, default, default_str, existing};

pub(super) fn namespace(root: &mut Map<String, Value>) {
    let name = root
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .filter(|name| !name.is_empty())
        .map(str::to_string);
    if let Some(name) = name
        && let Some(labels) = child(root, "metadata").and_then(|m| child(m, "labels"))
    {
        labels.insert("kubernetes.io/metadata.name".into(), json!(name));
    }
    default(root, "spec", json!({}));
    if let Some(status) = child(root, "status") {
        default_str(status, "phase", "Active");
    }
}

pub(super) fn persistent_volume_claim(root: &mut Map<String, Value>) {
    if let Some(spec) = child(root, "spec") {
        default(spec, "volumeMode", json!("Filesystem"));
    }
    if let Some(status) = child(root, "status") {
        default_str(status, "phase", "Pending");
    }
}

pub(super) fn hpa_v2(root: &mut Map<String, Value>) {
    if let Some(spec) = child(root, "spec") {
        default(spec, "minReplicas", json!(1));
        let no_metrics = spec
            .get("metrics")
            .and_then(Value::as_array)
            .is_none_or(Vec::is_empty);
        if no_metrics {
            spec.insert(
                "metrics".into(),
                json!([{
                    "type": "Resource",
                    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}
                }]),
            );
        }
        if let Some(behavior) = existing(spec, "behavior") {
            scaling_rules(
                behavior,
                "scaleUp",
                Some(0),
                json!([
                    {"type": "Pods", "value": 4, "periodSeconds": 15},
                    {"type": "Percent", "value": 100, "periodSeconds": 15}
                ]),
            );
            scaling_rules(
                behavior,
                "scaleDown",
                None,
                json!([{"type": "Percent", "value": 100, "periodSeconds": 15}]),
            );
        }
    }
    default(root, "status", json!({"desiredReplicas": 0}));
}

/// `GenerateHPAScale{Up,Down}Rules`: fills the unset fields of one direction's rules.
fn scaling_rules(
    behavior: &mut Map<String, Value>,
    key: &str,
    window: Option<i64>,
    policies: Value,
) {
    if let Some(rules) = child(behavior, key) {
        default(rules, "selectPolicy", json!("Max"));
        if let Some(window) = window {
            default(rules, "stabilizationWindowSeconds", json!(window));
        }
        default(rules, "policies", policies);
    }
}

pub(super) fn crd(root: &mut Map<String, Value>) {
    let Some(spec) = child(root, "spec") else {
        return;
    };
    if let Some(names) = existing(spec, "names") {
        let kind = names
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if !kind.is_empty() {
            default_str(names, "singular", &kind.to_lowercase());
            default_str(names, "listKind", &format!("{kind}List"));
        }
    }
    if let Some(conversion) = child(spec, "conversion") {
        default_str(conversion, "strategy", "None");
    }
}

/// RoleBinding and ClusterRoleBinding (`pkg/apis/rbac/v1/defaults.go`): `roleRef.apiGroup`
/// defaults to the RBAC group, a User or Group subject's `apiGroup` too (a ServiceAccount's
/// stays "").
pub(super) fn role_binding(root: &mut Map<String, Value>) {
    const GROUP: &str = "rbac.authorization.k8s.io";
    if let Some(role_ref) = child(root, "roleRef") {
        default_str(role_ref, "apiGroup", GROUP);
    }
    for subject in array_objects(root, "subjects") {
        let kind = subject
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if matches!(kind, "User" | "Group") {
            default_str(subject, "apiGroup", GROUP);
        }
    }
}

/// Secret (`Convert_v1_Secret_To_core_Secret`): `stringData` is folded into `data`
/// (base64-encoded, overriding keys of the same name) and never stored.
pub(super) fn secret(root: &mut Map<String, Value>) {
    default_str(root, "type", "Opaque");
    let Some(Value::Object(strings)) = root.remove("stringData") else {
        return;
    };
    let data = root.entry("data").or_insert_with(|| json!({}));
    if !data.is_object() {
        *data = json!({});
    }
    if let Some(data) = data.as_object_mut() {
        for (k, v) in strings {
            let text = v.as_str().unwrap_or_default();
            data.insert(k, json!(STANDARD.encode(text)));
        }
    }
}

/// NetworkPolicy (`pkg/apis/networking/v1/defaults.go`): ports default to TCP, and
/// `policyTypes` to `[Ingress]`, plus `Egress` when egress rules are given.
pub(super) fn network_policy(root: &mut Map<String, Value>) {
    let Some(spec) = child(root, "spec") else {
        return;
    };
    for direction in ["ingress", "egress"] {
        for rule in array_objects(spec, direction) {
            for port in array_objects(rule, "ports") {
                default_str(port, "protocol", "TCP");
            }
        }
    }
    let unset = spec
        .get("policyTypes")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty);
    if unset {
        let egress = spec
            .get("egress")
            .and_then(Value::as_array)
            .is_some_and(|e| !e.is_empty());
        let types = if egress {
            json!(["Ingress", "Egress"])
        } else {
            json!(["Ingress"])
        };
        spec.insert("policyTypes".into(), types);
    }
}
