//! Tests of aggregated ClusterRoles.

use serde_json::json;

use super::*;

#[test]
fn aggregated_cluster_roles() {
    let mut f = fixture();
    f.cluster_roles.push(json!({"kind": "ClusterRole", "metadata": {"name": "aggregate"},
        "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"rbac.example.com/aggregate-to-reader": "true"}}]},
        "rules": []}));
    f.cluster_roles.push(cluster_role(
        "secrets-part",
        json!({"rbac.example.com/aggregate-to-reader": "true"}),
        json!([{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]),
    ));
    f.cluster_roles.push(cluster_role(
        "jobs-part",
        json!({"rbac.example.com/aggregate-to-reader": "true"}),
        json!([{"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["list"]}]),
    ));
    f.cluster_role_bindings.push(cluster_role_binding(
        "reader",
        "aggregate",
        json!([{"kind": "User", "name": "alice"}]),
    ));
    let auth = f.authorizer();
    let alice = UserInfo::new("alice", &["system:authenticated"]);
    assert!(
        auth.authorize(&alice, &get("", "secrets", "x", "s"))
            .allowed()
    );
    assert!(
        auth.authorize(&alice, &verb("list", "batch", "jobs", "", "", ""))
            .allowed()
    );
    assert!(
        !auth
            .authorize(&alice, &get("", "configmaps", "x", "c"))
            .allowed()
    );
    let rules = auth.cluster_role_rules("aggregate").unwrap();
    assert_eq!(rules.len(), 2);
    assert_eq!(
        rules[0]["apiGroups"],
        json!(["batch"]),
        "ordered by role name"
    );
}

#[test]
fn aggregation_cycles_terminate() {
    let selects = |label: &str| json!({"clusterRoleSelectors": [{"matchLabels": {label: "true"}}]});
    let roles = vec![
        json!({"metadata": {"name": "a", "labels": {"to-b": "true"}}, "aggregationRule": selects("to-a")}),
        json!({"metadata": {"name": "b", "labels": {"to-a": "true"}}, "aggregationRule": selects("to-b")}),
    ];
    let auth = Authorizer {
        roles: &[],
        cluster_roles: &roles,
        role_bindings: &[],
        cluster_role_bindings: &[],
    };
    assert_eq!(auth.cluster_role_rules("a"), Some(vec![]));
    assert_eq!(auth.cluster_role_rules("missing"), None);
}
