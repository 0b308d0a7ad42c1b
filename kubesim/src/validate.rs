//! Type checking of built-in objects against the v1.32 schema, as kube-apiserver's typed
//! decoding does: a field of the wrong JSON type (a string where an object belongs, a
//! number where a list belongs) is a 400 BadRequest naming the field. Unknown fields are
//! accepted (kubesim does not implement strict field validation).

use serde_json::Value;

use crate::resources::ResourceInfo;
use crate::status::ApiError;

/// Deepest nesting checked; deeper values are accepted as they are.
const MAX_DEPTH: usize = 64;

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn check(
    defs: &Value,
    value: &Value,
    node: &Value,
    path: &str,
    depth: usize,
) -> Result<(), String> {
    if value.is_null() || depth > MAX_DEPTH {
        return Ok(());
    }
    if let Some(name) = node.get("ref").and_then(Value::as_str) {
        return match defs.get(name) {
            Some(def) => check(defs, value, def, path, depth + 1),
            None => Ok(()),
        };
    }
    let wrong = |expected: &str| {
        Err(format!(
            "{}: expected {expected}, got {}",
            path.trim_start_matches('.'),
            json_type(value)
        ))
    };
    if node.get("oneOf").is_some() {
        return match value {
            Value::String(_) | Value::Number(_) => Ok(()),
            _ => wrong("string or number"),
        };
    }
    match node.get("type").and_then(Value::as_str) {
        Some("object") => {
            let Some(fields) = value.as_object() else {
                return wrong("object");
            };
            let props = node.get("properties").and_then(Value::as_object);
            let extra = node.get("additionalProperties").filter(|a| a.is_object());
            for (k, v) in fields {
                let child = props.and_then(|p| p.get(k)).or(extra);
                if let Some(child) = child {
                    check(defs, v, child, &format!("{path}.{k}"), depth + 1)?;
                }
            }
            Ok(())
        }
        Some("array") => {
            let Some(items) = value.as_array() else {
                return wrong("array");
            };
            if let Some(item_node) = node.get("items") {
                for (i, item) in items.iter().enumerate() {
                    check(defs, item, item_node, &format!("{path}[{i}]"), depth + 1)?;
                }
            }
            Ok(())
        }
        Some("string") if !value.is_string() => wrong("string"),
        Some("integer") if !(value.is_i64() || value.is_u64()) => wrong("integer"),
        Some("number") if !value.is_number() => wrong("number"),
        Some("boolean") if !value.is_boolean() => wrong("boolean"),
        _ => Ok(()),
    }
}

/// Checks a built-in object's field types; custom resources pass unchecked.
pub fn check_types(info: &ResourceInfo, obj: &Value) -> Result<(), ApiError> {
    if !info.is_builtin() {
        return Ok(());
    }
    let raw = k8s_merge::Schema::builtin().raw();
    let defs = &raw["definitions"];
    let Some(def) = defs.get(crate::openapi::definition_name(info)) else {
        return Ok(());
    };
    check(defs, obj, def, "", 0).map_err(|reason| {
        ApiError::bad_request(format!(
            "{kind} in version \"{version}\" cannot be handled as a {kind}: {reason}",
            kind = info.kind,
            version = info.version,
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::Registry;
    use serde_json::json;

    #[test]
    fn wrong_types_are_named_and_right_ones_pass() {
        let reg = Registry::new(&[]);
        let deploy = reg.by_kind("apps/v1", "Deployment").unwrap();
        let ok = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x", "labels": {"a": "b"}},
            "spec": {"replicas": 2, "strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}},
                "template": {"spec": {"containers": [{"name": "c", "image": "i", "resources": {"limits": {"cpu": 1}}}]}},
                "unknownField": {"is": "accepted"}}});
        assert!(check_types(&deploy, &ok).is_ok());
        let bad = json!({"spec": {"template": 3}});
        let e = check_types(&deploy, &bad).unwrap_err();
        assert_eq!(e.code, 400);
        assert!(
            e.message
                .contains("spec.template: expected object, got integer"),
            "{}",
            e.message
        );
        let bad = json!({"spec": {"template": {"spec": {"containers": [{"name": 5}]}}}});
        assert!(
            check_types(&deploy, &bad)
                .unwrap_err()
                .message
                .contains("spec.template.spec.containers[0].name")
        );
        let bad = json!({"spec": {"replicas": "many"}});
        assert!(check_types(&deploy, &bad).is_err());
    }
}
