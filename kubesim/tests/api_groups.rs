//! Every group/version a 1.32 API server serves (issue #14 item 5): resources served at each
//! of their versions from one storage, the authentication group, EndpointSlices, the groups
//! kubesim stores without controllers, and aggregated discovery — raw HTTPS and the real
//! kubectl 1.32.

mod common;

use common::Env;
use serde_json::{Value, json};

const HPAS_V1: &str = "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers";
const HPAS_V2: &str = "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers";

fn hpa_v2() -> Value {
    json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "minReplicas": 2, "maxReplicas": 5,
            "metrics": [
                {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}}},
                {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "1Gi"}}}],
            "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}}})
}

#[tokio::test]
async fn hpas_are_one_object_at_v1_and_v2() {
    let env = Env::start().await;
    let (code, created) = env.json("POST", HPAS_V2, &hpa_v2()).await;
    assert_eq!(code, 201, "{created}");

    // Read through v1: the v1 shape, CPU as targetCPUUtilizationPercentage.
    let (code, v1) = env.raw("GET", &format!("{HPAS_V1}/web"), "", vec![]).await;
    assert_eq!(code, 200, "{v1}");
    assert_eq!(v1["apiVersion"], "autoscaling/v1");
    assert_eq!(v1["spec"]["targetCPUUtilizationPercentage"], 60);
    assert_eq!(v1["spec"]["minReplicas"], 2);
    assert!(v1["spec"].get("metrics").is_none());
    assert_eq!(v1["status"]["currentReplicas"], 0);
    let ann = &v1["metadata"]["annotations"];
    assert!(
        ann["autoscaling.alpha.kubernetes.io/metrics"]
            .as_str()
            .unwrap()
            .contains("\"targetAverageValue\":\"1Gi\""),
        "{ann}"
    );
    assert_eq!(v1["metadata"]["uid"], created["metadata"]["uid"]);

    // kubectl names both versions and lists one object.
    let out = env
        .kubectl(&[
            "get",
            "horizontalpodautoscalers.v1.autoscaling",
            "web",
            "-o",
            "jsonpath={.spec.targetCPUUtilizationPercentage}",
        ])
        .await
        .ok();
    assert_eq!(out.stdout, "60");
    let out = env.kubectl(&["get", "hpa", "-o", "name"]).await.ok();
    assert_eq!(out.stdout.trim(), "horizontalpodautoscaler.autoscaling/web");

    // Write through v1: the CPU target changes, the memory metric and behavior survive.
    let mut edit = v1.clone();
    edit["spec"]["targetCPUUtilizationPercentage"] = json!(70);
    let (code, put) = env.json("PUT", &format!("{HPAS_V1}/web"), &edit).await;
    assert_eq!(code, 200, "{put}");
    assert_eq!(put["spec"]["targetCPUUtilizationPercentage"], 70);
    let (_, v2) = env.raw("GET", &format!("{HPAS_V2}/web"), "", vec![]).await;
    let metrics = v2["spec"]["metrics"].as_array().unwrap();
    assert_eq!(metrics.len(), 2, "{v2}");
    assert_eq!(metrics[0]["resource"]["target"]["averageUtilization"], 70);
    assert_eq!(metrics[1]["resource"]["target"]["averageValue"], "1Gi");
    assert_eq!(
        v2["spec"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"],
        60
    );
    assert!(v2["metadata"].get("annotations").is_none(), "{v2}");

    // A v1 HPA with no target gets CPU at 80%, seen through v2.
    let bare = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "bare"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "w"}, "maxReplicas": 3}});
    let (code, _) = env.json("POST", HPAS_V1, &bare).await;
    assert_eq!(code, 201);
    let (_, v2) = env.raw("GET", &format!("{HPAS_V2}/bare"), "", vec![]).await;
    assert_eq!(
        v2["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"],
        80
    );
    assert_eq!(v2["spec"]["minReplicas"], 1);
}

#[tokio::test]
async fn hostile_v1_hpas_are_refused_with_v2_field_paths_or_cleaned() {
    let env = Env::start().await;
    // maxReplicas below minReplicas: refused whichever version it comes through.
    let bad = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "bad"},
        "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "w"}, "minReplicas": 4, "maxReplicas": 3}});
    let (code, err) = env.json("POST", HPAS_V1, &bad).await;
    assert_eq!(code, 422, "{err}");
    assert_eq!(err["details"]["causes"][0]["field"], "spec.maxReplicas");
    let (code, _) = env.raw("GET", &format!("{HPAS_V2}/bad"), "", vec![]).await;
    assert_eq!(code, 404);
    // Garbage in the conversion annotations is dropped, never stored or served back.
    let junk = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "junk", "annotations": {
            "autoscaling.alpha.kubernetes.io/metrics": "{not json",
            "autoscaling.alpha.kubernetes.io/behavior": "[1,2]",
            "keep": "me"}},
        "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "w"}, "maxReplicas": 3,
            "targetCPUUtilizationPercentage": 50}});
    let (code, out) = env.json("POST", HPAS_V1, &junk).await;
    assert_eq!(code, 201, "{out}");
    let (_, v2) = env.raw("GET", &format!("{HPAS_V2}/junk"), "", vec![]).await;
    assert_eq!(v2["metadata"]["annotations"], json!({"keep": "me"}));
    assert_eq!(v2["spec"]["metrics"].as_array().unwrap().len(), 1);
    assert!(v2["spec"].get("behavior").is_none());
}

#[tokio::test]
async fn a_thousand_v1_round_trips_keep_every_v2_field() {
    let env = Env::start().await;
    let (code, _) = env.json("POST", HPAS_V2, &hpa_v2()).await;
    assert_eq!(code, 201);
    for i in 0..1000 {
        let (_, mut v1) = env.raw("GET", &format!("{HPAS_V1}/web"), "", vec![]).await;
        v1["spec"]["maxReplicas"] = json!(5 + i % 7);
        let (code, out) = env.json("PUT", &format!("{HPAS_V1}/web"), &v1).await;
        assert_eq!(code, 200, "round trip {i}: {out}");
    }
    let (_, v2) = env.raw("GET", &format!("{HPAS_V2}/web"), "", vec![]).await;
    let mut want = hpa_v2()["spec"].clone();
    want["maxReplicas"] = json!(5 + 999 % 7);
    // v2 defaulting fills the behavior's unset rules; compare what was written.
    assert_eq!(v2["spec"]["metrics"], want["metrics"]);
    assert_eq!(v2["spec"]["maxReplicas"], want["maxReplicas"]);
    assert_eq!(
        v2["spec"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"],
        60
    );
    assert!(v2["metadata"].get("annotations").is_none(), "{v2}");
}

#[tokio::test]
async fn kubectl_create_token_authenticates_as_the_service_account() {
    let env = Env::start().await;
    env.kubectl(&["create", "serviceaccount", "deployer", "-n", "team-a"])
        .await
        .ok();
    let token = env
        .kubectl(&["create", "token", "deployer", "-n", "team-a"])
        .await
        .ok()
        .stdout
        .trim()
        .to_string();
    assert_eq!(token.split('.').count(), 3, "a JWT: {token}");
    let who = env
        .kubectl_with_token(&token, &["auth", "whoami", "-o", "json"])
        .await
        .ok();
    let review: Value = serde_json::from_str(&who.stdout).unwrap();
    assert_eq!(review["kind"], "SelfSubjectReview");
    assert_eq!(
        review["status"]["userInfo"]["username"],
        "system:serviceaccount:team-a:deployer"
    );
    // RBAC applies to it like any ServiceAccount: nothing until a binding grants it.
    let denied = env
        .kubectl_with_token(&token, &["get", "configmaps", "-n", "team-a"])
        .await;
    assert_ne!(denied.code, 0);
    assert!(
        denied.stderr.contains(
            "User \"system:serviceaccount:team-a:deployer\" cannot list resource \"configmaps\""
        ),
        "{denied:?}"
    );
    let binding = env.write(
        "binding.yaml",
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: d, namespace: team-a}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}\nsubjects: [{kind: ServiceAccount, name: deployer, namespace: team-a}]\n",
    );
    env.kubectl(&["apply", "-f", binding.to_str().unwrap()])
        .await
        .ok();
    env.kubectl_with_token(&token, &["get", "configmaps", "-n", "team-a"])
        .await
        .ok();
    // The admin's own identity.
    let me = env.kubectl(&["auth", "whoami"]).await.ok();
    assert!(me.stdout.contains("kubesim-admin"), "{me:?}");
}

#[tokio::test]
async fn hostile_token_requests_are_refused_and_stale_tokens_stop_working() {
    let env = Env::start().await;
    env.kubectl(&["create", "serviceaccount", "sa", "-n", "team-a"])
        .await
        .ok();
    let short = env
        .kubectl(&["create", "token", "sa", "-n", "team-a", "--duration=1m"])
        .await;
    assert_ne!(short.code, 0);
    assert!(
        short.stderr.contains(
            "TokenRequest.authentication.k8s.io \"sa\" is invalid: spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes"
        ),
        "{short:?}"
    );
    let missing = env
        .kubectl(&["create", "token", "nope", "-n", "team-a"])
        .await;
    assert!(
        missing
            .stderr
            .contains("serviceaccounts \"nope\" not found"),
        "{missing:?}"
    );
    let unbound = env
        .kubectl(&[
            "create",
            "token",
            "sa",
            "-n",
            "team-a",
            "--bound-object-kind=Pod",
            "--bound-object-name=ghost",
        ])
        .await;
    assert!(
        unbound.stderr.contains("pods \"ghost\" not found"),
        "{unbound:?}"
    );
    // A token for another audience does not authenticate to the API server.
    let vault = env
        .kubectl(&["create", "token", "sa", "-n", "team-a", "--audience=vault"])
        .await
        .ok()
        .stdout;
    let refused = env
        .kubectl_with_token(vault.trim(), &["auth", "whoami"])
        .await;
    assert!(refused.stderr.contains("Unauthorized"), "{refused:?}");
    // A tampered token is refused.
    let token = env
        .kubectl(&["create", "token", "sa", "-n", "team-a"])
        .await
        .ok()
        .stdout
        .trim()
        .to_string();
    let mut tampered = token.clone();
    tampered.pop();
    tampered.push(if token.ends_with('A') { 'B' } else { 'A' });
    let refused = env.kubectl_with_token(&tampered, &["auth", "whoami"]).await;
    assert!(refused.stderr.contains("Unauthorized"), "{refused:?}");
    // Deleting and recreating the ServiceAccount (a new uid) invalidates its old tokens.
    env.kubectl_with_token(&token, &["auth", "whoami"])
        .await
        .ok();
    env.kubectl(&["delete", "serviceaccount", "sa", "-n", "team-a"])
        .await
        .ok();
    env.kubectl(&["create", "serviceaccount", "sa", "-n", "team-a"])
        .await
        .ok();
    let stale = env.kubectl_with_token(&token, &["auth", "whoami"]).await;
    assert!(stale.stderr.contains("Unauthorized"), "{stale:?}");
    // Only create is served on the token subresource.
    let (code, _) = env
        .raw(
            "GET",
            "/api/v1/namespaces/team-a/serviceaccounts/sa/token",
            "",
            vec![],
        )
        .await;
    assert_eq!(code, 405);
}

#[tokio::test]
async fn a_thousand_token_requests_each_authenticate() {
    let env = Env::start().await;
    let (code, _) = env
        .json(
            "POST",
            "/api/v1/namespaces/team-a/serviceaccounts",
            &json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "bot"}}),
        )
        .await;
    assert_eq!(code, 201);
    let mut tokens = std::collections::BTreeSet::new();
    for i in 0..1000 {
        let (code, out) = env
            .json(
                "POST",
                "/api/v1/namespaces/team-a/serviceaccounts/bot/token",
                &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                    "spec": {"expirationSeconds": 600 + i}}),
            )
            .await;
        assert_eq!(code, 201, "request {i}: {out}");
        let token = out["status"]["token"].as_str().unwrap().to_string();
        assert!(tokens.insert(token.clone()), "token {i} repeats");
        if i % 100 == 99 {
            let (code, review) = env
                .json(
                    "POST",
                    "/apis/authentication.k8s.io/v1/tokenreviews",
                    &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                        "spec": {"token": token}}),
                )
                .await;
            assert_eq!(code, 201);
            assert_eq!(review["status"]["authenticated"], true, "{review}");
            assert_eq!(
                review["status"]["user"]["username"],
                "system:serviceaccount:team-a:bot"
            );
        }
    }
}
