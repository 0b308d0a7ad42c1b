//! `wardn serve` keeps Apps converged between revisions: with the periodic resync set to an
//! hour, a `kubectl patch` of a managed Deployment is found by the drift watches and reverted
//! (selfHeal) — also a `kubectl edit` after kubesim dropped every watch stream — a patched ConfigMap of an App without selfHeal turns it OutOfSync; `/metrics`
//! (public) then shows the passes, the drift events and the cluster's requests. Automatic
//! passes of unchanged Apps send no requests once the drift watches have listed the objects.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use wardn::app::Phase;
use wardn::daemon::ServeOptions;
use wardn::daemon::runner::{Completed, Operation};
use wardn::reconcile::decide::Trigger;
use wardn::reconcile::upkeep::Scheduling;
use wardn::seal::Sealer;
use wardn::server::Server;

const NS: &str = "staging";

fn app_yaml(name: &str, dir: &Path, self_heal: bool) -> String {
    format!(
        "apiVersion: cd.wardn.space/v1alpha1\nkind: App\nmetadata:\n  name: {name}\n  namespace: wardn\n\
         spec:\n  source:\n    type: Directory\n    directory:\n      path: {}\n\
         \x20 destination:\n    cluster: \"\"\n    namespace: {NS}\n\
         \x20 syncPolicy:\n    automated: true\n    selfHeal: {self_heal}\n",
        dir.display()
    )
}

fn write_source(root: &Path, name: &str, manifest: &str) -> std::path::PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("kustomization.yaml"),
        "resources:\n- object.yaml\n",
    )
    .unwrap();
    std::fs::write(dir.join("object.yaml"), manifest).unwrap();
    dir
}

const DEPLOYMENT: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx:1.27
"#;

const CONFIGMAP: &str =
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  k: v\n";

/// Polls `check` (no timing assertion; the limit only keeps a broken build from hanging).
async fn until(what: &str, mut check: impl FnMut() -> bool) {
    for _ in 0..1200 {
        if check() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("gave up waiting for {what}");
}

/// The samples of a Prometheus text exposition, by series (`name{labels}`).
fn samples(text: &str) -> BTreeMap<String, f64> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .filter_map(|l| {
            let (series, value) = l.rsplit_once(' ')?;
            Some((series.to_string(), value.parse().ok()?))
        })
        .collect()
}

/// The value of `series` on `/metrics` now (0 when absent).
async fn sample(base: &str, series: &str) -> f64 {
    let text = reqwest::get(format!("{base}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    samples(&text).get(series).copied().unwrap_or_default()
}

/// The requests wardn sent to the management cluster so far, from `/metrics`.
async fn local_requests(base: &str) -> f64 {
    sample(base, "wardn_cluster_requests_total{cluster=\"local\"}").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drift_is_healed_or_reported_without_a_resync_and_metrics_count_it() {
    let sim = common::start(&[NS]).await;
    let work = tempfile::tempdir().unwrap();
    let apps = work.path().join("apps");
    std::fs::create_dir_all(&apps).unwrap();
    let web = write_source(work.path(), "web", DEPLOYMENT);
    let settings = write_source(work.path(), "settings", CONFIGMAP);
    std::fs::write(apps.join("web.yaml"), app_yaml("web", &web, true)).unwrap();
    std::fs::write(
        apps.join("settings.yaml"),
        app_yaml("settings", &settings, false),
    )
    .unwrap();

    let options = ServeOptions {
        listen: "127.0.0.1:0".parse().unwrap(),
        data_dir: work.path().join("data"),
        admin_password: Some("correct horse battery staple".into()),
        apps_dir: Some(apps),
        management_kubeconfig: Some(sim.kubeconfig.clone()),
        probe_interval: Duration::from_secs(3600),
        probe_timeout: Duration::from_secs(5),
        scheduling: Scheduling {
            // Only the drift watches can bring the Apps back in this test.
            resync_interval: Duration::from_secs(3600),
            ..Scheduling::default()
        },
        ..ServeOptions::default()
    };
    std::fs::create_dir_all(&options.data_dir).unwrap();
    let server = Server::bind(options, Sealer::new(&[7u8; 32], None))
        .await
        .unwrap();
    let runner = std::sync::Arc::clone(server.runner());
    let base = format!("http://{}", server.addr);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(server.run(async move {
        let _ = stopped.await;
    }));

    let phase = |key: &str| runner.status(key).and_then(|s| s.phase);
    let both = || {
        phase("wardn/web") == Some(Phase::Synced) && phase("wardn/settings") == Some(Phase::Synced)
    };
    until("both Apps Synced", both).await;
    let replicas = || {
        sim.cluster
            .get_object("apps/v1", "Deployment", Some(NS), "web")
            .map(|d| d["spec"]["replicas"].clone())
    };
    assert_eq!(replicas(), Some(serde_json::json!(2)));

    // Once the drift watches have listed the objects, automatic passes of unchanged Apps
    // (resyncs, drift follow-ups) rely on what earlier passes verified and ask the cluster
    // nothing. (Retried: a watch may still be listing, or another request land meanwhile.)
    let mut quiet = false;
    for _ in 0..50 {
        let before = local_requests(&base).await;
        for key in ["wardn/web", "wardn/settings"] {
            let done = runner
                .operate(key, Operation::Pass(Trigger::Automatic))
                .await
                .unwrap();
            assert!(matches!(done, Completed::Status(s) if s.phase == Some(Phase::Synced)));
        }
        if local_requests(&base).await == before {
            quiet = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(quiet, "automatic no-op passes kept sending requests");
    // A hard refresh trusts nothing: it dry-runs the object again.
    let before = local_requests(&base).await;
    let done = runner.operate("wardn/settings", Operation::Refresh).await;
    assert!(matches!(done, Ok(Completed::Status(s)) if s.phase == Some(Phase::Synced)));
    assert!(
        local_requests(&base).await >= before + 2.0,
        "GET and dry-run"
    );

    // selfHeal: the scaled Deployment is scaled back by a pass the watch triggered.
    let patched = std::time::Instant::now();
    sim.kubectl(
        &[
            "patch",
            "deployment",
            "web",
            "-n",
            NS,
            "--type=merge",
            "-p",
            r#"{"spec":{"replicas":5}}"#,
        ],
        None,
    );
    until("the Deployment healed", || {
        replicas() == Some(serde_json::json!(2)) && phase("wardn/web") == Some(Phase::Synced)
    })
    .await;
    eprintln!("figure: kubectl patch -> healed in {:?}", patched.elapsed());

    // kubesim closes every watch stream for a while (and refuses new ones); the drift watches
    // re-establish themselves, so a `kubectl edit` made afterwards is still found and healed.
    sim.cluster.set_faults(kubesim::Faults {
        drop_watches: true,
        ..kubesim::Faults::default()
    });
    tokio::time::sleep(Duration::from_secs(2)).await;
    sim.cluster.set_faults(kubesim::Faults::default());
    let edited = std::process::Command::new(common::KUBECTL)
        .arg("--kubeconfig")
        .arg(&sim.kubeconfig)
        .args(["edit", "deployment", "web", "-n", NS])
        // kubectl runs the editor on a temporary file: change the first (spec) replicas.
        .env("KUBE_EDITOR", "sed -i '0,/replicas: 2/s//replicas: 7/'")
        .output()
        .unwrap();
    assert!(
        edited.status.success() && String::from_utf8_lossy(&edited.stdout).contains("edited"),
        "kubectl edit changed nothing: {} {}",
        String::from_utf8_lossy(&edited.stdout),
        String::from_utf8_lossy(&edited.stderr)
    );
    until("the edited Deployment healed", || {
        replicas() == Some(serde_json::json!(2)) && phase("wardn/web") == Some(Phase::Synced)
    })
    .await;

    // Without selfHeal: the drift is reported, the object left as it is.
    let patched = std::time::Instant::now();
    sim.kubectl(
        &[
            "patch",
            "configmap",
            "settings",
            "-n",
            NS,
            "--type=merge",
            "-p",
            r#"{"data":{"k":"tampered"}}"#,
        ],
        None,
    );
    until("settings OutOfSync", || {
        phase("wardn/settings") == Some(Phase::OutOfSync)
    })
    .await;
    eprintln!(
        "figure: kubectl patch -> OutOfSync in {:?}",
        patched.elapsed()
    );
    let live = sim
        .cluster
        .get_object("v1", "ConfigMap", Some(NS), "settings")
        .unwrap();
    assert_eq!(live["data"]["k"], "tampered");

    // Prometheus scrapes without a session.
    let response = reqwest::get(format!("{base}/metrics")).await.unwrap();
    assert_eq!(response.status(), 200);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain")
    );
    let text = response.text().await.unwrap();
    let m = samples(&text);
    let get = |series: &str| m.get(series).copied().unwrap_or_default();
    assert!(
        get("wardn_reconcile_total{outcome=\"Synced\"}") >= 3.0,
        "two first syncs and the heal:\n{text}"
    );
    assert!(
        get("wardn_reconcile_total{outcome=\"OutOfSync\"}") >= 1.0,
        "{text}"
    );
    assert!(get("wardn_drift_events_total") >= 2.0, "{text}");
    assert!(get("wardn_apply_objects_total") >= 3.0, "{text}");
    assert!(
        get("wardn_reconcile_duration_seconds_count") >= 4.0,
        "{text}"
    );
    assert!(
        get("wardn_cluster_requests_total{cluster=\"local\"}") > 0.0,
        "{text}"
    );
    assert!(text.contains("wardn_queue_depth "), "{text}");
    // The status queue is reported, and drains once the passes above are done.
    assert!(m.contains_key("wardn_status_queue_depth"), "{text}");
    let mut depth = m["wardn_status_queue_depth"];
    for _ in 0..50 {
        if depth == 0.0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        depth = sample(&base, "wardn_status_queue_depth").await;
    }
    assert_eq!(depth, 0.0, "the status queue drains");
    assert!(!text.contains("tampered"), "no App data in the metrics");

    stop.send(()).unwrap();
    task.await.unwrap().unwrap();
}
