//! Decoding of built-in objects against the v1.32 schema, as kube-apiserver's typed decoder
//! does it: a field of the wrong JSON type (a string where an object belongs) or a value
//! the type cannot hold (a quantity that is not one, `data` that is not base64) is a 400
//! BadRequest naming the field; quantities come out in canonical form; fields the schema
//! does not know are removed and reported (for `fieldValidation`).

use base64::Engine;
use serde_json::Value;

use crate::quantity;
use crate::resources::ResourceInfo;
use crate::status::ApiError;

/// Deepest nesting checked; deeper values are accepted as they are.
const MAX_DEPTH: usize = 64;

const QUANTITY: &str = "io.k8s.apimachinery.pkg.api.resource.Quantity";

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

/// The first byte Go's base64 decoder refuses, as `illegal base64 data at input byte N`.
fn base64_error(s: &str) -> Option<String> {
    let cleaned: String = s.chars().filter(|c| *c != '\r' && *c != '\n').collect();
    if base64::engine::general_purpose::STANDARD
        .decode(cleaned.as_bytes())
        .is_ok()
    {
        return None;
    }
    let valid = |c: u8| c.is_ascii_alphanumeric() || c == b'+' || c == b'/';
    let bytes = cleaned.as_bytes();
    let body = bytes.iter().position(|c| !valid(*c)).unwrap_or(bytes.len());
    let at = if body < bytes.len() && bytes[body] == b'=' {
        // padding in the wrong place or of the wrong length
        let quad_start = body - body % 4;
        if body % 4 < 2 {
            quad_start.max(body)
        } else {
            bytes.len().min(quad_start + 4)
        }
    } else if body < bytes.len() {
        body
    } else {
        bytes.len() - bytes.len() % 4
    };
    Some(format!("illegal base64 data at input byte {at}"))
}

/// The walk's state: the schema definitions and the unknown fields found.
struct Walk<'a> {
    defs: &'a Value,
    unknown: Vec<String>,
}

impl Walk<'_> {
    fn check(
        &mut self,
        value: &mut Value,
        node: &Value,
        path: &str,
        depth: usize,
    ) -> Result<(), String> {
        if value.is_null() || depth > MAX_DEPTH {
            return Ok(());
        }
        let shown = || path.trim_start_matches('.').to_string();
        if let Some(name) = node.get("ref").and_then(Value::as_str) {
            if name == QUANTITY {
                return match quantity::canonical_json(value) {
                    Some(c) => {
                        *value = Value::String(c);
                        Ok(())
                    }
                    None if value.is_string() || value.is_number() => {
                        Err(quantity::FORMAT_ERROR.to_string())
                    }
                    None => Err(format!(
                        "{}: expected string or number, got {}",
                        shown(),
                        json_type(value)
                    )),
                };
            }
            let defs = self.defs;
            return match defs.get(name) {
                Some(def) => self.check(value, def, path, depth + 1),
                None => Ok(()),
            };
        }
        let wrong = |expected: &str, value: &Value| {
            Err(format!(
                "{}: expected {expected}, got {}",
                shown(),
                json_type(value)
            ))
        };
        if node.get("oneOf").is_some() {
            return match value {
                Value::String(_) | Value::Number(_) => Ok(()),
                _ => wrong("string or number", value),
            };
        }
        match node.get("type").and_then(Value::as_str) {
            Some("object") => {
                let Some(fields) = value.as_object_mut() else {
                    return wrong("object", value);
                };
                let props = node.get("properties").and_then(Value::as_object);
                let extra = node.get("additionalProperties").filter(|a| a.is_object());
                let mut unknown = Vec::new();
                for (k, v) in fields.iter_mut() {
                    match props.and_then(|p| p.get(k)).or(extra) {
                        Some(child) => self.check(v, child, &format!("{path}.{k}"), depth + 1)?,
                        None if props.is_some() => {
                            // reported in document order, as the strict decoder meets them
                            self.unknown
                                .push(format!("{path}.{k}").trim_start_matches('.').to_string());
                            unknown.push(k.clone());
                        }
                        None => {}
                    }
                }
                for k in unknown {
                    fields.remove(&k);
                }
                Ok(())
            }
            Some("array") => {
                let Some(items) = value.as_array_mut() else {
                    return wrong("array", value);
                };
                if let Some(item_node) = node.get("items") {
                    for (i, item) in items.iter_mut().enumerate() {
                        self.check(item, item_node, &format!("{path}[{i}]"), depth + 1)?;
                    }
                }
                Ok(())
            }
            Some("string") => match value.as_str() {
                None => wrong("string", value),
                Some(s) if node.get("format").and_then(Value::as_str) == Some("byte") => {
                    base64_error(s).map_or(Ok(()), Err)
                }
                Some(_) => Ok(()),
            },
            Some("integer") if !(value.is_i64() || value.is_u64()) => wrong("integer", value),
            Some("number") if !value.is_number() => wrong("number", value),
            Some("boolean") if !value.is_boolean() => wrong("boolean", value),
            _ => Ok(()),
        }
    }
}

/// Decodes an object in place: checks field types and values, canonicalises quantities, and
/// removes the fields its schema does not know, returning their paths (`spec.bogus`,
/// `spec.template.spec.containers[0].x`). Custom resources are pruned against their CRD
/// version's schema (their types are checked later, as validation).
pub fn decode(info: &ResourceInfo, obj: &mut Value) -> Result<Vec<String>, ApiError> {
    if let Some(schema) = &info.schema {
        return Ok(super::custom::prune(schema, obj));
    }
    let raw = k8s_merge::Schema::builtin().raw();
    let defs = &raw["definitions"];
    let Some(def) = defs.get(crate::openapi::definition_name(info)) else {
        return Ok(Vec::new());
    };
    let mut walk = Walk {
        defs,
        unknown: Vec::new(),
    };
    walk.check(obj, def, "", 0).map_err(|reason| {
        ApiError::bad_request(format!(
            "{kind} in version \"{version}\" cannot be handled as a {kind}: {reason}",
            kind = info.kind,
            version = info.version,
        ))
    })?;
    Ok(walk.unknown)
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
        let mut ok = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x", "labels": {"a": "b"}},
            "spec": {"replicas": 2, "strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}},
                "template": {"spec": {"containers": [{"name": "c", "image": "i", "resources": {"limits": {"cpu": 1, "memory": "1024Mi"}}}]}},
                "unknownField": {"is": "dropped"}}});
        let unknown = decode(&deploy, &mut ok).unwrap();
        assert_eq!(unknown, vec!["spec.unknownField"]);
        assert!(ok["spec"].get("unknownField").is_none());
        let limits = &ok["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"];
        assert_eq!(limits, &json!({"cpu": "1", "memory": "1Gi"}));
        let mut bad = json!({"spec": {"template": 3}});
        let e = decode(&deploy, &mut bad).unwrap_err();
        assert_eq!(e.code, 400);
        assert!(
            e.message
                .contains("spec.template: expected object, got integer"),
            "{}",
            e.message
        );
        let mut bad = json!({"spec": {"template": {"spec": {"containers": [{"name": 5}]}}}});
        assert!(
            decode(&deploy, &mut bad)
                .unwrap_err()
                .message
                .contains("spec.template.spec.containers[0].name")
        );
        let mut bad = json!({"spec": {"replicas": "many"}});
        assert!(decode(&deploy, &mut bad).is_err());
    }

    #[test]
    fn bad_quantities_and_base64_are_bad_requests() {
        let reg = Registry::new(&[]);
        let pod = reg.by_kind("v1", "Pod").unwrap();
        let mut bad = json!({"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "lots"}}}]}});
        let e = decode(&pod, &mut bad).unwrap_err();
        assert_eq!(
            e.message,
            format!(
                "Pod in version \"v1\" cannot be handled as a Pod: {}",
                quantity::FORMAT_ERROR
            )
        );
        let secret = reg.by_kind("v1", "Secret").unwrap();
        let mut bad = json!({"data": {"a": "not base64!"}});
        let e = decode(&secret, &mut bad).unwrap_err();
        assert_eq!(
            e.message,
            "Secret in version \"v1\" cannot be handled as a Secret: illegal base64 data at input byte 3"
        );
        let mut ok = json!({"data": {"a": "aGVsbG8=", "b": ""}});
        assert!(decode(&secret, &mut ok).unwrap().is_empty());
        assert_eq!(
            base64_error("aGVsbG8"),
            Some("illegal base64 data at input byte 4".into())
        );
    }
}
