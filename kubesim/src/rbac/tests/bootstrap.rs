//! Tests of the bootstrap policy.

use serde_json::{Value, json};

use super::*;

#[test]
fn bootstrap_edit_and_view_roles_through_role_bindings() {
    let (cluster_roles, cluster_role_bindings): (Vec<Value>, Vec<Value>) = bootstrap_policy()
        .into_iter()
        .partition(|o| o["kind"] == "ClusterRole");
    let role_bindings = vec![
        role_binding(
            "team",
            "deployers",
            "ClusterRole",
            "edit",
            json!([{"kind": "ServiceAccount", "name": "deployer"}]),
        ),
        role_binding(
            "team",
            "viewers",
            "ClusterRole",
            "view",
            json!([{"kind": "ServiceAccount", "name": "viewer"}]),
        ),
        role_binding(
            "team",
            "admins",
            "ClusterRole",
            "admin",
            json!([{"kind": "User", "name": "lead"}]),
        ),
    ];
    let auth = Authorizer {
        roles: &[],
        cluster_roles: &cluster_roles,
        role_bindings: &role_bindings,
        cluster_role_bindings: &cluster_role_bindings,
    };
    let deployer = UserInfo::service_account("team", "deployer");
    let viewer = UserInfo::service_account("team", "viewer");
    let lead = UserInfo::new("lead", &["system:authenticated"]);
    assert!(
        auth.authorize(
            &deployer,
            &verb("patch", "apps", "deployments", "", "team", "web")
        )
        .allowed()
    );
    assert!(
        auth.authorize(
            &deployer,
            &verb("get", "apps", "deployments", "", "team", "web")
        )
        .allowed(),
        "edit includes view"
    );
    assert!(
        auth.authorize(&deployer, &verb("create", "", "secrets", "", "team", ""))
            .allowed()
    );
    assert!(
        !auth
            .authorize(
                &deployer,
                &verb(
                    "create",
                    "rbac.authorization.k8s.io",
                    "roles",
                    "",
                    "team",
                    ""
                )
            )
            .allowed()
    );
    assert!(
        !auth
            .authorize(
                &deployer,
                &verb("patch", "apps", "deployments", "", "other", "web")
            )
            .allowed()
    );
    assert!(
        auth.authorize(&viewer, &verb("list", "", "pods", "", "team", ""))
            .allowed()
    );
    assert!(
        !auth
            .authorize(&viewer, &verb("get", "", "secrets", "", "team", "s"))
            .allowed(),
        "view cannot read secrets"
    );
    assert!(
        !auth
            .authorize(&viewer, &verb("delete", "", "pods", "", "team", "p"))
            .allowed()
    );
    assert!(
        auth.authorize(
            &lead,
            &verb(
                "create",
                "rbac.authorization.k8s.io",
                "rolebindings",
                "",
                "team",
                ""
            )
        )
        .allowed()
    );
    assert!(
        auth.authorize(&lead, &verb("delete", "batch", "jobs", "", "team", "j"))
            .allowed(),
        "admin includes edit"
    );
    let admin = cluster_roles
        .iter()
        .find(|r| r["metadata"]["name"] == "admin")
        .unwrap();
    let stored = admin["rules"].as_array().unwrap().len();
    assert_eq!(
        stored,
        auth.cluster_role_rules("admin").unwrap().len(),
        "aggregated rules are filled in"
    );
    assert!(stored > 20);
}

#[test]
fn bootstrap_policy_allows_discovery_and_can_i() {
    let policy = bootstrap_policy();
    let (roles, bindings): (Vec<Value>, Vec<Value>) =
        policy.into_iter().partition(|o| o["kind"] == "ClusterRole");
    let auth = Authorizer {
        roles: &[],
        cluster_roles: &roles,
        role_bindings: &[],
        cluster_role_bindings: &bindings,
    };
    let sa = UserInfo::service_account("ns", "sa");
    let path = |p: &str| Request::NonResource {
        verb: "get".into(),
        path: p.into(),
    };
    assert!(auth.authorize(&sa, &path("/api")).allowed());
    assert!(auth.authorize(&sa, &path("/apis/apps/v1")).allowed());
    assert!(auth.authorize(&sa, &path("/openapi/v3")).allowed());
    assert!(auth.authorize(&sa, &path("/version")).allowed());
    assert!(!auth.authorize(&sa, &path("/metrics")).allowed());
    assert!(
        auth.authorize(
            &sa,
            &verb(
                "create",
                "authorization.k8s.io",
                "selfsubjectaccessreviews",
                "",
                "",
                ""
            )
        )
        .allowed()
    );
    assert!(!auth.authorize(&sa, &get("", "pods", "ns", "p")).allowed());
    let admin = UserInfo::new("admin", &["system:masters", "system:authenticated"]);
    assert_eq!(
        auth.authorize(&admin, &verb("delete", "apps", "deployments", "", "x", "y"))
            .reason(),
        r#"RBAC: allowed by ClusterRoleBinding "cluster-admin" of ClusterRole "cluster-admin" to Group "system:masters""#
    );
    assert!(auth.authorize(&admin, &path("/metrics")).allowed());
}
