//! Diff: what applying one rendered object would change, as the API server itself computes it
//! (server-side apply dry-run with field manager `wardn`), normalised, with Secret values
//! masked, as a structured change set and a unified text diff.

pub mod changes;
pub mod digest;
pub mod dryrun;
pub mod known;
pub mod mask;
pub mod normalize;
pub mod text;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::object::ObjectRef;
use crate::object::owner::{FIELD_MANAGER, managed_by_wardn};
use changes::Change;

/// What a plan does with one rendered object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// The cluster does not have it.
    Create,
    /// The live object differs, or wardn does not manage it yet (adoption).
    Update,
    /// The live object is as rendered and already applied by wardn.
    Unchanged,
}

/// The diff of one rendered object against the cluster.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObjectDiff {
    /// Which object.
    pub object: ObjectRef,
    /// Create, update or unchanged.
    pub action: Action,
    /// The live object's resourceVersion (none for a create), bound into the plan hash.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub live_resource_version: Option<String>,
    /// The structured changes (normalised, Secret values masked).
    pub changes: Vec<Change>,
    /// The unified text diff (normalised, Secret values masked).
    pub text: String,
}

impl ObjectDiff {
    /// The diff of an object known to be unchanged without a dry-run (see [`known`]).
    pub fn unchanged(object: ObjectRef, live_resource_version: String) -> ObjectDiff {
        ObjectDiff {
            object,
            action: Action::Unchanged,
            live_resource_version: Some(live_resource_version),
            changes: Vec::new(),
            text: String::new(),
        }
    }
}

/// Compares the live object (none: absent) with the server's prediction of it after the
/// apply (`predicted`: the dry-run result, or the rendered object when the kind cannot be
/// dry-run yet because its CRD comes in the same plan).
pub fn compare(object: ObjectRef, live: Option<&Value>, predicted: &Value) -> ObjectDiff {
    let after = normalize::normalize(predicted);
    let before = live.map(normalize::normalize);
    let (before, after) = mask::mask_pair(before.as_ref(), &after);
    let label = object.to_string();
    let changes = match &before {
        Some(b) => changes::changes(b, &after),
        None => Vec::new(),
    };
    let action = match live {
        None => Action::Create,
        Some(l) if !changes.is_empty() || !managed_by_wardn(l) => Action::Update,
        Some(_) => Action::Unchanged,
    };
    let text = match action {
        Action::Unchanged => String::new(),
        Action::Update if changes.is_empty() => format!(
            "# {label}: no field changes; wardn takes ownership (field manager {FIELD_MANAGER})\n"
        ),
        _ => text::unified(&label, before.as_ref(), Some(&after)),
    };
    ObjectDiff {
        object,
        action,
        live_resource_version: live
            .and_then(|l| l.pointer("/metadata/resourceVersion"))
            .and_then(Value::as_str)
            .map(str::to_string),
        changes,
        text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cm_ref() -> ObjectRef {
        ObjectRef {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            namespace: Some("n".into()),
            name: "c".into(),
        }
    }

    fn live(data: &str, manager: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "n", "resourceVersion": "5", "uid": "u",
                "managedFields": [{"manager": manager, "operation": "Apply", "fieldsV1": {}}]},
            "data": {"k": data}})
    }

    #[test]
    fn create_update_unchanged() {
        let rendered = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "n"}, "data": {"k": "b"}});
        let d = compare(cm_ref(), None, &rendered);
        assert_eq!(d.action, Action::Create);
        assert!(d.text.contains("+data:"));
        let mut predicted = live("b", FIELD_MANAGER);
        predicted["metadata"]["resourceVersion"] = json!("6");
        let d = compare(cm_ref(), Some(&live("a", FIELD_MANAGER)), &predicted);
        assert_eq!(d.action, Action::Update);
        assert_eq!(d.live_resource_version.as_deref(), Some("5"));
        assert_eq!(d.changes.len(), 1);
        assert_eq!(d.changes[0].path, "/data/k");
        let d = compare(cm_ref(), Some(&live("b", FIELD_MANAGER)), &predicted);
        assert_eq!(d.action, Action::Unchanged);
        assert_eq!(d.text, "");
    }

    #[test]
    fn objects_wardn_never_applied_are_adopted_as_updates() {
        let d = compare(
            cm_ref(),
            Some(&live("b", "kubectl")),
            &live("b", FIELD_MANAGER),
        );
        assert_eq!(d.action, Action::Update);
        assert!(d.changes.is_empty());
        assert!(d.text.contains("takes ownership"));
    }

    #[test]
    fn secret_values_never_appear() {
        let r = ObjectRef {
            kind: "Secret".into(),
            ..cm_ref()
        };
        let old = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "c"}, "data": {"password": "b2xkLXNlY3JldA=="}});
        let new = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "c"}, "data": {"password": "bmV3LXNlY3JldA=="}});
        let d = compare(r, Some(&old), &new);
        let all = serde_json::to_string(&d).unwrap();
        assert!(
            !all.contains("b2xkLXNlY3JldA") && !all.contains("bmV3LXNlY3JldA"),
            "{all}"
        );
        assert!(d.text.contains(mask::MASK_AFTER));
    }
}
