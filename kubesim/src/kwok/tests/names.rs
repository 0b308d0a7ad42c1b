//! Tests of the generated names and hashes.

use serde_json::json;

use crate::kwok::names::ALPHANUMS;

use super::*;

#[test]
fn template_hashes_are_stable_and_use_the_name_alphabet() {
    let a = json!({"metadata": {"labels": {"a": "1", "b": "2"}}});
    let b = json!({"metadata": {"labels": {"b": "2", "a": "1"}}});
    assert_eq!(template_hash(&a, 0), template_hash(&b, 0));
    assert_ne!(template_hash(&a, 0), template_hash(&a, 1));
    assert_ne!(template_hash(&a, 0), template_hash(&json!({}), 0));
    let hash = template_hash(&a, 0);
    assert!(!hash.is_empty() && hash.len() <= 10);
    assert!(hash.bytes().all(|c| ALPHANUMS.contains(&c)));
}
