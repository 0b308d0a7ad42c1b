//! Bad input: every malformed or refused request gets the Status kube-apiserver would send,
//! and the server keeps serving.

mod common;

use common::{Env, client_without_retries, raw_with};
use serde_json::json;

const CMS: &str = "/api/v1/namespaces/default/configmaps";

#[tokio::test]
async fn malformed_bodies_are_bad_requests_naming_the_problem() {
    let env = Env::start().await;
    let (code, s) = env
        .raw("POST", CMS, "application/json", b"{not json".to_vec())
        .await;
    assert_eq!(
        (code.as_u16(), s["reason"].as_str()),
        (400, Some("BadRequest"))
    );
    assert!(
        s["message"].as_str().unwrap().contains("not valid JSON"),
        "{s}"
    );
    let (code, s) = env
        .raw("POST", CMS, "application/json", b"[1,2]".to_vec())
        .await;
    assert_eq!(code, 400, "{s}");
    let (code, s) = env
        .raw("POST", CMS, "application/yaml", b"a: [unclosed".to_vec())
        .await;
    assert_eq!(code, 400);
    assert!(
        s["message"].as_str().unwrap().contains("not valid YAML"),
        "{s}"
    );
    let (code, s) = env
        .raw(
            "PATCH",
            &format!("{CMS}/x?fieldManager=m"),
            "application/apply-patch+yaml",
            b"kind: [".to_vec(),
        )
        .await;
    assert_eq!(code, 400, "{s}");
    let (code, s) = env
        .json("POST", CMS, &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "labels": "nope"}}))
        .await;
    assert_eq!(code, 400);
    assert!(
        s["message"].as_str().unwrap().contains("metadata.labels"),
        "{s}"
    );
    let (code, s) = env
        .json(
            "POST",
            CMS,
            &json!({"apiVersion": "apps/v1", "kind": "ConfigMap", "metadata": {"name": "x"}}),
        )
        .await;
    assert_eq!(code, 400);
    assert!(
        s["message"]
            .as_str()
            .unwrap()
            .contains("does not match the expected API version")
    );
    let (code, s) = env
        .json(
            "POST",
            CMS,
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}),
        )
        .await;
    assert_eq!(
        (code.as_u16(), s["reason"].as_str()),
        (422, Some("Invalid"))
    );
    let (code, _) = env
        .raw(
            "POST",
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
            "application/vnd.kubernetes.protobuf",
            b"k8s\0\x0a\xff".to_vec(),
        )
        .await;
    assert_eq!(code, 400);
    env.json(
        "POST",
        CMS,
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ok"}}),
    )
    .await;
    let (code, s) = env
        .json(
            "PUT",
            &format!("{CMS}/ok"),
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "other"}}),
        )
        .await;
    assert_eq!(code, 400);
    assert!(
        s["message"]
            .as_str()
            .unwrap()
            .contains("does not match the name on the URL")
    );
    let (code, _) = env
        .raw(
            "DELETE",
            &format!("{CMS}/ok?propagationPolicy=Sideways"),
            "",
            vec![],
        )
        .await;
    assert_eq!(code, 400);
    let (code, _) = env.raw("GET", &format!("{CMS}?limit=-1"), "", vec![]).await;
    assert_eq!(code, 400);
    let (code, _) = env
        .raw("GET", &format!("{CMS}?continue=%%%"), "", vec![])
        .await;
    assert_eq!(code, 400);
    let (code, _) = env
        .raw(
            "GET",
            &format!("{CMS}?watch=1&resourceVersion=abc"),
            "",
            vec![],
        )
        .await;
    assert_eq!(code, 400);
}

#[tokio::test]
async fn unknown_resources_and_methods() {
    let env = Env::start().await;
    for path in [
        "/api/v1/namespaces/default/gizmos",
        "/apis/apps/v1/widgets",
        "/nope",
        "/api/v2",
        "/api/v1/namespaces/default/configmaps/x/bogus",
    ] {
        let (code, s) = env.raw("GET", path, "", vec![]).await;
        assert_eq!(code, 404, "{path}");
        assert_eq!(s["reason"], "NotFound");
    }
    let (code, s) = env
        .raw(
            "POST",
            &format!("{CMS}/x"),
            "application/json",
            b"{}".to_vec(),
        )
        .await;
    assert_eq!(
        (code.as_u16(), s["reason"].as_str()),
        (405, Some("MethodNotAllowed"))
    );
    let (code, _) = env
        .raw(
            "GET",
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
            "",
            vec![],
        )
        .await;
    assert_eq!(code, 405);
}

#[tokio::test]
async fn unsupported_content_types_are_415() {
    let env = Env::start().await;
    env.json(
        "POST",
        CMS,
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}),
    )
    .await;
    let (code, s) = env
        .raw("PATCH", &format!("{CMS}/x"), "text/plain", b"{}".to_vec())
        .await;
    assert_eq!(
        (code.as_u16(), s["reason"].as_str()),
        (415, Some("UnsupportedMediaType"))
    );
    let (code, _) = env
        .raw(
            "POST",
            CMS,
            "application/vnd.kubernetes.protobuf",
            b"k8s\0".to_vec(),
        )
        .await;
    assert_eq!(code, 415);
}

#[tokio::test]
async fn oversized_bodies_are_413() {
    let env = Env::start().await;
    let big = format!(
        "{{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{{\"name\":\"big\"}},\"data\":{{\"x\":\"{}\"}}}}",
        "a".repeat(3 * 1024 * 1024 + 1)
    );
    let (code, s) = env
        .raw("POST", CMS, "application/json", big.into_bytes())
        .await;
    assert_eq!(
        (code.as_u16(), s["reason"].as_str()),
        (413, Some("RequestEntityTooLarge"))
    );
    let (code, _) = env.raw("GET", CMS, "", vec![]).await;
    assert_eq!(code, 200, "still serving");
}

#[tokio::test]
async fn tokens_expired_unknown_and_out_of_namespace() {
    let env = Env::start().await;
    for token in [
        env.cluster.tokens().expired.clone(),
        "unknown-token".to_string(),
    ] {
        let client = client_without_retries(&env.cluster.kubeconfig_with_token(&token)).await;
        let (code, s) = raw_with(&client, "GET", CMS, "", vec![]).await;
        assert_eq!(
            (code.as_u16(), s["reason"].as_str()),
            (401, Some("Unauthorized"))
        );
    }
    let token = env.cluster.tokens().namespaced["team-a"].clone();
    let client = client_without_retries(&env.cluster.kubeconfig_with_token(&token)).await;
    let (code, _) = raw_with(
        &client,
        "GET",
        "/api/v1/namespaces/team-a/configmaps",
        "",
        vec![],
    )
    .await;
    assert_eq!(code, 200);
    let (code, s) = raw_with(
        &client,
        "DELETE",
        "/api/v1/namespaces/default/configmaps/x",
        "",
        vec![],
    )
    .await;
    assert_eq!(
        (code.as_u16(), s["reason"].as_str()),
        (403, Some("Forbidden"))
    );
    assert_eq!(
        s["message"],
        "configmaps \"x\" is forbidden: User \"kubesim-team-a\" cannot delete resource \"configmaps\" in API group \"\" in the namespace \"default\""
    );
    let (code, s) = raw_with(&client, "GET", "/api/v1/nodes", "", vec![]).await;
    assert_eq!(code, 403);
    assert!(
        s["message"]
            .as_str()
            .unwrap()
            .ends_with("at the cluster scope")
    );
}

#[tokio::test]
async fn odd_shapes_never_break_the_server_or_the_simulation() {
    let env = Env::start().await;
    let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    let odd_crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "odd.example.com"}, "spec": {"names": "x", "versions": 5, "group": 1}});
    let (code, _) = env.json("POST", crds, &odd_crd).await;
    assert!(code.is_success() || code.is_client_error());
    let (code, s) = env
        .json(
            "POST",
            CMS,
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": "x"}),
        )
        .await;
    assert_eq!(code, 400, "{s}");
    let deploys = "/apis/apps/v1/namespaces/default/deployments";
    for spec in [
        json!("weird"),
        json!({"replicas": "many", "template": 3}),
        json!({"selector": [], "template": {"spec": {"containers": "no"}}}),
    ] {
        let odd = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"generateName": "odd-"}, "spec": spec});
        env.json("POST", deploys, &odd).await;
    }
    let good = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "good"},
        "spec": {"selector": {"matchLabels": {"app": "good"}},
            "template": {"metadata": {"labels": {"app": "good"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}});
    let (code, _) = env.json("POST", deploys, &good).await;
    assert_eq!(code, 201);
    let out = env
        .kubectl(&[
            "wait",
            "--for=condition=Available",
            "deployment/good",
            "--timeout=60s",
        ])
        .await;
    assert_eq!(out.code, 0, "the simulation still runs: {out:?}");
    let (code, _) = env.raw("GET", "/version", "", vec![]).await;
    assert_eq!(code, 200);
}
