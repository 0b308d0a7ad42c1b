//! Generated names and hashes with the real format and alphabet: `rand.SafeEncodeString`,
//! FNV-32a template hashes over a canonical (key-sorted) serialization, SHA-256 hex digests and
//! stable `generateName` suffixes.

use serde_json::Value;
use sha2::{Digest, Sha256};

/// The characters Kubernetes uses for generated names (`k8s.io/apimachinery/pkg/util/rand`):
/// no vowels, no confusable digits.
pub(super) const ALPHANUMS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// `rand.SafeEncodeString`: maps each byte to the generated-name alphabet.
fn safe_encode(text: &str) -> String {
    text.bytes()
        .map(|b| ALPHANUMS[usize::from(b) % ALPHANUMS.len()] as char)
        .collect()
}

/// FNV-1a 32-bit, the hash the controllers use for template hashes.
pub(super) fn fnv32a(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5_u32, |hash, byte| {
        (hash ^ u32::from(*byte)).wrapping_mul(0x0100_0193)
    })
}

/// Serializes with object keys sorted, so equal objects hash equally whatever their key order.
fn canonical(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let fields: Vec<String> = keys
                .into_iter()
                .map(|key| format!("{}:{}", Value::from(key.as_str()), canonical(&map[key])))
                .collect();
            format!("{{{}}}", fields.join(","))
        }
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(canonical).collect();
            format!("[{}]", items.join(","))
        }
        other => other.to_string(),
    }
}

pub(super) fn sha256_hex(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The hash the controllers label Pods with (`controller.ComputeHash`): FNV-32a of the pod
/// template (and the collision count, when non-zero), as decimal text in the generated-name
/// alphabet, e.g. `5d8f6b7c9`. Used as `pod-template-hash` and (with the owner's name) as
/// `controller-revision-hash`.
pub fn template_hash(template: &Value, collision_count: u32) -> String {
    let mut text = canonical(template);
    if collision_count > 0 {
        text.push_str(&collision_count.to_string());
    }
    safe_encode(&fnv32a(text.as_bytes()).to_string())
}

/// A stable 5-character generated-name suffix for `seed` (what `generateName` appends).
pub(super) fn name_suffix(seed: &str) -> String {
    Sha256::digest(seed.as_bytes())
        .iter()
        .take(5)
        .map(|b| ALPHANUMS[usize::from(*b) % ALPHANUMS.len()] as char)
        .collect()
}
