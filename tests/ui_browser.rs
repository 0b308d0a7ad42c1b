//! The web UI in a real browser (headless Debian Chromium through chromedriver): `wardn serve`
//! in process with kubesim as its management cluster and Directory Apps. The operator's
//! scenario (log in; add a cluster, seeing the errors for an http:// URL and an exec-plugin
//! kubeconfig; test connections to a live and a stopped kubesim cluster; save, edit, remove;
//! watch an App become Held, open its diff, approve it, see it Synced; read the audit log),
//! the hostile cases (markup in data shown as text and never run; no redirect off-site after
//! login), a viewer offered no action it may not take, and a narrow 390-px screen (the pages'
//! answers without a browser are in `tests/ui_pages.rs`).
//! Screenshots of every page are saved under `target/ui-screenshots/`.

#[path = "support/browser.rs"]
mod browser;
mod common;
mod support;

use std::path::{Path, PathBuf};

use browser::Browser;
use serde_json::json;
use support::running::{PASSWORD, Running};

const WIDTH: u32 = 1280;
const HEIGHT: u32 = 900;
/// A phone's width.
const NARROW: u32 = 390;

/// Markup that would run script if a page inserted it as HTML.
const MARKUP: &str = r#"<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>"#;
/// Markup short enough to be a user name (they are cut at 64 characters).
const SHORT_MARKUP: &str = "<img src=x onerror=window.__pwned=4>";
/// A Secret's value: the diff must never show it.
const SECRET_VALUE: &str = "hunter2-plaintext-secret";

/// A kustomize directory `root/name` with a ConfigMap (whose `note` is `note`) and a Secret.
fn write_source(root: &Path, name: &str, note: &str) -> PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("kustomization.yaml"),
        "resources:\n- configmap.yaml\n- secret.yaml\n",
    )
    .unwrap();
    let config = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": format!("{name}-config")},
        "data": {"note": note, "replicas": "2"},
    });
    std::fs::write(dir.join("configmap.yaml"), config.to_string()).unwrap();
    let secret = json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": format!("{name}-secret")},
        "stringData": {"password": SECRET_VALUE},
    });
    std::fs::write(dir.join("secret.yaml"), secret.to_string()).unwrap();
    dir
}

fn app_yaml(name: &str, source: &Path, approval: bool) -> String {
    format!(
        "apiVersion: cd.wardn.space/v1alpha1\nkind: App\nmetadata:\n  name: {name}\n  namespace: wardn\n\
         spec:\n  source:\n    type: Directory\n    directory:\n      path: {}\n\
         \x20 destination:\n    cluster: \"\"\n    namespace: staging\n\
         \x20 syncPolicy:\n    automated: true\n    requiresApproval: {approval}\n",
        source.display()
    )
}

/// kubesim as the management cluster and `wardn serve` with an automated App `web` and an App
/// `shop` that requires approval; `note` goes into shop's ConfigMap.
struct Stage {
    sim: common::Sim,
    running: Running,
    _work: tempfile::TempDir,
}

impl Stage {
    async fn start(note: &str) -> Stage {
        let sim = common::start(&["staging"]).await;
        let work = tempfile::tempdir().unwrap();
        let apps = work.path().join("apps");
        std::fs::create_dir_all(&apps).unwrap();
        let web = write_source(work.path(), "web", "plain");
        let shop = write_source(work.path(), "shop", note);
        std::fs::write(apps.join("web.yaml"), app_yaml("web", &web, false)).unwrap();
        std::fs::write(apps.join("shop.yaml"), app_yaml("shop", &shop, true)).unwrap();
        let running = Running::start(&sim.kubeconfig, &work.path().join("data"), &apps).await;
        Stage {
            sim,
            running,
            _work: work,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.running.base)
    }

    async fn stop(self) {
        self.running.stop().await;
    }
}

/// Logs in as admin through the login page of the server at `base` and waits for the Apps
/// page.
async fn log_in(browser: &Browser, base: &str) {
    browser.goto(&format!("{base}/")).await;
    browser.find("form.login-card").await;
    assert!(browser.path().await.starts_with("/ui/login"));
    browser.type_into("#username", "admin").await;
    browser.type_into("#password", PASSWORD).await;
    browser.click("form.login-card button[type=submit]").await;
    browser.wait_text("#username", "admin").await;
}

/// An exec-plugin kubeconfig for `server`.
fn exec_kubeconfig(server: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {server}\n\
         users:\n- name: u\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: /bin/sh\n\
         contexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\n"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_registers_a_cluster_approves_a_held_app_and_reads_the_audit_log() {
    let stage = Stage::start("first release").await;
    let remote = common::start(&["default", "staging"]).await;
    let stopped = common::start(&["default"]).await;
    let stopped_url = stopped.cluster.url();
    let stopped_kubeconfig = stopped.cluster.kubeconfig();
    stopped.cluster.stop().await;
    let browser = Browser::start(WIDTH, HEIGHT).await;

    // Log in; the login page first.
    browser.goto(&stage.url("/ui/clusters")).await;
    browser.find("#password").await;
    browser.screenshot("01-login", WIDTH, HEIGHT).await;
    log_in(&browser, &stage.running.base).await;

    // Watch an App become Held on the Apps page (polled, updated in place).
    browser
        .wait_exact("tr[data-app='local/shop'] td:nth-child(2)", "Held")
        .await;
    browser
        .wait_exact("tr[data-app='local/web'] td:nth-child(2)", "Synced")
        .await;
    browser.screenshot("02-apps", WIDTH, HEIGHT).await;
    // Live updates rewrite the rows in place: the same elements, at the same place, after
    // two more polls.
    let layout = "return [...document.querySelectorAll('#app-groups tr')].map((row) => {
                    const box = row.getBoundingClientRect();
                    return [row.dataset.app || 'head', box.top, box.height, box.width, row.__seen === true];
                  });";
    browser
        .script(
            "document.querySelectorAll('#app-groups tr').forEach((row) => { row.__seen = true; });",
            vec![],
        )
        .await;
    let before = browser.script(layout, vec![]).await;
    for _ in 0..2 {
        let stamp = browser.find("#updated").await.text().await.unwrap();
        for _ in 0..600 {
            let now = browser.find("#updated").await.text().await.unwrap();
            if now != stamp {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    }
    let after = browser.script(layout, vec![]).await;
    assert_eq!(before, after, "rows moved or were replaced by a poll");
    assert!(
        after
            .as_array()
            .unwrap()
            .iter()
            .all(|row| row[4] == json!(true)),
        "{after}"
    );

    // Add a cluster: an http:// URL is refused in the form, an exec plugin by the API.
    browser.goto(&stage.url("/ui/clusters")).await;
    browser.click("#add-cluster").await;
    browser.type_into("#cluster-name", "remote").await;
    let http_url = remote.cluster.url().replace("https://", "http://");
    browser.type_into("#cluster-server", &http_url).await;
    browser
        .paste("#cluster-kubeconfig", &remote.cluster.kubeconfig())
        .await;
    browser.click("#cluster-save").await;
    let error = browser
        .wait_text("#cluster-server-error", "server_url")
        .await;
    assert!(error.contains("https://"), "{error}");
    assert_eq!(
        browser
            .find("#cluster-server")
            .await
            .attr("aria-invalid")
            .await
            .unwrap()
            .as_deref(),
        Some("true")
    );
    browser
        .screenshot("03-cluster-http-refused", WIDTH, HEIGHT)
        .await;
    browser
        .type_into("#cluster-server", &remote.cluster.url())
        .await;
    browser
        .paste(
            "#cluster-kubeconfig",
            &exec_kubeconfig(&remote.cluster.url()),
        )
        .await;
    browser.click("#cluster-save").await;
    let refused = browser
        .wait_text(
            "#cluster-form-result",
            "exec credential plugins are not allowed",
        )
        .await;
    assert!(
        refused.contains("kubeconfig.users[0].user.exec"),
        "{refused}"
    );
    browser
        .wait_text(
            "#cluster-kubeconfig-error",
            "exec credential plugins are not allowed",
        )
        .await;
    browser
        .screenshot("04-cluster-exec-refused", WIDTH, HEIGHT)
        .await;

    // Test Connection against the live kubesim cluster: connected, nothing stored.
    browser
        .paste("#cluster-kubeconfig", &remote.cluster.kubeconfig())
        .await;
    browser.click("#cluster-test").await;
    let connected = browser.wait_text("#cluster-form-result", "Connected").await;
    assert!(connected.contains("Nothing was stored"), "{connected}");
    let nodes = remote.kubectl(&["get", "nodes", "-o", "name"], None);
    assert!(
        connected.contains(&format!("{} node(s)", nodes.lines().count())),
        "the page's node count is kubectl's: {connected} vs {nodes}"
    );
    browser
        .screenshot("05-cluster-test-connected", WIDTH, HEIGHT)
        .await;
    let http = reqwest::Client::new();
    let cookie = support::server::login(&stage.running.base, PASSWORD).await;
    let listed: serde_json::Value = http
        .get(stage.url("/api/v1/clusters"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(listed["clusters"], json!([]), "a test stores nothing");

    // Test Connection against the stopped cluster: the named cause.
    browser.type_into("#cluster-server", &stopped_url).await;
    browser
        .paste("#cluster-kubeconfig", &stopped_kubeconfig)
        .await;
    browser.click("#cluster-test").await;
    let refused = browser
        .wait_text("#cluster-form-result", "Cannot connect")
        .await;
    assert!(refused.contains("connection refused"), "{refused}");
    browser
        .screenshot("06-cluster-test-stopped", WIDTH, HEIGHT)
        .await;

    // Save the live one; it is listed, then connected once probed (Reload).
    browser
        .type_into("#cluster-server", &remote.cluster.url())
        .await;
    browser
        .paste("#cluster-kubeconfig", &remote.cluster.kubeconfig())
        .await;
    browser.type_into("#cluster-namespaces", "staging").await;
    browser.click("#cluster-save").await;
    browser
        .wait_text("#messages", "Cluster remote registered")
        .await;
    // The list follows the background probe on its own.
    browser
        .wait_exact("tr[data-cluster='remote'] td:nth-child(2)", "connected")
        .await;
    let row = browser
        .wait_text("tr[data-cluster='remote']", "staging")
        .await;
    let version = remote.kubectl(&["version", "-o", "json"], None);
    let version: serde_json::Value = serde_json::from_str(&version).unwrap();
    let server_version = version["serverVersion"]["gitVersion"].as_str().unwrap();
    assert!(
        row.contains(server_version),
        "the version shown is kubectl's: {row} vs {server_version}"
    );

    // Edit: change the namespaces (the kubeconfig left empty is kept).
    browser
        .click("tr[data-cluster='remote'] button[aria-label='Edit cluster remote']")
        .await;
    browser
        .type_into("#cluster-namespaces", "staging, default")
        .await;
    browser.click("#cluster-save").await;
    browser
        .wait_text("#messages", "Cluster remote updated")
        .await;
    browser
        .wait_text("tr[data-cluster='remote']", "staging, default")
        .await;
    browser
        .wait_exact("tr[data-cluster='remote'] td:nth-child(2)", "connected")
        .await;

    // The command box reads through wardn: what kubectl shows in an allowed namespace, the
    // allowlist's refusal outside it, and a write verb refused by name.
    remote.kubectl(
        &["apply", "-f", "-"],
        Some(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: probe-cm\n  namespace: staging\n",
        ),
    );
    let run_command = |command: &'static str| {
        let browser = &browser;
        async move {
            browser
                .script(
                    "document.querySelector('#command-cluster').value = 'remote';
                     document.querySelector('#command-line').value = '';",
                    vec![],
                )
                .await;
            browser.type_into("#command-line", command).await;
            browser.click("#command-run").await;
        }
    };
    run_command("get configmaps -n staging").await;
    let listed = browser.wait_text("#command-output", "probe-cm").await;
    assert!(listed.contains("NAME"), "{listed}");
    browser
        .screenshot("07b-cluster-command", WIDTH, HEIGHT)
        .await;
    run_command("get configmaps -n kube-system").await;
    browser
        .wait_text(
            "#command-output",
            "is not in the namespaces allowlist of cluster \"remote\"",
        )
        .await;
    run_command("delete configmap probe-cm -n staging").await;
    browser
        .wait_text("#command-output", "verb \"delete\" is not offered")
        .await;
    assert!(
        remote
            .kubectl(&["get", "configmaps", "-n", "staging"], None)
            .contains("probe-cm"),
        "a refused command touches nothing"
    );
    browser.screenshot("07-clusters", WIDTH, HEIGHT).await;

    // Remove, after confirming.
    browser
        .click("tr[data-cluster='remote'] button[aria-label='Remove cluster remote']")
        .await;
    browser
        .wait_text(".confirm", "Remove cluster remote?")
        .await;
    browser
        .screenshot("08-cluster-remove-confirm", WIDTH, HEIGHT)
        .await;
    browser.click("#confirm-remove").await;
    browser
        .wait_text("#messages", "Cluster remote removed")
        .await;
    browser
        .wait_text("#cluster-list", "No cluster is registered")
        .await;

    // The Held App: its diff (Secret masked), approve the shown plan, see it Synced.
    browser.goto(&stage.url("/ui/apps")).await;
    browser.click("tr[data-app='local/shop'] a").await;
    browser.wait_text("#diff", "shop-config").await;
    let diff = browser.find("#diff").await.text().await.unwrap();
    assert!(diff.contains("first release"), "{diff}");
    assert!(
        !diff.contains(SECRET_VALUE),
        "the Secret's value is masked: {diff}"
    );
    let held_hash = stage
        .running
        .runner
        .status("wardn/shop")
        .and_then(|s| s.plan_hash)
        .unwrap();
    let bound = browser.find("#bound-hash").await.text().await.unwrap();
    assert!(bound.contains(&held_hash[..16]), "{bound} vs {held_hash}");
    const CONFIG_ITEM: &str = "li[data-object='ConfigMap/staging/shop-config']";
    browser.wait_text(CONFIG_ITEM, "not applied").await;
    browser
        .wait_text("li[data-object='Secret/staging/shop-secret']", "new")
        .await;
    browser.screenshot("09-app-held", WIDTH, HEIGHT).await;
    browser.click("#approve").await;
    browser.wait_text("#messages", "Approval: done").await;
    browser.wait_text("dl.facts", "Synced").await;
    browser.wait_text("#events-slot", "app.approve").await;
    assert!(
        stage
            .sim
            .cluster
            .get_object("v1", "ConfigMap", Some("staging"), "shop-config")
            .is_some(),
        "the approved plan was applied"
    );
    browser.wait_text(CONFIG_ITEM, "Healthy").await;
    browser.wait_text(CONFIG_ITEM, "in sync").await;
    browser.screenshot("10-app-synced", WIDTH, HEIGHT).await;
    // The health shown is the cluster's: deleted with kubectl, the object shows Missing.
    stage.sim.kubectl(
        &["delete", "configmap", "shop-config", "-n", "staging"],
        None,
    );
    browser.goto(&stage.url("/ui/apps/local/shop")).await;
    browser.wait_text(CONFIG_ITEM, "Missing").await;
    // Refresh and Sync from the page: the App requires approval, so the sync holds a new
    // plan that puts the object back once approved.
    browser.click("#refresh").await;
    browser.wait_text("#messages", "Refresh: done").await;
    browser.click("#sync").await;
    browser.wait_text("#messages", "Sync: done").await;
    browser.wait_text("#held", "Waiting for approval").await;
    browser.click("#approve").await;
    browser.wait_text("#messages", "Approval: done").await;
    browser.wait_text(CONFIG_ITEM, "Healthy").await;
    let back = stage.sim.kubectl(
        &[
            "get",
            "configmap",
            "shop-config",
            "-n",
            "staging",
            "-o",
            "name",
        ],
        None,
    );
    assert_eq!(back.trim(), "configmap/shop-config");
    browser.wait_text("#events-slot", "app.sync").await;

    // The audit log: the approval with its plan hash, the cluster's lifecycle; filters.
    browser.goto(&stage.url("/ui/audit")).await;
    let log = browser.wait_text("#audit-list", "app.approve").await;
    assert!(log.contains(&format!("plan={held_hash}")), "{log}");
    for action in [
        "cluster.test",
        "cluster.register",
        "cluster.update",
        "cluster.remove",
    ] {
        assert!(log.contains(action), "{action} in {log}");
    }
    browser.screenshot("11-audit", WIDTH, HEIGHT).await;
    browser.type_into("#filter-action", "cluster.").await;
    browser.click("form[role=search] button[type=submit]").await;
    for _ in 0..600 {
        let text = browser.find("#audit-list").await.text().await.unwrap();
        if !text.contains("app.approve") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let filtered = browser.find("#audit-list").await.text().await.unwrap();
    assert!(
        filtered.contains("cluster.remove") && !filtered.contains("app.approve"),
        "{filtered}"
    );
    assert!(browser.path().await.contains("action=cluster."));

    // Logging out ends the session: the pages lead to the login again.
    browser.click(".who button").await;
    browser.find("form.login-card").await;
    browser.goto(&stage.url("/ui/apps")).await;
    browser.find("form.login-card").await;
    assert!(browser.path().await.starts_with("/ui/login"));

    browser.close().await;
    stage.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn markup_in_data_is_shown_as_text_and_never_run() {
    let stage = Stage::start(MARKUP).await;
    // A failed login whose user name is markup: the audit log records it.
    let response = reqwest::Client::new()
        .post(stage.url("/api/v1/auth/login"))
        .json(&json!({"username": SHORT_MARKUP, "password": "wrong"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    let browser = Browser::start(WIDTH, HEIGHT).await;

    // The login never leads off-site, whatever ?next= says.
    for next in [
        "https://evil.example/",
        "//evil.example/ui/apps",
        "javascript:alert(1)",
    ] {
        let encoded: String = next
            .bytes()
            .map(|b| format!("%{b:02X}"))
            .collect::<Vec<_>>()
            .concat();
        browser
            .goto(&stage.url(&format!("/ui/login?next={encoded}")))
            .await;
        browser.type_into("#username", "admin").await;
        browser.type_into("#password", PASSWORD).await;
        browser.click("form.login-card button[type=submit]").await;
        browser.wait_text("#username", "admin").await;
        assert_eq!(browser.path().await, "/ui/apps", "next={next}");
    }

    // The diff shows the markup as text; nothing ran, no element was made of it.
    browser.goto(&stage.url("/ui/apps/local/shop")).await;
    let diff = browser.wait_text("#diff", "onerror").await;
    assert!(diff.contains(MARKUP), "{diff}");
    browser.goto(&stage.url("/ui/audit")).await;
    let log = browser.wait_text("#audit-list", "auth.login").await;
    assert!(log.contains(SHORT_MARKUP), "{log}");
    browser.screenshot("12-hostile-audit", WIDTH, HEIGHT).await;
    let injected = browser
        .script(
            "return [typeof window.__pwned, document.querySelectorAll('main img, main script').length];",
            vec![],
        )
        .await;
    assert_eq!(injected, json!(["undefined", 0]), "markup became elements");
    browser.goto(&stage.url("/ui/apps/local/shop")).await;
    browser.wait_text("#diff", "onerror").await;
    let injected = browser
        .script(
            "return [typeof window.__pwned, document.querySelectorAll('main img, main script').length];",
            vec![],
        )
        .await;
    assert_eq!(injected, json!(["undefined", 0]), "markup became elements");

    // An App that does not exist, addressed with markup: an error shown as text.
    browser
        .goto(&stage.url("/ui/apps/local/%3Cimg%20src=x%20onerror=window.__pwned=3%3E"))
        .await;
    browser.wait_text("#page", "no App").await;
    let injected = browser
        .script("return typeof window.__pwned;", vec![])
        .await;
    assert_eq!(injected, json!("undefined"));

    browser.close().await;
    stage.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_viewer_is_offered_only_what_a_viewer_may_do() {
    let stage = Stage::start("viewer").await;
    let http = reqwest::Client::new();
    let admin = support::server::login(&stage.running.base, PASSWORD).await;
    let created = http
        .post(stage.url("/api/v1/users"))
        .header("cookie", &admin)
        .json(&json!({"username": "vera", "password": "a long enough password", "role": "viewer"}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    let browser = Browser::start(WIDTH, HEIGHT).await;
    browser.goto(&stage.url("/ui/login")).await;
    browser.type_into("#username", "vera").await;
    browser
        .type_into("#password", "a long enough password")
        .await;
    browser.click("form.login-card button[type=submit]").await;
    browser.wait_text(".who", "vera").await;
    browser.wait_text(".who", "viewer").await;
    let nav = browser
        .find("nav[aria-label=Main]")
        .await
        .text()
        .await
        .unwrap();
    assert!(nav.contains("Clusters") && !nav.contains("Audit"), "{nav}");
    browser
        .wait_exact("tr[data-app='local/shop'] td:nth-child(2)", "Held")
        .await;
    browser.goto(&stage.url("/ui/apps/local/shop")).await;
    browser.wait_text("#diff", "shop-config").await;
    browser.wait_text("#held", "Waiting for approval").await;
    let offered = browser
        .script(
            "return ['#approve', '#reject', '#sync', '#refresh', '#promote']
               .filter((css) => document.querySelector(css));",
            vec![],
        )
        .await;
    assert_eq!(offered, json!([]), "a viewer is offered no action");
    browser.goto(&stage.url("/ui/clusters")).await;
    browser.find("#page:not([aria-busy])").await;
    let add = browser
        .script(
            "return document.querySelector('#add-cluster').hidden;",
            vec![],
        )
        .await;
    assert_eq!(add, json!(true));
    // Typed in by hand, the audit page shows the API's refusal, nothing of the log.
    browser.goto(&stage.url("/ui/audit")).await;
    browser
        .wait_text("#page", "route needs role admin; you are viewer")
        .await;
    browser.close().await;
    stage.stop().await;
}

/// The sequence numbers of the audit entries shown, top to bottom.
async fn audit_page(browser: &Browser) -> Vec<i64> {
    let shown = browser
        .script(
            "return [...document.querySelectorAll('#audit-list tr[data-seq]')]
               .map((row) => Number(row.getAttribute('data-seq')));",
            vec![],
        )
        .await;
    serde_json::from_value(shown).unwrap()
}

/// Clicks the pager's `button` and returns the page shown once it is no longer `from`.
async fn turn_page(browser: &Browser, button: &str, from: &[i64]) -> Vec<i64> {
    browser.click(button).await;
    for _ in 0..600 {
        let page = audit_page(browser).await;
        if !page.is_empty() && page != from {
            return page;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("{button} did not turn the page");
}

/// The Apps page of a `--role server` process says that it reconciles no Apps, rather than
/// showing an empty fleet, and once an operator reports one, its row and its page name the
/// operator; a `--role all` process without Apps says it has none (the page drew nothing at
/// all for an empty list before).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_roles_apps_page_says_its_operators_reconcile_the_apps_and_names_them() {
    let server =
        support::server::TestServer::start_with_options(|options| options.reconcile_apps = false)
            .await;
    let browser = Browser::start(WIDTH, HEIGHT).await;
    log_in(&browser, &server.base).await;
    browser.goto(&server.url("/ui/apps")).await;
    let text = browser
        .wait_text("#apps-elsewhere", "reconciles no Apps (--role server)")
        .await;
    assert!(!text.contains("No App yet"), "{text}");
    // An operator reports an App: its row names the operator, and so does its page.
    let report = json!({"apps": [{"app": {
        "apiVersion": "cd.wardn.space/v1alpha1", "kind": "App",
        "metadata": {"name": "web", "namespace": "shop"},
        "spec": {
            "source": {"type": "Directory", "directory": {"path": "/srv/web"}},
            "destination": {"cluster": "east-1", "namespace": "shop"}
        }
    }}]});
    let reported = reqwest::Client::new()
        .put(server.url("/internal/operators/op-ui-1/apps"))
        .bearer_auth(support::server::INTERNAL_TOKEN)
        .json(&report)
        .send()
        .await
        .unwrap();
    assert_eq!(reported.status(), 204);
    browser.goto(&server.url("/ui/apps")).await;
    browser.wait_text("#app-groups", "operator op-ui-1").await;
    browser
        .goto(&server.url("/ui/apps/east-1/web?namespace=shop"))
        .await;
    browser.wait_text("#app-operator", "op-ui-1").await;
    server.stop().await;
    let all = support::server::TestServer::start(None).await;
    log_in(&browser, &all.base).await;
    browser.goto(&all.url("/ui/apps")).await;
    browser.wait_text("#app-groups", "No App yet.").await;
    browser.close().await;
    all.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_log_pages_back_and_forth_under_a_filter() {
    let server = support::server::TestServer::start(None).await;
    let cookie = server.login().await;
    let http = reqwest::Client::new();
    for i in 0..120 {
        let created = http
            .post(server.url("/api/v1/tokens"))
            .header("cookie", &cookie)
            .json(&json!({"name": format!("t{i}")}))
            .send()
            .await
            .unwrap();
        assert_eq!(created.status(), 201);
    }
    let browser = Browser::start(WIDTH, HEIGHT).await;
    log_in(&browser, &server.base).await;
    browser
        .goto(&server.url("/ui/audit?action=token.create"))
        .await;
    browser.wait_text("#audit-list", "token.create").await;
    let first = audit_page(&browser).await;
    assert_eq!(first.len(), 50);
    assert!(
        first.windows(2).all(|w| w[0] > w[1]),
        "newest first: {first:?}"
    );
    let second = turn_page(&browser, "#older", &first).await;
    let third = turn_page(&browser, "#older", &second).await;
    assert_eq!((second.len(), third.len()), (50, 20));
    // 120 token creations, each once, newest first, and nothing but them.
    let all: Vec<i64> = [&first[..], &second[..], &third[..]].concat();
    assert!(all.windows(2).all(|w| w[0] > w[1]), "{all:?}");
    let text = browser.find("#audit-list").await.text().await.unwrap();
    assert!(!text.contains("auth.login"), "{text}");
    let older = browser.find("#older").await;
    assert!(
        older.attr("disabled").await.unwrap().is_some(),
        "no page after the last"
    );
    assert_eq!(turn_page(&browser, "#newer", &third).await, second);
    assert_eq!(turn_page(&browser, "#newer", &second).await, first);
    browser.close().await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_390_px_screen_shows_every_page_without_sideways_scrolling() {
    let stage = Stage::start("narrow").await;
    let browser = Browser::start(NARROW, 844).await;
    log_in(&browser, &stage.running.base).await;
    browser
        .wait_exact("tr[data-app='local/shop'] td:nth-child(2)", "Held")
        .await;
    let pages = [
        ("/ui/apps", "13-apps-390"),
        ("/ui/apps/local/shop", "14-app-390"),
        ("/ui/clusters", "15-clusters-390"),
        ("/ui/audit", "16-audit-390"),
    ];
    for (path, shot) in pages {
        browser.goto(&stage.url(path)).await;
        browser.find("#page:not([aria-busy])").await;
        if path == "/ui/apps/local/shop" {
            browser.wait_text("#diff", "shop-config").await;
        }
        if path == "/ui/clusters" {
            browser.click("#add-cluster").await;
            browser.find("#cluster-form").await;
        }
        // Elements reaching past the right edge (scrolled boxes such as the diff may be wide
        // inside, but not stick out themselves).
        let sticking_out = browser
            .script(
                "const width = document.documentElement.clientWidth;
                 return [...document.querySelectorAll('body *')]
                   .filter((el) => el.getBoundingClientRect().right > width + 0.5)
                   .filter((el) => !el.closest('.diff, .visually-hidden, .skip'))
                   .map((el) => el.tagName + '.' + el.className + '#' + el.id);",
                vec![],
            )
            .await;
        assert_eq!(sticking_out, json!([]), "{path} is wider than 390 px");
        let overflow = browser
            .script(
                "return document.documentElement.scrollWidth - document.documentElement.clientWidth;",
                vec![],
            )
            .await;
        assert_eq!(overflow, json!(0), "{path} scrolls sideways at 390 px");
        browser.screenshot(shot, NARROW, 844).await;
    }
    // Every control has an accessible name (a label, aria-label or text).
    let unnamed = browser
        .script(
            "return [...document.querySelectorAll('button, input, select, textarea, a[href]')]
               .filter((el) => !el.hidden && el.type !== 'hidden')
               .filter((el) => !(el.getAttribute('aria-label') || el.textContent.trim()
                  || (el.id && document.querySelector(`label[for='${el.id}']`))
                  || el.closest('label')))
               .map((el) => el.outerHTML.slice(0, 80));",
            vec![],
        )
        .await;
    assert_eq!(unnamed, json!([]), "controls without an accessible name");
    browser.close().await;
    stage.stop().await;
}
