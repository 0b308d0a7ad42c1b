//! The bootstrap ClusterRoles and bindings every cluster has
//! (`plugin/pkg/auth/authorizer/rbac/bootstrappolicy`), including the `view` and `edit` rules.

use serde_json::{Value, json};

use super::authorizer::{Authorizer, str_at};

const READ: &[&str] = &["get", "list", "watch"];
const WRITE: &[&str] = &["create", "delete", "deletecollection", "patch", "update"];
const READ_WRITE: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

/// A resource PolicyRule.
fn rule(groups: &[&str], resources: &[&str], verbs: &[&str]) -> Value {
    json!({"apiGroups": groups, "resources": resources, "verbs": verbs})
}

/// The rules of the bootstrap `system:aggregate-to-view` ClusterRole.
fn view_rules() -> Value {
    json!([
        rule(
            &[""],
            &[
                "configmaps",
                "endpoints",
                "persistentvolumeclaims",
                "persistentvolumeclaims/status",
                "pods",
                "replicationcontrollers",
                "replicationcontrollers/scale",
                "serviceaccounts",
                "services",
                "services/status"
            ],
            READ
        ),
        rule(
            &[""],
            &[
                "bindings",
                "events",
                "limitranges",
                "namespaces/status",
                "pods/log",
                "pods/status",
                "replicationcontrollers/status",
                "resourcequotas",
                "resourcequotas/status"
            ],
            READ
        ),
        rule(&[""], &["namespaces"], READ),
        rule(&["discovery.k8s.io"], &["endpointslices"], READ),
        rule(
            &["apps"],
            &[
                "controllerrevisions",
                "daemonsets",
                "daemonsets/status",
                "deployments",
                "deployments/scale",
                "deployments/status",
                "replicasets",
                "replicasets/scale",
                "replicasets/status",
                "statefulsets",
                "statefulsets/scale",
                "statefulsets/status"
            ],
            READ
        ),
        rule(
            &["autoscaling"],
            &[
                "horizontalpodautoscalers",
                "horizontalpodautoscalers/status"
            ],
            READ
        ),
        rule(
            &["batch"],
            &["cronjobs", "cronjobs/status", "jobs", "jobs/status"],
            READ
        ),
        rule(
            &["extensions"],
            &[
                "daemonsets",
                "daemonsets/status",
                "deployments",
                "deployments/scale",
                "deployments/status",
                "ingresses",
                "ingresses/status",
                "networkpolicies",
                "replicasets",
                "replicasets/scale",
                "replicasets/status",
                "replicationcontrollers/scale"
            ],
            READ
        ),
        rule(
            &["policy"],
            &["poddisruptionbudgets", "poddisruptionbudgets/status"],
            READ
        ),
        rule(
            &["networking.k8s.io"],
            &["ingresses", "ingresses/status", "networkpolicies"],
            READ
        )
    ])
}

/// The rules of the bootstrap `system:aggregate-to-edit` ClusterRole.
fn edit_rules() -> Value {
    json!([
        rule(
            &[""],
            &[
                "pods/attach",
                "pods/exec",
                "pods/portforward",
                "pods/proxy",
                "secrets",
                "services/proxy"
            ],
            READ
        ),
        rule(&[""], &["serviceaccounts"], &["impersonate"]),
        rule(
            &[""],
            &[
                "pods",
                "pods/attach",
                "pods/exec",
                "pods/portforward",
                "pods/proxy"
            ],
            WRITE
        ),
        rule(&[""], &["pods/eviction"], &["create"]),
        rule(
            &[""],
            &[
                "configmaps",
                "events",
                "persistentvolumeclaims",
                "replicationcontrollers",
                "replicationcontrollers/scale",
                "secrets",
                "serviceaccounts",
                "services",
                "services/proxy"
            ],
            WRITE
        ),
        rule(&[""], &["serviceaccounts/token"], &["create"]),
        rule(
            &["apps"],
            &[
                "daemonsets",
                "deployments",
                "deployments/rollback",
                "deployments/scale",
                "replicasets",
                "replicasets/scale",
                "statefulsets",
                "statefulsets/scale"
            ],
            WRITE
        ),
        rule(&["autoscaling"], &["horizontalpodautoscalers"], WRITE),
        rule(&["batch"], &["cronjobs", "jobs"], WRITE),
        rule(
            &["extensions"],
            &[
                "daemonsets",
                "deployments",
                "deployments/rollback",
                "deployments/scale",
                "ingresses",
                "networkpolicies",
                "replicasets",
                "replicasets/scale",
                "replicationcontrollers/scale"
            ],
            WRITE
        ),
        rule(&["policy"], &["poddisruptionbudgets"], WRITE),
        rule(
            &["networking.k8s.io"],
            &["ingresses", "networkpolicies"],
            WRITE
        ),
        rule(&["coordination.k8s.io"], &["leases"], READ_WRITE)
    ])
}

/// The bootstrap RBAC objects of a v1.32 cluster that clients rely on
/// (`plugin/pkg/auth/authorizer/rbac/bootstrappolicy`, `testdata/cluster-roles.yaml`):
/// * ClusterRoles `cluster-admin`, `system:discovery`, `system:basic-user`,
///   `system:public-info-viewer`, and the user-facing aggregated `admin`, `edit` and `view`
///   with their `system:aggregate-to-*` parts (aggregated rules filled in, as the
///   aggregation controller leaves them);
/// * ClusterRoleBindings of `cluster-admin` to `system:masters`, `system:discovery` and
///   `system:basic-user` to `system:authenticated`, and `system:public-info-viewer` to
///   `system:authenticated` and `system:unauthenticated`.
///
/// Without them a ServiceAccount token could not run discovery or `kubectl auth can-i`, and
/// RoleBindings to `edit` or `view` would not resolve.
pub fn bootstrap_policy() -> Vec<Value> {
    let metadata = |name: &str, aggregate_to: Option<&str>| {
        let mut labels = json!({"kubernetes.io/bootstrapping": "rbac-defaults"});
        if let Some(target) = aggregate_to {
            labels[format!("rbac.authorization.k8s.io/aggregate-to-{target}")] = json!("true");
        }
        json!({
            "name": name,
            "labels": labels,
            "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"}
        })
    };
    let role = |name: &str, aggregate_to: Option<&str>, rules: Value| {
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": metadata(name, aggregate_to),
            "rules": rules
        })
    };
    let aggregated = |name: &str, aggregate_to: Option<&str>, selects: &str| {
        let mut role = role(name, aggregate_to, json!([]));
        role["aggregationRule"] = json!({"clusterRoleSelectors": [
            {"matchLabels": {format!("rbac.authorization.k8s.io/aggregate-to-{selects}"): "true"}}
        ]});
        role
    };
    let binding = |name: &str, groups: &[&str]| {
        let subjects: Vec<Value> = groups
            .iter()
            .map(|group| json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": group}))
            .collect();
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": metadata(name, None),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
            "subjects": subjects
        })
    };
    let mut cluster_roles = vec![
        aggregated("admin", None, "admin"),
        role(
            "cluster-admin",
            None,
            json!([
                {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
                {"nonResourceURLs": ["*"], "verbs": ["*"]}
            ]),
        ),
        aggregated("edit", Some("admin"), "edit"),
        role(
            "system:aggregate-to-admin",
            Some("admin"),
            json!([
                rule(
                    &["authorization.k8s.io"],
                    &["localsubjectaccessreviews"],
                    &["create"]
                ),
                rule(
                    &["rbac.authorization.k8s.io"],
                    &["rolebindings", "roles"],
                    READ_WRITE
                )
            ]),
        ),
        role("system:aggregate-to-edit", Some("edit"), edit_rules()),
        role("system:aggregate-to-view", Some("view"), view_rules()),
        role(
            "system:basic-user",
            None,
            json!([
                rule(
                    &["authorization.k8s.io"],
                    &["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                    &["create"]
                ),
                rule(
                    &["authentication.k8s.io"],
                    &["selfsubjectreviews"],
                    &["create"]
                )
            ]),
        ),
        role(
            "system:discovery",
            None,
            json!([{"nonResourceURLs": ["/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez",
                "/openapi", "/openapi/*", "/readyz", "/version", "/version/"], "verbs": ["get"]}]),
        ),
        role(
            "system:public-info-viewer",
            None,
            json!([{"nonResourceURLs": ["/healthz", "/livez", "/readyz", "/version", "/version/"], "verbs": ["get"]}]),
        ),
        aggregated("view", Some("edit"), "view"),
    ];
    let filled: Vec<(usize, Vec<Value>)> = {
        let authorizer = Authorizer {
            roles: &[],
            cluster_roles: &cluster_roles,
            role_bindings: &[],
            cluster_role_bindings: &[],
        };
        cluster_roles
            .iter()
            .enumerate()
            .filter(|(_, role)| role.get("aggregationRule").is_some())
            .filter_map(|(index, role)| {
                let rules = authorizer.cluster_role_rules(str_at(role, "/metadata/name"))?;
                Some((index, rules.into_iter().cloned().collect()))
            })
            .collect()
    };
    for (index, rules) in filled {
        cluster_roles[index]["rules"] = Value::Array(rules);
    }
    cluster_roles.extend([
        binding("cluster-admin", &["system:masters"]),
        binding("system:discovery", &["system:authenticated"]),
        binding("system:basic-user", &["system:authenticated"]),
        binding(
            "system:public-info-viewer",
            &["system:authenticated", "system:unauthenticated"],
        ),
    ]);
    cluster_roles
}
