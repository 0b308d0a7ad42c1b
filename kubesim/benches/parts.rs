//! Throughput of kubesim's pure parts (selectors, defaulting, RBAC, kwok simulation), which
//! the server runs on every request or status tick. Prints operations per second.

use std::hint::black_box;
use std::time::{Duration, Instant};

use kubesim::rbac::{Authorizer, Request, ResourceAttributes, UserInfo, bootstrap_policy};
use kubesim::selectors::{FieldSelector, LabelSelector};
use kubesim::{defaults, kwok};
use serde_json::{Value, json};

/// Runs `operation` repeatedly for about half a second and prints its rate.
fn measure(name: &str, mut operation: impl FnMut()) {
    for _ in 0..100 {
        operation();
    }
    let start = Instant::now();
    let mut iterations: u64 = 0;
    while start.elapsed() < Duration::from_millis(500) {
        for _ in 0..100 {
            operation();
        }
        iterations += 100;
    }
    let seconds = start.elapsed().as_secs_f64();
    println!(
        "{name:<58} {:>12.0} ops/s  ({:.2} µs/op)",
        iterations as f64 / seconds,
        seconds * 1e6 / iterations as f64
    );
}

fn deployment() -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "prod", "uid": "d-uid", "generation": 1,
            "labels": {"app": "web", "tier": "front", "env": "prod"}},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [
                {"name": "web", "image": "nginx:1.27", "ports": [{"containerPort": 80}],
                 "readinessProbe": {"httpGet": {"port": 80}},
                 "env": [{"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}]}]}}}
    })
}

/// The RBAC objects of a benchmark cluster.
struct Policy {
    roles: Vec<Value>,
    cluster_roles: Vec<Value>,
    role_bindings: Vec<Value>,
    cluster_role_bindings: Vec<Value>,
}

impl Policy {
    /// The cluster-scoped objects only.
    fn into_parts(self) -> (Vec<Value>, Vec<Value>) {
        (self.cluster_roles, self.cluster_role_bindings)
    }
}

/// A cluster with the bootstrap policy plus `namespaces` namespaces, each with 5 Roles and
/// 5 RoleBindings for its own ServiceAccounts.
fn policy(namespaces: usize) -> Policy {
    let (cluster_roles, cluster_role_bindings): (Vec<Value>, Vec<Value>) = bootstrap_policy()
        .into_iter()
        .partition(|object| object["kind"] == "ClusterRole");
    let mut roles = Vec::new();
    let mut role_bindings = Vec::new();
    for n in 0..namespaces {
        let namespace = format!("ns-{n}");
        for r in 0..5 {
            roles.push(json!({"metadata": {"name": format!("role-{r}"), "namespace": namespace},
                "rules": [{"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get", "list"]},
                          {"apiGroups": [""], "resources": ["configmaps", "secrets"], "verbs": ["*"]}]}));
            role_bindings.push(json!({"metadata": {"name": format!("binding-{r}"), "namespace": namespace},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": format!("role-{r}")},
                "subjects": [{"kind": "ServiceAccount", "name": format!("sa-{r}")}]}));
        }
    }
    Policy {
        roles,
        cluster_roles,
        role_bindings,
        cluster_role_bindings,
    }
}

fn main() {
    let labels = deployment()["metadata"]["labels"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    measure(
        "label selector parse 'app=web,tier in (front,back),!canary'",
        || {
            black_box(LabelSelector::parse(black_box("app=web,tier in (front,back),!canary")).ok());
        },
    );
    let selector = LabelSelector::parse("app=web,tier in (front,back),!canary").ok();
    measure("label selector match (3 requirements)", || {
        black_box(selector.as_ref().map(|s| s.matches(black_box(&labels))));
    });
    measure(
        "field selector parse 'metadata.name=web,metadata.namespace!=x'",
        || {
            black_box(
                FieldSelector::parse(
                    black_box("metadata.name=web,metadata.namespace!=x"),
                    "v1",
                    "Pod",
                )
                .ok(),
            );
        },
    );
    let object = deployment();
    measure("apply_defaults on a Deployment (clone included)", || {
        let mut d = object.clone();
        defaults::apply_defaults("apps/v1", "Deployment", &mut d);
        black_box(d);
    });
    for namespaces in [10, 100] {
        let Policy {
            roles,
            cluster_roles,
            role_bindings,
            cluster_role_bindings,
        } = policy(namespaces);
        let authorizer = Authorizer {
            roles: &roles,
            cluster_roles: &cluster_roles,
            role_bindings: &role_bindings,
            cluster_role_bindings: &cluster_role_bindings,
        };
        let user = UserInfo::service_account("ns-3", "sa-4");
        let allowed = Request::Resource(ResourceAttributes {
            verb: "get".into(),
            api_group: "apps".into(),
            resource: "deployments".into(),
            namespace: "ns-3".into(),
            name: "web".into(),
            ..ResourceAttributes::default()
        });
        let denied = Request::Resource(ResourceAttributes {
            verb: "delete".into(),
            api_group: "apps".into(),
            resource: "deployments".into(),
            namespace: "ns-3".into(),
            name: "web".into(),
            ..ResourceAttributes::default()
        });
        let total =
            roles.len() + role_bindings.len() + cluster_roles.len() + cluster_role_bindings.len();
        measure(
            &format!("RBAC authorize, allowed ({total} RBAC objects)"),
            || {
                black_box(authorizer.authorize(&user, black_box(&allowed)));
            },
        );
        measure(
            &format!("RBAC authorize, denied ({total} RBAC objects)"),
            || {
                black_box(authorizer.authorize(&user, black_box(&denied)));
            },
        );
    }
    {
        let (cluster_roles, cluster_role_bindings) = policy(0).into_parts();
        let role_bindings = vec![
            json!({"metadata": {"name": "deployers", "namespace": "team"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
            "subjects": [{"kind": "ServiceAccount", "name": "deployer"}]}),
        ];
        let authorizer = Authorizer {
            roles: &[],
            cluster_roles: &cluster_roles,
            role_bindings: &role_bindings,
            cluster_role_bindings: &cluster_role_bindings,
        };
        let user = UserInfo::service_account("team", "deployer");
        let patch = Request::Resource(ResourceAttributes {
            verb: "patch".into(),
            api_group: "apps".into(),
            resource: "deployments".into(),
            namespace: "team".into(),
            name: "web".into(),
            ..ResourceAttributes::default()
        });
        measure(
            "RBAC authorize through the aggregated `edit` ClusterRole",
            || {
                black_box(authorizer.authorize(&user, black_box(&patch)));
            },
        );
    }
    let mut defaulted = deployment();
    defaults::apply_defaults("apps/v1", "Deployment", &mut defaulted);
    let nodes = kwok::nodes(3, "2026-01-01T00:00:00Z");
    measure("kwok ReplicaSet + 3 Pods + Deployment status", || {
        let rs = kwok::replica_set_for(&defaulted, 1);
        black_box(kwok::owned_pods(&rs, true, &nodes, "2026-01-01T00:00:00Z"));
        black_box(kwok::workload_status(
            &defaulted,
            true,
            nodes.len(),
            "2026-01-01T00:00:00Z",
        ));
    });
}
