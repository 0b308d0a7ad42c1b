//! The runner's dynamic App set on kubesim: Apps are added, re-subscribed when their source
//! changes, re-reconciled when their spec changes, and removed (their objects stay).

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use wardn::app::files::validate;
use wardn::app::{App, Phase};
use wardn::clusters::connect::client_from_kubeconfig;
use wardn::clusters::registry::Registry;
use wardn::clusters::resolve::{ClusterSource, Resolver};
use wardn::daemon::runner::{FindError, Operation, OperationError, Origin, Runner, Upserted};
use wardn::reconcile::decide::Trigger;
use wardn::reconcile::pass::Options;
use wardn::seal::Sealer;
use wardn::sources::git::GitSettings;
use wardn::sources::poller::{Poller, PollerConfig};
use wardn::store::Store;

/// Writes a kustomization with one ConfigMap `{name}` (data `k: value`) into `root/dir`.
fn write_source(root: &Path, dir: &str, name: &str, value: &str) -> PathBuf {
    let path = root.join(dir);
    std::fs::create_dir_all(&path).unwrap();
    std::fs::write(
        path.join("kustomization.yaml"),
        "resources:\n- configmap.yaml\n",
    )
    .unwrap();
    std::fs::write(
        path.join("configmap.yaml"),
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  k: {value}\n"
        ),
    )
    .unwrap();
    path
}

fn app(name: &str, dir: &Path, namespace: &str, self_heal: bool) -> App {
    let yaml = format!(
        "apiVersion: cd.wardn.space/v1alpha1\nkind: App\nmetadata: {{name: {name}, namespace: wardn}}\n\
         spec:\n  source: {{type: Directory, directory: {{path: {}}}}}\n\
         \x20 destination: {{namespace: {namespace}}}\n\
         \x20 syncPolicy: {{automated: true, selfHeal: {self_heal}}}\n",
        dir.display()
    );
    validate(&serde_saphyr::from_str(&yaml).unwrap()).unwrap()
}

async fn runner(sim: &common::Sim, data: &Path) -> Arc<Runner> {
    let store = Store::open(data, None).await.unwrap();
    let registry_store = store.clone();
    let registry = Arc::new(Registry::new(
        store,
        Sealer::new(&[7u8; 32], None),
        Duration::from_secs(5),
    ));
    let text = std::fs::read_to_string(&sim.kubeconfig).unwrap();
    let client = client_from_kubeconfig(&text, Duration::from_secs(5))
        .await
        .unwrap();
    let resolver = Resolver::new(ClusterSource::Local(registry), Duration::from_secs(5))
        .with_management(client, "https://management.test".into());
    let (poller, updates) = Poller::new(PollerConfig::new(GitSettings {
        data_dir: data.to_path_buf(),
        extra_roots_pem: None,
        ..GitSettings::default()
    }));
    let runner = Runner::new(
        resolver,
        Options::default(),
        poller,
        Some(registry_store),
        wardn::reconcile::upkeep::Scheduling::default(),
    );
    runner.start(updates);
    runner
}

/// Polls `check` until it holds (a minute at most).
async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    for _ in 0..600 {
        if check() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("timed out waiting for {what}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apps_are_added_changed_resubscribed_and_removed() {
    let sim = common::start(&["staging", "other"]).await;
    let work = tempfile::tempdir().unwrap();
    let first = write_source(work.path(), "first", "first-config", "v1");
    let second = write_source(work.path(), "second", "second-config", "v1");
    let runner = runner(&sim, &work.path().join("data")).await;
    let cm = |ns: &str, name: &str| {
        sim.cluster
            .get_object("v1", "ConfigMap", Some(ns), name)
            .map(|o| o["data"]["k"].clone())
    };
    let phase = |key: &str| runner.status(key).and_then(|s| s.phase);

    let added = runner
        .upsert(app("demo", &first, "staging", false), Origin::File)
        .await
        .unwrap();
    assert_eq!(added, Upserted::Added);
    assert_eq!(runner.keys(), ["wardn/demo"]);
    eventually("first-config", || cm("staging", "first-config").is_some()).await;
    eventually("Synced", || phase("wardn/demo") == Some(Phase::Synced)).await;
    let same = runner
        .upsert(app("demo", &first, "staging", false), Origin::File)
        .await
        .unwrap();
    assert_eq!(same, Upserted::Unchanged);

    // A new source: re-subscribed and deployed (without prune, the old object stays).
    let moved = runner
        .upsert(app("demo", &second, "staging", false), Origin::File)
        .await
        .unwrap();
    assert_eq!(moved, Upserted::Resubscribed);
    eventually("second-config", || cm("staging", "second-config").is_some()).await;
    // The old directory is no longer watched: changing it deploys nothing.
    write_source(work.path(), "first", "first-config", "v2");

    // A spec change without a new revision runs a pass: moved to another namespace, the
    // rendered revision is already synced, so the missing object is drift (OutOfSync) …
    let changed = runner
        .upsert(app("demo", &second, "other", false), Origin::File)
        .await
        .unwrap();
    assert_eq!(changed, Upserted::Changed);
    eventually("OutOfSync", || {
        phase("wardn/demo") == Some(Phase::OutOfSync)
    })
    .await;
    // … which selfHeal repairs.
    let healing = runner
        .upsert(app("demo", &second, "other", true), Origin::File)
        .await
        .unwrap();
    assert_eq!(healing, Upserted::Changed);
    eventually("second-config in other", || {
        cm("other", "second-config").is_some()
    })
    .await;
    eventually("Synced", || phase("wardn/demo") == Some(Phase::Synced)).await;
    let inventory = runner.inventory("wardn/demo").await.unwrap();
    assert!(
        inventory
            .iter()
            .any(|o| o.name == "second-config" && o.namespace.as_deref() == Some("other")),
        "{inventory:?}"
    );

    // Files cannot replace an App resource; a resource replaces a file.
    let resource = runner
        .upsert(app("demo", &second, "other", true), Origin::Resource)
        .await
        .unwrap();
    assert_eq!(resource, Upserted::Unchanged);
    assert_eq!(runner.origin("wardn/demo"), Some(Origin::Resource));
    let shadowed = runner
        .upsert(app("demo", &first, "other", false), Origin::File)
        .await
        .unwrap();
    assert_eq!(shadowed, Upserted::Shadowed);
    assert!(!runner.remove("wardn/demo", Origin::File));

    // Removal: no longer managed, no status, its objects stay on the cluster.
    assert!(runner.remove("wardn/demo", Origin::Resource));
    assert!(runner.keys().is_empty());
    assert_eq!(runner.status("wardn/demo"), None);
    assert_eq!(
        runner.find(Some("local"), "demo", None),
        Err(FindError::NotFound)
    );
    write_source(work.path(), "second", "second-config", "v3");
    // Another App's pass completes after the removed App's source changed.
    let third = write_source(work.path(), "third", "third-config", "v1");
    runner
        .upsert(app("later", &third, "staging", false), Origin::File)
        .await
        .unwrap();
    eventually("later Synced", || {
        phase("wardn/later") == Some(Phase::Synced)
    })
    .await;
    assert_eq!(cm("other", "second-config"), Some("v1".into()));
    assert_eq!(cm("staging", "first-config"), Some("v1".into()));
    runner.stop();
}

/// Removing an App cancels its operation in flight: a manual sync slowed down by kubesim's
/// latency is cut short when the App is removed, and nothing is applied afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn removing_an_app_cancels_its_pass_in_flight() {
    let sim = common::start(&["staging"]).await;
    let work = tempfile::tempdir().unwrap();
    let dir = write_source(work.path(), "slow", "slow-config", "v1");
    let runner = runner(&sim, &work.path().join("data")).await;
    let yaml = format!(
        "apiVersion: cd.wardn.space/v1alpha1\nkind: App\nmetadata: {{name: slow, namespace: wardn}}\n\
         spec:\n  source: {{type: Directory, directory: {{path: {}}}}}\n\
         \x20 destination: {{namespace: staging}}\n  syncPolicy: {{automated: false}}\n",
        dir.display()
    );
    let slow = validate(&serde_saphyr::from_str(&yaml).unwrap()).unwrap();
    runner.upsert(slow, Origin::File).await.unwrap();
    let phase = || runner.status("wardn/slow").and_then(|s| s.phase);
    eventually("OutOfSync (rendered, not applied)", || {
        phase() == Some(Phase::OutOfSync)
    })
    .await;

    sim.cluster.set_faults(kubesim::Faults {
        latency: Duration::from_millis(600),
        ..kubesim::Faults::default()
    });
    let syncing = {
        let runner = Arc::clone(&runner);
        tokio::spawn(async move {
            runner
                .operate(
                    "wardn/slow",
                    Operation::Pass(Trigger::Manual {
                        override_windows: false,
                    }),
                )
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(runner.remove("wardn/slow", Origin::File));
    let result = syncing.await.unwrap();
    assert!(
        matches!(result, Err(OperationError::Removed(_))),
        "{result:?}"
    );
    sim.cluster.set_faults(kubesim::Faults::default());
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        sim.cluster
            .get_object("v1", "ConfigMap", Some("staging"), "slow-config")
            .is_none(),
        "nothing applied for a removed App"
    );
    runner.stop();
}
