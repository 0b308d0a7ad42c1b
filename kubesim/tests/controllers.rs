//! The endpoints controller as a cluster runs it: a Service's Endpoints follow the Pods it
//! selects (scaling, deletion), go with the Service, and a Service without a selector keeps
//! the Endpoints its user wrote. Raw HTTP and the real kubectl.

mod common;

use std::time::Duration;

use common::Env;
use serde_json::{Value, json};

const DEPLOYS: &str = "/apis/apps/v1/namespaces/default/deployments";
const SVCS: &str = "/api/v1/namespaces/default/services";

fn addresses(env: &Env, name: &str) -> Option<usize> {
    let ep = env
        .cluster
        .get_object("v1", "Endpoints", Some("default"), name)?;
    Some(
        ep["subsets"]
            .as_array()
            .map(|s| {
                s.iter()
                    .map(|s| s["addresses"].as_array().map_or(0, Vec::len))
                    .sum()
            })
            .unwrap_or(0),
    )
}

async fn wait_for(env: &Env, name: &str, want: Option<usize>) {
    for _ in 0..200 {
        if addresses(env, name) == want {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!(
        "{name}: {:?}, wanted {want:?}",
        env.cluster
            .get_object("v1", "Endpoints", Some("default"), name)
    );
}

#[tokio::test]
async fn endpoints_follow_the_selected_pods_and_go_with_the_service() {
    let env = Env::start().await;
    let d = json!({"metadata": {"name": "web"}, "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx",
            "ports": [{"name": "http", "containerPort": 8080}]}]}}}});
    env.json("POST", DEPLOYS, &d).await;
    let s = json!({"metadata": {"name": "web", "labels": {"tier": "front"}},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": "http"}]}});
    env.json("POST", SVCS, &s).await;
    wait_for(&env, "web", Some(2)).await;
    let ep = env
        .cluster
        .get_object("v1", "Endpoints", Some("default"), "web")
        .unwrap();
    assert_eq!(ep["metadata"]["labels"], json!({"tier": "front"}));
    assert_eq!(ep["subsets"][0]["ports"][0]["port"], 8080, "{ep}");
    // scaling down takes a Pod out
    env.raw(
        "PATCH",
        &format!("{DEPLOYS}/web"),
        "application/merge-patch+json",
        br#"{"spec":{"replicas":1}}"#.to_vec(),
    )
    .await;
    wait_for(&env, "web", Some(1)).await;
    // the Service goes, its Endpoints with it
    env.json("DELETE", &format!("{SVCS}/web"), &Value::Null)
        .await;
    wait_for(&env, "web", None).await;

    // a Service without a selector keeps the Endpoints its user wrote
    env.json(
        "POST",
        SVCS,
        &json!({"metadata": {"name": "external"}, "spec": {"ports": [{"port": 5432}]}}),
    )
    .await;
    let mine = json!({"metadata": {"name": "external"},
        "subsets": [{"addresses": [{"ip": "192.0.2.10"}], "ports": [{"port": 5432}]}]});
    let (code, _) = env
        .json("POST", "/api/v1/namespaces/default/endpoints", &mine)
        .await;
    assert_eq!(code, 201);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let kept = env
        .cluster
        .get_object("v1", "Endpoints", Some("default"), "external")
        .unwrap();
    assert_eq!(kept["subsets"][0]["addresses"][0]["ip"], "192.0.2.10");
    let out = env.kubectl(&["get", "endpoints", "external"]).await.ok();
    assert!(out.stdout.contains("192.0.2.10:5432"), "{}", out.stdout);
}

/// Every Pod IP of the Service's Endpoints, ready or not.
fn endpoint_ips(env: &Env, name: &str) -> Vec<String> {
    let Some(ep) = env
        .cluster
        .get_object("v1", "Endpoints", Some("default"), name)
    else {
        return Vec::new();
    };
    ep["subsets"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|s| {
            ["addresses", "notReadyAddresses"]
                .into_iter()
                .filter_map(move |f| s[f].as_array())
                .flatten()
        })
        .filter_map(|a| a["ip"].as_str().map(str::to_string))
        .collect()
}

/// As a node's IPAM: 150 Pods of one Deployment all get different IPs (a name hash alone
/// made two of a few Pods share one now and then), and they keep them while they live.
#[tokio::test]
async fn a_hundred_and_fifty_pods_get_a_hundred_and_fifty_ips() {
    let env = Env::start().await;
    let d = json!({"metadata": {"name": "many"}, "spec": {"replicas": 150, "selector": {"matchLabels": {"app": "many"}},
        "template": {"metadata": {"labels": {"app": "many"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}});
    env.json("POST", DEPLOYS, &d).await;
    let s = json!({"metadata": {"name": "many"},
        "spec": {"selector": {"app": "many"}, "ports": [{"port": 80}]}});
    env.json("POST", SVCS, &s).await;
    wait_for(&env, "many", Some(150)).await;
    let first = endpoint_ips(&env, "many");
    let distinct: std::collections::BTreeSet<&String> = first.iter().collect();
    assert_eq!(distinct.len(), 150, "duplicate Pod IPs: {first:?}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut again = endpoint_ips(&env, "many");
    let mut before = first.clone();
    again.sort();
    before.sort();
    assert_eq!(again, before, "Pods keep their IPs");
}

/// A Pod relabelled out of a Service's selector leaves its Endpoints (only the Services
/// that select a Pod, or list it, are re-synced at its events).
#[tokio::test]
async fn a_relabelled_pod_leaves_the_endpoints_that_listed_it() {
    let env = Env::start().await;
    let pod = json!({"metadata": {"name": "solo", "labels": {"app": "solo"}},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
    env.json("POST", "/api/v1/namespaces/default/pods", &pod)
        .await;
    let s = json!({"metadata": {"name": "solo"},
        "spec": {"selector": {"app": "solo"}, "ports": [{"port": 80}]}});
    env.json("POST", SVCS, &s).await;
    wait_for(&env, "solo", Some(1)).await;
    let out = env
        .kubectl(&["label", "pod", "solo", "app=other", "--overwrite"])
        .await
        .ok();
    assert!(out.stdout.contains("labeled"), "{out:?}");
    wait_for(&env, "solo", Some(0)).await;
}
