//! Lists at a resourceVersion as kube-apiserver serves them: `resourceVersionMatch=Exact`
//! rebuilds the collection as it was (410 Expired once the history is gone), `NotOlderThan`
//! (and a bare resourceVersion) serve the latest, a future resourceVersion times out with
//! `Too large resource version`, and bad combinations are refused as ListOptions
//! validation refuses them.

mod common;

use std::collections::BTreeMap;

use common::{Env, raw_with};
use hyper::http::StatusCode;
use kubesim::ClusterConfig;
use serde_json::{Value, json};

const CMS: &str = "/api/v1/namespaces/default/configmaps";

fn names_and_data(list: &Value) -> BTreeMap<String, String> {
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["metadata"]["name"] != "kube-root-ca.crt")
        .map(|o| {
            (
                o["metadata"]["name"].as_str().unwrap().to_string(),
                o["data"]["v"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

fn rv(v: &Value) -> u64 {
    v["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap()
}

#[tokio::test]
async fn exact_lists_rebuild_the_past_and_not_older_than_serves_the_latest() {
    let env = Env::start().await;
    let (_, a1) = env
        .json(
            "POST",
            CMS,
            &json!({"metadata": {"name": "a"}, "data": {"v": "1"}}),
        )
        .await;
    let (_, a2) = env
        .json(
            "PUT",
            &format!("{CMS}/a"),
            &json!({"metadata": {"name": "a"}, "data": {"v": "2"}}),
        )
        .await;
    let (_, b) = env
        .json(
            "POST",
            CMS,
            &json!({"metadata": {"name": "b"}, "data": {"v": "b"}}),
        )
        .await;
    let (_, _) = env.json("DELETE", &format!("{CMS}/a"), &Value::Null).await;
    let at = |n: u64| format!("{CMS}?resourceVersion={n}&resourceVersionMatch=Exact");
    let (code, list) = env.raw("GET", &at(rv(&a1)), "", vec![]).await;
    assert_eq!(code, StatusCode::OK, "{list}");
    assert_eq!(list["metadata"]["resourceVersion"], rv(&a1).to_string());
    assert_eq!(
        names_and_data(&list),
        BTreeMap::from([("a".into(), "1".into())])
    );
    let (_, list) = env.raw("GET", &at(rv(&a2)), "", vec![]).await;
    assert_eq!(
        names_and_data(&list),
        BTreeMap::from([("a".into(), "2".into())])
    );
    let (_, list) = env.raw("GET", &at(rv(&b)), "", vec![]).await;
    assert_eq!(
        names_and_data(&list),
        BTreeMap::from([("a".into(), "2".into()), ("b".into(), "b".into())])
    );
    assert_eq!(
        list["items"][0]["metadata"]["resourceVersion"],
        a2["metadata"]["resourceVersion"]
    );
    // NotOlderThan an old version, and a bare resourceVersion: the latest
    for query in [
        format!(
            "resourceVersion={}&resourceVersionMatch=NotOlderThan",
            rv(&a1)
        ),
        format!("resourceVersion={}", rv(&a1)),
    ] {
        let (code, list) = env.raw("GET", &format!("{CMS}?{query}"), "", vec![]).await;
        assert_eq!(code, StatusCode::OK);
        assert_eq!(
            names_and_data(&list),
            BTreeMap::from([("b".into(), "b".into())])
        );
    }
    // kubectl reads the same
    let out = env.kubectl(&["get", "--raw", &at(rv(&a1))]).await.ok();
    assert_eq!(names_and_data(&common::yaml(&out.stdout)).len(), 1);
}

#[tokio::test]
async fn future_old_and_malformed_versions_are_refused_as_the_api_server_refuses_them() {
    let env = Env::with(ClusterConfig {
        name: "short".into(),
        watch_history: 5,
        ..ClusterConfig::default()
    })
    .await;
    let (_, first) = env
        .json("POST", CMS, &json!({"metadata": {"name": "first"}}))
        .await;
    for i in 0..10 {
        env.json("POST", CMS, &json!({"metadata": {"name": format!("n{i}")}}))
            .await;
    }
    let (code, s) = env
        .raw(
            "GET",
            &format!(
                "{CMS}?resourceVersion={}&resourceVersionMatch=Exact",
                rv(&first)
            ),
            "",
            vec![],
        )
        .await;
    assert_eq!(code, StatusCode::GONE, "{s}");
    assert_eq!(s["reason"], "Expired");
    assert_eq!(
        s["message"],
        "The resourceVersion for the provided list is too old."
    );
    // a kube client would retry the 504; this one does not
    let once = common::client_without_retries(&env.cluster.kubeconfig()).await;
    let (code, s) = raw_with(
        &once,
        "GET",
        &format!("{CMS}?resourceVersion=999999&resourceVersionMatch=NotOlderThan"),
        "",
        vec![],
    )
    .await;
    assert_eq!(code, StatusCode::GATEWAY_TIMEOUT, "{s}");
    assert_eq!(s["reason"], "Timeout");
    assert!(
        s["message"]
            .as_str()
            .unwrap()
            .starts_with("Too large resource version: 999999, current: ")
    );
    for (query, expected) in [
        (
            "resourceVersionMatch=Exact",
            "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided",
        ),
        (
            "resourceVersion=0&resourceVersionMatch=Exact",
            "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
        ),
        (
            "resourceVersion=1&resourceVersionMatch=Sometime",
            "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Unsupported value: \"Sometime\": supported values: \"Exact\", \"NotOlderThan\", \"\"",
        ),
    ] {
        let (code, s) = env.raw("GET", &format!("{CMS}?{query}"), "", vec![]).await;
        assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{query}: {s}");
        assert_eq!(s["message"], expected);
    }
    let (code, _) = env
        .raw("GET", &format!("{CMS}?resourceVersion=abc"), "", vec![])
        .await;
    assert_eq!(code, StatusCode::BAD_REQUEST);
}

/// After 400 mixed writes, the list at every one of their resourceVersions is what the
/// collection was then.
#[tokio::test]
async fn every_past_version_of_four_hundred_writes_lists_exactly() {
    let env = Env::start().await;
    let client = env.cluster.client().await.unwrap();
    let mut model: BTreeMap<String, String> = BTreeMap::new();
    let mut seen: Vec<(u64, BTreeMap<String, String>)> = Vec::new();
    for i in 0..400u64 {
        let name = format!("c{}", i % 7);
        let value = i.to_string();
        let (code, body) = if model.contains_key(&name) && i % 5 == 0 {
            let r = raw_with(&client, "DELETE", &format!("{CMS}/{name}"), "", vec![]).await;
            model.remove(&name);
            r
        } else if model.contains_key(&name) {
            model.insert(name.clone(), value.clone());
            let body = json!({"metadata": {"name": name}, "data": {"v": value}});
            raw_with(
                &client,
                "PUT",
                &format!("{CMS}/{name}"),
                "application/json",
                serde_json::to_vec(&body).unwrap(),
            )
            .await
        } else {
            model.insert(name.clone(), value.clone());
            let body = json!({"metadata": {"name": name}, "data": {"v": value}});
            raw_with(
                &client,
                "POST",
                CMS,
                "application/json",
                serde_json::to_vec(&body).unwrap(),
            )
            .await
        };
        assert!(code.is_success(), "{body}");
        let (_, now) = raw_with(&client, "GET", CMS, "", vec![]).await;
        seen.push((rv(&now), model.clone()));
    }
    for (at, expected) in seen {
        let (code, list) = raw_with(
            &client,
            "GET",
            &format!("{CMS}?resourceVersion={at}&resourceVersionMatch=Exact"),
            "",
            vec![],
        )
        .await;
        assert_eq!(code, StatusCode::OK);
        assert_eq!(names_and_data(&list), expected, "at {at}");
    }
}
