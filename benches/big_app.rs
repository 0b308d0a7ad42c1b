//! One App of 5,000 objects on kubesim (printed figures): the dry-run diff of the whole App
//! before anything exists (all creates), the apply, and the diff again once applied (all
//! unchanged), an automatic pass while drift watches show the objects unchanged (the steady
//! state of `wardn serve`: no dry-runs), with the peak RSS of this process. Kubesim runs in a child
//! process so the memory figure is wardn's alone.
//!
//! `cargo bench --bench big_app`; `-- --quick` or `WARDN_BENCH_QUICK=1`: 500 objects.

mod support;

use std::time::{Duration, Instant};

use jiff::Timestamp;
use serde_json::{Value, json};
use wardn::app::{AppSpec, AppStatus, Destination, SyncPolicy};
use wardn::clusters::allowlist::Allowlist;
use wardn::clusters::connect::client_from_kubeconfig;
use wardn::clusters::throttle::Throttles;
use wardn::diff::known::{Known, LiveState, LiveStates};
use wardn::reconcile::decide::Trigger;
use wardn::reconcile::drift::{DriftWatches, WatchClient};
use wardn::reconcile::pass::{Manifests, Options, Pass, Target};
use wardn::reconcile::pipeline;
use wardn::render::PackedObjects;
use wardn::sources::spec::{DirectorySpec, SourceSpec, SourceType};

fn object(i: usize) -> Value {
    if i % 5 == 4 {
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": format!("svc-{i}"), "namespace": "bench"},
            "spec": {"selector": {"app": format!("app-{i}")}, "ports": [{"port": 80, "targetPort": 8080}]}})
    } else {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("cm-{i}"), "namespace": "bench"},
            "data": {"key": format!("value-{i}"), "other": "x".repeat(64)}})
    }
}

async fn big_app(n: usize) {
    let sims = support::Sims::start(&["big".to_string()]);
    let (_, kubeconfig, _) = &sims.clusters[0];
    let text = std::fs::read_to_string(kubeconfig).unwrap_or_else(|e| panic!("{e}"));
    let client = client_from_kubeconfig(&text, Duration::from_secs(30))
        .await
        .unwrap_or_else(|e| panic!("client: {e}"));
    // Counts the requests (the bucket is large enough never to throttle).
    let throttles = Throttles::new(1e9, u32::MAX);
    let target = Target {
        cluster: "big".into(),
        client: throttles.wrap("big", client.clone()),
        allowlist: Allowlist::namespaces(["bench"]),
        kinds: Default::default(),
    };
    let spec = AppSpec {
        source: SourceSpec {
            kind: SourceType::Directory,
            git: None,
            directory: Some(DirectorySpec {
                path: "/bench".into(),
            }),
        },
        destination: Destination {
            cluster: "big".into(),
            namespace: "bench".into(),
            ..Default::default()
        },
        sync_policy: SyncPolicy {
            automated: true,
            prune: true,
            ..Default::default()
        },
        promotion: None,
        notify: Vec::new(),
        targets: Default::default(),
    };
    let manifests = Manifests {
        revision: "r1".into(),
        digest: "d1".into(),
        objects: PackedObjects::pack(&(0..n).map(object).collect::<Vec<_>>()),
    };
    let options = Options {
        poll: Duration::from_millis(100),
        ..Options::default()
    };
    let mut status = AppStatus::default();
    let rss_before = support::peak_rss_mib();

    let plan_of = |previous: &AppStatus| {
        let previous = previous.clone();
        let (spec, target, manifests) = (&spec, &target, &manifests);
        async move {
            let start = Instant::now();
            let plan = pipeline::plan(Pass {
                app: "bench/big",
                spec,
                previous: &previous,
                target,
                manifests,
                known: None,
                journal: None,
            })
            .await
            .unwrap_or_else(|e| panic!("plan: {e}"));
            (start.elapsed(), plan.summary())
        }
    };

    let (took, summary) = plan_of(&status).await;
    println!(
        "big App: diff of {n} objects, nothing live yet: {:.2} s ({} creates)",
        took.as_secs_f64(),
        summary.creates
    );
    let start = Instant::now();
    let outcome = pipeline::reconcile(
        Pass {
            app: "bench/big",
            spec: &spec,
            previous: &status,
            target: &target,
            manifests: &manifests,
            known: None,
            journal: None,
        },
        &Trigger::Automatic,
        &options,
        Timestamp::now(),
        &mut |_| {},
    )
    .await
    .unwrap_or_else(|e| panic!("apply: {e}"));
    println!(
        "big App: first sync (diff + staged apply + health) of {n} objects: {:.2} s ({:?})",
        start.elapsed().as_secs_f64(),
        outcome.status.phase
    );
    status = outcome.status;
    let (took, summary) = plan_of(&status).await;
    println!(
        "big App: diff of {n} objects, all live and unchanged: {:.2} s ({} unchanged)",
        took.as_secs_f64(),
        summary.unchanged
    );

    // The steady state of `wardn serve`: drift watches list the objects, and an automatic
    // pass trusts what the first sync verified while the watches show nothing changed.
    let drift = DriftWatches::new(std::sync::Arc::new(|_: &str| {}));
    let watched = WatchClient {
        client: &client,
        credentials: 0,
    };
    drift.track("bench/big", "big", watched, &status.inventory);
    let live = drift.live("big");
    let first = status.inventory.first().cloned();
    while first
        .as_ref()
        .is_some_and(|o| live.state(o) == LiveState::Unknown)
    {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let requests = || throttles.counts().first().map_or(0, |c| c.requests);
    let before = requests();
    let start = Instant::now();
    let known = pipeline::reconcile(
        Pass {
            app: "bench/big",
            spec: &spec,
            previous: &status,
            target: &target,
            manifests: &manifests,
            known: Some(Known {
                verified: &outcome.verified,
                live: &live,
            }),
            journal: None,
        },
        &Trigger::Automatic,
        &options,
        Timestamp::now(),
        &mut |_| {},
    )
    .await
    .unwrap_or_else(|e| panic!("known pass: {e}"));
    println!(
        "big App: automatic pass of {n} objects while the drift watches show them unchanged: {:.3} s ({} unchanged, {} requests)",
        start.elapsed().as_secs_f64(),
        known.plan.summary().unchanged,
        requests() - before
    );
    println!(
        "big App: peak RSS of wardn {:.1} MiB ({:.1} MiB before the App; kubesim child, not included: {:.1} MiB)",
        support::peak_rss_mib(),
        rss_before,
        sims.peak_rss_mib()
    );
}

fn main() {
    if support::kubesim_child() {
        return;
    }
    let _ = rustls::crypto::ring::default_provider().install_default();
    let n = if support::quick() { 500 } else { 5_000 };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("runtime: {e}"));
    runtime.block_on(big_app(n));
}
