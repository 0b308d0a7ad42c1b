//! Tests of the 403 Forbidden message and Status body.

use serde_json::json;

use super::*;

#[test]
fn forbidden_messages_match_kube_apiserver() {
    let sa = UserInfo::service_account("ns", "sa");
    assert_eq!(
        forbidden_message(&sa, &get("apps", "deployments", "ns", "web"), ""),
        r#"deployments.apps "web" is forbidden: User "system:serviceaccount:ns:sa" cannot get resource "deployments" in API group "apps" in the namespace "ns""#
    );
    assert_eq!(
        forbidden_message(&sa, &verb("list", "", "pods", "", "ns", ""), ""),
        r#"pods is forbidden: User "system:serviceaccount:ns:sa" cannot list resource "pods" in API group "" in the namespace "ns""#
    );
    assert_eq!(
        forbidden_message(&sa, &verb("list", "", "namespaces", "", "", ""), ""),
        r#"namespaces is forbidden: User "system:serviceaccount:ns:sa" cannot list resource "namespaces" in API group "" at the cluster scope"#
    );
    assert_eq!(
        forbidden_message(
            &sa,
            &verb("patch", "apps", "deployments", "scale", "ns", "web"),
            ""
        ),
        r#"deployments.apps "web" is forbidden: User "system:serviceaccount:ns:sa" cannot patch resource "deployments/scale" in API group "apps" in the namespace "ns""#
    );
    assert_eq!(
        forbidden_message(
            &sa,
            &Request::NonResource {
                verb: "get".into(),
                path: "/metrics".into()
            },
            ""
        ),
        r#"forbidden: User "system:serviceaccount:ns:sa" cannot get path "/metrics""#
    );
    assert_eq!(
        forbidden_message(
            &sa,
            &get("", "secrets", "ns", "s"),
            r#"RBAC: role.rbac.authorization.k8s.io "r" not found"#
        ),
        r#"secrets "s" is forbidden: User "system:serviceaccount:ns:sa" cannot get resource "secrets" in API group "" in the namespace "ns": RBAC: role.rbac.authorization.k8s.io "r" not found"#
    );
}

#[test]
fn forbidden_status_body() {
    let user = UserInfo::new("u", &[]);
    let status = forbidden_status(&user, &get("apps", "deployments", "ns", "web"), "");
    assert_eq!(status["code"], 403);
    assert_eq!(status["reason"], "Forbidden");
    assert_eq!(status["status"], "Failure");
    assert_eq!(
        status["details"],
        json!({"name": "web", "group": "apps", "kind": "deployments"})
    );
    let path = Request::NonResource {
        verb: "get".into(),
        path: "/x".into(),
    };
    assert_eq!(forbidden_status(&user, &path, "")["details"], json!({}));
}
