//! App custom resources on kubesim: `wardn crd | kubectl apply -f -`, then `kubectl apply` an
//! App → wardn deploys it and writes its status subresource (`kubectl get apps -A` shows
//! Synced); editing the spec redeploys; a Held App is approved; Events are recorded (and shown by
//! `kubectl describe` through the core API); an invalid
//! resource is reported Failed; deleting the resource stops reconciling it (its objects stay).

mod common;

use std::time::Duration;

use serde_json::Value;
use wardn::app::Phase;
use wardn::daemon::ServeOptions;
use wardn::daemon::runner::{Completed, Operation};
use wardn::seal::Sealer;
use wardn::server::Server;

fn write_source(root: &std::path::Path, dir: &str, name: &str) -> std::path::PathBuf {
    let path = root.join(dir);
    std::fs::create_dir_all(&path).unwrap();
    std::fs::write(
        path.join("kustomization.yaml"),
        "resources:\n- configmap.yaml\n",
    )
    .unwrap();
    std::fs::write(
        path.join("configmap.yaml"),
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  k: v\n"),
    )
    .unwrap();
    path
}

fn app_cr(name: &str, dir: &std::path::Path, approval: bool) -> String {
    format!(
        "apiVersion: cd.wardn.space/v1alpha1\nkind: App\nmetadata:\n  name: {name}\n  namespace: team\n\
         spec:\n  source:\n    type: Directory\n    directory:\n      path: {}\n\
         \x20 destination:\n    namespace: staging\n\
         \x20 syncPolicy:\n    automated: true\n    requiresApproval: {approval}\n",
        dir.display()
    )
}

/// Polls `check` until it holds (two minutes at most).
async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    for _ in 0..1200 {
        if check() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("timed out waiting for {what}");
}

/// `wardn crd | kubectl apply -f -`, then waits until the CRD is Established.
fn install_app_crd(sim: &common::Sim) {
    let crd = wardn::app::crd_yaml().unwrap();
    sim.kubectl(&["apply", "-f", "-"], Some(&crd));
    sim.kubectl(
        &[
            "wait",
            "--for=condition=Established",
            "crd/apps.cd.wardn.space",
            "--timeout=20s",
        ],
        None,
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn app_resources_are_deployed_updated_approved_and_removed() {
    let sim = common::start(&["staging", "team"]).await;
    install_app_crd(&sim);
    let work = tempfile::tempdir().unwrap();
    let first = write_source(work.path(), "first", "first-config");
    let second = write_source(work.path(), "second", "second-config");
    let gated = write_source(work.path(), "gated", "gated-config");
    let options = ServeOptions {
        listen: "127.0.0.1:0".parse().unwrap(),
        data_dir: work.path().join("data"),
        admin_password: Some("correct horse battery staple".into()),
        management_kubeconfig: Some(sim.kubeconfig.clone()),
        app_namespaces: vec!["team".into()],
        probe_interval: Duration::from_secs(3600),
        probe_timeout: Duration::from_secs(5),
        ..ServeOptions::default()
    };
    let server = Server::bind(options, Sealer::new(&[7u8; 32], None))
        .await
        .unwrap();
    let runner = std::sync::Arc::clone(server.runner());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(server.run(async move {
        let _ = stopped.await;
    }));
    let exists = |name: &str| {
        sim.cluster
            .get_object("v1", "ConfigMap", Some("staging"), name)
            .is_some()
    };
    let resource = |name: &str| {
        sim.cluster
            .get_object("cd.wardn.space/v1alpha1", "App", Some("team"), name)
            .unwrap_or(Value::Null)
    };

    // Applied with kubectl: deployed, and the status subresource says Synced.
    sim.kubectl(&["apply", "-f", "-"], Some(&app_cr("web", &first, false)));
    eventually("first-config", || exists("first-config")).await;
    eventually("status Synced", || {
        resource("web")["status"]["phase"] == "Synced"
    })
    .await;
    let web = resource("web");
    assert_eq!(
        web["status"]["observedGeneration"], web["metadata"]["generation"],
        "{web}"
    );
    // Once the resource with its status is seen again, the runner holds it without its
    // status, managed fields and kubectl's last-applied copy (it keeps the status itself),
    // with its uid for Events.
    let number = |version: Option<&str>| version.and_then(|v| v.parse::<u64>().ok());
    let written = number(web["metadata"]["resourceVersion"].as_str()).unwrap();
    eventually("the written resource seen", || {
        runner.app("team/web").is_some_and(|app| {
            number(app.metadata.resource_version.as_deref()).is_some_and(|v| v >= written)
        })
    })
    .await;
    let held = runner.app("team/web").unwrap();
    assert!(held.status.is_none(), "{held:?}");
    assert!(held.metadata.managed_fields.is_none(), "{held:?}");
    assert!(
        held.metadata
            .annotations
            .as_ref()
            .is_none_or(|a| !a.contains_key("kubectl.kubernetes.io/last-applied-configuration")),
        "{held:?}"
    );
    assert!(held.metadata.uid.is_some(), "{held:?}");
    assert_eq!(web["status"]["cluster"], "local", "{web}");
    let listed = sim.kubectl(
        &[
            "get",
            "apps",
            "-A",
            "-o",
            "jsonpath={.items[*].status.phase}",
        ],
        None,
    );
    assert_eq!(listed, "Synced");
    // The CRD's printer columns, as `kubectl get` prints them from the server's Table.
    let table = sim.kubectl(&["get", "apps", "-A"], None);
    let mut lines = table.lines();
    let header: Vec<&str> = lines
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(
        header,
        ["NAMESPACE", "NAME", "CLUSTER", "PHASE", "REVISION", "AGE"],
        "{table}"
    );
    let row: Vec<&str> = lines
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(row[..2], ["team", "web"], "{table}");
    assert!(row.contains(&"Synced"), "{table}");
    assert!(row.last().is_some_and(|age| age.ends_with('s')), "{table}");
    let managers: Vec<&str> = web["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["manager"].as_str())
        .collect();
    assert!(managers.contains(&"wardn"), "{managers:?}");

    // Edited: the new directory is deployed.
    let patch = format!(
        "{{\"spec\":{{\"source\":{{\"directory\":{{\"path\":\"{}\"}}}}}}}}",
        second.display()
    );
    sim.kubectl(
        &[
            "patch", "app", "web", "-n", "team", "--type", "merge", "-p", &patch,
        ],
        None,
    );
    eventually("second-config", || exists("second-config")).await;
    eventually("observedGeneration 2", || {
        let web = resource("web");
        web["status"]["observedGeneration"] == 2 && web["status"]["phase"] == "Synced"
    })
    .await;

    // Held, then approved: Events on the resource.
    sim.kubectl(&["apply", "-f", "-"], Some(&app_cr("gated", &gated, true)));
    eventually("status Held", || {
        resource("gated")["status"]["phase"] == "Held"
    })
    .await;
    assert!(!exists("gated-config"));
    let hash = resource("gated")["status"]["planHash"]
        .as_str()
        .unwrap()
        .to_string();
    let approved = runner
        .operate("team/gated", Operation::Approve(Some(hash)))
        .await
        .unwrap();
    let Completed::Status(approved) = approved else {
        panic!("a status")
    };
    assert_eq!(approved.phase, Some(Phase::Synced));
    eventually("gated Synced", || {
        resource("gated")["status"]["phase"] == "Synced"
    })
    .await;
    let events = || {
        let out = sim.kubectl(
            &["get", "events.v1.events.k8s.io", "-n", "team", "-o", "json"],
            None,
        );
        let list: Value = serde_json::from_str(&out).unwrap();
        list["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                format!(
                    "{}/{}",
                    e["regarding"]["name"].as_str().unwrap_or(""),
                    e["reason"].as_str().unwrap_or("")
                )
            })
            .collect::<Vec<_>>()
    };
    eventually("events", || {
        let seen = events();
        ["web/Synced", "gated/Held", "gated/Approved", "gated/Synced"]
            .iter()
            .all(|e| seen.iter().any(|s| s == e))
    })
    .await;
    // The same Events through the core API, where `kubectl describe` looks for them.
    let described = sim.kubectl(&["describe", "app", "gated", "-n", "team"], None);
    assert!(
        described.contains("Approved") && described.contains("wardn"),
        "{described}"
    );
    let core = sim.kubectl(&["get", "events", "-n", "team", "-o", "json"], None);
    assert!(core.contains("\"involvedObject\""), "{core}");

    // An invalid resource is reported on its status.
    let invalid = app_cr("broken", &work.path().join("missing"), false);
    sim.kubectl(&["apply", "-f", "-"], Some(&invalid));
    eventually("broken Failed", || {
        resource("broken")["status"]["phase"] == "Failed"
    })
    .await;
    let message = resource("broken")["status"]["message"].clone();
    assert!(message.as_str().unwrap().contains("missing"), "{message}");

    // Deleted: no longer reconciled; the objects stay.
    sim.kubectl(&["delete", "app", "web", "-n", "team"], None);
    eventually("web removed", || runner.app("team/web").is_none()).await;
    assert_eq!(runner.status("team/web"), None);
    assert!(exists("second-config"));
    assert_eq!(runner.keys(), ["team/gated"]);

    stop.send(()).unwrap();
    task.await.unwrap().unwrap();
}

/// A `wardn serve` child process, stopped by its PID when dropped.
struct Daemon(std::process::Child);

impl Daemon {
    /// Starts `wardn serve` on a free port with its data in `data`, a credentials key and an
    /// admin password, plus what `configure` adds; waits until it prints its address and
    /// returns it (`127.0.0.1:PORT`). Its stdout is drained; stderr goes to `stderr`.
    fn spawn(
        data: &std::path::Path,
        stderr: std::process::Stdio,
        configure: impl FnOnce(&mut std::process::Command),
    ) -> (Daemon, String) {
        use std::io::{BufRead, BufReader};

        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_wardn"));
        command
            .args([
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--probe-interval",
                "3600",
            ])
            .arg("--data-dir")
            .arg(data)
            .env(
                "WARDN_CREDENTIALS_KEY",
                "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
            )
            .env("WARDN_ADMIN_PASSWORD", "correct horse battery staple")
            .env_remove("WARDN_APPS_DIR")
            .env_remove("WARDN_ROLE")
            .stdout(std::process::Stdio::piped())
            .stderr(stderr);
        configure(&mut command);
        let mut child = command.spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let daemon = Daemon(child);
        let mut lines = BufReader::new(stdout).lines();
        let addr = loop {
            let line = lines
                .next()
                .expect("wardn serve printed its address")
                .unwrap();
            if let Some(addr) = line.strip_prefix("wardn: listening on http://") {
                break addr.to_string();
            }
        };
        std::thread::spawn(move || for _ in lines {});
        (daemon, addr)
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Without `--kubeconfig`, the management cluster comes from `KUBECONFIG` for both of its
/// uses: App resources applied there are reconciled (before, only `--kubeconfig` or in-cluster
/// configuration made wardn watch them), and the choice is logged with the server's URL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubeconfig_from_the_environment_finds_the_app_resources() {
    use std::io::Read;

    let sim = common::start(&["staging", "team"]).await;
    install_app_crd(&sim);
    let work = tempfile::tempdir().unwrap();
    let source = write_source(work.path(), "env", "env-config");
    let (mut daemon, addr) = Daemon::spawn(
        &work.path().join("data"),
        std::process::Stdio::piped(),
        |command| {
            command
                .env("KUBECONFIG", &sim.kubeconfig)
                .env("HOME", work.path())
                .env("NO_COLOR", "1");
        },
    );
    let mut stderr = daemon.0.stderr.take().unwrap();

    sim.kubectl(
        &["apply", "-f", "-"],
        Some(&app_cr("from-env", &source, false)),
    );
    let exists = || {
        sim.cluster
            .get_object("v1", "ConfigMap", Some("staging"), "env-config")
            .is_some()
    };
    eventually("env-config deployed", exists).await;
    drop(daemon);
    let mut log = String::new();
    stderr.read_to_string(&mut log).unwrap();
    let server = std::fs::read_to_string(&sim.kubeconfig).unwrap();
    let url = server
        .lines()
        .find_map(|l| l.trim().strip_prefix("server: "))
        .unwrap()
        .trim_end_matches('/');
    assert!(
        log.lines().any(|l| l.contains("management cluster")
            && l.contains(url)
            && l.contains("KUBECONFIG")),
        "the choice is logged with its URL ({addr}): {log}"
    );
}

/// SIGTERM stops `wardn serve` within its grace period (10 s) even while a pass waits on a
/// cluster that does not answer (here kubesim holding every request for ten minutes).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_stops_the_daemon_whatever_a_pass_is_doing() {
    let sim = common::start(&["staging"]).await;
    let work = tempfile::tempdir().unwrap();
    let source = write_source(work.path(), "slow", "slow-config");
    let apps = work.path().join("apps");
    std::fs::create_dir_all(&apps).unwrap();
    std::fs::write(apps.join("slow.yaml"), app_cr("slow", &source, false)).unwrap();
    sim.cluster.set_faults(kubesim::Faults {
        latency: Duration::from_secs(600),
        ..Default::default()
    });
    let (mut daemon, addr) = Daemon::spawn(
        &work.path().join("data"),
        std::process::Stdio::null(),
        |command| {
            command
                .arg("--kubeconfig")
                .arg(&sim.kubeconfig)
                .arg("--apps")
                .arg(&apps);
        },
    );
    // A client that never finishes its request (graceful shutdown would wait for it).
    let mut slow = tokio::net::TcpStream::connect(&addr).await.unwrap();
    tokio::io::AsyncWriteExt::write_all(&mut slow, b"GET /api/v1/health HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    // Let the pass start and block on the silent cluster.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let pid = i32::try_from(daemon.0.id()).unwrap();
    // SAFETY: sends SIGTERM to the child this test started.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let sent = std::time::Instant::now();
    let status = loop {
        if let Some(status) = daemon.0.try_wait().unwrap() {
            break status;
        }
        assert!(
            sent.elapsed() < Duration::from_secs(30),
            "still running {:?} after SIGTERM",
            sent.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(status.success(), "{status:?}");
    sim.cluster.set_faults(kubesim::Faults::default());
}
