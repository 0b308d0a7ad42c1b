//! Tests of the RBAC authorizer, by concern, with the requests and RBAC objects they share.

mod aggregation;
mod authorizer;
mod bootstrap;
mod forbidden;
mod review;

use serde_json::{Value, json};

use super::*;

fn get(group: &str, resource: &str, namespace: &str, name: &str) -> Request {
    verb("get", group, resource, "", namespace, name)
}

fn verb(
    verb: &str,
    group: &str,
    resource: &str,
    subresource: &str,
    namespace: &str,
    name: &str,
) -> Request {
    Request::Resource(ResourceAttributes {
        verb: verb.into(),
        api_group: group.into(),
        api_version: "v1".into(),
        resource: resource.into(),
        subresource: subresource.into(),
        namespace: namespace.into(),
        name: name.into(),
    })
}

fn role(namespace: &str, name: &str, rules: Value) -> Value {
    json!({"kind": "Role", "metadata": {"name": name, "namespace": namespace}, "rules": rules})
}

fn cluster_role(name: &str, labels: Value, rules: Value) -> Value {
    json!({"kind": "ClusterRole", "metadata": {"name": name, "labels": labels}, "rules": rules})
}

fn role_binding(namespace: &str, name: &str, kind: &str, role: &str, subjects: Value) -> Value {
    json!({"kind": "RoleBinding", "metadata": {"name": name, "namespace": namespace},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": role}, "subjects": subjects})
}

fn cluster_role_binding(name: &str, role: &str, subjects: Value) -> Value {
    json!({"kind": "ClusterRoleBinding", "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role}, "subjects": subjects})
}

struct Fixture {
    roles: Vec<Value>,
    cluster_roles: Vec<Value>,
    role_bindings: Vec<Value>,
    cluster_role_bindings: Vec<Value>,
}

impl Fixture {
    fn authorizer(&self) -> Authorizer<'_> {
        Authorizer {
            roles: &self.roles,
            cluster_roles: &self.cluster_roles,
            role_bindings: &self.role_bindings,
            cluster_role_bindings: &self.cluster_role_bindings,
        }
    }
}

fn fixture() -> Fixture {
    Fixture {
        roles: vec![role(
            "apps",
            "deployer",
            json!([
                {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get", "list", "watch", "create", "update", "patch"]},
                {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["settings"], "verbs": ["get"]},
                {"apiGroups": ["apps"], "resources": ["deployments/scale"], "verbs": ["update"]}
            ]),
        )],
        cluster_roles: vec![
            cluster_role(
                "pod-reader",
                json!({}),
                json!([{"apiGroups": [""], "resources": ["pods", "pods/log"], "verbs": ["get", "list"]}]),
            ),
            cluster_role(
                "status-writer",
                json!({}),
                json!([{"apiGroups": ["*"], "resources": ["*/status"], "verbs": ["update"]}]),
            ),
            cluster_role(
                "monitoring",
                json!({}),
                json!([{"nonResourceURLs": ["/metrics", "/debug/*"], "verbs": ["get"]}]),
            ),
        ],
        role_bindings: vec![
            role_binding(
                "apps",
                "deployer",
                "Role",
                "deployer",
                json!([{"kind": "ServiceAccount", "name": "ci"}]),
            ),
            role_binding(
                "apps",
                "readers",
                "ClusterRole",
                "pod-reader",
                json!([{"kind": "Group", "name": "system:serviceaccounts:tools"}]),
            ),
        ],
        cluster_role_bindings: vec![
            cluster_role_binding(
                "status",
                "status-writer",
                json!([{"kind": "ServiceAccount", "name": "controller", "namespace": "kube-system"}]),
            ),
            cluster_role_binding(
                "monitoring",
                "monitoring",
                json!([{"kind": "User", "name": "prometheus"}]),
            ),
        ],
    }
}
