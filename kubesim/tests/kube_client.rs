//! Conformance: kube-rs 5 against kubesim (discovery, dynamic objects, server-side apply,
//! watchers across dropped streams and restarts).

mod common;

use std::time::Duration;

use common::Env;
use futures_util::StreamExt;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use kube::discovery::{Discovery, Scope};
use kube::runtime::{WatchStreamExt, watcher};
use kubesim::Faults;
use serde_json::json;

async fn api_for(env: &Env, group: &str, version: &str, kind: &str) -> Api<DynamicObject> {
    let client = env.cluster.client().await.unwrap();
    let discovery = Discovery::new(client.clone()).run().await.unwrap();
    let (ar, caps) = discovery
        .resolve_gvk(&GroupVersionKind::gvk(group, version, kind))
        .expect("kind discovered");
    assert_eq!(caps.scope, Scope::Namespaced);
    Api::namespaced_with(client, "default", &ar)
}

#[tokio::test]
async fn dynamic_objects_through_discovery() {
    let env = Env::start().await;
    let api = api_for(&env, "apps", "v1", "Deployment").await;
    let obj: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "app", "image": "nginx"}]}}}
    }))
    .unwrap();
    let created = api.create(&PostParams::default(), &obj).await.unwrap();
    assert!(created.metadata.uid.is_some());
    let got = api.get("web").await.unwrap();
    assert_eq!(got.data["spec"]["replicas"], 1, "defaulted");
    assert_eq!(
        got.data["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"],
        "Always"
    );
    let list = api.list(&ListParams::default()).await.unwrap();
    assert_eq!(list.items.len(), 1);
    api.delete("web", &DeleteParams::default()).await.unwrap();
    assert!(
        env.cluster
            .get_object("apps/v1", "Deployment", Some("default"), "web")
            .is_none()
    );
}

#[tokio::test]
async fn server_side_apply_with_a_field_manager() {
    let env = Env::start().await;
    let api = api_for(&env, "", "v1", "ConfigMap").await;
    let cm = |data: serde_json::Value| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "conf"}, "data": data});
    let pp = PatchParams::apply("wardn");
    api.patch("conf", &pp, &Patch::Apply(cm(json!({"a": "1", "b": "2"}))))
        .await
        .unwrap();
    let live = env
        .cluster
        .get_object("v1", "ConfigMap", Some("default"), "conf")
        .unwrap();
    assert_eq!(live["metadata"]["managedFields"][0]["manager"], "wardn");
    assert_eq!(live["metadata"]["managedFields"][0]["operation"], "Apply");

    api.patch("conf", &pp, &Patch::Apply(cm(json!({"a": "1"}))))
        .await
        .unwrap();
    let live = env
        .cluster
        .get_object("v1", "ConfigMap", Some("default"), "conf")
        .unwrap();
    assert_eq!(
        live["data"],
        json!({"a": "1"}),
        "fields no longer applied are removed"
    );

    let other = PatchParams::apply("intruder");
    let err = api
        .patch("conf", &other, &Patch::Apply(cm(json!({"a": "changed"}))))
        .await
        .unwrap_err();
    match err {
        kube::Error::Api(status) => {
            assert_eq!(status.code, 409);
            assert_eq!(status.reason, "Conflict");
        }
        other => panic!("expected a conflict, got {other:?}"),
    }
    api.patch(
        "conf",
        &other.force(),
        &Patch::Apply(cm(json!({"a": "changed"}))),
    )
    .await
    .unwrap();
    let live = env
        .cluster
        .get_object("v1", "ConfigMap", Some("default"), "conf")
        .unwrap();
    assert_eq!(live["data"]["a"], "changed");
}

async fn next_named(
    stream: &mut (impl futures_util::Stream<Item = Result<DynamicObject, watcher::Error>> + Unpin),
    name: &str,
) {
    // A guard against hanging forever, not a timing assertion.
    tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(item) = stream.next().await {
            if let Ok(obj) = item
                && obj.metadata.name.as_deref() == Some(name)
            {
                return;
            }
        }
        panic!("watch stream ended");
    })
    .await
    .expect("object seen by the watcher");
}

#[tokio::test]
async fn watcher_survives_dropped_streams_and_restarts() {
    let env = Env::start().await;
    let api = api_for(&env, "", "v1", "ConfigMap").await;
    let mut stream = watcher(api.clone(), watcher::Config::default())
        .default_backoff()
        .applied_objects()
        .boxed();
    let make = |name: &str| -> DynamicObject {
        serde_json::from_value(
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}),
        )
        .unwrap()
    };
    api.create(&PostParams::default(), &make("a"))
        .await
        .unwrap();
    next_named(&mut stream, "a").await;

    env.cluster.set_faults(Faults {
        drop_watches: true,
        ..Faults::default()
    });
    env.cluster.set_faults(Faults::default());
    api.create(&PostParams::default(), &make("b"))
        .await
        .unwrap();
    next_named(&mut stream, "b").await;

    env.cluster.restart().await.unwrap();
    api.create(&PostParams::default(), &make("c"))
        .await
        .unwrap();
    next_named(&mut stream, "c").await;
}
