//! Deletion and the objects a real cluster keeps for you: DELETE answers a Success Status
//! when the object is gone at once (the object itself for Pods and Services, or with a
//! deletionTimestamp while finalizers hold it); namespaces come with their `default`
//! ServiceAccount and `kube-root-ca.crt`; `default/kubernetes` exists; a Deployment's
//! generation follows its annotations.

mod common;

use common::Env;
use serde_json::{Value, json};

const CMS: &str = "/api/v1/namespaces/default/configmaps";

#[tokio::test]
async fn delete_answers_a_status_or_the_object_as_the_registry_does() {
    let env = Env::start().await;
    let (_, cm) = env
        .json("POST", CMS, &json!({"metadata": {"name": "gone"}}))
        .await;
    let (code, s) = env
        .json("DELETE", &format!("{CMS}/gone"), &Value::Null)
        .await;
    assert_eq!(code, 200);
    assert_eq!(
        s,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
            "details": {"name": "gone", "kind": "configmaps", "uid": cm["metadata"]["uid"]}})
    );
    let deploys = "/apis/apps/v1/namespaces/default/deployments";
    let d = json!({"metadata": {"name": "web"}, "spec": {"selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}});
    env.json("POST", deploys, &d).await;
    let (_, s) = env
        .json("DELETE", &format!("{deploys}/web?dryRun=All"), &Value::Null)
        .await;
    assert_eq!(
        (s["kind"].as_str(), s["details"]["group"].as_str()),
        (Some("Status"), Some("apps"))
    );
    let (code, _) = env
        .json("GET", &format!("{deploys}/web"), &Value::Null)
        .await;
    assert_eq!(code, 200, "a dry run deletes nothing");
    let svcs = "/api/v1/namespaces/default/services";
    env.json(
        "POST",
        svcs,
        &json!({"metadata": {"name": "web"}, "spec": {"ports": [{"port": 80}]}}),
    )
    .await;
    let (_, s) = env
        .json("DELETE", &format!("{svcs}/web"), &Value::Null)
        .await;
    assert_eq!(
        (s["kind"].as_str(), s["metadata"]["name"].as_str()),
        (Some("Service"), Some("web"))
    );
    env.json(
        "POST",
        CMS,
        &json!({"metadata": {"name": "held", "finalizers": ["example.com/x"]}}),
    )
    .await;
    let (_, s) = env
        .json("DELETE", &format!("{CMS}/held"), &Value::Null)
        .await;
    assert_eq!(s["kind"], "ConfigMap");
    assert!(s["metadata"]["deletionTimestamp"].is_string(), "{s}");
    // kubectl is happy with both answers
    env.json("POST", CMS, &json!({"metadata": {"name": "again"}}))
        .await;
    let out = env.kubectl(&["delete", "configmap", "again"]).await.ok();
    assert_eq!(out.stdout.trim(), "configmap \"again\" deleted");
}

#[tokio::test]
async fn namespaces_come_with_their_service_account_and_root_ca() {
    let env = Env::start().await;
    env.kubectl(&["create", "namespace", "fresh"]).await.ok();
    for ns in ["default", "team-a", "fresh"] {
        let out = env
            .kubectl(&["get", "serviceaccount,configmap", "-n", ns, "-o", "name"])
            .await
            .ok();
        let names: Vec<&str> = out.stdout.lines().collect();
        assert_eq!(
            names,
            ["serviceaccount/default", "configmap/kube-root-ca.crt"],
            "{ns}"
        );
    }
    let out = env
        .kubectl(&[
            "get",
            "configmap",
            "kube-root-ca.crt",
            "-n",
            "fresh",
            "-o",
            "jsonpath={.data.ca\\.crt}",
        ])
        .await
        .ok();
    assert!(
        out.stdout.starts_with("-----BEGIN CERTIFICATE-----"),
        "{out:?}"
    );
    let out = env
        .kubectl(&["get", "service", "kubernetes", "-o", "json"])
        .await
        .ok();
    let svc: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(svc["spec"]["clusterIP"], "10.96.0.1");
    assert_eq!(svc["spec"]["ports"][0]["port"], 443);
    // a new Service never gets the kubernetes Service's address
    let (_, web) = env
        .json(
            "POST",
            "/api/v1/namespaces/default/services",
            &json!({"metadata": {"name": "web"}, "spec": {"ports": [{"port": 80}]}}),
        )
        .await;
    assert_ne!(web["spec"]["clusterIP"], "10.96.0.1");
    // deleting the namespace takes them along
    env.kubectl(&["delete", "namespace", "fresh"]).await.ok();
    let (code, _) = env
        .json(
            "GET",
            "/api/v1/namespaces/fresh/serviceaccounts/default",
            &Value::Null,
        )
        .await;
    assert_eq!(code, 404);
}

#[tokio::test]
async fn deployment_generation_follows_spec_and_annotations() {
    let env = Env::start().await;
    let deploys = "/apis/apps/v1/namespaces/default/deployments";
    let d = json!({"metadata": {"name": "web"}, "spec": {"selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}});
    env.json("POST", deploys, &d).await;
    let patch = |body: &'static str| {
        env.raw(
            "PATCH",
            "/apis/apps/v1/namespaces/default/deployments/web",
            "application/merge-patch+json",
            body.as_bytes().to_vec(),
        )
    };
    let (_, s) = patch(r#"{"metadata":{"annotations":{"note":"a"}}}"#).await;
    assert_eq!(s["metadata"]["generation"], 2);
    let (_, s) = patch(r#"{"metadata":{"labels":{"team":"x"}}}"#).await;
    assert_eq!(s["metadata"]["generation"], 2, "labels do not bump it");
    let (_, s) = patch(r#"{"spec":{"replicas":3}}"#).await;
    assert_eq!(s["metadata"]["generation"], 3);
    // ConfigMaps have no generation at all; annotations there change nothing of the kind
    let (_, s) = env
        .json("POST", CMS, &json!({"metadata": {"name": "c"}}))
        .await;
    assert!(s["metadata"].get("generation").is_none());
}

#[tokio::test]
async fn creating_in_a_terminating_namespace_is_forbidden_as_namespace_lifecycle_words_it() {
    let env = Env::start().await;
    env.json(
        "POST",
        "/api/v1/namespaces",
        &json!({"metadata": {"name": "leaving"}}),
    )
    .await;
    let cms = "/api/v1/namespaces/leaving/configmaps";
    env.json(
        "POST",
        cms,
        &json!({"metadata": {"name": "held", "finalizers": ["example.com/x"]}}),
    )
    .await;
    let (_, ns) = env
        .json("DELETE", "/api/v1/namespaces/leaving", &Value::Null)
        .await;
    assert_eq!(ns["status"]["phase"], "Terminating");
    let (code, s) = env
        .json("POST", cms, &json!({"metadata": {"name": "late"}}))
        .await;
    assert_eq!(
        (code.as_u16(), s["reason"].as_str()),
        (403, Some("Forbidden"))
    );
    assert_eq!(
        s["message"],
        "configmaps \"late\" is forbidden: unable to create new content in namespace leaving because it is being terminated"
    );
}
