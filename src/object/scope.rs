//! Object scope (namespaced or cluster-scoped) known without asking a cluster: the built-in
//! cluster-scoped kinds and the CRDs rendered in the same App. Used to place objects in the
//! destination namespace and to check the namespace allowlist before any request is sent.

use std::collections::BTreeMap;

use serde_json::Value;

use super::group_of;

/// Built-in cluster-scoped kinds as `(group, kind)`; every other built-in kind is namespaced.
const CLUSTER_SCOPED: &[(&str, &str)] = &[
    ("", "Namespace"),
    ("", "Node"),
    ("", "PersistentVolume"),
    ("", "ComponentStatus"),
    ("rbac.authorization.k8s.io", "ClusterRole"),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
    ("apiextensions.k8s.io", "CustomResourceDefinition"),
    ("apiregistration.k8s.io", "APIService"),
    ("storage.k8s.io", "StorageClass"),
    ("storage.k8s.io", "CSIDriver"),
    ("storage.k8s.io", "CSINode"),
    ("storage.k8s.io", "VolumeAttachment"),
    ("scheduling.k8s.io", "PriorityClass"),
    ("networking.k8s.io", "IngressClass"),
    ("node.k8s.io", "RuntimeClass"),
    (
        "admissionregistration.k8s.io",
        "ValidatingWebhookConfiguration",
    ),
    (
        "admissionregistration.k8s.io",
        "MutatingWebhookConfiguration",
    ),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),
    (
        "admissionregistration.k8s.io",
        "ValidatingAdmissionPolicyBinding",
    ),
    ("certificates.k8s.io", "CertificateSigningRequest"),
    ("flowcontrol.apiserver.k8s.io", "FlowSchema"),
    ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"),
];

/// Groups served by the API server itself (as opposed to CRDs): the core group, groups without
/// a dot (`apps`, `batch`, `policy`, `autoscaling`) and the `*.k8s.io` groups.
pub fn is_builtin_group(group: &str) -> bool {
    !group.contains('.') || (group.ends_with(".k8s.io") && !group.ends_with(".x-k8s.io"))
}

/// The scopes of the kinds defined by CRDs among `objects`: `(group, kind) → namespaced`.
pub fn rendered_crd_scopes(objects: &[Value]) -> BTreeMap<(String, String), bool> {
    objects
        .iter()
        .filter(|o| {
            o.get("kind").and_then(Value::as_str) == Some("CustomResourceDefinition")
                && o.get("apiVersion").and_then(Value::as_str) == Some("apiextensions.k8s.io/v1")
        })
        .filter_map(|crd| {
            let spec = crd.get("spec")?;
            let group = spec.get("group")?.as_str()?.to_string();
            let kind = spec.get("names")?.get("kind")?.as_str()?.to_string();
            let namespaced = spec.get("scope").and_then(Value::as_str) != Some("Cluster");
            Some(((group, kind), namespaced))
        })
        .collect()
}

/// Whether `kind` of `api_version` is namespaced, if known without discovery: `None` for
/// custom kinds whose CRD is not among the rendered objects.
pub fn static_scope(
    api_version: &str,
    kind: &str,
    crds: &BTreeMap<(String, String), bool>,
) -> Option<bool> {
    let group = group_of(api_version);
    if let Some(namespaced) = crds.get(&(group.to_string(), kind.to_string())) {
        return Some(*namespaced);
    }
    if is_builtin_group(group) {
        return Some(!CLUSTER_SCOPED.contains(&(group, kind)));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn builtin_scopes() {
        let none = BTreeMap::new();
        assert_eq!(static_scope("v1", "Namespace", &none), Some(false));
        assert_eq!(static_scope("v1", "ConfigMap", &none), Some(true));
        assert_eq!(static_scope("apps/v1", "Deployment", &none), Some(true));
        assert_eq!(
            static_scope("rbac.authorization.k8s.io/v1", "ClusterRole", &none),
            Some(false)
        );
        assert_eq!(static_scope("example.com/v1", "Widget", &none), None);
        assert_eq!(
            static_scope("cluster.x-k8s.io/v1beta1", "Cluster", &none),
            None
        );
    }

    #[test]
    fn rendered_crds_define_scopes() {
        let objs = vec![
            json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                "metadata": {"name": "widgets.example.com"},
                "spec": {"group": "example.com", "scope": "Namespaced", "names": {"kind": "Widget", "plural": "widgets"}}}),
            json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                "metadata": {"name": "globals.example.com"},
                "spec": {"group": "example.com", "scope": "Cluster", "names": {"kind": "Global", "plural": "globals"}}}),
        ];
        let crds = rendered_crd_scopes(&objs);
        assert_eq!(static_scope("example.com/v1", "Widget", &crds), Some(true));
        assert_eq!(static_scope("example.com/v1", "Global", &crds), Some(false));
    }
}
