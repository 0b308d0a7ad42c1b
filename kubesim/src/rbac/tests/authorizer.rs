//! Tests of authorization through bindings: subjects, namespaces, resource names and subresources,
//! wildcards, non-resource URLs, malformed objects and missing roles.

use serde_json::json;

use super::*;

#[test]
fn malformed_rbac_objects_are_ignored() {
    let odd = [
        json!(null),
        json!("x"),
        json!(1),
        json!([]),
        json!({"subjects": "x", "roleRef": 1, "rules": "r"}),
        json!({"metadata": {"name": "m", "namespace": "apps"}, "subjects": [null, {"kind": 1}], "roleRef": {"kind": "Role", "name": "deployer"}}),
        json!({"metadata": {"name": "agg"}, "aggregationRule": {"clusterRoleSelectors": ["x", {"matchExpressions": "y"}]}}),
    ];
    let mut f = fixture();
    for value in &odd {
        f.roles.push(value.clone());
        f.cluster_roles.push(value.clone());
        f.role_bindings.push(value.clone());
        f.cluster_role_bindings.push(value.clone());
    }
    f.cluster_roles.push(json!({"metadata": {"name": "bad-rules"}, "rules": [null, {"verbs": "get"}, {"verbs": ["*"], "apiGroups": [1]}]}));
    f.cluster_role_bindings.push(cluster_role_binding(
        "bad",
        "bad-rules",
        json!([{"kind": "User", "name": "eve"}]),
    ));
    let auth = f.authorizer();
    let ci = UserInfo::service_account("apps", "ci");
    assert!(
        auth.authorize(&ci, &get("apps", "deployments", "apps", "web"))
            .allowed()
    );
    let eve = UserInfo::new("eve", &[]);
    assert!(
        !auth
            .authorize(&eve, &get("", "pods", "apps", "p"))
            .allowed()
    );
    let _ = auth.rules_review_status(&eve, "apps");
    assert_eq!(auth.cluster_role_rules("agg"), Some(vec![]));
}

#[test]
fn service_account_identity() {
    let user = UserInfo::service_account("ns", "sa");
    assert_eq!(user.name, "system:serviceaccount:ns:sa");
    assert_eq!(
        user.groups,
        vec![
            "system:serviceaccounts",
            "system:serviceaccounts:ns",
            "system:authenticated"
        ]
    );
}

#[test]
fn role_binding_grants_within_its_namespace_only() {
    let f = fixture();
    let auth = f.authorizer();
    let ci = UserInfo::service_account("apps", "ci");
    let decision = auth.authorize(&ci, &get("apps", "deployments", "apps", "web"));
    assert_eq!(
        decision,
        Decision::Allow {
            reason: r#"RBAC: allowed by RoleBinding "deployer/apps" of Role "deployer" to ServiceAccount "ci/apps""#.into()
        }
    );
    assert!(
        !auth
            .authorize(&ci, &get("apps", "deployments", "other", "web"))
            .allowed()
    );
    assert!(
        !auth
            .authorize(&ci, &get("apps", "deployments", "", "web"))
            .allowed()
    );
    assert!(
        !auth
            .authorize(
                &ci,
                &verb("delete", "apps", "deployments", "", "apps", "web")
            )
            .allowed()
    );
    assert!(
        !auth
            .authorize(&ci, &get("", "deployments", "apps", "web"))
            .allowed(),
        "group must match"
    );
    let other_sa = UserInfo::service_account("other", "ci");
    assert!(
        !auth
            .authorize(&other_sa, &get("apps", "deployments", "apps", "web"))
            .allowed()
    );
}

#[test]
fn resource_names_and_subresources() {
    let f = fixture();
    let auth = f.authorizer();
    let ci = UserInfo::service_account("apps", "ci");
    assert!(
        auth.authorize(&ci, &get("", "configmaps", "apps", "settings"))
            .allowed()
    );
    assert!(
        !auth
            .authorize(&ci, &get("", "configmaps", "apps", "secrets"))
            .allowed()
    );
    assert!(
        !auth
            .authorize(&ci, &verb("list", "", "configmaps", "", "apps", ""))
            .allowed()
    );
    assert!(
        auth.authorize(
            &ci,
            &verb("update", "apps", "deployments", "scale", "apps", "web")
        )
        .allowed()
    );
    assert!(
        !auth
            .authorize(
                &ci,
                &verb("update", "apps", "deployments", "status", "apps", "web")
            )
            .allowed()
    );
    assert!(
        !auth
            .authorize(
                &ci,
                &verb("get", "apps", "deployments", "scale", "apps", "web")
            )
            .allowed(),
        "a resource rule does not grant its subresources"
    );
}

#[test]
fn role_binding_to_cluster_role_and_group_subject() {
    let f = fixture();
    let auth = f.authorizer();
    let tool = UserInfo::service_account("tools", "runner");
    let decision = auth.authorize(&tool, &verb("get", "", "pods", "log", "apps", "p"));
    assert_eq!(
        decision.reason(),
        r#"RBAC: allowed by RoleBinding "readers/apps" of ClusterRole "pod-reader" to Group "system:serviceaccounts:tools""#
    );
    assert!(
        !auth
            .authorize(&tool, &verb("list", "", "pods", "", "", ""))
            .allowed()
    );
}

#[test]
fn cluster_role_bindings_and_wildcards() {
    let f = fixture();
    let auth = f.authorizer();
    let controller = UserInfo::service_account("kube-system", "controller");
    let decision = auth.authorize(
        &controller,
        &verb("update", "apps", "deployments", "status", "x", "web"),
    );
    assert_eq!(
        decision.reason(),
        r#"RBAC: allowed by ClusterRoleBinding "status" of ClusterRole "status-writer" to ServiceAccount "controller/kube-system""#
    );
    assert!(
        auth.authorize(&controller, &verb("update", "", "pods", "status", "", "p"))
            .allowed()
    );
    assert!(
        !auth
            .authorize(&controller, &verb("update", "", "pods", "", "x", "p"))
            .allowed()
    );
}

#[test]
fn non_resource_urls() {
    let f = fixture();
    let auth = f.authorizer();
    let prometheus = UserInfo::new("prometheus", &[]);
    let path = |verb: &str, path: &str| Request::NonResource {
        verb: verb.into(),
        path: path.into(),
    };
    assert!(
        auth.authorize(&prometheus, &path("get", "/metrics"))
            .allowed()
    );
    assert!(
        auth.authorize(&prometheus, &path("get", "/debug/pprof/heap"))
            .allowed()
    );
    assert!(
        !auth
            .authorize(&prometheus, &path("post", "/metrics"))
            .allowed()
    );
    assert!(
        !auth
            .authorize(&prometheus, &path("get", "/metricsx"))
            .allowed()
    );
    assert!(
        !auth
            .authorize(&prometheus, &get("", "pods", "x", ""))
            .allowed()
    );
}

#[test]
fn missing_roles_are_reported_in_the_reason() {
    let bindings = vec![
        cluster_role_binding("b", "missing", json!([{"kind": "User", "name": "bob"}])),
        cluster_role_binding("b2", "missing", json!([{"kind": "User", "name": "bob"}])),
    ];
    let role_bindings = vec![role_binding(
        "ns",
        "rb",
        "Role",
        "gone",
        json!([{"kind": "User", "name": "bob"}]),
    )];
    let auth = Authorizer {
        roles: &[],
        cluster_roles: &[],
        role_bindings: &role_bindings,
        cluster_role_bindings: &bindings,
    };
    let bob = UserInfo::new("bob", &[]);
    let decision = auth.authorize(&bob, &get("", "pods", "", "p"));
    assert_eq!(
        decision,
        Decision::Deny {
            reason: r#"RBAC: clusterrole.rbac.authorization.k8s.io "missing" not found"#.into()
        }
    );
    let decision = auth.authorize(&bob, &get("", "pods", "ns", "p"));
    assert_eq!(
        decision.reason(),
        r#"RBAC: [clusterrole.rbac.authorization.k8s.io "missing" not found, role.rbac.authorization.k8s.io "gone" not found]"#
    );
    let carol = UserInfo::new("carol", &[]);
    assert_eq!(
        auth.authorize(&carol, &get("", "pods", "ns", "p")).reason(),
        ""
    );
}
