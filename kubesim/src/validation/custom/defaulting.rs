//! Structural defaulting: absent fields with a `default` get it, and nulls of non-nullable
//! fields are replaced by their default or dropped, as the apiextensions apiserver does
//! after pruning.

use serde_json::Value;

use super::node;

/// Deepest nesting defaulted.
const MAX_DEPTH: usize = 64;

/// Applies the schema's defaults to a custom resource in place (its metadata is left alone).
pub fn apply_defaults(schema: &Value, obj: &mut Value) {
    walk(schema, obj, true, 0);
}

fn walk(schema: &Value, value: &mut Value, root: bool, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    match value {
        Value::Object(fields) => {
            if let Some(props) = node::properties(schema) {
                for (key, prop) in props {
                    if root && key == "metadata" {
                        continue;
                    }
                    let nullable = node::flag(prop, "nullable");
                    match (fields.get(key), prop.get("default")) {
                        (None, Some(default)) => {
                            fields.insert(key.clone(), default.clone());
                        }
                        (Some(Value::Null), Some(default)) if !nullable => {
                            fields.insert(key.clone(), default.clone());
                        }
                        (Some(Value::Null), None) if !nullable => {
                            fields.remove(key);
                        }
                        _ => {}
                    }
                    if let Some(v) = fields.get_mut(key) {
                        walk(prop, v, false, depth + 1);
                    }
                }
            }
            if let Some(values) = node::additional(schema) {
                let declared = node::properties(schema);
                for (key, v) in fields.iter_mut() {
                    if declared.is_none_or(|p| !p.contains_key(key)) {
                        walk(values, v, false, depth + 1);
                    }
                }
            }
        }
        Value::Array(items) => {
            if let Some(item) = node::items(schema) {
                for v in items.iter_mut() {
                    walk(item, v, false, depth + 1);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_fill_absent_and_null_fields_at_every_level() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
            "default": {}, "properties": {
                "replicas": {"type": "integer", "default": 1},
                "mode": {"type": "string", "default": "Auto"},
                "note": {"type": "string"},
                "opt": {"type": "string", "nullable": true},
                "ports": {"type": "array", "items": {"type": "object", "properties": {
                    "protocol": {"type": "string", "default": "TCP"}}}}}}}});
        let mut obj = json!({"metadata": {"name": "x"}});
        apply_defaults(&schema, &mut obj);
        assert_eq!(obj["spec"], json!({"replicas": 1, "mode": "Auto"}));
        let mut obj = json!({"spec": {"replicas": 3, "mode": null, "note": null, "opt": null,
            "ports": [{"port": 80}, {"protocol": "UDP"}]}});
        apply_defaults(&schema, &mut obj);
        assert_eq!(obj["spec"]["replicas"], 3);
        assert_eq!(obj["spec"]["mode"], "Auto");
        assert!(obj["spec"].get("note").is_none());
        assert!(obj["spec"]["opt"].is_null());
        assert_eq!(obj["spec"]["ports"][0]["protocol"], "TCP");
        assert_eq!(obj["spec"]["ports"][1]["protocol"], "UDP");
    }
}
