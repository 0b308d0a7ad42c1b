//! Secret masking: Secret values never leave wardn, in diffs, logs or API responses. A changed
//! value is still visible as a change, through distinct placeholders for the old and new value.

use serde_json::{Value, json};

/// The placeholder for a Secret value that is the same on both sides.
pub const MASK: &str = "********";
/// The placeholder for a Secret value before a change.
pub const MASK_BEFORE: &str = "******** (old)";
/// The placeholder for a Secret value after a change.
pub const MASK_AFTER: &str = "******** (new)";

fn is_secret(object: &Value) -> bool {
    object.get("kind").and_then(Value::as_str) == Some("Secret")
        && object.get("apiVersion").and_then(Value::as_str) == Some("v1")
}

/// Masks the `data` and `stringData` values of a Secret (other objects are returned as is).
pub fn mask(object: &Value) -> Value {
    mask_pair(Some(object), object).1
}

/// Masks a before/after pair of the same object: values equal on both sides become [`MASK`],
/// differing values [`MASK_BEFORE`] / [`MASK_AFTER`], so a diff shows which keys changed
/// without revealing any value.
pub fn mask_pair(before: Option<&Value>, after: &Value) -> (Option<Value>, Value) {
    let secret = is_secret(after) || before.is_some_and(is_secret);
    let mut b = before.cloned();
    let mut a = after.clone();
    if !secret {
        return (b, a);
    }
    for field in ["data", "stringData"] {
        let old = before.and_then(|o| o.get(field)).cloned();
        if let Some(map) = a.get_mut(field).and_then(Value::as_object_mut) {
            for (k, v) in map.iter_mut() {
                let same = old.as_ref().and_then(|o| o.get(k)) == Some(v);
                *v = json!(if same { MASK } else { MASK_AFTER });
            }
        }
        let new = after.get(field).cloned();
        if let Some(map) = b
            .as_mut()
            .and_then(|o| o.get_mut(field))
            .and_then(Value::as_object_mut)
        {
            for (k, v) in map.iter_mut() {
                let same = new.as_ref().and_then(|n| n.get(k)) == Some(v);
                *v = json!(if same { MASK } else { MASK_BEFORE });
            }
        }
    }
    (b, a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_secret_values_and_marks_changes() {
        let before = json!({"apiVersion": "v1", "kind": "Secret", "data": {"same": "c2VjcmV0", "changed": "b2xk", "gone": "eA=="}});
        let after = json!({"apiVersion": "v1", "kind": "Secret", "data": {"same": "c2VjcmV0", "changed": "bmV3"}, "stringData": {"p": "hunter2"}});
        let (b, a) = mask_pair(Some(&before), &after);
        assert_eq!(a["data"], json!({"same": MASK, "changed": MASK_AFTER}));
        assert_eq!(a["stringData"], json!({"p": MASK_AFTER}));
        assert_eq!(
            b.unwrap()["data"],
            json!({"same": MASK, "changed": MASK_BEFORE, "gone": MASK_BEFORE})
        );
        let text = serde_json::to_string(&a).unwrap();
        assert!(!text.contains("hunter2") && !text.contains("bmV3"));
    }

    #[test]
    fn leaves_other_kinds_alone() {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "v"}});
        assert_eq!(mask(&cm), cm);
        assert_eq!(
            mask(&json!({"apiVersion": "v1", "kind": "Secret", "data": {"k": "dg=="}}))["data"]["k"],
            MASK
        );
    }
}
