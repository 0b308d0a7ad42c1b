//! Object identity and ownership, shared by every stage that touches cluster objects: an
//! object's identity ([`ObjectRef`]: group, kind, namespace, name, with the apiVersion stored
//! beside it), the marks that say wardn owns it ([`owner`]), and where its kind is served and
//! whether it is namespaced ([`kinds`] through the cluster's discovery, [`scope`] offline).
//!
//! This module is a leaf: it imports no other module of wardn, so the App type, diff, apply,
//! clusters and reconcile can all use it without importing each other.

pub mod kinds;
pub mod owner;
pub mod scope;

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The identity of one Kubernetes object: group, kind, namespace (cluster-scoped: none) and
/// name. The `apiVersion` it was rendered or applied with is stored beside the identity but is
/// not part of it: an object moved from `ex.com/v1alpha1` to `ex.com/v1` is the same object
/// (equality, ordering and hashing ignore the version), as in Flux's inventory.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
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
        group_of(&self.api_version)
    }

    /// The identity proper, without the version: what equality, ordering and hashing compare.
    fn identity(&self) -> (&str, &str, Option<&str>, &str) {
        (
            self.group(),
            &self.kind,
            self.namespace.as_deref(),
            &self.name,
        )
    }
}

/// The group of an `apiVersion` (`apps/v1` → `apps`, `v1` → `""`).
pub fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map(|(g, _)| g).unwrap_or("")
}

/// Whether `text` is an RFC 1123 DNS label (1-63 lowercase letters, digits or '-', starting
/// and ending with a letter or digit): the form of namespaces and cluster names.
pub fn is_dns_label(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= 63
        && text
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !text.starts_with('-')
        && !text.ends_with('-')
}

impl PartialEq for ObjectRef {
    fn eq(&self, other: &Self) -> bool {
        self.identity() == other.identity()
    }
}

impl Eq for ObjectRef {}

impl Hash for ObjectRef {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.identity().hash(state);
    }
}

impl PartialOrd for ObjectRef {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ObjectRef {
    fn cmp(&self, other: &Self) -> Ordering {
        self.identity().cmp(&other.identity())
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
    fn the_version_is_not_part_of_the_identity() {
        let gadget = |api_version: &str| ObjectRef {
            api_version: api_version.into(),
            kind: "Gadget".into(),
            namespace: Some("n".into()),
            name: "g".into(),
        };
        let (old, new) = (gadget("ex.com/v1alpha1"), gadget("ex.com/v1"));
        assert_eq!(old, new);
        assert_eq!(old.cmp(&new), Ordering::Equal);
        let set: std::collections::HashSet<_> = [old.clone(), new].into_iter().collect();
        assert_eq!(set.len(), 1);
        assert_ne!(
            old,
            gadget("other.com/v1"),
            "the group is part of the identity"
        );
        let serialized = serde_json::to_value(&old).unwrap();
        assert_eq!(
            serialized["apiVersion"], "ex.com/v1alpha1",
            "stored beside it"
        );
    }
}
