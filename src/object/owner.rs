//! The marks that say an object is wardn's, and whose: wardn's server-side apply field
//! manager, and the owner annotation naming the App (`namespace/name`) that applied it. Prune
//! deletes only objects carrying both with the pruning App's name, so one App never deletes
//! another's objects.

use serde_json::Value;

use super::ObjectRef;

/// The server-side apply field manager wardn applies (and dry-runs, and publishes status) with.
pub const FIELD_MANAGER: &str = "wardn";

/// The annotation wardn stamps on every object it applies, naming the App (`namespace/name`).
pub const OWNER_ANNOTATION: &str = "cd.wardn.space/app";

/// Whether `live` carries a server-side apply entry of wardn's field manager, i.e. wardn has
/// applied this object before.
pub fn managed_by_wardn(live: &Value) -> bool {
    live.pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .is_some_and(|entries| {
            entries.iter().any(|e| {
                e.get("manager").and_then(Value::as_str) == Some(FIELD_MANAGER)
                    && e.get("operation").and_then(Value::as_str) == Some("Apply")
            })
        })
}

/// Stamps `object` with the owner annotation naming `owner` (the App's `namespace/name`).
pub fn stamp(object: &mut Value, owner: &str) {
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        let annotations = meta
            .entry("annotations")
            .or_insert_with(|| Value::Object(Default::default()));
        if let Some(map) = annotations.as_object_mut() {
            map.insert(
                OWNER_ANNOTATION.to_string(),
                Value::String(owner.to_string()),
            );
        }
    }
}

/// The App (`namespace/name`) the owner annotation of `live` names, if any.
pub fn owner_of(live: &Value) -> Option<&str> {
    live.pointer("/metadata/annotations")
        .and_then(|a| a.get(OWNER_ANNOTATION))
        .and_then(Value::as_str)
}

/// A rendered object whose live copy is owned by another App.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    /// The object.
    pub object: ObjectRef,
    /// The App (`namespace/name`) its owner annotation names.
    pub owner: String,
}

impl std::fmt::Display for Claim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} is owned by App {}", self.object, self.owner)
    }
}

/// Whether the live object may be pruned by `owner`: wardn applied it (its field manager has an
/// Apply entry) and it carries `owner` in the owner annotation.
pub fn prunable(live: &Value, owner: &str) -> bool {
    managed_by_wardn(live) && owner_of(live) == Some(owner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn stamped_objects_are_prunable_only_by_their_owner() {
        let mut o = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
        stamp(&mut o, "team/app");
        assert_eq!(o["metadata"]["annotations"][OWNER_ANNOTATION], "team/app");
        o["metadata"]["managedFields"] = json!([{"manager": "wardn", "operation": "Apply"}]);
        assert!(prunable(&o, "team/app"));
        assert!(!prunable(&o, "team/other"), "another App's object");
        o["metadata"]["managedFields"] = json!([{"manager": "kubectl", "operation": "Apply"}]);
        assert!(!prunable(&o, "team/app"), "not applied by wardn");
    }
}
