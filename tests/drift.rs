//! Per-cluster rate limits and drift watches against kubesim: a burst of requests through a
//! throttled client is spread out (counted, not timed); a kubectl patch or delete of an
//! inventoried object reports the owning App, also after kubesim restarts (dropped watches);
//! watches follow the inventories.

mod common;

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, Patch, PatchParams};
use serde_json::json;
use tokio::sync::mpsc;
use wardn::clusters::connect::client_from_kubeconfig;
use wardn::clusters::connect::throttled_client_from_kubeconfig;
use wardn::clusters::throttle::Throttles;
use wardn::object::ObjectRef;
use wardn::reconcile::drift::{DriftWatches, WatchClient};

const NS: &str = "staging";

/// A liveness guard only (never a timing assertion): the event is expected long before.
const PATIENCE: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread")]
async fn a_burst_through_the_throttled_client_waits_for_tokens() {
    let sim = common::start(&[NS]).await;
    let throttles = Throttles::new(5.0, 3);
    let client = throttled_client_from_kubeconfig(
        &sim.cluster.kubeconfig(),
        Duration::from_secs(10),
        &throttles.layer("staging"),
    )
    .await
    .unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client, NS);
    let lists = (0..12).map(|_| {
        let api = api.clone();
        async move { api.list(&ListParams::default()).await }
    });
    for result in futures_util::future::join_all(lists).await {
        result.unwrap();
    }
    let counts = throttles.counts();
    assert_eq!(counts.len(), 1);
    assert_eq!(counts[0].cluster, "staging");
    assert_eq!(counts[0].requests, 12);
    assert!(
        counts[0].throttled >= 9,
        "only the burst of 3 may go without waiting: {counts:?}"
    );
}

/// A 503 with `Retry-After` comes back to wardn after one request: kube's own retry loop
/// (up to 15 attempts, holding the pass and bypassing nothing of the backoff) is off, so the
/// per-App backoff sees the error and the cluster's `Retry-After`, and the worker is free.
#[tokio::test(flavor = "multi_thread")]
async fn unavailable_clusters_answer_at_once_with_their_retry_after() {
    let sim = common::start(&[NS]).await;
    let throttles = Throttles::default();
    let client = throttled_client_from_kubeconfig(
        &sim.cluster.kubeconfig(),
        Duration::from_secs(10),
        &throttles.layer("staging"),
    )
    .await
    .unwrap();
    sim.cluster.set_faults(kubesim::Faults {
        error_rate: 1.0,
        error_status: 503,
        ..kubesim::Faults::default()
    });
    let api: Api<ConfigMap> = Api::namespaced(client, NS);
    let err = api.get("anything").await.unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 503),
        "{err:?}"
    );
    assert_eq!(throttles.counts()[0].requests, 1, "no hidden retries");
    assert!(throttles.retry_after("staging").is_some());
}

fn cm_ref(name: &str) -> ObjectRef {
    ObjectRef {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        namespace: Some(NS.into()),
        name: name.into(),
    }
}

async fn apply_as_wardn(api: &Api<ConfigMap>, name: &str, value: &str) {
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": NS}, "data": {"k": value}});
    api.patch(
        name,
        &PatchParams::apply("wardn").force(),
        &Patch::Apply(&cm),
    )
    .await
    .unwrap();
}

/// `client` with the credentials identity every test client here shares.
fn with(client: &kube::Client) -> WatchClient<'_> {
    WatchClient {
        client,
        credentials: 1,
    }
}

async fn next(rx: &mut mpsc::UnboundedReceiver<String>) -> String {
    tokio::time::timeout(PATIENCE, rx.recv())
        .await
        .expect("no drift reported")
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_changes_to_inventoried_objects_report_their_app() {
    let sim = common::start(&[NS]).await;
    let client = sim.cluster.client().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    apply_as_wardn(&api, "a", "1").await;
    apply_as_wardn(&api, "other", "1").await;

    let (tx, mut rx) = mpsc::unbounded_channel();
    let watches = DriftWatches::new(Arc::new(move |app: &str| {
        let _ = tx.send(app.to_string());
    }));
    watches.track("staging/web", "sim", with(&client), &[cm_ref("a")]);
    assert_eq!(watches.watches().len(), 1);

    // Not in any inventory: ignored; then the inventoried one is patched.
    sim.kubectl(
        &["label", "configmap", "other", "-n", NS, "touched=yes"],
        None,
    );
    sim.kubectl(
        &[
            "patch",
            "configmap",
            "a",
            "-n",
            NS,
            "--type=merge",
            "-p",
            r#"{"data":{"k":"tampered"}}"#,
        ],
        None,
    );
    assert_eq!(next(&mut rx).await, "staging/web");

    // wardn re-applies (as selfHeal would); then kubesim restarts, dropping the watch, and
    // an edit made while it reconnects is still reported.
    apply_as_wardn(&api, "a", "1").await;
    sim.cluster.restart().await.unwrap();
    while rx.try_recv().is_ok() {}
    sim.kubectl(&["label", "configmap", "a", "-n", NS, "edited=yes"], None);
    assert_eq!(next(&mut rx).await, "staging/web");

    // A deletion is drift too.
    apply_as_wardn(&api, "a", "1").await;
    while rx.try_recv().is_ok() {}
    sim.kubectl(&["delete", "configmap", "a", "-n", NS], None);
    assert_eq!(next(&mut rx).await, "staging/web");

    // Watches follow the inventories.
    watches.track("staging/web", "sim", with(&client), &[]);
    assert!(watches.watches().is_empty());
    watches.track("staging/web", "sim", with(&client), &[cm_ref("a")]);
    watches.forget("staging/web");
    assert!(watches.watches().is_empty());
}

/// The cluster's kubeconfig is rotated while its watches run with the old, now rejected
/// credentials: the next pass brings a client with other credentials, the cluster's watches
/// restart with it, and drift is reported again.
#[tokio::test(flavor = "multi_thread")]
async fn rotated_credentials_restart_the_watches_of_their_cluster() {
    let sim = common::start(&[NS]).await;
    let client = sim.cluster.client().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    apply_as_wardn(&api, "a", "1").await;
    let rejected = client_from_kubeconfig(
        &sim.cluster.kubeconfig_with_token("revoked-token"),
        Duration::from_secs(10),
    )
    .await
    .unwrap();

    let (tx, mut rx) = mpsc::unbounded_channel();
    let watches = DriftWatches::new(Arc::new(move |app: &str| {
        let _ = tx.send(app.to_string());
    }));
    let old = WatchClient {
        client: &rejected,
        credentials: 1,
    };
    watches.track("staging/web", "sim", old, &[cm_ref("a")]);
    let rotated = WatchClient {
        client: &client,
        credentials: 2,
    };
    watches.track("staging/web", "sim", rotated, &[cm_ref("a")]);
    assert_eq!(watches.watches().len(), 1);
    sim.kubectl(
        &[
            "patch",
            "configmap",
            "a",
            "-n",
            NS,
            "--type=merge",
            "-p",
            r#"{"data":{"k":"x"}}"#,
        ],
        None,
    );
    assert_eq!(next(&mut rx).await, "staging/web");
}
