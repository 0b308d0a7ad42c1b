//! `x-kubernetes-list-type` invariants: the items of a `set` are unique, the items of a
//! `map` are unique by their `x-kubernetes-list-map-keys` (apiextensions'
//! `ValidateListSetsAndMaps`).

use serde_json::{Map, Value};

use super::super::field::{self, Errors};
use super::{child, node};

/// Deepest nesting checked.
const MAX_DEPTH: usize = 64;

/// Appends a Duplicate error for every repeated set item or map-list key.
pub fn validate(schema: &Value, value: &Value, path: &str, errs: &mut Errors) {
    walk(schema, value, path, 0, errs);
}

fn walk(schema: &Value, value: &Value, path: &str, depth: usize, errs: &mut Errors) {
    if depth > MAX_DEPTH {
        return;
    }
    match value {
        Value::Object(fields) => {
            let props = node::properties(schema);
            let values = node::additional(schema);
            for (key, v) in fields {
                if path.is_empty() && key == "metadata" {
                    continue;
                }
                if let Some(sub) = props.and_then(|p| p.get(key)).or(values) {
                    walk(sub, v, &child(path, key), depth + 1, errs);
                }
            }
        }
        Value::Array(items) => {
            match schema.get("x-kubernetes-list-type").and_then(Value::as_str) {
                Some("set") => duplicates(items, path, errs, Clone::clone),
                Some("map") => {
                    let keys: Vec<&str> = schema
                        .get("x-kubernetes-list-map-keys")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_str)
                        .collect();
                    duplicates(items, path, errs, |item| key_of(item, &keys));
                }
                _ => {}
            }
            if let Some(item) = node::items(schema) {
                for (i, v) in items.iter().enumerate() {
                    walk(item, v, &format!("{path}[{i}]"), depth + 1, errs);
                }
            }
        }
        _ => {}
    }
}

/// The map-list key fields of an item, as an object.
fn key_of(item: &Value, keys: &[&str]) -> Value {
    let mut out = Map::new();
    for k in keys {
        if let Some(v) = item.get(*k) {
            out.insert((*k).to_string(), v.clone());
        }
    }
    Value::Object(out)
}

fn duplicates(items: &[Value], path: &str, errs: &mut Errors, key: impl Fn(&Value) -> Value) {
    let mut seen: Vec<Value> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let k = key(item);
        if seen.contains(&k) {
            errs.push(field::duplicate_value(&format!("{path}[{i}]"), &k));
        } else {
            seen.push(k);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn repeated_set_items_and_map_keys_are_duplicates() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "ports": {"type": "array", "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "properties": {"name": {"type": "string"}}}}}}}});
        let obj = json!({"spec": {"tags": ["a", "b", "a"],
            "ports": [{"name": "http", "port": 1}, {"name": "http", "port": 2}]}});
        let mut errs = Errors::new();
        validate(&schema, &obj, "", &mut errs);
        let got: Vec<String> = errs.iter().map(|e| e.message()).collect();
        assert_eq!(
            got,
            vec![
                "spec.tags[2]: Duplicate value: \"a\"",
                "spec.ports[1]: Duplicate value: {\"name\":\"http\"}",
            ]
        );
    }
}
