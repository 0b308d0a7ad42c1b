//! Reading workload fields (strings, integers, the generation) and the ownerReference a
//! controller puts on the objects it creates.

use serde_json::{Value, json};

pub(super) fn str_at<'v>(value: &'v Value, pointer: &str) -> &'v str {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

pub(super) fn int_at(value: &Value, pointer: &str, default: i64) -> i64 {
    value
        .pointer(pointer)
        .and_then(Value::as_i64)
        .unwrap_or(default)
}

pub(super) fn generation(object: &Value) -> i64 {
    int_at(object, "/metadata/generation", 1)
}

/// The ownerReference a controller puts on the objects it creates.
pub(super) fn owner_reference(owner: &Value) -> Value {
    json!({
        "apiVersion": str_at(owner, "/apiVersion"),
        "kind": str_at(owner, "/kind"),
        "name": str_at(owner, "/metadata/name"),
        "uid": str_at(owner, "/metadata/uid"),
        "controller": true,
        "blockOwnerDeletion": true
    })
}
