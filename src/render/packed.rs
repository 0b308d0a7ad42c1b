//! Rendered objects as a long-running process keeps them between passes: compact JSON text,
//! unpacked for each pass that needs the objects.
//!
//! Parsed, an object is a tree of order-preserving maps (an index table and an entry vector
//! per map, each grown by doubling) and a heap string per key and scalar: the ten small
//! objects of a typical App took about 35 KiB parsed, 60 KiB with the copy a pass held, and
//! were most of a replica's memory with 10,000 Apps. Their JSON text is a few KiB, and
//! parsing it back is small next to a pass's requests to the cluster. JSON
//! rather than the rendered YAML because it reads back exactly: keys keep their order, numbers
//! their type and value.

use std::sync::Arc;

use serde_json::Value;

use super::{InputsFingerprint, Rendered};

/// Rendered objects as compact JSON (an array, in output order); cheap to clone (shared).
#[derive(Clone, PartialEq, Eq)]
pub struct PackedObjects {
    json: Arc<str>,
}

/// Why packed objects could not be read back (they were not written by [`PackedObjects::pack`]).
#[derive(Debug, thiserror::Error)]
#[error("cannot read back the rendered objects kept for the pass: {0}")]
pub struct UnpackError(#[from] serde_json::Error);

impl PackedObjects {
    /// Packs `objects`.
    pub fn pack(objects: &[Value]) -> PackedObjects {
        // Serialising `Value`s cannot fail (their map keys are strings); if it ever did, the
        // empty text fails at `unpack`, naming the problem, instead of losing objects.
        let json = serde_json::to_string(objects).unwrap_or_default();
        PackedObjects { json: json.into() }
    }

    /// The objects, parsed again: equal to those packed.
    pub fn unpack(&self) -> Result<Vec<Value>, UnpackError> {
        Ok(serde_json::from_str(&self.json)?)
    }
}

impl std::fmt::Debug for PackedObjects {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PackedObjects")
            .field("bytes", &self.json.len())
            .finish_non_exhaustive()
    }
}

/// A render result as the render cache keeps it: the objects packed, the digest, and the
/// inputs that decide whether it can be reused; not the YAML text (the digest names it).
#[derive(Debug, Clone)]
pub struct PackedRender {
    /// The objects, in output order.
    pub objects: PackedObjects,
    /// sha256 (hex) of the rendered YAML.
    pub digest: String,
    /// What the result depends on ([`Rendered::inputs`], fingerprinted).
    pub inputs: InputsFingerprint,
}

impl From<Rendered> for PackedRender {
    fn from(rendered: Rendered) -> PackedRender {
        PackedRender {
            objects: PackedObjects::pack(&rendered.objects),
            digest: rendered.digest,
            inputs: InputsFingerprint::of(&rendered.inputs),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn objects_read_back_equal_with_their_key_order_and_number_types() {
        let objects = vec![
            json!({"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "a"},
                   "data": {"z": "1", "a": "", "m": "ü\u{0}\"\\"}}),
            json!({"spec": {"replicas": 3, "ratio": 0.1, "big": u64::MAX, "neg": -7,
                   "exp": 1e300, "none": null, "on": true, "list": [[], {}, [1, "1"]]}}),
        ];
        let packed = PackedObjects::pack(&objects);
        let back = packed.unpack().unwrap();
        assert_eq!(back, objects);
        let keys: Vec<&String> = back[0]["data"].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["z", "a", "m"], "key order kept");
        assert!(back[1]["spec"]["replicas"].is_u64());
        assert!(back[1]["spec"]["ratio"].is_f64());
        assert!(back[1]["spec"]["exp"].is_f64());
        assert!(back[1]["spec"]["neg"].is_i64());
        assert!(
            packed.json.len() < 300,
            "compact: {} bytes",
            packed.json.len()
        );
    }

    #[test]
    fn text_that_is_not_an_array_of_objects_is_an_error_not_a_panic() {
        for text in ["", "{", "[1", "null", "{\"a\": 1}"] {
            let packed = PackedObjects { json: text.into() };
            assert!(packed.unpack().is_err(), "{text:?}");
        }
    }
}
