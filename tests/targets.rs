//! Named targets (`spec.targets`) on kubesim, through an in-process `wardn serve`: one App
//! fans out to staging, production and a template-routed regional target on two registered
//! clusters (and another App's target falls back to the management cluster); each target is
//! planned, Held, approved, promoted, pruned and reported on its own; a target routed to an
//! unregistered cluster fails alone; hostile addresses are 4xx; App resources get
//! `status.targets`; 200 passes leave no extra store rows.

mod common;
mod support;

use std::time::Duration;

use serde_json::{Value, json};
use support::running::{PASSWORD, Running, eventually};
use wardn::app::Phase;
use wardn::daemon::runner::Operation;
use wardn::reconcile::decide::Trigger;

const REPO: &str = "ghcr.io/acme/shop";

/// Writes the shared source: Deployment `web` running `REPO:1.0`, ConfigMap `note`, and
/// ConfigMap `extra` when `extra`.
fn write_source(dir: &std::path::Path, extra: bool) {
    std::fs::create_dir_all(dir).unwrap();
    let mut resources = "resources:\n- web.yaml\n- note.yaml\n".to_string();
    if extra {
        resources.push_str("- extra.yaml\n");
    }
    std::fs::write(dir.join("kustomization.yaml"), resources).unwrap();
    std::fs::write(
        dir.join("web.yaml"),
        format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 1\n\
             \x20 selector:\n    matchLabels:\n      app: web\n  template:\n    metadata:\n      labels:\n        app: web\n\
             \x20   spec:\n      containers:\n      - name: web\n        image: {REPO}:1.0\n"
        ),
    )
    .unwrap();
    for name in ["note", "extra"] {
        std::fs::write(
            dir.join(format!("{name}.yaml")),
            format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  k: v\n"),
        )
        .unwrap();
    }
}

/// App `shop`: staging (falls back to `destination.cluster`), prod (primary, gated), regional
/// (a template on the App's labels), broken (a template naming an unregistered cluster).
fn shop_yaml(src: &std::path::Path) -> String {
    format!(
        r#"apiVersion: cd.wardn.space/v1alpha1
kind: App
metadata: {{name: shop, namespace: team, labels: {{region: eu}}}}
spec:
  source: {{type: Directory, directory: {{path: {}}}}}
  destination: {{cluster: staging, namespace: shop}}
  syncPolicy: {{automated: true, prune: true}}
  promotion: {{from: "staging/shop:staging"}}
  targets:
    staging: {{}}
    prod: {{cluster: prod, primary: true, requiresApproval: true}}
    regional:
      cluster: '{{{{ if eq .metadata.labels.region "eu" }}}}prod{{{{ else }}}}staging{{{{ end }}}}'
      namespace: shop-eu
    broken:
      cluster: '{{{{ .metadata.labels.edge | default "nowhere" }}}}'
      namespace: other
"#,
        src.display()
    )
}

/// App `home`: one target with neither its own nor the App's cluster (the management one).
fn home_yaml(src: &std::path::Path) -> String {
    format!(
        "apiVersion: cd.wardn.space/v1alpha1\nkind: App\nmetadata: {{name: home, namespace: team}}\n\
         spec:\n  source: {{type: Directory, directory: {{path: {}}}}}\n\
         \x20 destination: {{namespace: shop}}\n  syncPolicy: {{automated: true}}\n\
         \x20 targets: {{main: {{}}}}\n",
        src.display()
    )
}

/// The API as the admin.
struct Api {
    http: reqwest::Client,
    base: String,
    cookie: String,
}

impl Api {
    async fn call(&self, method: reqwest::Method, path: &str, body: Value) -> (u16, Value) {
        let response = self
            .http
            .request(method, format!("{}{path}", self.base))
            .header("cookie", &self.cookie)
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    async fn get(&self, path: &str) -> (u16, Value) {
        self.call(reqwest::Method::GET, path, json!({})).await
    }

    async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        self.call(reqwest::Method::POST, path, body).await
    }

    /// Registers the kubesim cluster of `sim` as `name`.
    async fn register(&self, name: &str, sim: &common::Sim) {
        let kubeconfig = std::fs::read_to_string(&sim.kubeconfig).unwrap();
        let url = kubeconfig
            .lines()
            .find_map(|l| l.trim().strip_prefix("server: "))
            .unwrap()
            .to_string();
        let (status, body) = self
            .post(
                "/api/v1/clusters",
                json!({"name": name, "server_url": url, "kubeconfig": kubeconfig}),
            )
            .await;
        assert_eq!(status, 201, "{body}");
    }
}

fn object(sim: &common::Sim, kind: &str, namespace: &str, name: &str) -> Option<Value> {
    let api_version = if kind == "Deployment" {
        "apps/v1"
    } else {
        "v1"
    };
    sim.cluster
        .get_object(api_version, kind, Some(namespace), name)
}

fn image(sim: &common::Sim, namespace: &str) -> String {
    object(sim, "Deployment", namespace, "web").unwrap()["spec"]["template"]["spec"]["containers"]
        [0]["image"]
        .as_str()
        .unwrap()
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn targets_fan_out_and_are_held_approved_promoted_and_pruned_one_by_one() {
    let management = common::start(&["shop"]).await;
    let staging = common::start(&["shop"]).await;
    let prod = common::start(&["shop", "shop-eu"]).await;
    let work = tempfile::tempdir().unwrap();
    let apps = work.path().join("apps");
    std::fs::create_dir_all(&apps).unwrap();
    let src = work.path().join("src");
    write_source(&src, true);
    let running = Running::start(&management.kubeconfig, &work.path().join("data"), &apps).await;
    let runner = std::sync::Arc::clone(&running.runner);
    let api = Api {
        http: reqwest::Client::new(),
        base: running.base.clone(),
        cookie: support::server::login(&running.base, PASSWORD).await,
    };
    api.register("staging", &staging).await;
    api.register("prod", &prod).await;
    std::fs::write(apps.join("shop.yaml"), shop_yaml(&src)).unwrap();
    std::fs::write(apps.join("home.yaml"), home_yaml(&src)).unwrap();

    let phase = |key: &str| runner.status(key).and_then(|s| s.phase);
    eventually("each target in its own phase", || {
        phase("team/shop:staging") == Some(Phase::Synced)
            && phase("team/shop:regional") == Some(Phase::Synced)
            && phase("team/shop:prod") == Some(Phase::Held)
            && phase("team/shop:broken") == Some(Phase::Failed)
            && phase("team/home:main") == Some(Phase::Synced)
    })
    .await;
    let mut keys = runner.keys();
    keys.sort();
    assert_eq!(
        keys,
        [
            "team/home:main",
            "team/shop:broken",
            "team/shop:prod",
            "team/shop:regional",
            "team/shop:staging"
        ]
    );
    // Each synced target's objects on its own cluster and namespace, stamped with its key;
    // the Held target applied nothing; the local fallback landed on the management cluster.
    let note = object(&staging, "ConfigMap", "shop", "note").expect("staging's note");
    assert_eq!(
        note["metadata"]["annotations"]["cd.wardn.space/app"],
        "team/shop:staging"
    );
    let regional = object(&prod, "ConfigMap", "shop-eu", "note").expect("regional's note");
    assert_eq!(
        regional["metadata"]["annotations"]["cd.wardn.space/app"],
        "team/shop:regional"
    );
    assert!(object(&prod, "ConfigMap", "shop", "note").is_none(), "Held");
    assert_eq!(
        object(&management, "ConfigMap", "shop", "note").unwrap()["metadata"]["annotations"]["cd.wardn.space/app"],
        "team/home:main"
    );
    let broken = runner.status("team/shop:broken").unwrap();
    assert!(
        broken
            .message
            .as_deref()
            .unwrap_or_default()
            .contains("\"nowhere\" is not registered"),
        "{broken:?}"
    );

    // The API lists each target with its cluster; the name alone finds the only target on a
    // cluster, or the primary one; NAME:TARGET names one.
    let (status, list) = api.get("/api/v1/apps").await;
    assert_eq!(status, 200, "{list}");
    let mut rows: Vec<String> = list["apps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| format!("{}:{}@{}", a["name"], a["target"], a["cluster"]).replace('"', ""))
        .collect();
    rows.sort();
    assert_eq!(
        rows,
        [
            "home:main@local",
            "shop:broken@nowhere",
            "shop:prod@prod",
            "shop:regional@prod",
            "shop:staging@staging"
        ]
    );
    let (status, one) = api.get("/api/v1/apps/staging/shop").await;
    assert_eq!((status, &one["target"]), (200, &json!("staging")), "{one}");
    let (status, one) = api.get("/api/v1/apps/prod/shop").await;
    assert_eq!((status, &one["target"]), (200, &json!("prod")), "{one}");
    let (status, one) = api.get("/api/v1/apps/prod/shop:regional").await;
    assert_eq!(
        (status, &one["destinationNamespace"]),
        (200, &json!("shop-eu")),
        "{one}"
    );
    let (status, _) = api.get("/api/v1/apps/staging/shop:prod").await;
    assert_eq!(status, 404, "prod is not on staging");
    for hostile in [
        "/api/v1/apps/prod/shop:..%2F..%2Fetc",
        "/api/v1/apps/prod/shop:Prod",
        "/api/v1/apps/prod/shop:a:b",
        "/api/v1/apps/prod/shop:",
    ] {
        let (status, body) = api.get(hostile).await;
        assert_eq!(status, 400, "{hostile}: {body}");
        assert!(
            body["error"]
                .as_str()
                .unwrap()
                .contains("must be a DNS label"),
            "{body}"
        );
    }
    let (status, body) = api
        .post("/api/v1/apps/prod/shop:%2e%2e/approve", json!({}))
        .await;
    assert_eq!(status, 400, "{body}");

    // Approve the prod target by its plan hash: only it applies.
    let held = runner.status("team/shop:prod").unwrap();
    let hash = held.plan_hash.clone().unwrap();
    let staging_hash = runner.status("team/shop:regional").unwrap().plan_hash;
    assert_ne!(Some(hash.clone()), staging_hash, "plans are per target");
    let (status, body) = api
        .post(
            "/api/v1/apps/prod/shop:prod/approve",
            json!({"plan_hash": "0000"}),
        )
        .await;
    assert_eq!(status, 409, "{body}");
    let (status, body) = api
        .post(
            "/api/v1/apps/prod/shop:prod/approve",
            json!({"plan_hash": hash}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(phase("team/shop:prod"), Some(Phase::Synced));
    assert_eq!(
        object(&prod, "ConfigMap", "shop", "note").unwrap()["metadata"]["annotations"]["cd.wardn.space/app"],
        "team/shop:prod"
    );
    let (_, audit) = api.get("/api/v1/audit").await;
    assert!(
        audit.to_string().contains("prod/shop:prod"),
        "audited under the target's address: {audit}"
    );

    // Promotion between targets: `promotion.from` names the staging target; another source
    // is refused; `?to=shop:prod` pins staging's digest on prod alone (Held, then approved).
    eventually("staging's Pods report a digest", || {
        staging
            .cluster
            .list_objects("v1", "Pod")
            .iter()
            .any(|p| p["status"]["containerStatuses"][0]["imageID"].is_string())
    })
    .await;
    let (status, body) = api
        .post(
            "/api/v1/apps/local/home:main/promote?to=shop:prod",
            json!({}),
        )
        .await;
    assert_eq!(status, 409, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("takes promotions from staging/shop:staging only"),
        "{body}"
    );
    let (status, body) = api
        .post("/api/v1/apps/staging/shop/promote?to=shop:Bad", json!({}))
        .await;
    assert_eq!(status, 400, "{body}");
    let (status, promoted) = api
        .post("/api/v1/apps/staging/shop/promote?to=shop:prod", json!({}))
        .await;
    assert_eq!(status, 200, "{promoted}");
    assert_eq!(promoted["status"]["phase"], "Held", "{promoted}");
    assert_eq!(promoted["status"]["promotedFrom"]["app"], "shop:staging");
    assert_eq!(promoted["status"]["promotedFrom"]["cluster"], "staging");
    let hash = promoted["status"]["planHash"].as_str().unwrap().to_string();
    let (status, body) = api
        .post("/api/v1/apps/prod/shop/approve", json!({"planHash": hash}))
        .await;
    assert_eq!(status, 200, "the primary target: {body}");
    assert!(
        image(&prod, "shop").starts_with(&format!("{REPO}@sha256:")),
        "{}",
        image(&prod, "shop")
    );
    assert_eq!(image(&prod, "shop-eu"), format!("{REPO}:1.0"), "regional");
    assert_eq!(image(&staging, "shop"), format!("{REPO}:1.0"), "staging");

    // Prune: `extra` leaves the source. The automated targets prune their own copy; the
    // gated prod target is Held with one prune and its copy stays, on the same cluster as
    // regional's pruned one.
    write_source(&src, false);
    eventually("automated targets pruned, prod Held", || {
        object(&staging, "ConfigMap", "shop", "extra").is_none()
            && object(&prod, "ConfigMap", "shop-eu", "extra").is_none()
            && phase("team/shop:prod") == Some(Phase::Held)
    })
    .await;
    assert!(object(&prod, "ConfigMap", "shop", "extra").is_some());
    assert_eq!(
        runner
            .status("team/shop:prod")
            .unwrap()
            .plan
            .unwrap()
            .prunes,
        1
    );
    assert!(
        object(&management, "ConfigMap", "shop", "extra").is_some(),
        "home: no prune"
    );

    // Dropping a target stops managing it (its objects stay), the others keep running.
    let without_regional = shop_yaml(&src).replace(
        "    regional:\n      cluster: '{{ if eq .metadata.labels.region \"eu\" }}prod{{ else }}staging{{ end }}'\n      namespace: shop-eu\n",
        "",
    );
    assert_ne!(without_regional, shop_yaml(&src));
    std::fs::write(apps.join("shop.yaml"), without_regional).unwrap();
    eventually("regional no longer managed", || {
        runner.status("team/shop:regional").is_none()
    })
    .await;
    assert!(runner.status("team/shop:staging").is_some());
    assert!(object(&prod, "ConfigMap", "shop-eu", "note").is_some());
    running.stop().await;
}

/// An invalid target list is refused naming the field, and the App's previous targets keep
/// running until its file is deleted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_target_lists_are_refused_naming_the_field() {
    let management = common::start(&["shop", "a", "b"]).await;
    let work = tempfile::tempdir().unwrap();
    let apps = work.path().join("apps");
    std::fs::create_dir_all(&apps).unwrap();
    let src = work.path().join("src");
    write_source(&src, false);
    let targets = |targets: &str| home_yaml(&src).replace("{main: {}}", targets);
    std::fs::write(apps.join("home.yaml"), targets("{a: {namespace: a}}")).unwrap();
    let running = Running::start(&management.kubeconfig, &work.path().join("data"), &apps).await;
    let runner = std::sync::Arc::clone(&running.runner);
    eventually("target a Synced", || {
        runner.status("team/home:a").and_then(|s| s.phase) == Some(Phase::Synced)
    })
    .await;
    let many: Vec<String> = (0..1000).map(|i| format!("t{i}: {{}}")).collect();
    let cases = [
        (
            "{Bad_Name: {}}".to_string(),
            "spec.targets.\"Bad_Name\": a target name must be a DNS label",
        ),
        ("{'a:b': {}}".to_string(), "spec.targets.\"a:b\""),
        ("{'../../x': {}}".to_string(), "spec.targets.\"../../x\""),
        (
            "{a: {cluster: '../x'}}".to_string(),
            "spec.targets.a.cluster: \"../x\" is not a cluster name",
        ),
        (
            "{a: {namespace: a}, b: {namespace: a}}".to_string(),
            "spec.targets.b.cluster: targets a and b both deploy to cluster local, namespace a",
        ),
        (
            format!("{{{}}}", many.join(", ")),
            "spec.targets: 1000 targets, at most 64",
        ),
    ];
    for (list, expected) in cases {
        std::fs::write(apps.join("home.yaml"), targets(&list)).unwrap();
        eventually(expected, || {
            runner.file_errors().iter().any(|e| e.contains(expected))
        })
        .await;
        assert_eq!(runner.keys(), ["team/home:a"], "the previous version runs");
    }
    // Deleting the file stops the version still running (it was never removed before: the
    // refused definition had made the directory forget the App).
    std::fs::remove_file(apps.join("home.yaml")).unwrap();
    eventually("the App removed", || runner.keys().is_empty()).await;
    running.stop().await;
}

/// App resources with targets: `status.targets.NAME` per target, written by each target;
/// a target removed from the spec loses its entry; 200 passes of each of 3 targets leave one
/// store row per target.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn app_resources_report_each_target_and_passes_leave_no_extra_rows() {
    let sim = common::start(&["team", "a", "b", "c"]).await;
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
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("src");
    write_source(&src, false);
    let data = work.path().join("data");
    let running = Running::start_with(wardn::daemon::ServeOptions {
        listen: "127.0.0.1:0".parse().unwrap(),
        data_dir: data.clone(),
        admin_password: Some(PASSWORD.into()),
        management_kubeconfig: Some(sim.kubeconfig.clone()),
        app_namespaces: vec!["team".into()],
        probe_interval: Duration::from_secs(3600),
        probe_timeout: Duration::from_secs(5),
        ..Default::default()
    })
    .await;
    let runner = std::sync::Arc::clone(&running.runner);
    let resource = |targets: &str| home_yaml(&src).replace("{main: {}}", targets);
    let three = "{a: {namespace: a}, b: {namespace: b}, c: {namespace: c, requiresApproval: true}}";
    sim.kubectl(&["apply", "-f", "-"], Some(&resource(three)));
    let app = || {
        sim.cluster
            .get_object("cd.wardn.space/v1alpha1", "App", Some("team"), "home")
            .unwrap_or(Value::Null)
    };
    eventually("status.targets", || {
        let status = &app()["status"]["targets"];
        status["a"]["phase"] == "Synced"
            && status["b"]["phase"] == "Synced"
            && status["c"]["phase"] == "Held"
    })
    .await;
    let status = app()["status"].clone();
    assert_eq!(status["targets"]["a"]["cluster"], "local", "{status}");
    assert_eq!(status["targets"]["b"]["namespace"], "b", "{status}");
    assert!(status["targets"]["c"]["planHash"].is_string(), "{status}");
    let printed = sim.kubectl(
        &[
            "get",
            "app",
            "home",
            "-n",
            "team",
            "-o",
            "jsonpath={.status.targets.c.phase} {.status.phase}",
        ],
        None,
    );
    // The App's phase is its targets' that most needs attention: Held beside two Synced.
    assert_eq!(printed, "Held Held", "{status}");

    // The long run: 200 passes of each target.
    for _ in 0..200 {
        for key in ["team/home:a", "team/home:b", "team/home:c"] {
            runner
                .operate(key, Operation::Pass(Trigger::Automatic))
                .await
                .unwrap();
        }
    }
    for key in ["team/home:a", "team/home:b"] {
        let status = runner.status(key).unwrap();
        assert_eq!(status.phase, Some(Phase::Synced), "{key}");
        assert_eq!(status.inventory.len(), 2, "{key}: {:?}", status.inventory);
    }
    assert_eq!(
        runner.status("team/home:c").unwrap().phase,
        Some(Phase::Held)
    );

    // Target c removed from the spec: its entry goes, the others stay.
    sim.kubectl(
        &["apply", "-f", "-"],
        Some(&resource("{a: {namespace: a}, b: {namespace: b}}")),
    );
    eventually("c's status entry dropped", || {
        let targets = &app()["status"]["targets"];
        targets["c"].is_null() && targets["a"]["phase"] == "Synced"
    })
    .await;
    eventually(
        "the App's phase Synced once the Held target is gone",
        || app()["status"]["phase"] == "Synced",
    )
    .await;
    running.stop().await;

    let store = wardn::store::Store::open(&data, None).await.unwrap();
    let rows: Vec<wardn::store::apps::AppStatusRecord<Value>> = store.app_statuses().await.unwrap();
    let keys: Vec<&str> = rows.iter().map(|r| r.key.as_str()).collect();
    assert_eq!(keys, ["team/home:a", "team/home:b"]);
}
