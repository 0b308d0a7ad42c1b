//! Structural pruning: the fields a custom resource's schema does not specify are dropped
//! (and reported, for `fieldValidation`), unless `x-kubernetes-preserve-unknown-fields`
//! keeps them.

use serde_json::Value;

use super::{child, node};

/// Deepest nesting pruned; deeper values are kept as they are.
const MAX_DEPTH: usize = 64;

/// Prunes `obj` in place against its version's schema, returning the paths of the fields
/// dropped (`spec.bogus`, `spec.items[0].x`). apiVersion, kind and metadata are kept at
/// the root and in embedded resources.
pub fn prune(schema: &Value, obj: &mut Value) -> Vec<String> {
    let mut dropped = Vec::new();
    walk(schema, obj, "", true, 0, &mut dropped);
    dropped
}

fn walk(
    schema: &Value,
    value: &mut Value,
    path: &str,
    object_root: bool,
    depth: usize,
    dropped: &mut Vec<String>,
) {
    if depth > MAX_DEPTH {
        return;
    }
    match value {
        Value::Object(fields) => {
            let props = node::properties(schema);
            let values = node::additional(schema);
            let keep_rest = node::preserves_unknown(schema) || node::additional_allowed(schema);
            let mut unknown = Vec::new();
            for (key, v) in fields.iter_mut() {
                if object_root && matches!(key.as_str(), "apiVersion" | "kind" | "metadata") {
                    continue;
                }
                let at = child(path, key);
                match props.and_then(|p| p.get(key)).or(values) {
                    Some(sub) => walk(sub, v, &at, node::embedded(sub), depth + 1, dropped),
                    None if keep_rest => {}
                    None => {
                        dropped.push(at);
                        unknown.push(key.clone());
                    }
                }
            }
            for key in unknown {
                fields.remove(&key);
            }
        }
        Value::Array(items) => {
            if let Some(item) = node::items(schema) {
                for (i, v) in items.iter_mut().enumerate() {
                    let at = format!("{path}[{i}]");
                    walk(item, v, &at, node::embedded(item), depth + 1, dropped);
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
    fn unknown_fields_are_dropped_unless_preserved() {
        let schema = json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {
                "name": {"type": "string"},
                "items": {"type": "array", "items": {"type": "object", "properties": {"a": {"type": "string"}}}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}}}}}});
        let mut obj = json!({"apiVersion": "x/v1", "kind": "K", "metadata": {"name": "n"},
            "spec": {"name": "a", "bogus": 1, "items": [{"a": "x", "b": "y"}],
                "free": {"anything": {"goes": true}}, "labels": {"k": "v"}},
            "status": {"x": 1}});
        let dropped = prune(&schema, &mut obj);
        assert_eq!(dropped, vec!["spec.bogus", "spec.items[0].b", "status"]);
        assert_eq!(obj["spec"]["free"]["anything"]["goes"], true);
        assert_eq!(obj["spec"]["labels"]["k"], "v");
        assert_eq!(obj["metadata"]["name"], "n");
        assert!(obj.get("status").is_none());
    }
}
