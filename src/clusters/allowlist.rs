//! Placement and the namespace allowlist. Namespaced objects without a namespace go to the
//! destination namespace; then every object is checked against the cluster's allowlist, before
//! any request that could change the cluster is sent (a violation is a 403).

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::object::scope::RefusedCrds;
use crate::object::{IdentityError, ObjectRef};

/// The namespaces (and whether cluster-scoped objects) an App may deploy to on one cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allowlist {
    /// The allowed namespaces; `None` allows every namespace.
    pub namespaces: Option<BTreeSet<String>>,
    /// Whether cluster-scoped objects (other than allowed Namespaces) may be applied.
    pub cluster_scoped: bool,
}

impl Allowlist {
    /// Everything allowed (the management cluster, or a cluster registered without a list).
    pub fn unrestricted() -> Allowlist {
        Allowlist {
            namespaces: None,
            cluster_scoped: true,
        }
    }

    /// Only these namespaces, and no cluster-scoped objects except those Namespaces themselves.
    pub fn namespaces<I: IntoIterator<Item = S>, S: Into<String>>(names: I) -> Allowlist {
        Allowlist {
            namespaces: Some(names.into_iter().map(Into::into).collect()),
            cluster_scoped: false,
        }
    }

    /// Whether `namespace` is allowed.
    pub fn allows_namespace(&self, namespace: &str) -> bool {
        self.namespaces
            .as_ref()
            .is_none_or(|set| set.contains(namespace))
    }

    /// Whether the placed object `id` is allowed: a namespaced object in an allowed namespace,
    /// a cluster-scoped one when the list allows them (or a Namespace the list names).
    pub fn allows(&self, id: &ObjectRef) -> bool {
        match &id.namespace {
            Some(ns) => self.allows_namespace(ns),
            None => {
                self.cluster_scoped
                    || (id.group().is_empty()
                        && id.kind == "Namespace"
                        && self.allows_namespace(&id.name))
            }
        }
    }

    /// Whether prune may delete `id` (from an inventory) today: a namespaced object in an
    /// allowed namespace, a cluster-scoped one only when the list is unrestricted for them
    /// (never a Namespace under a restricted list: deleting it deletes what it holds).
    pub fn allows_prune(&self, id: &ObjectRef) -> bool {
        match &id.namespace {
            Some(ns) => self.allows_namespace(ns),
            None => self.cluster_scoped,
        }
    }

    fn describe(&self) -> String {
        match &self.namespaces {
            None => "all namespaces".to_string(),
            Some(set) => set.iter().cloned().collect::<Vec<_>>().join(", "),
        }
    }
}

/// Why objects could not be placed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlaceError {
    /// An object lacks apiVersion, kind or name.
    #[error(transparent)]
    Identity(#[from] IdentityError),
    /// Neither the cluster (or offline, the built-in table) nor a rendered CRD knows the kind,
    /// so its scope cannot be established.
    #[error(
        "{object}: unknown kind (neither the cluster nor a rendered CRD defines {kind} in {api_version}, so its scope cannot be established)"
    )]
    UnknownKind {
        /// The object.
        object: String,
        /// Its kind.
        kind: String,
        /// Its apiVersion.
        api_version: String,
    },
    /// Rendered CRDs redeclare built-in kinds or kinds the cluster serves with another scope.
    #[error(transparent)]
    Crds(#[from] RefusedCrds),
}

/// A refusal by the allowlist (HTTP 403 in the API), listing every violation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("403 Forbidden: {}", violations.join("; "))]
pub struct Forbidden {
    /// One line per violating object (or the destination namespace).
    pub violations: Vec<String>,
}

/// Identifies every rendered object and places namespaced ones without a namespace in
/// `destination_namespace` (cluster-scoped objects lose any namespace). `namespaced` answers
/// the scope of `(apiVersion, kind)`, `None` when unknown.
pub fn place(
    objects: &[Value],
    destination_namespace: &str,
    namespaced: impl Fn(&str, &str) -> Option<bool>,
) -> Result<Vec<(ObjectRef, Value)>, PlaceError> {
    objects
        .iter()
        .enumerate()
        .map(|(i, object)| {
            let mut id = ObjectRef::of(i, object)?;
            let mut object = object.clone();
            let scoped =
                namespaced(&id.api_version, &id.kind).ok_or_else(|| PlaceError::UnknownKind {
                    object: id.to_string(),
                    kind: id.kind.clone(),
                    api_version: id.api_version.clone(),
                })?;
            if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
                if scoped && id.namespace.is_none() {
                    meta.insert("namespace".into(), json!(destination_namespace));
                    id.namespace = Some(destination_namespace.to_string());
                } else if !scoped {
                    meta.remove("namespace");
                    id.namespace = None;
                }
            }
            Ok((id, object))
        })
        .collect()
}

/// Checks the destination namespace and every placed object against the allowlist.
pub fn check(
    allowlist: &Allowlist,
    cluster: &str,
    destination_namespace: &str,
    placed: &[(ObjectRef, Value)],
) -> Result<(), Forbidden> {
    let mut violations = Vec::new();
    let allowed = allowlist.describe();
    if !allowlist.allows_namespace(destination_namespace) {
        violations.push(format!(
            "destination namespace {destination_namespace:?} is not in the allowlist of cluster {cluster} (allowed: {allowed})"
        ));
    }
    for (id, _) in placed {
        if allowlist.allows(id) {
            continue;
        }
        violations.push(match &id.namespace {
            Some(ns) => format!(
                "{id}: namespace {ns:?} is not in the allowlist of cluster {cluster} (allowed: {allowed})"
            ),
            None => format!("{id}: cluster-scoped objects are not allowed on cluster {cluster}"),
        });
    }
    if violations.is_empty() {
        Ok(())
    } else {
        Err(Forbidden { violations })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(_: &str, kind: &str) -> Option<bool> {
        match kind {
            "Namespace" | "ClusterRole" => Some(false),
            "Widget" => None,
            _ => Some(true),
        }
    }

    #[test]
    fn places_namespaced_objects_in_the_destination() {
        let objs = vec![
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b", "namespace": "other"}}),
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x", "namespace": "junk"}}),
        ];
        let placed = place(&objs, "dest", scope).unwrap();
        assert_eq!(placed[0].0.namespace.as_deref(), Some("dest"));
        assert_eq!(placed[0].1["metadata"]["namespace"], "dest");
        assert_eq!(placed[1].0.namespace.as_deref(), Some("other"));
        assert_eq!(placed[2].0.namespace, None);
        assert!(placed[2].1["metadata"].get("namespace").is_none());
        let e = place(
            &[json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}})],
            "d",
            scope,
        )
        .unwrap_err();
        assert!(e.to_string().contains("unknown kind"), "{e}");
    }

    #[test]
    fn allowlist_refuses_other_namespaces_and_cluster_scoped_objects() {
        let objs = vec![
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b", "namespace": "kube-system"}}),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "r"}}),
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "staging"}}),
        ];
        let placed = place(&objs, "staging", scope).unwrap();
        let list = Allowlist::namespaces(["staging", "default"]);
        let e = check(&list, "prod", "staging", &placed).unwrap_err();
        assert_eq!(e.violations.len(), 2, "{e}");
        assert!(
            e.violations[0].contains("kube-system")
                && e.violations[0].contains("allowed: default, staging")
        );
        assert!(e.violations[1].contains("ClusterRole r"));
        assert!(e.to_string().starts_with("403 Forbidden: "));
        assert!(check(&list, "prod", "other", &[]).is_err());
        assert!(check(&Allowlist::unrestricted(), "prod", "any", &placed).is_ok());
    }

    #[test]
    fn prune_reaches_only_what_the_allowlist_allows_now() {
        let id = |kind: &str, ns: Option<&str>, name: &str| ObjectRef {
            api_version: "v1".into(),
            kind: kind.into(),
            namespace: ns.map(str::to_string),
            name: name.into(),
        };
        let list = Allowlist::namespaces(["staging"]);
        assert!(list.allows_prune(&id("ConfigMap", Some("staging"), "a")));
        assert!(!list.allows_prune(&id("ConfigMap", Some("old"), "x")));
        assert!(
            !list.allows_prune(&id("Namespace", None, "staging")),
            "no cluster-scoped prune under a restricted list, not even an allowed Namespace"
        );
        assert!(Allowlist::unrestricted().allows_prune(&id("Namespace", None, "old")));
    }
}
