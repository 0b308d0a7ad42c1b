//! Tests of SelfSubjectRulesReviews and SelfSubjectAccessReviews.

use serde_json::json;

use super::*;

#[test]
fn self_subject_rules_reviews() {
    let f = fixture();
    let auth = f.authorizer();
    let ci = UserInfo::service_account("apps", "ci");
    let status = auth.rules_review_status(&ci, "apps");
    assert_eq!(status["incomplete"], false);
    let rules = status["resourceRules"].as_array().unwrap();
    assert_eq!(rules.len(), 3);
    assert_eq!(
        rules[1],
        json!({"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["settings"]})
    );
    assert_eq!(status["nonResourceRules"], json!([]));
    assert_eq!(
        auth.rules_review_status(&ci, "other")["resourceRules"],
        json!([])
    );
    let prometheus = UserInfo::new("prometheus", &[]);
    assert_eq!(
        auth.rules_review_status(&prometheus, "")["nonResourceRules"],
        json!([{"verbs": ["get"], "nonResourceURLs": ["/metrics", "/debug/*"]}])
    );
    let broken = vec![role_binding(
        "apps",
        "b",
        "Role",
        "gone",
        json!([{"kind": "ServiceAccount", "name": "ci"}]),
    )];
    let auth = Authorizer {
        role_bindings: &broken,
        ..f.authorizer()
    };
    let status = auth.rules_review_status(&ci, "apps");
    assert_eq!(status["incomplete"], true);
    assert_eq!(
        status["evaluationError"],
        r#"role.rbac.authorization.k8s.io "gone" not found"#
    );
}

#[test]
fn self_subject_access_reviews() {
    let f = fixture();
    let auth = f.authorizer();
    let ci = UserInfo::service_account("apps", "ci");
    let spec = json!({"resourceAttributes": {"namespace": "apps", "verb": "create", "group": "apps", "resource": "deployments"}});
    let request = review_request(&spec).unwrap();
    let status = access_review_status(&auth.authorize(&ci, &request));
    assert_eq!(status["allowed"], true);
    assert!(
        status["reason"]
            .as_str()
            .unwrap()
            .starts_with("RBAC: allowed by RoleBinding")
    );
    let spec =
        json!({"resourceAttributes": {"namespace": "apps", "verb": "delete", "resource": "pods"}});
    let status = access_review_status(&auth.authorize(&ci, &review_request(&spec).unwrap()));
    assert_eq!(status, json!({"allowed": false}));
    let spec = json!({"nonResourceAttributes": {"path": "/metrics", "verb": "get"}});
    assert_eq!(
        review_request(&spec).unwrap(),
        Request::NonResource {
            verb: "get".into(),
            path: "/metrics".into()
        }
    );
    assert_eq!(
        review_request(&json!({})).unwrap_err(),
        ReviewError::Attributes
    );
    assert_eq!(
        review_request(&json!({"resourceAttributes": {"verb": 1}}))
            .unwrap_err()
            .to_string(),
        "spec.resourceAttributes.verb: must be a string"
    );
}
