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

/// A parent ConfigMap and a child owned by it (held by a finalizer of its own when `hold`).
async fn family(env: &Env, parent: &str, hold: bool) -> (Value, Value) {
    let (_, p) = env
        .json("POST", CMS, &json!({"metadata": {"name": parent}}))
        .await;
    let mut child = json!({"metadata": {"name": format!("{parent}-child"),
        "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": parent,
            "uid": p["metadata"]["uid"], "blockOwnerDeletion": true}]}});
    if hold {
        child["metadata"]["finalizers"] = json!(["example.com/hold"]);
    }
    let (code, c) = env.json("POST", CMS, &child).await;
    assert_eq!(code, 201, "{c}");
    (p, c)
}

fn configmap(env: &Env, name: &str) -> Option<Value> {
    env.cluster
        .get_object("v1", "ConfigMap", Some("default"), name)
}

#[tokio::test]
async fn foreground_deletion_holds_the_owner_until_its_dependents_are_gone() {
    let env = Env::start().await;
    family(&env, "fg", true).await;
    let (code, answer) = env
        .json(
            "DELETE",
            &format!("{CMS}/fg"),
            &json!({"propagationPolicy": "Foreground"}),
        )
        .await;
    assert_eq!(code, 200);
    assert_eq!(
        answer["kind"], "ConfigMap",
        "the object, not a Status: {answer}"
    );
    assert_eq!(
        answer["metadata"]["finalizers"],
        json!(["foregroundDeletion"])
    );
    assert!(answer["metadata"]["deletionTimestamp"].is_string());
    let parent = configmap(&env, "fg").expect("held while its child is");
    assert_eq!(
        parent["metadata"]["finalizers"],
        json!(["foregroundDeletion"])
    );
    let child = configmap(&env, "fg-child").expect("held by its own finalizer");
    assert!(
        child["metadata"]["deletionTimestamp"].is_string(),
        "{child}"
    );
    // the child's finalizer goes: the child, then the parent are removed
    let (code, _) = env
        .raw(
            "PATCH",
            &format!("{CMS}/fg-child"),
            "application/merge-patch+json",
            br#"{"metadata":{"finalizers":null}}"#.to_vec(),
        )
        .await;
    assert_eq!(code, 200);
    assert!(configmap(&env, "fg-child").is_none());
    assert!(
        configmap(&env, "fg").is_none(),
        "released with its last dependent"
    );
    // with kubectl, dependents without finalizers go at once and the owner with them
    family(&env, "k", false).await;
    let out = env
        .kubectl(&["delete", "configmap", "k", "--cascade=foreground"])
        .await
        .ok();
    assert_eq!(out.stdout.trim(), "configmap \"k\" deleted");
    assert!(configmap(&env, "k").is_none() && configmap(&env, "k-child").is_none());
}

#[tokio::test]
async fn orphan_deletion_keeps_the_dependents_without_their_owner_reference() {
    let env = Env::start().await;
    family(&env, "or", false).await;
    let (code, answer) = env
        .json(
            "DELETE",
            &format!("{CMS}/or?propagationPolicy=Orphan"),
            &Value::Null,
        )
        .await;
    assert_eq!(code, 200);
    assert_eq!(
        answer["metadata"]["finalizers"],
        json!(["orphan"]),
        "{answer}"
    );
    assert!(configmap(&env, "or").is_none());
    let child = configmap(&env, "or-child").expect("orphaned, not deleted");
    assert!(
        child["metadata"].get("ownerReferences").is_none(),
        "{child}"
    );
    // the legacy orphanDependents option means the same
    family(&env, "legacy", false).await;
    env.json(
        "DELETE",
        &format!("{CMS}/legacy"),
        &json!({"orphanDependents": true}),
    )
    .await;
    assert!(configmap(&env, "legacy-child").is_some());
    // Background (the default) collects them
    family(&env, "bg", false).await;
    env.json("DELETE", &format!("{CMS}/bg"), &Value::Null).await;
    assert!(configmap(&env, "bg-child").is_none());
}

async fn running_pod(env: &Env, name: &str, grace: Option<i64>) -> Value {
    let mut pod = json!({"metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
    if let Some(g) = grace {
        pod["spec"]["terminationGracePeriodSeconds"] = json!(g);
    }
    let (code, created) = env
        .json("POST", "/api/v1/namespaces/default/pods", &pod)
        .await;
    assert_eq!(code, 201, "{created}");
    env.kubectl(&[
        "wait",
        "--for=condition=Ready",
        &format!("pod/{name}"),
        "--timeout=20s",
    ])
    .await
    .ok();
    env.cluster
        .get_object("v1", "Pod", Some("default"), name)
        .unwrap()
}

#[tokio::test]
async fn pods_are_deleted_gracefully_and_the_kubelet_finishes_them() {
    let env = Env::with(kubesim::ClusterConfig {
        name: "grace".into(),
        ready_delay: std::time::Duration::from_millis(100),
        pod_termination: std::time::Duration::from_millis(300),
        ..kubesim::ClusterConfig::default()
    })
    .await;
    let pods = "/api/v1/namespaces/default/pods";
    running_pod(&env, "slow", None).await;
    let (code, answer) = env
        .json("DELETE", &format!("{pods}/slow"), &Value::Null)
        .await;
    assert_eq!(code, 200);
    assert_eq!(answer["kind"], "Pod");
    assert_eq!(answer["metadata"]["deletionGracePeriodSeconds"], 30);
    assert!(answer["metadata"]["deletionTimestamp"].is_string());
    let terminating = env
        .cluster
        .get_object("v1", "Pod", Some("default"), "slow")
        .expect("terminating, not gone yet");
    assert_eq!(terminating["metadata"]["deletionGracePeriodSeconds"], 30);
    // a second DELETE answers the terminating Pod
    let (_, again) = env
        .json("DELETE", &format!("{pods}/slow"), &Value::Null)
        .await;
    assert_eq!(again["metadata"]["uid"], terminating["metadata"]["uid"]);
    env.kubectl(&["wait", "--for=delete", "pod/slow", "--timeout=20s"])
        .await
        .ok();
    // the Pod's own grace period and the request's are honoured
    running_pod(&env, "quick", Some(5)).await;
    let (_, answer) = env
        .json("DELETE", &format!("{pods}/quick"), &Value::Null)
        .await;
    assert_eq!(answer["metadata"]["deletionGracePeriodSeconds"], 5);
    running_pod(&env, "now", None).await;
    let (_, answer) = env
        .json(
            "DELETE",
            &format!("{pods}/now?gracePeriodSeconds=0"),
            &Value::Null,
        )
        .await;
    assert_eq!(answer["kind"], "Pod");
    assert!(
        env.cluster
            .get_object("v1", "Pod", Some("default"), "now")
            .is_none(),
        "gracePeriodSeconds=0 deletes at once"
    );
    running_pod(&env, "kube", None).await;
    let out = env
        .kubectl(&["delete", "pod", "kube", "--wait=true"])
        .await
        .ok();
    assert_eq!(out.stdout.trim(), "pod \"kube\" deleted");
    assert!(
        env.cluster
            .get_object("v1", "Pod", Some("default"), "kube")
            .is_none()
    );
    // hostile options are refused
    running_pod(&env, "odd", None).await;
    let (code, s) = env
        .json(
            "DELETE",
            &format!("{pods}/odd?gracePeriodSeconds=soon"),
            &Value::Null,
        )
        .await;
    assert_eq!(code, 400, "{s}");
}

/// The 300th owner goes like the first: Foreground, Orphan and Background deletions in turn,
/// each leaving exactly what it should.
#[tokio::test]
async fn three_hundred_propagated_deletions_each_leave_what_they_should() {
    let env = Env::start().await;
    let client = env.cluster.client().await.unwrap();
    for i in 0..300 {
        let parent = format!("p{i}");
        family(&env, &parent, false).await;
        let policy = ["Foreground", "Orphan", "Background"][i % 3];
        let (code, _) = common::raw_with(
            &client,
            "DELETE",
            &format!("{CMS}/{parent}?propagationPolicy={policy}"),
            "",
            vec![],
        )
        .await;
        assert_eq!(code, 200);
        assert!(configmap(&env, &parent).is_none(), "{policy} {i}");
        let child = configmap(&env, &format!("{parent}-child"));
        assert_eq!(child.is_some(), policy == "Orphan", "{policy} {i}");
    }
}
