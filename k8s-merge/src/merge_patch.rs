//! JSON merge patch (RFC 7386).

use serde_json::{Map, Value};

use crate::value::remove_key;

/// Applies a JSON merge patch (RFC 7386) to `original`: objects merge key by key, `null`
/// removes a key, anything else (arrays included) replaces. Key order: the original's keys in
/// their order, then new keys in the patch's order.
pub fn json_merge_patch(original: &Value, patch: &Value) -> Value {
    let mut target = original.clone();
    merge_into(&mut target, patch);
    target
}

/// Merges `patch` into `target` in place.
fn merge_into(target: &mut Value, patch: &Value) {
    let Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let Value::Object(map) = target else {
        return;
    };
    for (key, value) in patch {
        if value.is_null() {
            remove_key(map, key);
        } else {
            let slot = map.entry(key.clone()).or_insert(Value::Null);
            merge_into(slot, value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The examples of RFC 7386 appendix A.
    #[test]
    fn rfc7386_appendix_a() {
        let cases = [
            (json!({"a":"b"}), json!({"a":"c"}), json!({"a":"c"})),
            (json!({"a":"b"}), json!({"b":"c"}), json!({"a":"b","b":"c"})),
            (json!({"a":"b"}), json!({"a":null}), json!({})),
            (
                json!({"a":"b","b":"c"}),
                json!({"a":null}),
                json!({"b":"c"}),
            ),
            (json!({"a":["b"]}), json!({"a":"c"}), json!({"a":"c"})),
            (json!({"a":"c"}), json!({"a":["b"]}), json!({"a":["b"]})),
            (
                json!({"a":{"b":"c"}}),
                json!({"a":{"b":"d","c":null}}),
                json!({"a":{"b":"d"}}),
            ),
            (json!({"a":[{"b":"c"}]}), json!({"a":[1]}), json!({"a":[1]})),
            (json!(["a", "b"]), json!(["c", "d"]), json!(["c", "d"])),
            (json!({"a":"b"}), json!(["c"]), json!(["c"])),
            (json!({"a":"foo"}), json!(null), json!(null)),
            (json!({"a":"foo"}), json!("bar"), json!("bar")),
            (json!({"e":null}), json!({"a":1}), json!({"e":null,"a":1})),
            (json!([1, 2]), json!({"a":"b","c":null}), json!({"a":"b"})),
            (
                json!({}),
                json!({"a":{"bb":{"ccc":null}}}),
                json!({"a":{"bb":{}}}),
            ),
        ];
        for (original, patch, expected) in cases {
            assert_eq!(
                json_merge_patch(&original, &patch),
                expected,
                "{original} + {patch}"
            );
        }
    }

    #[test]
    fn key_order_keeps_original_then_patch_order() {
        let original = json!({"z": 1, "a": 2, "m": 3});
        let patch = json!({"y": 4, "a": null, "b": 5, "z": 6});
        let merged = json_merge_patch(&original, &patch);
        let keys: Vec<_> = merged.as_object().unwrap().keys().cloned().collect();
        assert_eq!(keys, ["z", "m", "y", "b"]);
        assert_eq!(merged["z"], 6);
    }

    #[test]
    fn patch_with_itself_is_identity_for_null_free_documents() {
        for doc in crate::testgen::documents(200, false) {
            assert_eq!(json_merge_patch(&doc, &doc), doc);
        }
    }

    #[test]
    fn empty_patch_is_identity() {
        for doc in crate::testgen::documents(200, true) {
            if doc.is_object() {
                assert_eq!(json_merge_patch(&doc, &json!({})), doc);
            }
        }
    }
}
