//! Small helpers over `serde_json::Value` shared by the patch and apply modules.

use serde_json::{Map, Value};

/// JSON equality where numbers compare by numeric value (`1` equals `1.0`), as RFC 6902 `test`
/// and list-key matching require.
pub(crate) fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            if let (Some(x), Some(y)) = (x.as_i64(), y.as_i64()) {
                x == y
            } else if let (Some(x), Some(y)) = (x.as_u64(), y.as_u64()) {
                x == y
            } else {
                x.as_f64() == y.as_f64()
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| json_equal(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(key, value)| y.get(key).is_some_and(|other| json_equal(value, other)))
        }
        _ => a == b,
    }
}

/// Removes `key` from `map` keeping the order of the remaining keys.
pub(crate) fn remove_key(map: &mut Map<String, Value>, key: &str) -> Option<Value> {
    map.shift_remove(key)
}

/// The JSON type name of a value, for error messages.
pub(crate) fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Appends `.field` to a JSON path (`.spec.replicas`).
pub(crate) fn join_field(path: &str, field: &str) -> String {
    format!("{path}.{field}")
}

/// Appends `[index]` to a JSON path.
pub(crate) fn join_index(path: &str, index: usize) -> String {
    format!("{path}[{index}]")
}

/// The path to show for the document root.
pub(crate) fn display_path(path: &str) -> &str {
    if path.is_empty() { "." } else { path }
}
