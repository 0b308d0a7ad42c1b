//! Kind ordering: the stage each object is applied in. Definitions and containers come before
//! what uses them (CRDs, Namespaces, identities and RBAC, configuration, Services, workloads,
//! then everything else; custom resources last). Prune runs the same order in reverse.

use crate::object::ObjectRef;
use crate::object::scope::is_builtin_group;

/// The stages, in apply order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Stage {
    /// CustomResourceDefinitions (the plan waits until they are Established).
    Crds,
    /// Namespaces.
    Namespaces,
    /// ServiceAccounts, Roles, ClusterRoles and their bindings.
    Rbac,
    /// ConfigMaps, Secrets, PersistentVolumes and claims, StorageClasses.
    Config,
    /// Services.
    Services,
    /// Deployments, StatefulSets, DaemonSets, ReplicaSets, Jobs, CronJobs, Pods.
    Workloads,
    /// Other built-in kinds (Ingress, HPA, PodDisruptionBudget, NetworkPolicy, …).
    Rest,
    /// Custom resources.
    Custom,
}

/// The stage of an object.
pub fn stage(object: &ObjectRef) -> Stage {
    let group = object.group();
    match (group, object.kind.as_str()) {
        ("apiextensions.k8s.io", "CustomResourceDefinition") => Stage::Crds,
        ("", "Namespace") => Stage::Namespaces,
        ("", "ServiceAccount") => Stage::Rbac,
        ("rbac.authorization.k8s.io", _) => Stage::Rbac,
        ("", "ConfigMap" | "Secret" | "PersistentVolume" | "PersistentVolumeClaim") => {
            Stage::Config
        }
        ("storage.k8s.io", "StorageClass") => Stage::Config,
        ("", "Service") => Stage::Services,
        ("apps", "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet") => Stage::Workloads,
        ("batch", "Job" | "CronJob") | ("", "Pod") => Stage::Workloads,
        (g, _) if is_builtin_group(g) => Stage::Rest,
        _ => Stage::Custom,
    }
}

/// Sorts objects into apply order (stable within a stage: rendered order is kept).
pub fn sort_for_apply<T>(items: &mut [T], id: impl Fn(&T) -> &ObjectRef) {
    items.sort_by_key(|t| stage(id(t)));
}

/// Sorts objects into prune order: the reverse of apply order.
pub fn sort_for_prune(items: &mut [ObjectRef]) {
    items.sort_by(|a, b| stage(b).cmp(&stage(a)).then_with(|| b.cmp(a)));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(api_version: &str, kind: &str) -> ObjectRef {
        ObjectRef {
            api_version: api_version.into(),
            kind: kind.into(),
            namespace: None,
            name: kind.to_lowercase(),
        }
    }

    #[test]
    fn apply_order_puts_definitions_first() {
        let mut objs = vec![
            r("example.com/v1", "Widget"),
            r("networking.k8s.io/v1", "Ingress"),
            r("apps/v1", "Deployment"),
            r("v1", "Service"),
            r("v1", "ConfigMap"),
            r("rbac.authorization.k8s.io/v1", "RoleBinding"),
            r("v1", "ServiceAccount"),
            r("v1", "Namespace"),
            r("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
        ];
        sort_for_apply(&mut objs, |o| o);
        let kinds: Vec<_> = objs.iter().map(|o| o.kind.as_str()).collect();
        assert_eq!(
            kinds,
            [
                "CustomResourceDefinition",
                "Namespace",
                "RoleBinding",
                "ServiceAccount",
                "ConfigMap",
                "Service",
                "Deployment",
                "Ingress",
                "Widget"
            ]
        );
        sort_for_prune(&mut objs);
        assert_eq!(objs.first().map(|o| o.kind.as_str()), Some("Widget"));
        assert_eq!(
            objs.last().map(|o| o.kind.as_str()),
            Some("CustomResourceDefinition")
        );
    }
}
