//! Reconcile figures (printed, not asserted): one App of N ConfigMaps on kubesim — first sync
//! (dry-run diff + staged apply + health), a no-op pass, and the pure diff/plan stages over
//! 5,000 objects. Run with `cargo bench -p wardn --bench reconcile` (add `--profile dev` for a
//! quick debug-build run; figures then are pessimistic).

use std::time::{Duration, Instant};

use jiff::Timestamp;
use serde_json::{Value, json};
use wardn::app::{AppSpec, AppStatus, Destination, SyncPolicy};
use wardn::clusters::allowlist::Allowlist;
use wardn::diff::compare;
use wardn::object::ObjectRef;
use wardn::reconcile::decide::Trigger;
use wardn::reconcile::pass::{Manifests, Options, Pass, Target};
use wardn::reconcile::pipeline;
use wardn::reconcile::plan::Plan;
use wardn::render::PackedObjects;
use wardn::sources::spec::{DirectorySpec, SourceSpec, SourceType};

fn cm(i: usize) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("cm-{i}"), "namespace": "bench"},
        "data": {"key": format!("value-{i}"), "other": "x".repeat(64)}})
}

fn pure(n: usize) {
    let objects: Vec<Value> = (0..n).map(cm).collect();
    let start = Instant::now();
    let diffs: Vec<_> = objects
        .iter()
        .enumerate()
        .map(|(i, o)| {
            let mut live = o.clone();
            live["metadata"]["resourceVersion"] = json!(i.to_string());
            live["metadata"]["managedFields"] = json!([{"manager": "wardn", "operation": "Apply"}]);
            let mut after = live.clone();
            if i % 10 == 0 {
                after["data"]["key"] = json!("changed");
            }
            compare(
                ObjectRef::of(i, o).unwrap_or_else(|e| panic!("{e}")),
                Some(&live),
                &after,
            )
        })
        .collect();
    let compared = start.elapsed();
    let plan = Plan::new("ns/app", "c", "rev".into(), "digest".into(), diffs, vec![]);
    let total = start.elapsed();
    println!(
        "pure diff of {n} objects: compare {:.1} ms, compare + plan hash {:.1} ms ({} updates)",
        compared.as_secs_f64() * 1e3,
        total.as_secs_f64() * 1e3,
        plan.summary().updates
    );
}

async fn on_kubesim(n: usize) {
    kubesim::install_crypto_provider();
    let cluster = kubesim::Cluster::start(kubesim::ClusterConfig {
        namespaces: vec!["bench".into()],
        ready_delay: Duration::ZERO,
        ..Default::default()
    })
    .await
    .unwrap_or_else(|e| panic!("kubesim: {e}"));
    let client = cluster
        .client()
        .await
        .unwrap_or_else(|e| panic!("client: {e}"));
    let target = Target {
        cluster: "bench".into(),
        client,
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
            cluster: "bench".into(),
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
        objects: PackedObjects::pack(&(0..n).map(cm).collect::<Vec<_>>()),
    };
    let options = Options {
        poll: Duration::from_millis(50),
        ..Options::default()
    };
    let mut status = AppStatus::default();
    for label in ["first sync", "no-op pass"] {
        let pass = Pass {
            app: "bench/app",
            spec: &spec,
            previous: &status,
            target: &target,
            manifests: &manifests,
            known: None,
            journal: None,
        };
        let start = Instant::now();
        let outcome = pipeline::reconcile(
            pass,
            &Trigger::Automatic,
            &options,
            Timestamp::now(),
            &mut |_| {},
        )
        .await
        .unwrap_or_else(|e| panic!("{label}: {e}"));
        println!(
            "kubesim, 1 App of {n} ConfigMaps, {label}: {:.0} ms ({:?})",
            start.elapsed().as_secs_f64() * 1e3,
            outcome.status.plan
        );
        status = outcome.status;
    }
}

fn main() {
    pure(5_000);
    let runtime = tokio::runtime::Runtime::new().unwrap_or_else(|e| panic!("runtime: {e}"));
    runtime.block_on(on_kubesim(500));
}
