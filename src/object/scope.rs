//! Object scope (namespaced or cluster-scoped) as far as it is known without asking a cluster:
//! the kinds a Kubernetes 1.32 API server serves itself, and the CRDs rendered in the same App.
//!
//! The destination cluster's discovery ([`super::kinds`]) is the authority on scope. What is
//! here serves three purposes: refusing, before any request, what is certainly refused (a
//! built-in cluster-scoped kind under a restricted allowlist, a rendered CRD in a built-in
//! group); the offline commands (`wardn clusters validate`, `generate rbac`); and the scope of a
//! kind the cluster does not serve yet but a rendered CRD defines. A rendered CRD never decides
//! the scope of a built-in kind, nor of a kind the cluster serves already.

use serde_json::Value;

use super::group_of;

/// Every kind a Kubernetes 1.32 API server serves itself (GA, beta and alpha groups), as
/// `(group, kind, namespaced)`. Derived from the API's JSON schemas (kubernetes-validate
/// 1.37.0, `k8s-merge/schema/v1.32.json`) with the scope of each resource.
const BUILTIN_KINDS: &[(&str, &str, bool)] = &[
    ("", "Binding", true),
    ("", "ComponentStatus", false),
    ("", "ConfigMap", true),
    ("", "Endpoints", true),
    ("", "Event", true),
    ("", "LimitRange", true),
    ("", "Namespace", false),
    ("", "Node", false),
    ("", "PersistentVolume", false),
    ("", "PersistentVolumeClaim", true),
    ("", "Pod", true),
    ("", "PodTemplate", true),
    ("", "ReplicationController", true),
    ("", "ResourceQuota", true),
    ("", "Secret", true),
    ("", "Service", true),
    ("", "ServiceAccount", true),
    (
        "admissionregistration.k8s.io",
        "MutatingAdmissionPolicy",
        false,
    ),
    (
        "admissionregistration.k8s.io",
        "MutatingAdmissionPolicyBinding",
        false,
    ),
    (
        "admissionregistration.k8s.io",
        "MutatingWebhookConfiguration",
        false,
    ),
    (
        "admissionregistration.k8s.io",
        "ValidatingAdmissionPolicy",
        false,
    ),
    (
        "admissionregistration.k8s.io",
        "ValidatingAdmissionPolicyBinding",
        false,
    ),
    (
        "admissionregistration.k8s.io",
        "ValidatingWebhookConfiguration",
        false,
    ),
    ("apiextensions.k8s.io", "CustomResourceDefinition", false),
    ("apiregistration.k8s.io", "APIService", false),
    ("apps", "ControllerRevision", true),
    ("apps", "DaemonSet", true),
    ("apps", "Deployment", true),
    ("apps", "ReplicaSet", true),
    ("apps", "StatefulSet", true),
    ("authentication.k8s.io", "SelfSubjectReview", false),
    ("authentication.k8s.io", "TokenRequest", true),
    ("authentication.k8s.io", "TokenReview", false),
    ("authorization.k8s.io", "LocalSubjectAccessReview", true),
    ("authorization.k8s.io", "SelfSubjectAccessReview", false),
    ("authorization.k8s.io", "SelfSubjectRulesReview", false),
    ("authorization.k8s.io", "SubjectAccessReview", false),
    ("autoscaling", "HorizontalPodAutoscaler", true),
    ("autoscaling", "Scale", true),
    ("batch", "CronJob", true),
    ("batch", "Job", true),
    ("certificates.k8s.io", "CertificateSigningRequest", false),
    ("certificates.k8s.io", "ClusterTrustBundle", false),
    ("coordination.k8s.io", "Lease", true),
    ("coordination.k8s.io", "LeaseCandidate", true),
    ("discovery.k8s.io", "EndpointSlice", true),
    ("events.k8s.io", "Event", true),
    ("flowcontrol.apiserver.k8s.io", "FlowSchema", false),
    (
        "flowcontrol.apiserver.k8s.io",
        "PriorityLevelConfiguration",
        false,
    ),
    ("internal.apiserver.k8s.io", "StorageVersion", false),
    ("networking.k8s.io", "IPAddress", false),
    ("networking.k8s.io", "Ingress", true),
    ("networking.k8s.io", "IngressClass", false),
    ("networking.k8s.io", "NetworkPolicy", true),
    ("networking.k8s.io", "ServiceCIDR", false),
    ("node.k8s.io", "RuntimeClass", false),
    ("policy", "Eviction", true),
    ("policy", "PodDisruptionBudget", true),
    ("rbac.authorization.k8s.io", "ClusterRole", false),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding", false),
    ("rbac.authorization.k8s.io", "Role", true),
    ("rbac.authorization.k8s.io", "RoleBinding", true),
    ("resource.k8s.io", "DeviceClass", false),
    ("resource.k8s.io", "ResourceClaim", true),
    ("resource.k8s.io", "ResourceClaimTemplate", true),
    ("resource.k8s.io", "ResourceSlice", false),
    ("scheduling.k8s.io", "PriorityClass", false),
    ("storage.k8s.io", "CSIDriver", false),
    ("storage.k8s.io", "CSINode", false),
    ("storage.k8s.io", "CSIStorageCapacity", true),
    ("storage.k8s.io", "StorageClass", false),
    ("storage.k8s.io", "VolumeAttachment", false),
    ("storage.k8s.io", "VolumeAttributesClass", false),
    ("storagemigration.k8s.io", "StorageVersionMigration", false),
];

/// Groups served by the API server itself (as opposed to CRDs): the core group, groups without
/// a dot (`apps`, `batch`, `policy`, `autoscaling`) and the `*.k8s.io` groups.
pub fn is_builtin_group(group: &str) -> bool {
    !group.contains('.') || (group.ends_with(".k8s.io") && !group.ends_with(".x-k8s.io"))
}

/// Groups reserved to the Kubernetes project, in which an App's CRD may not define kinds: the
/// built-in groups ([`is_builtin_group`]) and `*.kubernetes.io`.
pub fn is_reserved_group(group: &str) -> bool {
    is_builtin_group(group)
        || group == "k8s.io"
        || group == "kubernetes.io"
        || group.ends_with(".kubernetes.io")
}

/// Whether the built-in kind `kind` of `group` is namespaced; `None` when the API server does
/// not serve such a kind itself.
pub fn builtin_scope(group: &str, kind: &str) -> Option<bool> {
    BUILTIN_KINDS
        .iter()
        .find(|(g, k, _)| *g == group && *k == kind)
        .map(|(_, _, namespaced)| *namespaced)
}

/// The built-in cluster-scoped kinds as `(group, kind)`, in table order.
pub fn builtin_cluster_scoped() -> impl Iterator<Item = (&'static str, &'static str)> {
    BUILTIN_KINDS
        .iter()
        .filter(|(_, _, namespaced)| !namespaced)
        .map(|(g, k, _)| (*g, *k))
}

/// A CustomResourceDefinition among the rendered objects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderedCrd {
    /// `metadata.name`.
    pub name: String,
    /// `spec.group`.
    pub group: String,
    /// `spec.names.kind`.
    pub kind: String,
    /// `spec.scope`: `Some(true)` for `Namespaced`, `Some(false)` for `Cluster`, `None` when
    /// missing or anything else.
    pub namespaced: Option<bool>,
}

/// The `apiextensions.k8s.io/v1` CRDs among `objects` that name a group and a kind.
pub fn rendered_crds(objects: &[Value]) -> Vec<RenderedCrd> {
    objects.iter().filter_map(rendered_crd).collect()
}

fn rendered_crd(object: &Value) -> Option<RenderedCrd> {
    if object.get("kind").and_then(Value::as_str) != Some("CustomResourceDefinition")
        || object.get("apiVersion").and_then(Value::as_str) != Some("apiextensions.k8s.io/v1")
    {
        return None;
    }
    let spec = object.get("spec")?;
    let namespaced = match spec.get("scope").and_then(Value::as_str) {
        Some("Namespaced") => Some(true),
        Some("Cluster") => Some(false),
        _ => None,
    };
    Some(RenderedCrd {
        name: object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        group: spec.get("group")?.as_str()?.to_string(),
        kind: spec.pointer("/names/kind")?.as_str()?.to_string(),
        namespaced,
    })
}

/// `Namespaced` or `Cluster`, as in a CRD's `spec.scope`.
fn scope_word(namespaced: bool) -> &'static str {
    if namespaced { "Namespaced" } else { "Cluster" }
}

/// Why a rendered CRD is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CrdRefusal {
    /// The CRD defines a kind in a group reserved to Kubernetes.
    #[error(
        "CustomResourceDefinition {crd} defines {kind} in the built-in group {group:?}; only the API server defines kinds there"
    )]
    ReservedGroup {
        /// The CRD's name.
        crd: String,
        /// The group it names.
        group: String,
        /// The kind it names.
        kind: String,
    },
    /// The CRD redeclares a kind the cluster serves already, with another scope.
    #[error(
        "CustomResourceDefinition {crd} declares {kind} ({group}) {declared}, but the cluster serves it {served}"
    )]
    ScopeConflict {
        /// The CRD's name.
        crd: String,
        /// The group it names.
        group: String,
        /// The kind it names.
        kind: String,
        /// The scope it declares.
        declared: &'static str,
        /// The scope the cluster serves.
        served: &'static str,
    },
    /// The CRD's `spec.scope` is neither `Namespaced` nor `Cluster`.
    #[error("CustomResourceDefinition {crd}: spec.scope must be Namespaced or Cluster")]
    NoScope {
        /// The CRD's name.
        crd: String,
    },
}

/// Every refused rendered CRD of an App.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("refused: {}", refusals.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
pub struct RefusedCrds {
    /// One refusal per CRD.
    pub refusals: Vec<CrdRefusal>,
}

/// Checks one rendered CRD against the reserved groups and `served`, the scope the cluster
/// already serves its kind with (`None`: not served).
pub fn check_crd(crd: &RenderedCrd, served: Option<bool>) -> Result<(), CrdRefusal> {
    if is_reserved_group(&crd.group) {
        return Err(CrdRefusal::ReservedGroup {
            crd: crd.name.clone(),
            group: crd.group.clone(),
            kind: crd.kind.clone(),
        });
    }
    let Some(declared) = crd.namespaced else {
        return Err(CrdRefusal::NoScope {
            crd: crd.name.clone(),
        });
    };
    match served {
        Some(served) if served != declared => Err(CrdRefusal::ScopeConflict {
            crd: crd.name.clone(),
            group: crd.group.clone(),
            kind: crd.kind.clone(),
            declared: scope_word(declared),
            served: scope_word(served),
        }),
        _ => Ok(()),
    }
}

/// The scope a rendered CRD gives `kind` of `api_version`: only CRDs outside the reserved
/// groups count (checked with [`check_crd`] beforehand).
pub fn crd_scope(api_version: &str, kind: &str, crds: &[RenderedCrd]) -> Option<bool> {
    let group = group_of(api_version);
    if is_reserved_group(group) {
        return None;
    }
    crds.iter()
        .find(|c| c.group == group && c.kind == kind)
        .and_then(|c| c.namespaced)
}

/// Whether `kind` of `api_version` is namespaced, as far as is known without a cluster: the
/// built-in table for the reserved groups, the rendered CRDs for the others; `None` when
/// neither knows the kind (its scope cannot be established offline).
pub fn offline_scope(api_version: &str, kind: &str, crds: &[RenderedCrd]) -> Option<bool> {
    let group = group_of(api_version);
    if is_reserved_group(group) {
        return builtin_scope(group, kind);
    }
    crd_scope(api_version, kind, crds)
}

/// The refusals of `crds` offline: the cluster is taken to serve exactly the built-in kinds.
pub fn offline_crd_refusals(crds: &[RenderedCrd]) -> Vec<CrdRefusal> {
    crds.iter()
        .filter_map(|c| check_crd(c, builtin_scope(&c.group, &c.kind)).err())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn crd(name: &str, group: &str, kind: &str, scope: &str) -> Value {
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": name},
            "spec": {"group": group, "scope": scope, "names": {"kind": kind, "plural": "xs"}}})
    }

    #[test]
    fn builtin_scopes() {
        let none = [];
        assert_eq!(offline_scope("v1", "Namespace", &none), Some(false));
        assert_eq!(offline_scope("v1", "ConfigMap", &none), Some(true));
        assert_eq!(offline_scope("apps/v1", "Deployment", &none), Some(true));
        assert_eq!(
            offline_scope("rbac.authorization.k8s.io/v1", "ClusterRole", &none),
            Some(false)
        );
        assert_eq!(offline_scope("example.com/v1", "Widget", &none), None);
        assert_eq!(
            offline_scope("cluster.x-k8s.io/v1beta1", "Cluster", &none),
            None
        );
    }

    #[test]
    fn unknown_kinds_of_builtin_groups_have_no_scope() {
        let none = [];
        assert_eq!(offline_scope("apps/v1", "Frobnicator", &none), None);
        assert_eq!(
            offline_scope("gateway.networking.k8s.io/v1", "GatewayClass", &none),
            None
        );
    }

    #[test]
    fn the_table_has_the_cluster_scoped_kinds_of_1_32() {
        for (group, kind) in [
            ("storage.k8s.io", "VolumeAttributesClass"),
            ("networking.k8s.io", "IPAddress"),
            ("networking.k8s.io", "ServiceCIDR"),
            ("resource.k8s.io", "DeviceClass"),
            ("resource.k8s.io", "ResourceSlice"),
            ("certificates.k8s.io", "ClusterTrustBundle"),
            ("admissionregistration.k8s.io", "MutatingAdmissionPolicy"),
            ("storagemigration.k8s.io", "StorageVersionMigration"),
        ] {
            assert_eq!(builtin_scope(group, kind), Some(false), "{group} {kind}");
        }
        assert_eq!(builtin_cluster_scoped().count(), 37);
    }

    #[test]
    fn rendered_crds_define_scopes_of_their_own_groups_only() {
        let objs = vec![
            crd("widgets.example.com", "example.com", "Widget", "Namespaced"),
            crd("globals.example.com", "example.com", "Global", "Cluster"),
            crd(
                "clusterrolebindings.rbac.authorization.k8s.io",
                "rbac.authorization.k8s.io",
                "ClusterRoleBinding",
                "Namespaced",
            ),
        ];
        let crds = rendered_crds(&objs);
        assert_eq!(offline_scope("example.com/v1", "Widget", &crds), Some(true));
        assert_eq!(
            offline_scope("example.com/v1", "Global", &crds),
            Some(false)
        );
        assert_eq!(
            offline_scope("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", &crds),
            Some(false),
            "a rendered CRD never changes a built-in kind's scope"
        );
        let refusals = offline_crd_refusals(&crds);
        assert_eq!(refusals.len(), 1);
        assert!(
            refusals[0]
                .to_string()
                .contains("clusterrolebindings.rbac.authorization.k8s.io"),
            "{}",
            refusals[0]
        );
    }

    #[test]
    fn crds_are_refused_in_reserved_groups_or_against_the_served_scope() {
        let crds = rendered_crds(&[
            crd("a.example.com", "example.com", "A", "Namespaced"),
            crd("b.example.com", "example.com", "B", "Sideways"),
            crd("c.x.kubernetes.io", "x.kubernetes.io", "C", "Cluster"),
        ]);
        assert_eq!(check_crd(&crds[0], None), Ok(()));
        assert_eq!(check_crd(&crds[0], Some(true)), Ok(()));
        let e = check_crd(&crds[0], Some(false)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "CustomResourceDefinition a.example.com declares A (example.com) Namespaced, but the cluster serves it Cluster"
        );
        assert!(matches!(
            check_crd(&crds[1], None),
            Err(CrdRefusal::NoScope { .. })
        ));
        assert!(matches!(
            check_crd(&crds[2], None),
            Err(CrdRefusal::ReservedGroup { .. })
        ));
        assert!(!is_reserved_group("cluster.x-k8s.io"));
    }
}
