//! The apps group's rules (`pkg/apis/apps/validation`): Deployments, ReplicaSets,
//! StatefulSets and DaemonSets need a selector that matches their template labels, non-negative
//! counts and a template that restarts Always; their selectors are immutable.

use serde_json::Value;

use super::field::{
    Errors, forbidden, go_label_selector, go_string_map, invalid, not_supported, required,
};
use super::{core, int, s};
use crate::names;
use crate::selectors::LabelSelector;

/// `ValidateNonnegativeField`.
pub fn nonnegative(obj: &Value, key: &str, path: &str, errs: &mut Errors) {
    if let Some(n) = int(obj, key).filter(|n| *n < 0) {
        errs.push(invalid(
            &format!("{path}.{key}"),
            n.to_string(),
            "must be greater than or equal to 0",
        ));
    }
}

/// The selector (required, valid, not empty) and the template it must match; `word` names
/// the kind in the empty-selector message.
pub fn selector_and_template(spec: &Value, path: &str, empty_message: &str, errs: &mut Errors) {
    let selector = spec.get("selector").filter(|s| !s.is_null());
    match selector {
        None => errs.push(required(&format!("{path}.selector"), "")),
        Some(sel) => {
            super::meta::labels(
                sel.get("matchLabels"),
                &format!("{path}.selector.matchLabels"),
                errs,
            );
            let n = sel
                .get("matchLabels")
                .and_then(Value::as_object)
                .map_or(0, |m| m.len())
                + sel
                    .get("matchExpressions")
                    .and_then(Value::as_array)
                    .map_or(0, Vec::len);
            if n == 0 {
                errs.push(invalid(
                    &format!("{path}.selector"),
                    go_label_selector(Some(sel)),
                    empty_message,
                ));
            }
        }
    }
    let template = spec.get("template");
    let template_labels = template.and_then(|t| t.pointer("/metadata/labels"));
    match LabelSelector::from_object(selector.unwrap_or(&Value::Null)) {
        Err(_) => errs.push(invalid(
            &format!("{path}.selector"),
            go_label_selector(selector),
            "invalid label selector",
        )),
        Ok(sel) => {
            let empty = serde_json::Map::new();
            let labels = template_labels.and_then(Value::as_object).unwrap_or(&empty);
            if !sel.is_empty() && !sel.matches(labels) {
                errs.push(invalid(
                    &format!("{path}.template.metadata.labels"),
                    go_string_map(template_labels),
                    "`selector` does not match template `labels`",
                ));
            }
        }
    }
    core::pod_template(template, &format!("{path}.template"), errs);
    let policy = template
        .and_then(|t| t.pointer("/spec/restartPolicy"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    if policy != "Always" {
        errs.push(not_supported(
            &format!("{path}.template.spec.restartPolicy"),
            policy,
            &["Always"],
        ));
    }
    if template
        .and_then(|t| t.pointer("/spec/activeDeadlineSeconds"))
        .is_some_and(|v| !v.is_null())
    {
        errs.push(forbidden(
            &format!("{path}.template.spec.activeDeadlineSeconds"),
            "activeDeadlineSeconds in ReplicaSet is not Supported",
        ));
    }
}

/// An int-or-percent (`maxSurge`, `maxUnavailable`): a non-negative integer or `N%`.
fn int_or_percent(v: Option<&Value>, path: &str, errs: &mut Errors) -> Option<i64> {
    match v? {
        Value::String(p) => {
            let number = p
                .strip_suffix('%')
                .filter(|d| !d.is_empty() && d.chars().all(|c| c.is_ascii_digit()));
            match number.and_then(|d| d.parse::<i64>().ok()) {
                None => {
                    errs.push(super::field::invalid_str(
                        path,
                        p,
                        "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')",
                    ));
                    None
                }
                Some(n) => {
                    if n > 100 {
                        errs.push(super::field::invalid_str(
                            path,
                            p,
                            "must not be greater than 100%",
                        ));
                    }
                    Some(n)
                }
            }
        }
        Value::Number(n) => {
            let n = n.as_i64().unwrap_or(0);
            if n < 0 {
                errs.push(invalid(
                    path,
                    n.to_string(),
                    "must be greater than or equal to 0",
                ));
            }
            Some(n)
        }
        _ => None,
    }
}

/// Go's `%#v` of an `intstr.IntOrString`.
fn go_int_or_string(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => format!(
            "intstr.IntOrString{{Type:1, IntVal:0, StrVal:{}}}",
            super::field::quote(s)
        ),
        Some(Value::Number(n)) => format!(
            "intstr.IntOrString{{Type:0, IntVal:{}, StrVal:\"\"}}",
            n.as_i64().unwrap_or(0)
        ),
        _ => "intstr.IntOrString{Type:0, IntVal:0, StrVal:\"\"}".into(),
    }
}

/// A Deployment (`ValidateDeploymentSpec`).
pub fn deployment(obj: &Value, errs: &mut Errors) {
    let empty = Value::Null;
    let spec = obj.get("spec").unwrap_or(&empty);
    nonnegative(spec, "replicas", "spec", errs);
    selector_and_template(
        spec,
        "spec",
        "empty selector is invalid for deployment",
        errs,
    );
    let strategy = spec.get("strategy").unwrap_or(&empty);
    match s(strategy, "type") {
        "Recreate" => {
            if strategy.get("rollingUpdate").is_some_and(|r| !r.is_null()) {
                errs.push(forbidden(
                    "spec.strategy.rollingUpdate",
                    "may not be specified when strategy `type` is 'Recreate'",
                ));
            }
        }
        "RollingUpdate" => {
            let ru = strategy.get("rollingUpdate").unwrap_or(&empty);
            let p = "spec.strategy.rollingUpdate";
            let surge = int_or_percent(ru.get("maxSurge"), &format!("{p}.maxSurge"), errs);
            let unavailable = int_or_percent(
                ru.get("maxUnavailable"),
                &format!("{p}.maxUnavailable"),
                errs,
            );
            if surge == Some(0) && unavailable == Some(0) {
                errs.push(invalid(
                    &format!("{p}.maxUnavailable"),
                    go_int_or_string(ru.get("maxUnavailable")),
                    "may not be 0 when `maxSurge` is 0",
                ));
            }
        }
        "" => errs.push(required("spec.strategy.type", "")),
        other => errs.push(not_supported(
            "spec.strategy.type",
            other,
            &["Recreate", "RollingUpdate"],
        )),
    }
    for key in [
        "minReadySeconds",
        "revisionHistoryLimit",
        "progressDeadlineSeconds",
    ] {
        nonnegative(spec, key, "spec", errs);
    }
    if let Some(deadline) = int(spec, "progressDeadlineSeconds")
        && deadline <= int(spec, "minReadySeconds").unwrap_or(0)
    {
        errs.push(invalid(
            "spec.progressDeadlineSeconds",
            deadline.to_string(),
            "must be greater than minReadySeconds",
        ));
    }
}

/// A ReplicaSet (`ValidateReplicaSetSpec`).
pub fn replica_set(obj: &Value, errs: &mut Errors) {
    let empty = Value::Null;
    let spec = obj.get("spec").unwrap_or(&empty);
    nonnegative(spec, "replicas", "spec", errs);
    nonnegative(spec, "minReadySeconds", "spec", errs);
    selector_and_template(
        spec,
        "spec",
        "empty selector is invalid for deployment",
        errs,
    );
}

/// A DaemonSet (`ValidateDaemonSetSpec`).
pub fn daemon_set(obj: &Value, errs: &mut Errors) {
    let empty = Value::Null;
    let spec = obj.get("spec").unwrap_or(&empty);
    selector_and_template(
        spec,
        "spec",
        "empty selector is invalid for daemonset",
        errs,
    );
    nonnegative(spec, "minReadySeconds", "spec", errs);
    nonnegative(spec, "revisionHistoryLimit", "spec", errs);
    match spec.pointer("/updateStrategy/type").and_then(Value::as_str) {
        None | Some("RollingUpdate" | "OnDelete") => {}
        Some(other) => errs.push(not_supported(
            "spec.updateStrategy.type",
            other,
            &["OnDelete", "RollingUpdate"],
        )),
    }
}

/// A StatefulSet (`ValidateStatefulSetSpec`).
pub fn stateful_set(obj: &Value, errs: &mut Errors) {
    let empty = Value::Null;
    let spec = obj.get("spec").unwrap_or(&empty);
    match s(spec, "podManagementPolicy") {
        "OrderedReady" | "Parallel" => {}
        "" => errs.push(required("spec.podManagementPolicy", "")),
        other => errs.push(super::field::invalid_str(
            "spec.podManagementPolicy",
            other,
            "must be 'OrderedReady' or 'Parallel'",
        )),
    }
    match spec.pointer("/updateStrategy/type").and_then(Value::as_str) {
        None | Some("RollingUpdate" | "OnDelete") => {}
        Some(other) => errs.push(not_supported(
            "spec.updateStrategy.type",
            other,
            &["OnDelete", "RollingUpdate"],
        )),
    }
    nonnegative(spec, "replicas", "spec", errs);
    nonnegative(spec, "minReadySeconds", "spec", errs);
    selector_and_template(
        spec,
        "spec",
        "empty selector is not valid for statefulset.",
        errs,
    );
    if let Some(service) = spec
        .get("serviceName")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
    {
        for m in names::dns1123_label(service) {
            errs.push(super::field::invalid_str("spec.serviceName", service, &m));
        }
    }
}

/// The selector of a workload is immutable (apps/v1).
pub fn selector_update(old: &Value, new: &Value, errs: &mut Errors) {
    let (o, n) = (old.pointer("/spec/selector"), new.pointer("/spec/selector"));
    if o != n {
        errs.push(invalid(
            "spec.selector",
            go_label_selector(n),
            "field is immutable",
        ));
    }
}

/// A StatefulSet update: only replicas, ordinals, template, updateStrategy,
/// persistentVolumeClaimRetentionPolicy and minReadySeconds may change.
pub fn stateful_set_update(old: &Value, new: &Value, errs: &mut Errors) {
    let strip = |v: &Value| {
        let mut spec = v.get("spec").cloned().unwrap_or(Value::Null);
        if let Some(m) = spec.as_object_mut() {
            for k in [
                "replicas",
                "ordinals",
                "template",
                "updateStrategy",
                "persistentVolumeClaimRetentionPolicy",
                "minReadySeconds",
            ] {
                m.remove(k);
            }
        }
        spec
    };
    if strip(old) != strip(new) {
        errs.push(forbidden(
            "spec",
            "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
        ));
    }
}
