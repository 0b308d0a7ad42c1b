//! Protocol tests over raw HTTPS: discovery, CRUD bookkeeping, watch, subresources, CRDs,
//! dry runs, faults, restarts and OpenAPI.

mod common;

use std::time::Duration;

use common::{Env, raw_with};
use kubesim::{ClusterConfig, Faults};
use serde_json::{Value, json};

const CMS: &str = "/api/v1/namespaces/default/configmaps";
const DEPLOYS: &str = "/apis/apps/v1/namespaces/default/deployments";

fn cm(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": {"app": name}}, "data": {"k": "v"}})
}

fn deployment() -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "app", "image": "nginx:1.25"}]}}}})
}

fn rv(obj: &Value) -> u64 {
    obj["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap()
}

#[tokio::test]
async fn version_and_discovery() {
    let env = Env::start().await;
    let (code, v) = env.raw("GET", "/version", "", vec![]).await;
    assert_eq!(code, 200);
    assert_eq!(
        (v["major"].as_str(), v["minor"].as_str()),
        (Some("1"), Some("32"))
    );
    assert!(v["gitVersion"].as_str().unwrap().starts_with("v1.32."));

    let (_, api) = env.raw("GET", "/api", "", vec![]).await;
    assert_eq!(api["versions"], json!(["v1"]));
    let (_, groups) = env.raw("GET", "/apis", "", vec![]).await;
    let names: Vec<&str> = groups["groups"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|g| g["name"].as_str())
        .collect();
    for g in [
        "apps",
        "batch",
        "rbac.authorization.k8s.io",
        "apiextensions.k8s.io",
        "coordination.k8s.io",
    ] {
        assert!(names.contains(&g), "{g} in {names:?}");
    }
    let (_, apps) = env.raw("GET", "/apis/apps/v1", "", vec![]).await;
    let resources = apps["resources"].as_array().unwrap();
    let find = |n: &str| resources.iter().find(|r| r["name"] == n).cloned().unwrap();
    let deploy = find("deployments");
    assert_eq!(deploy["shortNames"], json!(["deploy"]));
    assert_eq!(deploy["namespaced"], true);
    assert_eq!(deploy["singularName"], "deployment");
    assert!(
        deploy["categories"]
            .as_array()
            .unwrap()
            .contains(&json!("all"))
    );
    assert!(
        deploy["verbs"]
            .as_array()
            .unwrap()
            .contains(&json!("watch"))
    );
    assert_eq!(find("deployments/scale")["kind"], "Scale");
    assert_eq!(
        find("deployments/status")["verbs"],
        json!(["get", "patch", "update"])
    );
    let (_, core) = env.raw("GET", "/api/v1", "", vec![]).await;
    let ns = core["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "namespaces")
        .unwrap()
        .clone();
    assert_eq!(ns["namespaced"], false);
    let (code, _) = env.raw("GET", "/apis/nope.example.com", "", vec![]).await;
    assert_eq!(code, 404);
}

#[tokio::test]
async fn crud_bookkeeping_and_errors() {
    let env = Env::start().await;
    let (code, created) = env.json("POST", CMS, &cm("a")).await;
    assert_eq!(code, 201);
    assert_eq!(created["metadata"]["uid"].as_str().unwrap().len(), 36);
    assert!(created["metadata"]["creationTimestamp"].is_string());
    let first_rv = rv(&created);

    let (code, dup) = env.json("POST", CMS, &cm("a")).await;
    assert_eq!(
        (code.as_u16(), dup["reason"].as_str()),
        (409, Some("AlreadyExists"))
    );
    assert_eq!(dup["message"], "configmaps \"a\" already exists");

    let mut generated = cm("ignored");
    generated["metadata"] = json!({"generateName": "job-"});
    let (code, g) = env.json("POST", CMS, &generated).await;
    assert_eq!(code, 201);
    let name = g["metadata"]["name"].as_str().unwrap();
    assert!(name.starts_with("job-") && name.len() == 9, "{name}");

    let mut update = created.clone();
    update["data"]["k"] = json!("w");
    let (code, updated) = env.json("PUT", &format!("{CMS}/a"), &update).await;
    assert_eq!(code, 200);
    assert!(rv(&updated) > first_rv);
    let (code, stale) = env.json("PUT", &format!("{CMS}/a"), &update).await;
    assert_eq!(
        (code.as_u16(), stale["reason"].as_str()),
        (409, Some("Conflict"))
    );
    assert!(
        stale["message"]
            .as_str()
            .unwrap()
            .contains("the object has been modified")
    );

    let (code, missing) = env.raw("GET", &format!("{CMS}/zzz"), "", vec![]).await;
    assert_eq!(code, 404);
    assert_eq!(missing["message"], "configmaps \"zzz\" not found");
    assert_eq!(missing["kind"], "Status");
    assert_eq!(missing["details"]["name"], "zzz");

    let (code, nons) = env
        .json("POST", "/api/v1/namespaces/nope/configmaps", &cm("x"))
        .await;
    assert_eq!(code, 404);
    assert_eq!(nons["message"], "namespaces \"nope\" not found");

    let (code, d) = env.json("POST", DEPLOYS, &deployment()).await;
    assert_eq!(code, 201);
    assert_eq!(d["metadata"]["generation"], 1);
    let (_, missing) = env.raw("GET", &format!("{DEPLOYS}/nope"), "", vec![]).await;
    assert_eq!(missing["message"], "deployments.apps \"nope\" not found");
}

#[tokio::test]
async fn list_with_selectors_limit_and_continue() {
    let env = Env::start().await;
    for n in ["a", "b", "c", "d", "e"] {
        env.json("POST", CMS, &cm(n)).await;
    }
    let (_, page) = env.raw("GET", &format!("{CMS}?limit=2"), "", vec![]).await;
    assert_eq!(page["items"].as_array().unwrap().len(), 2);
    // the namespace's kube-root-ca.crt is listed too, as on a real cluster
    assert_eq!(page["metadata"]["remainingItemCount"], 4);
    let token = page["metadata"]["continue"].as_str().unwrap();
    let (_, rest) = env
        .raw(
            "GET",
            &format!("{CMS}?limit=10&continue={token}"),
            "",
            vec![],
        )
        .await;
    let names: Vec<&str> = rest["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["metadata"]["name"].as_str())
        .collect();
    assert_eq!(names, vec!["c", "d", "e", "kube-root-ca.crt"]);
    assert!(rest["metadata"].get("continue").is_none());

    let (_, sel) = env
        .raw(
            "GET",
            &format!("{CMS}?labelSelector=app%20in%20(a,e)"),
            "",
            vec![],
        )
        .await;
    assert_eq!(sel["items"].as_array().unwrap().len(), 2);
    let (_, by_name) = env
        .raw(
            "GET",
            &format!("{CMS}?fieldSelector=metadata.name%3Dc"),
            "",
            vec![],
        )
        .await;
    assert_eq!(by_name["items"][0]["metadata"]["name"], "c");
    let (_, all_ns) = env.raw("GET", "/api/v1/configmaps", "", vec![]).await;
    let ours = all_ns["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["metadata"]["name"] != "kube-root-ca.crt")
        .count();
    assert_eq!(ours, 5);
    let (code, bad) = env
        .raw(
            "GET",
            &format!("{CMS}?labelSelector=a%20in%20b"),
            "",
            vec![],
        )
        .await;
    assert_eq!(code, 400, "{bad}");
    let (code, bad) = env
        .raw(
            "GET",
            &format!("{CMS}?fieldSelector=spec.x%3D1"),
            "",
            vec![],
        )
        .await;
    assert_eq!(code, 400);
    assert!(
        bad["message"]
            .as_str()
            .unwrap()
            .contains("field label not supported")
    );

    let (code, deleted) = env
        .raw(
            "DELETE",
            &format!("{CMS}?labelSelector=app%3Da"),
            "",
            vec![],
        )
        .await;
    assert_eq!(code, 200);
    assert_eq!(deleted["items"].as_array().unwrap().len(), 1);
    let left = env.cluster.list_objects("v1", "ConfigMap");
    let ours = left
        .iter()
        .filter(|o| o["metadata"]["name"] != "kube-root-ca.crt")
        .count();
    assert_eq!(ours, 4);
}

#[tokio::test]
async fn watch_from_resource_version_with_bookmarks_and_gone() {
    let env = Env::with(ClusterConfig {
        watch_history: 5,
        simulate: false,
        ..ClusterConfig::default()
    })
    .await;
    let (_, a) = env.json("POST", CMS, &cm("a")).await;
    let start = rv(&a);
    env.json("POST", CMS, &cm("b")).await;
    env.raw("DELETE", &format!("{CMS}/a"), "", vec![]).await;
    let (code, stream) = env
        .text(&format!(
            "{CMS}?watch=true&resourceVersion={start}&timeoutSeconds=2&allowWatchBookmarks=true"
        ))
        .await;
    assert_eq!(code, 200);
    let events: Vec<Value> = stream
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kinds: Vec<(&str, &str)> = events
        .iter()
        .filter(|e| e["type"] != "BOOKMARK")
        .map(|e| {
            (
                e["type"].as_str().unwrap(),
                e["object"]["metadata"]["name"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(kinds, vec![("ADDED", "b"), ("DELETED", "a")]);
    assert!(
        events.iter().any(|e| e["type"] == "BOOKMARK"),
        "bookmarks sent: {stream}"
    );

    let (_, legacy) = env
        .text(&format!(
            "/api/v1/watch/namespaces/default/configmaps?resourceVersion={start}&timeoutSeconds=1"
        ))
        .await;
    assert!(legacy.contains("\"ADDED\""));

    for n in ["c", "d", "e", "f", "g", "h"] {
        env.json("POST", CMS, &cm(n)).await;
    }
    let (code, gone) = env
        .text(&format!("{CMS}?watch=1&resourceVersion={start}"))
        .await;
    assert_eq!(code, 200);
    let event: Value = serde_json::from_str(gone.lines().next().unwrap()).unwrap();
    assert_eq!(event["type"], "ERROR");
    assert_eq!(event["object"]["code"], 410);
    assert_eq!(event["object"]["reason"], "Expired");
}

#[tokio::test]
async fn status_and_scale_subresources_and_generation() {
    let env = Env::with(ClusterConfig {
        simulate: false,
        ..ClusterConfig::default()
    })
    .await;
    let (_, d) = env.json("POST", DEPLOYS, &deployment()).await;
    let mut main = d.clone();
    main["status"] = json!({"replicas": 7});
    main["metadata"]["labels"] = json!({"x": "y"});
    let (_, after) = env.json("PUT", &format!("{DEPLOYS}/web"), &main).await;
    assert_eq!(
        after["status"].get("replicas"),
        None,
        "status ignored on the main resource"
    );
    assert_eq!(
        after["metadata"]["generation"], 1,
        "metadata changes keep the generation"
    );

    let mut status = after.clone();
    status["status"] = json!({"replicas": 7});
    status["spec"]["replicas"] = json!(9);
    let (code, s) = env
        .json("PUT", &format!("{DEPLOYS}/web/status"), &status)
        .await;
    assert_eq!(code, 200);
    assert_eq!(s["status"]["replicas"], 7);
    assert_eq!(s["spec"]["replicas"], 1, "spec ignored on /status");

    let (_, scale) = env
        .raw("GET", &format!("{DEPLOYS}/web/scale"), "", vec![])
        .await;
    assert_eq!(
        (scale["kind"].as_str(), scale["spec"]["replicas"].as_i64()),
        (Some("Scale"), Some(1))
    );
    let (code, _) = env
        .raw(
            "PATCH",
            &format!("{DEPLOYS}/web/scale"),
            "application/merge-patch+json",
            br#"{"spec":{"replicas":4}}"#.to_vec(),
        )
        .await;
    assert_eq!(code, 200);
    let live = env
        .cluster
        .get_object("apps/v1", "Deployment", Some("default"), "web")
        .unwrap();
    assert_eq!(live["spec"]["replicas"], 4);
    assert_eq!(
        live["metadata"]["generation"], 2,
        "spec change bumps the generation"
    );
}

#[tokio::test]
async fn patches_of_every_kind() {
    let env = Env::start().await;
    env.json("POST", DEPLOYS, &deployment()).await;
    let path = format!("{DEPLOYS}/web");
    let smp = json!({"spec": {"template": {"spec": {"containers": [{"name": "sidecar", "image": "busybox"}]}}}});
    let (code, d) = env
        .raw(
            "PATCH",
            &path,
            "application/strategic-merge-patch+json",
            serde_json::to_vec(&smp).unwrap(),
        )
        .await;
    assert_eq!(code, 200);
    assert_eq!(
        d["spec"]["template"]["spec"]["containers"]
            .as_array()
            .unwrap()
            .len(),
        2,
        "merged by name"
    );
    let jp = json!([{"op": "replace", "path": "/spec/replicas", "value": 3}]);
    let (_, d) = env
        .raw(
            "PATCH",
            &path,
            "application/json-patch+json",
            serde_json::to_vec(&jp).unwrap(),
        )
        .await;
    assert_eq!(d["spec"]["replicas"], 3);
    let mp = json!({"metadata": {"labels": {"team": "x"}}});
    let (_, d) = env
        .raw(
            "PATCH",
            &path,
            "application/merge-patch+json",
            serde_json::to_vec(&mp).unwrap(),
        )
        .await;
    assert_eq!(d["metadata"]["labels"]["team"], "x");
    let managers: Vec<&str> = d["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["operation"].as_str())
        .collect();
    assert!(managers.iter().all(|op| *op == "Update"));
    let bad = json!([{"op": "test", "path": "/spec/replicas", "value": 99}]);
    let (code, _) = env
        .raw(
            "PATCH",
            &path,
            "application/json-patch+json",
            serde_json::to_vec(&bad).unwrap(),
        )
        .await;
    assert_eq!(code, 422);
    let (code, _) = env
        .raw(
            "PATCH",
            &format!("{DEPLOYS}/nope"),
            "application/merge-patch+json",
            b"{}".to_vec(),
        )
        .await;
    assert_eq!(code, 404);
}

#[tokio::test]
async fn dry_run_never_writes() {
    let env = Env::start().await;
    let (code, would) = env
        .json("POST", &format!("{CMS}?dryRun=All"), &cm("a"))
        .await;
    assert_eq!(code, 201);
    assert_eq!(would["metadata"]["name"], "a");
    assert!(
        env.cluster
            .get_object("v1", "ConfigMap", Some("default"), "a")
            .is_none()
    );

    let (_, created) = env.json("POST", CMS, &cm("a")).await;
    let mut changed = created.clone();
    changed["data"]["k"] = json!("dry");
    let (_, would) = env
        .json("PUT", &format!("{CMS}/a?dryRun=All"), &changed)
        .await;
    assert_eq!(would["data"]["k"], "dry");
    let (_, would) = env
        .raw(
            "PATCH",
            &format!("{CMS}/a?dryRun=All&fieldManager=t&force=true"),
            "application/apply-patch+yaml",
            b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {k: applied}\n".to_vec(),
        )
        .await;
    assert_eq!(would["data"]["k"], "applied");
    let (code, _) = env
        .raw("DELETE", &format!("{CMS}/a?dryRun=All"), "", vec![])
        .await;
    assert_eq!(code, 200);
    let live = env
        .cluster
        .get_object("v1", "ConfigMap", Some("default"), "a")
        .unwrap();
    assert_eq!(live["data"]["k"], "v");
    assert_eq!(
        live["metadata"]["resourceVersion"],
        created["metadata"]["resourceVersion"]
    );
}

#[tokio::test]
async fn namespace_deletion_deletes_contents() {
    let env = Env::start().await;
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "tmp"}});
    let (code, created) = env.json("POST", "/api/v1/namespaces", &ns).await;
    assert_eq!(code, 201);
    assert_eq!(created["status"]["phase"], "Active");
    env.json("POST", "/api/v1/namespaces/tmp/configmaps", &cm("x"))
        .await;
    let (code, _) = env
        .raw("DELETE", "/api/v1/namespaces/tmp", "", vec![])
        .await;
    assert_eq!(code, 200);
    assert!(
        env.cluster
            .get_object("v1", "ConfigMap", Some("tmp"), "x")
            .is_none()
    );
    assert!(
        env.cluster
            .get_object("v1", "Namespace", None, "tmp")
            .is_none()
    );
}

#[tokio::test]
async fn custom_resource_definitions_serve_their_kinds() {
    let env = Env::start().await;
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets", "shortNames": ["wd"]},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}}}}]}});
    let (code, created) = env
        .json(
            "POST",
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            &crd,
        )
        .await;
    assert_eq!(code, 201);
    let conditions = created["status"]["conditions"].as_array().unwrap();
    assert!(
        conditions
            .iter()
            .any(|c| c["type"] == "Established" && c["status"] == "True")
    );
    assert!(
        conditions
            .iter()
            .any(|c| c["type"] == "NamesAccepted" && c["status"] == "True")
    );

    let (_, discovered) = env.raw("GET", "/apis/example.com/v1", "", vec![]).await;
    assert_eq!(discovered["resources"][0]["name"], "widgets");
    assert_eq!(discovered["resources"][0]["shortNames"], json!(["wd"]));
    let (_, doc) = env
        .raw("GET", "/openapi/v3/apis/example.com/v1", "", vec![])
        .await;
    assert_eq!(
        doc["components"]["schemas"]["com.example.v1.Widget"]["properties"]["spec"]["properties"]["size"]
            ["type"],
        "integer"
    );

    let widgets = "/apis/example.com/v1/namespaces/default/widgets";
    let w = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 1}, "status": {"ok": true}});
    let (code, cw) = env.json("POST", widgets, &w).await;
    assert_eq!(code, 201);
    assert_eq!(cw["metadata"]["generation"], 1);
    assert!(
        cw.get("status").is_none(),
        "status dropped on create with a status subresource"
    );
    let (code, _) = env
        .raw(
            "PATCH",
            &format!("{widgets}/w"),
            "application/strategic-merge-patch+json",
            b"{}".to_vec(),
        )
        .await;
    assert_eq!(code, 415, "no strategic merge patch for custom resources");
    let (code, patched) = env
        .raw(
            "PATCH",
            &format!("{widgets}/w"),
            "application/merge-patch+json",
            br#"{"spec":{"size":2}}"#.to_vec(),
        )
        .await;
    assert_eq!(code, 200);
    assert_eq!(patched["metadata"]["generation"], 2);
    let (code, applied) = env
        .raw(
            "PATCH",
            &format!("{widgets}/v?fieldManager=m"),
            "application/apply-patch+yaml",
            b"apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: v}\nspec: {size: 5}\n"
                .to_vec(),
        )
        .await;
    assert_eq!(code, 201, "{applied}");
    assert_eq!(
        env.cluster.list_objects("example.com/v1", "Widget").len(),
        2
    );

    let (code, _) = env
        .raw(
            "DELETE",
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com",
            "",
            vec![],
        )
        .await;
    assert_eq!(code, 200);
    let (code, _) = env.raw("GET", widgets, "", vec![]).await;
    assert_eq!(code, 404);
    let (code, _) = env.raw("GET", "/apis/example.com/v1", "", vec![]).await;
    assert_eq!(code, 404);
}

#[tokio::test]
async fn openapi_index_and_documents() {
    let env = Env::start().await;
    let (_, index) = env.raw("GET", "/openapi/v3", "", vec![]).await;
    let url = index["paths"]["apis/apps/v1"]["serverRelativeURL"]
        .as_str()
        .unwrap();
    assert!(url.starts_with("/openapi/v3/apis/apps/v1?hash="));
    let (code, doc) = env.raw("GET", url, "", vec![]).await;
    assert_eq!(code, 200);
    let deploy = &doc["components"]["schemas"]["io.k8s.api.apps.v1.Deployment"];
    assert_eq!(
        deploy["x-kubernetes-group-version-kind"][0]["kind"],
        "Deployment"
    );
    let (code, _) = env.raw("GET", "/openapi/v3/apis/nope/v1", "", vec![]).await;
    assert_eq!(code, 404);
}

#[tokio::test]
async fn faults_errors_and_restart_on_the_same_port() {
    let env = Env::start().await;
    // kube retries 429 and 503 itself; this test wants to see them.
    let client = common::client_without_retries(&env.cluster.kubeconfig()).await;
    env.json("POST", CMS, &cm("kept")).await;
    env.cluster.set_faults(Faults {
        error_rate: 1.0,
        error_status: 503,
        ..Faults::default()
    });
    let (code, body) = raw_with(&client, "GET", CMS, "", vec![]).await;
    assert_eq!(code, 503);
    assert_eq!(body["reason"], "ServiceUnavailable");
    env.cluster.set_faults(Faults {
        error_rate: 1.0,
        error_status: 429,
        ..Faults::default()
    });
    let (code, body) = raw_with(&client, "GET", CMS, "", vec![]).await;
    assert_eq!(
        (code.as_u16(), body["reason"].as_str()),
        (429, Some("TooManyRequests"))
    );
    env.cluster.set_faults(Faults {
        latency: Duration::from_millis(20),
        ..Faults::default()
    });
    let (code, _) = raw_with(&client, "GET", CMS, "", vec![]).await;
    assert_eq!(code, 200);
    env.cluster.set_faults(Faults::default());

    let port = env.cluster.port();
    env.cluster.stop().await;
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
        "stopped"
    );
    env.cluster.restart().await.unwrap();
    assert_eq!(env.cluster.port(), port);
    let fresh = common::client_without_retries(&env.cluster.kubeconfig()).await;
    let (code, got) = raw_with(&fresh, "GET", &format!("{CMS}/kept"), "", vec![]).await;
    assert_eq!(code, 200);
    assert_eq!(got["metadata"]["name"], "kept");
}

#[tokio::test]
async fn garbage_collection_and_kwok_pods() {
    let env = Env::start().await;
    env.json("POST", DEPLOYS, &deployment()).await;
    // The simulated controllers create the ReplicaSet and its Pod; wait until they exist.
    let mut pods = Vec::new();
    for _ in 0..200 {
        pods = env.cluster.list_objects("v1", "Pod");
        if !pods.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(pods.len(), 1);
    assert_eq!(env.cluster.list_objects("apps/v1", "ReplicaSet").len(), 1);
    assert_eq!(env.cluster.list_objects("v1", "Node").len(), 1);
    env.raw("DELETE", &format!("{DEPLOYS}/web"), "", vec![])
        .await;
    assert!(
        env.cluster.list_objects("apps/v1", "ReplicaSet").is_empty(),
        "owned objects are collected"
    );
    assert!(env.cluster.list_objects("v1", "Pod").is_empty());
}

#[tokio::test]
async fn watch_with_a_selector_sees_objects_leave_and_enter_it() {
    let env = Env::with(ClusterConfig {
        simulate: false,
        ..ClusterConfig::default()
    })
    .await;
    let (_, a) = env.json("POST", CMS, &cm("a")).await;
    let start = rv(&a);
    let relabel =
        |app: &str| serde_json::to_vec(&json!({"metadata": {"labels": {"app": app}}})).unwrap();
    let merge = "application/merge-patch+json";
    env.raw("PATCH", &format!("{CMS}/a"), merge, relabel("other"))
        .await;
    env.raw("PATCH", &format!("{CMS}/a"), merge, relabel("a"))
        .await;
    env.json("POST", CMS, &cm("b")).await;
    let (_, stream) = env
        .text(&format!(
            "{CMS}?watch=true&resourceVersion={start}&timeoutSeconds=1&labelSelector=app%3Da"
        ))
        .await;
    let events: Vec<(String, String)> = stream
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|e| {
            (
                e["type"].as_str().unwrap().to_string(),
                e["object"]["metadata"]["name"]
                    .as_str()
                    .unwrap()
                    .to_string(),
            )
        })
        .collect();
    let expected: Vec<(String, String)> = [("DELETED", "a"), ("ADDED", "a")]
        .iter()
        .map(|(t, n)| (t.to_string(), n.to_string()))
        .collect();
    assert_eq!(events, expected);
}
