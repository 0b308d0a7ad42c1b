//! The unified text diff of two (normalised, masked) objects, rendered as YAML.

use serde_json::Value;
use similar::TextDiff;

/// Renders an object as YAML for diffing; a value that cannot be rendered (never expected for
/// JSON values) falls back to pretty JSON so the diff is still readable.
fn yaml(value: &Value) -> String {
    serde_saphyr::to_string(value)
        .or_else(|_| serde_json::to_string_pretty(value))
        .unwrap_or_default()
}

/// A unified diff (3 lines of context) from `before` (absent: a create) to `after` (absent: a
/// delete), with `label` in the `---`/`+++` headers; empty when both sides are equal.
pub fn unified(label: &str, before: Option<&Value>, after: Option<&Value>) -> String {
    let old = before.map(yaml).unwrap_or_default();
    let new = after.map(yaml).unwrap_or_default();
    if old == new {
        return String::new();
    }
    TextDiff::from_lines(&old, &new)
        .unified_diff()
        .context_radius(3)
        .header(&format!("live/{label}"), &format!("rendered/{label}"))
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn shows_changed_lines() {
        let d = unified(
            "cm",
            Some(&json!({"data": {"k": "a"}})),
            Some(&json!({"data": {"k": "b"}})),
        );
        assert!(d.starts_with("--- live/cm\n+++ rendered/cm\n"), "{d}");
        assert!(d.contains("-  k: a") && d.contains("+  k: b"), "{d}");
    }

    #[test]
    fn equal_is_empty_and_create_is_all_added() {
        let v = json!({"a": 1});
        assert_eq!(unified("x", Some(&v), Some(&v)), "");
        assert!(unified("x", None, Some(&v)).contains("+a: 1"));
    }
}
