//! Reading one node of a structural schema.

use serde_json::{Map, Value};

/// The node's `properties` (None when it declares none).
pub fn properties(node: &Value) -> Option<&Map<String, Value>> {
    node.get("properties").and_then(Value::as_object)
}

/// The schema of the values of a map (`additionalProperties` given as a schema).
pub fn additional(node: &Value) -> Option<&Value> {
    node.get("additionalProperties").filter(|a| a.is_object())
}

/// Whether `additionalProperties: true` allows any value.
pub fn additional_allowed(node: &Value) -> bool {
    node.get("additionalProperties").and_then(Value::as_bool) == Some(true)
}

/// The schema of an array's items.
pub fn items(node: &Value) -> Option<&Value> {
    node.get("items").filter(|i| i.is_object())
}

/// A boolean extension such as `x-kubernetes-preserve-unknown-fields`.
pub fn flag(node: &Value, key: &str) -> bool {
    node.get(key).and_then(Value::as_bool) == Some(true)
}

/// Whether unknown fields are kept below this node.
pub fn preserves_unknown(node: &Value) -> bool {
    flag(node, "x-kubernetes-preserve-unknown-fields")
}

/// Whether this node is an embedded object (`x-kubernetes-embedded-resource`), whose
/// apiVersion, kind and metadata are always kept.
pub fn embedded(node: &Value) -> bool {
    flag(node, "x-kubernetes-embedded-resource")
}

/// The declared `type` ("" when none).
pub fn type_of(node: &Value) -> &str {
    node.get("type").and_then(Value::as_str).unwrap_or_default()
}

/// The JSON type name of a value, as go-openapi names the type it found.
pub fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}
