//! `wardn apps …` (the real binary) against a real `wardn serve --apps` with kubesim as the
//! management cluster: every subcommand and output format, exit codes (Synced 0, Held 3,
//! timeout 4, API errors 1), stale plan hashes (409), unknown Apps (404), and the sync window
//! override through `POST …/sync {"override_window": true}`, audited as `app.sync`.

mod common;
mod support;

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use serde_json::{Value, json};
use wardn::app::Phase;
use wardn::daemon::ServeOptions;
use wardn::seal::Sealer;
use wardn::server::Server;

const WARDN: &str = env!("CARGO_BIN_EXE_wardn");
const PASSWORD: &str = "correct horse battery staple";

fn write_app(root: &Path, name: &str, policy: &str) {
    let src = root.join("src").join(name);
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(
        src.join("configmap.yaml"),
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}-config\ndata:\n  k: v\n"
        ),
    )
    .unwrap();
    std::fs::write(
        root.join("apps").join(format!("{name}.yaml")),
        format!(
            "apiVersion: cd.wardn.space/v1alpha1\nkind: App\nmetadata:\n  name: {name}\n  namespace: wardn\n\
             spec:\n  source:\n    type: Directory\n    directory:\n      path: {}\n\
             \x20 destination:\n    cluster: \"\"\n    namespace: staging\n\
             \x20 syncPolicy:\n{policy}",
            src.display()
        ),
    )
    .unwrap();
}

/// Runs `wardn apps ARGS` against `server` with `token`.
fn apps(server: &str, token: &str, args: &[&str]) -> Output {
    Command::new(WARDN)
        .arg("apps")
        .args(args)
        .env("WARDN_SERVER", server)
        .env("WARDN_TOKEN", token)
        .env("WARDN_CONFIG_DIR", "/nonexistent-wardn-config")
        .output()
        .unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

/// Asserts the exit code and returns stdout.
fn expect(o: &Output, code: i32) -> String {
    assert_eq!(
        o.status.code(),
        Some(code),
        "stdout: {}\nstderr: {}",
        stdout(o),
        stderr(o)
    );
    stdout(o)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apps_cli_lists_shows_diffs_syncs_approves_and_rejects() {
    let sim = common::start(&["staging"]).await;
    let work = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(work.path().join("apps")).unwrap();
    write_app(work.path(), "auto", "    automated: true\n");
    write_app(work.path(), "held", "    requiresApproval: true\n");
    write_app(work.path(), "gated", "    requiresApproval: true\n");
    // A deny window that opened an hour ago (at the start of the previous hour) and lasts three
    // hours: closed now, opening again at a known time.
    let start = (jiff::Timestamp::now()
        .to_zoned(jiff::tz::TimeZone::UTC)
        .hour()
        + 23)
        % 24;
    write_app(
        work.path(),
        "windowed",
        &format!(
            "    automated: true\n    syncWindows:\n    - kind: deny\n      schedule: \"0 {start} * * *\"\n      duration: 3h\n"
        ),
    );

    let options = ServeOptions {
        listen: "127.0.0.1:0".parse().unwrap(),
        data_dir: work.path().join("data"),
        admin_password: Some(PASSWORD.into()),
        apps_dir: Some(work.path().join("apps")),
        management_kubeconfig: Some(sim.kubeconfig.clone()),
        probe_interval: Duration::from_secs(3600),
        probe_timeout: Duration::from_secs(5),
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
    for _ in 0..600 {
        if phase("wardn/auto") == Some(Phase::Synced)
            && phase("wardn/held") == Some(Phase::Held)
            && phase("wardn/gated") == Some(Phase::Held)
            && phase("wardn/windowed") == Some(Phase::Waiting)
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(phase("wardn/windowed"), Some(Phase::Waiting));
    let plan_hash = runner.status("wardn/held").unwrap().plan_hash.unwrap();

    let http = reqwest::Client::new();
    let cookie = support::server::login(&base, PASSWORD).await;
    let token: Value = http
        .post(format!("{base}/api/v1/tokens"))
        .header("cookie", &cookie)
        .json(&json!({"name": "cli"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let token = token["token"].as_str().unwrap().to_string();

    let (b, t) = (base.clone(), token.clone());
    let held_hash = plan_hash.clone();
    tokio::task::spawn_blocking(move || {
        let run = |args: &[&str]| apps(&b, &t, args);

        // list: table, json, yaml, filters.
        let table = expect(&run(&["list"]), 0);
        let header = table.lines().next().unwrap();
        assert!(
            header.starts_with("NAME")
                && header.contains("CLUSTER  PHASE")
                && header.ends_with("MESSAGE"),
            "{table}"
        );
        let auto_row = table.lines().find(|l| l.starts_with("auto ")).unwrap();
        assert!(
            auto_row.contains("local") && auto_row.contains("Synced"),
            "{table}"
        );
        assert!(
            table.contains("sync window closed; next opening at"),
            "{table}"
        );
        let listed: Value =
            serde_json::from_str(&expect(&run(&["list", "-o", "json"]), 0)).unwrap();
        assert_eq!(listed.as_array().unwrap().len(), 4, "{listed}");
        let held_only = expect(&run(&["list", "--phase", "Held", "-o", "json"]), 0);
        let held_only: Value = serde_json::from_str(&held_only).unwrap();
        let names: Vec<&str> = held_only
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["gated", "held"]);
        let yaml = expect(&run(&["list", "--cluster", "local", "-o", "yaml"]), 0);
        assert!(
            yaml.contains("name: auto") && yaml.contains("phase: Synced"),
            "{yaml}"
        );
        let none = expect(&run(&["list", "--cluster", "elsewhere"]), 0);
        assert_eq!(none.trim(), "NAME  CLUSTER  PHASE  REVISION  MESSAGE");

        // get: table, json, yaml; unknown App → 404, non-zero.
        let row = expect(&run(&["get", "local/held"]), 0);
        assert!(row.lines().nth(1).unwrap().starts_with("held "), "{row}");
        assert!(row.contains("Held") && row.contains(&held_hash), "{row}");
        let one: Value =
            serde_json::from_str(&expect(&run(&["get", "auto", "-o", "json"]), 0)).unwrap();
        assert_eq!(one["phase"], "Synced");
        assert!(
            expect(&run(&["get", "auto", "-o", "yaml"]), 0)
                .contains("destinationNamespace: staging")
        );
        let missing = run(&["get", "local/missing"]);
        assert_eq!(missing.status.code(), Some(1));
        assert!(
            stderr(&missing).contains("404") && stderr(&missing).contains("no App local/missing"),
            "{}",
            stderr(&missing)
        );

        // diff: unified text by default, the structured plan in json/yaml.
        let text = expect(&run(&["diff", "held"]), 0);
        assert!(text.contains("held-config") && text.contains("+"), "{text}");
        let plan: Value =
            serde_json::from_str(&expect(&run(&["diff", "held", "-o", "json"]), 0)).unwrap();
        assert_eq!(plan["plan_hash"], held_hash.as_str(), "{plan}");
        assert_eq!(plan["objects"][0]["action"], "create", "{plan}");
        assert!(
            expect(&run(&["diff", "held", "-o", "yaml"]), 0)
                .contains(&format!("plan_hash: {held_hash}"))
        );
        assert_eq!(expect(&run(&["diff", "auto"]), 0).trim(), "no changes");

        // approve: a stale plan hash is a 409 and non-zero; the reviewed one applies.
        let stale = run(&["approve", "held", "--plan-hash", "0000"]);
        assert_eq!(stale.status.code(), Some(1));
        assert!(stderr(&stale).contains("409"), "{}", stderr(&stale));
        let approved = expect(&run(&["approve", "held", "--plan-hash", &held_hash]), 0);
        assert!(
            approved.starts_with("held: Synced") && approved.contains("1 to create"),
            "{approved}"
        );

        // reject → OutOfSync; a manual sync of an App requiring approval is Held again (3).
        let rejected = expect(&run(&["reject", "gated", "-o", "json"]), 0);
        let rejected: Value = serde_json::from_str(&rejected).unwrap();
        assert_eq!(rejected["phase"], "OutOfSync");
        let again = expect(&run(&["sync", "gated"]), 3);
        assert!(again.contains("Held"), "{again}");
        // refresh: a full re-diff that applies nothing the sync policy would not.
        let refreshed = expect(&run(&["refresh", "gated", "-o", "json"]), 0);
        let refreshed: Value = serde_json::from_str(&refreshed).unwrap();
        assert_eq!(refreshed["phase"], "Held");
        let missing = run(&["refresh", "nothing-here"]);
        assert_eq!(missing.status.code(), Some(1));
        assert!(stderr(&missing).contains("404"), "{}", stderr(&missing));

        // sync --wait: progress on stderr, the final status on stdout, 0 when Synced.
        let waited = run(&[
            "sync",
            "local/auto",
            "--wait",
            "--timeout",
            "2m",
            "-o",
            "yaml",
        ]);
        assert!(expect(&waited, 0).contains("phase: Synced"));
        assert!(
            stderr(&waited).contains("auto: Synced"),
            "{}",
            stderr(&waited)
        );
        // A timeout before the App settles exits 4.
        let late = run(&["sync", "windowed", "--wait", "--timeout", "0s"]);
        assert_eq!(late.status.code(), Some(4), "{}", stderr(&late));
        assert!(stderr(&late).contains("timed out"), "{}", stderr(&late));

        // A closed window refuses a manual sync with 409 and the next opening, unless overridden.
        let refused = run(&["sync", "windowed"]);
        assert_eq!(refused.status.code(), Some(1));
        assert!(
            stderr(&refused).contains("409") && stderr(&refused).contains("next opening at"),
            "{}",
            stderr(&refused)
        );
        let forced = expect(
            &run(&[
                "sync",
                "windowed",
                "--override-window",
                "--wait",
                "-o",
                "json",
            ]),
            0,
        );
        let forced: Value = serde_json::from_str(&forced).unwrap();
        assert_eq!(forced["phase"], "Synced");
    })
    .await
    .unwrap();
    assert!(
        sim.cluster
            .get_object("v1", "ConfigMap", Some("staging"), "windowed-config")
            .is_some(),
        "the override applied inside the deny window"
    );
    assert!(
        sim.cluster
            .get_object("v1", "ConfigMap", Some("staging"), "gated-config")
            .is_none(),
        "a rejected plan applies nothing"
    );

    // Every manual sync is audited with the actor and the override flag.
    let audit: Value = http
        .get(format!("{base}/api/v1/audit"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let syncs: Vec<&Value> = audit["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"] == "app.sync" && e["target"] == "local/windowed")
        .collect();
    let outcomes: Vec<&str> = syncs
        .iter()
        .map(|e| e["outcome"].as_str().unwrap())
        .collect();
    assert!(
        outcomes
            .iter()
            .any(|o| o.starts_with("refused override_window=false")),
        "{outcomes:?}"
    );
    let forced = syncs
        .iter()
        .find(|e| e["outcome"] == "success override_window=true phase=Synced")
        .unwrap_or_else(|| panic!("{outcomes:?}"));
    assert!(!forced["actor"].as_str().unwrap().is_empty(), "{forced}");

    stop.send(()).unwrap();
    task.await.unwrap().unwrap();
}
