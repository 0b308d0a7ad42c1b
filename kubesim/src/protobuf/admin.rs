//! Protobuf bodies of the kinds `kubectl create role|clusterrole|rolebinding|
//! clusterrolebinding|priorityclass|quota` sends: field numbers as `k8s.io/api`'s
//! `generated.proto` files give them (rbac/v1, scheduling/v1, core/v1 ResourceQuota) and
//! apimachinery's LabelSelector; unset (empty) strings dropped, as the JSON form omits them.

use serde_json::{Map, Value, json};

use super::{Wire, fields, map_field, message, repeated_strings, set_strings, strings};

/// Every message at `field`.
fn messages(buf: &[u8], field: u64) -> Result<Vec<&[u8]>, String> {
    Ok(fields(buf)?
        .into_iter()
        .filter_map(|(f, w)| match (f == field, w) {
            (true, Wire::Bytes(b)) => Some(b),
            _ => None,
        })
        .collect())
}

/// The varint at `field` as Go's int32/int64 (two's complement).
fn int_field(buf: &[u8], field: u64) -> Result<Option<i64>, String> {
    Ok(fields(buf)?
        .into_iter()
        .find_map(|(f, w)| match (f == field, w) {
            (true, Wire::Varint(v)) => Some(v as i64),
            _ => None,
        }))
}

/// Sets `key` of `out` to the strings at `field`, when there are any.
fn put_strings(out: &mut Value, key: &str, buf: &[u8], field: u64) -> Result<(), String> {
    if let Some(list) = repeated_strings(buf, field)? {
        out[key] = list;
    }
    Ok(())
}

/// `PolicyRule`: verbs (1), apiGroups (2), resources (3), resourceNames (4),
/// nonResourceURLs (5).
fn policy_rule(buf: &[u8]) -> Result<Value, String> {
    let mut rule = json!({});
    for (field, key) in [
        (1, "verbs"),
        (2, "apiGroups"),
        (3, "resources"),
        (4, "resourceNames"),
        (5, "nonResourceURLs"),
    ] {
        put_strings(&mut rule, key, buf, field)?;
    }
    Ok(rule)
}

/// `LabelSelector`: matchLabels (1), matchExpressions (2: key, operator, values).
fn label_selector(buf: &[u8]) -> Result<Value, String> {
    let mut selector = json!({});
    if let Some(labels) = map_field(buf, 1, false)? {
        selector["matchLabels"] = labels;
    }
    let expressions = messages(buf, 2)?
        .into_iter()
        .map(|e| {
            let mut out = set_strings(e, &[(1, "key"), (2, "operator")])?;
            put_strings(&mut out, "values", e, 3)?;
            Ok(out)
        })
        .collect::<Result<Vec<Value>, String>>()?;
    if !expressions.is_empty() {
        selector["matchExpressions"] = Value::Array(expressions);
    }
    Ok(selector)
}

/// The rules (2) of a Role or ClusterRole, and a ClusterRole's aggregationRule (3).
fn role(raw: &[u8], obj: &mut Value) -> Result<(), String> {
    let rules = messages(raw, 2)?
        .into_iter()
        .map(policy_rule)
        .collect::<Result<Vec<Value>, String>>()?;
    if !rules.is_empty() {
        obj["rules"] = Value::Array(rules);
    }
    if let Some(aggregation) = message(raw, 3)? {
        let selectors = messages(aggregation, 1)?
            .into_iter()
            .map(label_selector)
            .collect::<Result<Vec<Value>, String>>()?;
        obj["aggregationRule"] = json!({"clusterRoleSelectors": selectors});
    }
    Ok(())
}

/// The subjects (2) and roleRef (3) of a RoleBinding or ClusterRoleBinding.
fn binding(raw: &[u8], obj: &mut Value) -> Result<(), String> {
    let subjects = messages(raw, 2)?
        .into_iter()
        .map(|s| {
            set_strings(
                s,
                &[(1, "kind"), (2, "apiGroup"), (3, "name"), (4, "namespace")],
            )
        })
        .collect::<Result<Vec<Value>, String>>()?;
    if !subjects.is_empty() {
        obj["subjects"] = Value::Array(subjects);
    }
    if let Some(reference) = message(raw, 3)? {
        // apiGroup is always part of a roleRef, even when empty
        obj["roleRef"] = strings(reference, &[(1, "apiGroup"), (2, "kind"), (3, "name")])?;
    }
    Ok(())
}

/// A ResourceQuota's spec (2): hard (1, quantities), scopes (2), scopeSelector (3).
fn resource_quota(raw: &[u8], obj: &mut Value) -> Result<(), String> {
    let Some(spec) = message(raw, 2)? else {
        return Ok(());
    };
    let mut out = json!({});
    let mut hard = Map::new();
    for entry in messages(spec, 1)? {
        let key = strings(entry, &[(1, "k")])?["k"].clone();
        let value = match message(entry, 2)? {
            Some(q) => strings(q, &[(1, "q")])?["q"].clone(),
            None => json!(""),
        };
        if let Some(key) = key.as_str() {
            hard.insert(key.to_string(), value);
        }
    }
    if !hard.is_empty() {
        out["hard"] = Value::Object(hard);
    }
    put_strings(&mut out, "scopes", spec, 2)?;
    if let Some(selector) = message(spec, 3)? {
        let expressions = messages(selector, 1)?
            .into_iter()
            .map(|e| {
                let mut out = set_strings(e, &[(1, "scopeName"), (2, "operator")])?;
                put_strings(&mut out, "values", e, 3)?;
                Ok(out)
            })
            .collect::<Result<Vec<Value>, String>>()?;
        out["scopeSelector"] = json!({"matchExpressions": expressions});
    }
    obj["spec"] = out;
    Ok(())
}

/// A PriorityClass: value (2), globalDefault (3), description (4), preemptionPolicy (5).
fn priority_class(raw: &[u8], obj: &mut Value) -> Result<(), String> {
    if let Some(value) = int_field(raw, 2)? {
        obj["value"] = json!(value as i32);
    }
    if let Some(global) = int_field(raw, 3)?.filter(|g| *g != 0) {
        obj["globalDefault"] = json!(global != 0);
    }
    let text = set_strings(raw, &[(4, "description"), (5, "preemptionPolicy")])?;
    if let Some(map) = text.as_object() {
        for (k, v) in map {
            obj[k] = v.clone();
        }
    }
    Ok(())
}

/// Decodes the kind-specific fields of `raw` into `obj`; false when the kind is not one of
/// this module's.
pub fn decode(api_version: &str, kind: &str, raw: &[u8], obj: &mut Value) -> Result<bool, String> {
    match (api_version, kind) {
        ("rbac.authorization.k8s.io/v1", "Role" | "ClusterRole") => role(raw, obj)?,
        ("rbac.authorization.k8s.io/v1", "RoleBinding" | "ClusterRoleBinding") => {
            binding(raw, obj)?;
        }
        ("scheduling.k8s.io/v1", "PriorityClass") => priority_class(raw, obj)?,
        ("v1", "ResourceQuota") => resource_quota(raw, obj)?,
        _ => return Ok(false),
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bytes kubectl 1.32 sends for `create priorityclass pc1 --value=5 --description=hi
    /// --preemption-policy=Never`.
    const PRIORITY_CLASS: &[u8] = b"k8s\x00\x0a\x25\x0a\x14scheduling.k8s.io/v1\x12\x0dPriorityClass\x12\x24\x0a\x13\x0a\x03pc1\x12\x00\x1a\x00\x22\x00\x2a\x002\x008\x00B\x00\x10\x05\x18\x00\x22\x02hi\x2a\x05Never\x1a\x00\x22\x00";
    /// `create quota q1 --hard=cpu=1,pods=2 --scopes=BestEffort`.
    const QUOTA: &[u8] = b"k8s\x00\x0a\x13\x0a\x02v1\x12\x0dResourceQuota\x12\x3d\x0a\x12\x0a\x02q1\x12\x00\x1a\x00\x22\x00\x2a\x002\x008\x00B\x00\x12\x25\x0a\x0a\x0a\x03cpu\x12\x03\x0a\x011\x0a\x0b\x0a\x04pods\x12\x03\x0a\x012\x12\x0aBestEffort\x1a\x00\x1a\x00\x22\x00";

    #[test]
    fn decodes_what_kubectl_create_sends() {
        let pc = super::super::decode(PRIORITY_CLASS).unwrap();
        assert_eq!(
            pc,
            json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                "metadata": {"name": "pc1"}, "value": 5, "description": "hi",
                "preemptionPolicy": "Never"})
        );
        let quota = super::super::decode(QUOTA).unwrap();
        assert_eq!(
            quota["spec"],
            json!({"hard": {"cpu": "1", "pods": "2"}, "scopes": ["BestEffort"]})
        );
    }

    #[test]
    fn truncated_bodies_are_errors_not_panics() {
        for cut in 0..QUOTA.len() {
            let _ = super::super::decode(&QUOTA[..cut]);
        }
        for cut in 0..PRIORITY_CLASS.len() {
            let _ = super::super::decode(&PRIORITY_CLASS[..cut]);
        }
    }
}
