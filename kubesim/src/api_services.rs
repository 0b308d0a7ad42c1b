//! The APIServices kube-apiserver's autoregistration creates for every built-in group
//! version it serves (`kubectl get apiservices`: `v1.apps  Local  True`), with the group and
//! version priorities of `pkg/controlplane/apiserver/aggregator.go` and the controlplane's
//! own list, Available because they are served locally.

use serde_json::{Value, json};

use crate::resources::Registry;

/// (group, version, group priority minimum, version priority).
const PRIORITIES: &[(&str, &str, i64, i64)] = &[
    ("", "v1", 18000, 1),
    ("apiregistration.k8s.io", "v1", 18000, 15),
    ("apps", "v1", 17800, 15),
    ("events.k8s.io", "v1", 17750, 15),
    ("authentication.k8s.io", "v1", 17700, 15),
    ("authorization.k8s.io", "v1", 17600, 15),
    ("autoscaling", "v2", 17500, 30),
    ("autoscaling", "v1", 17500, 15),
    ("batch", "v1", 17400, 15),
    ("certificates.k8s.io", "v1", 17300, 15),
    ("networking.k8s.io", "v1", 17200, 15),
    ("policy", "v1", 17100, 15),
    ("rbac.authorization.k8s.io", "v1", 17000, 15),
    ("storage.k8s.io", "v1", 16800, 15),
    ("apiextensions.k8s.io", "v1", 16700, 15),
    ("admissionregistration.k8s.io", "v1", 16700, 15),
    ("scheduling.k8s.io", "v1", 16600, 15),
    ("coordination.k8s.io", "v1", 16500, 15),
    ("node.k8s.io", "v1", 16300, 15),
    ("discovery.k8s.io", "v1", 16200, 15),
    ("flowcontrol.apiserver.k8s.io", "v1", 16100, 21),
];

/// The APIService of every built-in group version `registry` serves, created at `now`.
pub fn local_api_services(registry: &Registry, now: &str) -> Vec<Value> {
    PRIORITIES
        .iter()
        .filter(|(g, v, _, _)| registry.has_group_version(g, v))
        .map(|(group, version, group_priority, version_priority)| {
            json!({
                "apiVersion": "apiregistration.k8s.io/v1",
                "kind": "APIService",
                "metadata": {
                    "name": format!("{version}.{group}"),
                    "labels": {"kube-aggregator.kubernetes.io/automanaged": "onstart"},
                    "creationTimestamp": now,
                },
                "spec": {
                    "group": group,
                    "version": version,
                    "groupPriorityMinimum": group_priority,
                    "versionPriority": version_priority,
                },
                "status": {"conditions": [{
                    "type": "Available",
                    "status": "True",
                    "lastTransitionTime": now,
                    "reason": "Local",
                    "message": "Local APIServices are always available",
                }]},
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_served_builtin_group_version_has_its_api_service() {
        let registry = Registry::new(&[]);
        let services = local_api_services(&registry, "2026-01-01T00:00:00Z");
        let names: Vec<&str> = services
            .iter()
            .filter_map(|s| s.pointer("/metadata/name").and_then(Value::as_str))
            .collect();
        assert!(
            names.contains(&"v1.") && names.contains(&"v1.apps"),
            "{names:?}"
        );
        assert!(names.contains(&"v2.autoscaling") && names.contains(&"v1.autoscaling"));
        let served: std::collections::BTreeSet<(String, String)> = registry
            .all()
            .iter()
            .map(|r| (r.group.clone(), r.version.clone()))
            .collect();
        assert_eq!(services.len(), served.len(), "one per served group version");
    }
}
