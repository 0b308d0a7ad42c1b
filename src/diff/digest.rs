//! Content digests of objects: of a rendered object as wardn would apply it, and of a live
//! object's desired state (normalised: no status, no server bookkeeping) together with whether
//! wardn still manages it. Two live objects with the same digest give the same server-side
//! apply result for the same rendered object, which is what lets a pass trust an earlier
//! dry-run (see [`super::known`]). Digests are order-independent: object keys are hashed in
//! sorted order, so the server's field order does not matter.

use serde_json::Value;
use sha2::{Digest as _, Sha256};

use super::normalize;
use crate::object::owner::managed_by_wardn;

/// A sha256 content digest.
pub type Digest = [u8; 32];

/// The digest of a rendered (placed and stamped) object.
pub fn rendered(object: &Value) -> Digest {
    let mut h = Sha256::new();
    feed(&mut h, object);
    h.finalize().into()
}

/// The digest of a live object's desired state: its normalised form (status, resourceVersion,
/// managedFields and other server fields stripped) and whether wardn has an Apply entry in
/// its managedFields. Status updates by controllers leave it unchanged; any write to the
/// desired state, or losing wardn's field ownership entirely, changes it.
pub fn live(object: &Value) -> Digest {
    let mut h = Sha256::new();
    h.update([u8::from(managed_by_wardn(object))]);
    feed(&mut h, &normalize::normalize(object));
    h.finalize().into()
}

/// Feeds `value` into `h` unambiguously: a type tag, lengths before contents, object keys
/// sorted.
fn feed(h: &mut Sha256, value: &Value) {
    match value {
        Value::Null => h.update(b"n"),
        Value::Bool(b) => h.update(if *b { b"t" } else { b"f" }),
        Value::Number(n) => {
            let text = n.to_string();
            h.update(b"#");
            h.update((text.len() as u64).to_le_bytes());
            h.update(text.as_bytes());
        }
        Value::String(s) => {
            h.update(b"s");
            h.update((s.len() as u64).to_le_bytes());
            h.update(s.as_bytes());
        }
        Value::Array(items) => {
            h.update(b"[");
            h.update((items.len() as u64).to_le_bytes());
            for item in items {
                feed(h, item);
            }
        }
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            h.update(b"{");
            h.update((entries.len() as u64).to_le_bytes());
            for (key, value) in entries {
                h.update((key.len() as u64).to_le_bytes());
                h.update(key.as_bytes());
                feed(h, value);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn live_cm(data: &str, manager: &str, rv: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "n", "resourceVersion": rv,
                "managedFields": [{"manager": manager, "operation": "Apply",
                    "time": format!("2026-11-30T10:00:0{rv}Z")}]},
            "data": {"k": data}})
    }

    #[test]
    fn key_order_does_not_matter_and_values_do() {
        let a = json!({"a": 1, "b": {"c": [1, "x"], "d": null}});
        let b: Value =
            serde_json::from_str(r#"{"b": {"d": null, "c": [1, "x"]}, "a": 1}"#).unwrap();
        assert_eq!(rendered(&a), rendered(&b));
        assert_ne!(
            rendered(&a),
            rendered(&json!({"a": 2, "b": {"c": [1, "x"], "d": null}}))
        );
        assert_ne!(rendered(&json!(["ab", "c"])), rendered(&json!(["a", "bc"])));
        assert_ne!(rendered(&json!({"a": "1"})), rendered(&json!({"a": 1})));
    }

    #[test]
    fn live_digest_ignores_bookkeeping_but_not_desired_state_or_ownership() {
        let base = live_cm("v", "wardn", "1");
        let mut status_update = live_cm("v", "wardn", "2");
        status_update["status"] = json!({"ready": true});
        assert_eq!(live(&base), live(&status_update), "rv, times and status");
        assert_ne!(
            live(&base),
            live(&live_cm("w", "wardn", "1")),
            "data changed"
        );
        assert_ne!(
            live(&base),
            live(&live_cm("v", "kubectl", "1")),
            "wardn no longer manages it"
        );
    }
}
