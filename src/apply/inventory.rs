//! The inventory: the identities of the objects wardn applied for an App. It is kept in the
//! App's status, and prune only ever deletes objects listed in it.

use std::collections::BTreeSet;
use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::OWNER_ANNOTATION;
use crate::diff::managed_by_wardn;

/// The identity of one Kubernetes object: apiVersion, kind, namespace (cluster-scoped: none)
/// and name.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub struct ObjectRef {
    /// `group/version` or `v1`.
    pub api_version: String,
    /// The kind, e.g. `Deployment`.
    pub kind: String,
    /// The namespace; absent for cluster-scoped objects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The object's name.
    pub name: String,
}

/// Why a rendered object has no usable identity.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("rendered object #{index}: {reason}")]
pub struct IdentityError {
    /// The object's position in the rendered list.
    pub index: usize,
    /// Which field is missing or malformed.
    pub reason: String,
}

impl ObjectRef {
    /// Reads the identity of object number `index` of a rendered list.
    pub fn of(index: usize, object: &Value) -> Result<ObjectRef, IdentityError> {
        let field = |path: &[&str]| {
            let mut v = object;
            for p in path {
                v = v.get(p)?;
            }
            v.as_str().filter(|s| !s.is_empty()).map(str::to_string)
        };
        let missing = |what: &str| IdentityError {
            index,
            reason: format!("{what} is missing or not a non-empty string"),
        };
        Ok(ObjectRef {
            api_version: field(&["apiVersion"]).ok_or_else(|| missing("apiVersion"))?,
            kind: field(&["kind"]).ok_or_else(|| missing("kind"))?,
            namespace: field(&["metadata", "namespace"]),
            name: field(&["metadata", "name"]).ok_or_else(|| missing("metadata.name"))?,
        })
    }

    /// The API group (`""` for the core group).
    pub fn group(&self) -> &str {
        self.api_version
            .rsplit_once('/')
            .map(|(g, _)| g)
            .unwrap_or("")
    }
}

impl fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.namespace {
            Some(ns) => write!(
                f,
                "{} {}/{} ({})",
                self.kind, ns, self.name, self.api_version
            ),
            None => write!(f, "{} {} ({})", self.kind, self.name, self.api_version),
        }
    }
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

/// Whether the live object may be pruned by `owner`: wardn applied it (its field manager has an
/// Apply entry) and it carries `owner` in the owner annotation.
pub fn prunable(live: &Value, owner: &str) -> bool {
    managed_by_wardn(live)
        && live
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(OWNER_ANNOTATION))
            .and_then(Value::as_str)
            == Some(owner)
}

/// The objects of `previous` that are no longer in `current`: the prune candidates.
pub fn orphans(previous: &[ObjectRef], current: &BTreeSet<ObjectRef>) -> Vec<ObjectRef> {
    previous
        .iter()
        .filter(|r| !current.contains(*r))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn identity_and_group() {
        let r = ObjectRef::of(
            0,
            &json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "a"}}),
        )
        .unwrap();
        assert_eq!(r.group(), "apps");
        assert_eq!(r.to_string(), "Deployment a/web (apps/v1)");
        let core = ObjectRef::of(
            0,
            &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}}),
        )
        .unwrap();
        assert_eq!(core.group(), "");
        assert_eq!(core.namespace, None);
    }

    #[test]
    fn identity_errors_name_the_field() {
        let e =
            ObjectRef::of(3, &json!({"apiVersion": "v1", "metadata": {"name": "x"}})).unwrap_err();
        assert_eq!(
            e.to_string(),
            "rendered object #3: kind is missing or not a non-empty string"
        );
        let e = ObjectRef::of(1, &json!({"apiVersion": "v1", "kind": "ConfigMap"})).unwrap_err();
        assert!(e.to_string().contains("metadata.name"));
    }

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

    #[test]
    fn orphans_are_previous_minus_current() {
        let a = ObjectRef {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            namespace: Some("n".into()),
            name: "a".into(),
        };
        let b = ObjectRef {
            name: "b".into(),
            ..a.clone()
        };
        let current: BTreeSet<_> = [a.clone()].into_iter().collect();
        assert_eq!(orphans(&[a, b.clone()], &current), vec![b]);
    }
}
