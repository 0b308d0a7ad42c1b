//! The least-privilege identity wardn uses on a target cluster, built once for both
//! `wardn clusters bootstrap` (which applies it) and `wardn generate rbac` (which writes it to a
//! file): a ServiceAccount, explicit rules for the granted kinds only (no wildcards), Roles and
//! RoleBindings per allowed namespace for namespaced kinds, a ClusterRole for cluster-scoped
//! kinds, read access to Nodes for probing, and a token Secret.
//!
//! Kinds become resources offline from the facts the reconciler already uses: the built-in
//! scope table ([`crate::object::scope`]), the CRDs rendered by the same Apps, and kube's
//! kind → plural rule (which matches every built-in kind).

use std::collections::{BTreeMap, BTreeSet};

use kube::api::{ApiResource, GroupVersionKind};
use serde_json::{Value, json};

use crate::object::scope;

/// Verbs granted on each kind: what server-side apply, diff, prune, health and drift watches need.
pub const VERBS: &[&str] = &[
    "get", "list", "watch", "create", "update", "patch", "delete",
];
/// Name of the ServiceAccount (and the prefix of its token Secret).
pub const SERVICE_ACCOUNT: &str = "wardn";
const RBAC: &str = "rbac.authorization.k8s.io/v1";

/// One granted resource: API group, resource plural and scope.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Grant {
    /// API group (`""` for core).
    pub group: String,
    /// Resource plural, e.g. `deployments`.
    pub resource: String,
    /// Whether objects of the kind live in namespaces.
    pub namespaced: bool,
}

/// RBAC rules for `grants`: one rule per group, explicit resources and [`VERBS`].
pub fn rules(grants: &[Grant]) -> Vec<Value> {
    let mut by_group: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for grant in grants {
        by_group
            .entry(grant.group.as_str())
            .or_default()
            .insert(grant.resource.as_str());
    }
    by_group
        .into_iter()
        .map(|(group, resources)| {
            json!({"apiGroups": [group], "resources": resources, "verbs": VERBS})
        })
        .collect()
}

/// The resources of the CRDs among `objects`: `(group, kind) → plural`.
fn rendered_crd_plurals(objects: &[Value]) -> BTreeMap<(String, String), String> {
    objects
        .iter()
        .filter(|o| o.get("kind").and_then(Value::as_str) == Some("CustomResourceDefinition"))
        .filter_map(|crd| {
            let spec = crd.get("spec")?;
            let names = spec.get("names")?;
            Some((
                (
                    spec.get("group")?.as_str()?.to_string(),
                    names.get("kind")?.as_str()?.to_string(),
                ),
                names.get("plural")?.as_str()?.to_string(),
            ))
        })
        .collect()
}

/// The grant for `kind` of `api_version`, known without a cluster: built-in kinds, and kinds
/// whose CRD is among `objects`. `None` for other custom kinds.
pub fn offline_grant(api_version: &str, kind: &str, objects: &[Value]) -> Option<Grant> {
    let crds = scope::rendered_crds(objects);
    let namespaced = scope::offline_scope(api_version, kind, &crds)?;
    let group = crate::object::group_of(api_version).to_string();
    let resource = match rendered_crd_plurals(objects).remove(&(group.clone(), kind.to_string())) {
        Some(plural) => plural,
        None => {
            let version = api_version.rsplit('/').next().unwrap_or(api_version);
            ApiResource::from_gvk(&GroupVersionKind::gvk(&group, version, kind)).plural
        }
    };
    Some(Grant {
        group,
        resource,
        namespaced,
    })
}

/// The grants for every kind among `objects` (sorted, deduplicated); `Err` lists the kinds
/// (`apiVersion Kind`) that cannot be resolved offline.
pub fn offline_grants(objects: &[Value]) -> Result<Vec<Grant>, Vec<String>> {
    let mut grants = BTreeSet::new();
    let mut unknown = BTreeSet::new();
    for object in objects {
        let (Some(api_version), Some(kind)) = (
            object.get("apiVersion").and_then(Value::as_str),
            object.get("kind").and_then(Value::as_str),
        ) else {
            continue;
        };
        match offline_grant(api_version, kind, objects) {
            Some(grant) => {
                grants.insert(grant);
            }
            None => {
                unknown.insert(format!("{api_version} {kind}"));
            }
        }
    }
    if unknown.is_empty() {
        Ok(grants.into_iter().collect())
    } else {
        Err(unknown.into_iter().collect())
    }
}

/// What identity to create on one cluster.
#[derive(Debug, Clone)]
pub struct IdentityPlan {
    /// The cluster's registry name (names the RBAC objects).
    pub cluster: String,
    /// Namespace of the ServiceAccount and its token Secret.
    pub sa_namespace: String,
    /// The resources to grant.
    pub grants: Vec<Grant>,
    /// Namespaces where namespaced grants apply (a Role and RoleBinding in each); empty means
    /// cluster-wide (one ClusterRole and ClusterRoleBinding for every grant).
    pub namespaces: Vec<String>,
}

impl IdentityPlan {
    /// Name of the Roles, RoleBindings and the main ClusterRole: `wardn-<cluster>`.
    pub fn role_name(&self) -> String {
        format!("wardn-{}", self.cluster)
    }

    /// Name of the token Secret.
    pub fn secret_name(&self) -> String {
        format!("{SERVICE_ACCOUNT}-token")
    }
}

fn binding(
    kind: &str,
    name: &str,
    namespace: Option<&str>,
    role: (&str, &str),
    sa_ns: &str,
) -> Value {
    let mut metadata = json!({"name": name});
    if let Some(ns) = namespace {
        metadata["namespace"] = json!(ns);
    }
    json!({"apiVersion": RBAC, "kind": kind, "metadata": metadata,
           "subjects": [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": sa_ns}],
           "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role.0, "name": role.1}})
}

/// Every object of the identity, in apply order (Namespace and ServiceAccount first, the token
/// Secret last).
pub fn identity_objects(plan: &IdentityPlan) -> Vec<Value> {
    let ns = plan.sa_namespace.as_str();
    let role = plan.role_name();
    let probe = format!("{role}-probe");
    let mut objects = vec![
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
        json!({"apiVersion": "v1", "kind": "ServiceAccount",
               "metadata": {"name": SERVICE_ACCOUNT, "namespace": ns}}),
        json!({"apiVersion": RBAC, "kind": "ClusterRole", "metadata": {"name": probe},
               "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["list"]}]}),
        binding(
            "ClusterRoleBinding",
            &probe,
            None,
            ("ClusterRole", &probe),
            ns,
        ),
    ];
    let (namespaced, cluster_scoped): (Vec<Grant>, Vec<Grant>) = if plan.namespaces.is_empty() {
        (Vec::new(), plan.grants.clone())
    } else {
        plan.grants.iter().cloned().partition(|g| g.namespaced)
    };
    if !cluster_scoped.is_empty() {
        objects.push(
            json!({"apiVersion": RBAC, "kind": "ClusterRole", "metadata": {"name": role},
                            "rules": rules(&cluster_scoped)}),
        );
        objects.push(binding(
            "ClusterRoleBinding",
            &role,
            None,
            ("ClusterRole", &role),
            ns,
        ));
    }
    if !namespaced.is_empty() {
        for target in &plan.namespaces {
            objects.push(json!({"apiVersion": RBAC, "kind": "Role",
                                "metadata": {"name": role, "namespace": target},
                                "rules": rules(&namespaced)}));
            objects.push(binding(
                "RoleBinding",
                &role,
                Some(target),
                ("Role", &role),
                ns,
            ));
        }
    }
    objects.push(json!({"apiVersion": "v1", "kind": "Secret",
                        "type": "kubernetes.io/service-account-token",
                        "metadata": {"name": plan.secret_name(), "namespace": ns,
                                     "annotations": {"kubernetes.io/service-account.name": SERVICE_ACCOUNT}}}));
    objects
}

/// The objects as one multi-document YAML stream.
pub fn to_yaml(objects: &[Value]) -> String {
    objects
        .iter()
        .map(|o| serde_saphyr::to_string(o).unwrap_or_default())
        .collect::<Vec<_>>()
        .join("---\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant(group: &str, resource: &str, namespaced: bool) -> Grant {
        Grant {
            group: group.into(),
            resource: resource.into(),
            namespaced,
        }
    }

    #[test]
    fn rules_group_resources_without_wildcards() {
        let rules = rules(&[
            grant("apps", "deployments", true),
            grant("", "services", true),
            grant("", "configmaps", true),
        ]);
        assert_eq!(
            rules,
            vec![
                json!({"apiGroups": [""], "resources": ["configmaps", "services"], "verbs": VERBS}),
                json!({"apiGroups": ["apps"], "resources": ["deployments"], "verbs": VERBS}),
            ]
        );
        assert!(!serde_json::to_string(&rules).unwrap().contains('*'));
    }

    #[test]
    fn kinds_resolve_offline_from_builtins_and_rendered_crds() {
        let objects = vec![
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "a"}}),
            json!({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": "n"}}),
            json!({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "e"}}),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "r"}}),
            json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                   "metadata": {"name": "mice.example.com"},
                   "spec": {"group": "example.com", "scope": "Namespaced",
                            "names": {"kind": "Mouse", "plural": "mice"}}}),
            json!({"apiVersion": "example.com/v1", "kind": "Mouse", "metadata": {"name": "m"}}),
        ];
        let grants = offline_grants(&objects).unwrap();
        assert_eq!(
            grants,
            vec![
                grant("", "endpoints", true),
                grant("apiextensions.k8s.io", "customresourcedefinitions", false),
                grant("apps", "deployments", true),
                grant("example.com", "mice", true),
                grant("networking.k8s.io", "networkpolicies", true),
                grant("rbac.authorization.k8s.io", "clusterroles", false),
            ]
        );
        let unknown = offline_grants(&[
            json!({"apiVersion": "other.io/v1", "kind": "Widget", "metadata": {"name": "w"}}),
        ])
        .unwrap_err();
        assert_eq!(unknown, vec!["other.io/v1 Widget".to_string()]);
    }

    #[test]
    fn namespaced_kinds_get_roles_per_namespace_and_cluster_kinds_a_cluster_role() {
        let plan = IdentityPlan {
            cluster: "prod".into(),
            sa_namespace: "wardn".into(),
            grants: vec![
                grant("", "configmaps", true),
                grant("", "namespaces", false),
            ],
            namespaces: vec!["a".into(), "b".into()],
        };
        let objects = identity_objects(&plan);
        let kinds: Vec<String> = objects
            .iter()
            .map(|o| {
                format!(
                    "{} {}/{}",
                    o["kind"].as_str().unwrap(),
                    o["metadata"]["namespace"].as_str().unwrap_or(""),
                    o["metadata"]["name"].as_str().unwrap()
                )
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "Namespace /wardn",
                "ServiceAccount wardn/wardn",
                "ClusterRole /wardn-prod-probe",
                "ClusterRoleBinding /wardn-prod-probe",
                "ClusterRole /wardn-prod",
                "ClusterRoleBinding /wardn-prod",
                "Role a/wardn-prod",
                "RoleBinding a/wardn-prod",
                "Role b/wardn-prod",
                "RoleBinding b/wardn-prod",
                "Secret wardn/wardn-token",
            ]
        );
        assert_eq!(objects[4]["rules"][0]["resources"], json!(["namespaces"]));
        assert_eq!(objects[6]["rules"][0]["resources"], json!(["configmaps"]));
        let yaml = to_yaml(&objects);
        assert!(
            !yaml.contains('*') && yaml.matches("---\n").count() == 10,
            "{yaml}"
        );

        let wide = identity_objects(&IdentityPlan {
            namespaces: vec![],
            ..plan
        });
        assert_eq!(wide.len(), 7);
        assert_eq!(
            wide[4]["rules"][0]["resources"],
            json!(["configmaps", "namespaces"])
        );
    }
}
