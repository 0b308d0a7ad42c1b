//! Go-style defaulting of JSON fields: what counts as unset, setting defaults, and walking
//! into child maps and arrays of objects that have the expected type.

use serde_json::{Map, Value, json};

/// Whether a field counts as unset for a Go pointer field: absent or null.
pub(super) fn is_unset(map: &Map<String, Value>, key: &str) -> bool {
    map.get(key).is_none_or(Value::is_null)
}

/// Sets `key` to `value` when unset (absent or null): the rule for pointer fields.
pub(super) fn default(map: &mut Map<String, Value>, key: &str, value: Value) {
    if is_unset(map, key) {
        map.insert(key.to_string(), value);
    }
}

/// Sets a string field when unset or empty: the rule for Go string fields (`== ""`).
pub(super) fn default_str(map: &mut Map<String, Value>, key: &str, value: &str) {
    if is_unset(map, key) || map.get(key).and_then(Value::as_str) == Some("") {
        map.insert(key.to_string(), json!(value));
    }
}

/// Sets an integer field when unset or zero: the rule for Go int fields (`== 0`).
pub(super) fn default_nonzero(map: &mut Map<String, Value>, key: &str, value: i64) {
    if is_unset(map, key) || map.get(key).and_then(Value::as_i64) == Some(0) {
        map.insert(key.to_string(), json!(value));
    }
}

/// The object at `key`, created as `{}` when absent or null; None when it is another type.
pub(super) fn child<'a>(
    map: &'a mut Map<String, Value>,
    key: &str,
) -> Option<&'a mut Map<String, Value>> {
    let value = map.entry(key).or_insert_with(|| json!({}));
    if value.is_null() {
        *value = json!({});
    }
    value.as_object_mut()
}

/// The object at `key` if present (never created).
pub(super) fn existing<'a>(
    map: &'a mut Map<String, Value>,
    key: &str,
) -> Option<&'a mut Map<String, Value>> {
    map.get_mut(key).and_then(Value::as_object_mut)
}

/// The object elements of the list at `key` (absent or non-list: none).
pub(super) fn array_objects<'a>(
    map: &'a mut Map<String, Value>,
    key: &str,
) -> impl Iterator<Item = &'a mut Map<String, Value>> {
    map.get_mut(key)
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object_mut)
}
