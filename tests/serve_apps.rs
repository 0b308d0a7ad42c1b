//! `wardn serve --apps` end to end: kubesim as the management cluster, Directory Apps loaded
//! from an apps directory, the server started in-process; an automated App becomes Synced and
//! its ConfigMap exists, an App requiring approval is Held and applies nothing until it is
//! approved through the API; a Git App syncs and a signed webhook deploys its next commit.

mod common;
mod support;

use std::time::Duration;

use serde_json::{Value, json};
use wardn::app::Phase;
use wardn::clusters::seal::Sealer;
use wardn::server::{ServeOptions, Server};

const PASSWORD: &str = "correct horse battery staple";

fn app_yaml(name: &str, dir: &std::path::Path, approval: bool) -> String {
    format!(
        "apiVersion: cd.wardn.space/v1alpha1\nkind: App\nmetadata:\n  name: {name}\n  namespace: wardn\n\
         spec:\n  source:\n    type: Directory\n    directory:\n      path: {}\n\
         \x20 destination:\n    cluster: \"\"\n    namespace: staging\n\
         \x20 syncPolicy:\n    automated: true\n    requiresApproval: {approval}\n",
        dir.display()
    )
}

fn write_source(root: &std::path::Path, name: &str) -> std::path::PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("kustomization.yaml"),
        "resources:\n- configmap.yaml\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("configmap.yaml"),
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}-config\ndata:\n  k: v\n"
        ),
    )
    .unwrap();
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn directory_apps_sync_to_the_management_cluster_or_are_held() {
    let sim = common::start(&["staging"]).await;
    let work = tempfile::tempdir().unwrap();
    let apps = work.path().join("apps");
    std::fs::create_dir_all(&apps).unwrap();
    let auto_src = write_source(work.path(), "auto");
    let held_src = write_source(work.path(), "held");
    let rejected_src = write_source(work.path(), "rejected");
    std::fs::write(apps.join("auto.yaml"), app_yaml("auto", &auto_src, false)).unwrap();
    std::fs::write(apps.join("held.yaml"), app_yaml("held", &held_src, true)).unwrap();
    std::fs::write(
        apps.join("rejected.yaml"),
        app_yaml("rejected", &rejected_src, true),
    )
    .unwrap();

    let options = ServeOptions {
        listen: "127.0.0.1:0".parse().unwrap(),
        data_dir: work.path().join("data"),
        database_url: None,
        admin_password: Some(PASSWORD.into()),
        internal_token: None,
        webhook_secret: None,
        apps_dir: Some(apps),
        management_kubeconfig: Some(sim.kubeconfig.clone()),
        probe_interval: Duration::from_secs(3600),
        probe_timeout: Duration::from_secs(5),
        scheduling: wardn::reconcile::upkeep::Scheduling::default(),
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
    let mut settled = false;
    for _ in 0..600 {
        if phase("wardn/auto") == Some(Phase::Synced) && phase("wardn/held") == Some(Phase::Held) {
            settled = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        settled,
        "auto: {:?}, held: {:?}",
        runner.status("wardn/auto"),
        runner.status("wardn/held")
    );
    let applied = sim
        .cluster
        .get_object("v1", "ConfigMap", Some("staging"), "auto-config")
        .expect("the automated App's ConfigMap exists");
    assert_eq!(applied["data"]["k"], "v");
    assert!(
        sim.cluster
            .get_object("v1", "ConfigMap", Some("staging"), "held-config")
            .is_none(),
        "a Held App applies nothing"
    );
    let held = runner.status("wardn/held").unwrap();
    let plan_hash = held.plan_hash.clone().expect("a Held App has a plan hash");

    // The API answers from the same statuses.
    let http = reqwest::Client::new();
    let login = http
        .post(format!("{base}/api/v1/auth/login"))
        .json(&json!({"username": "admin", "password": PASSWORD}))
        .send()
        .await
        .unwrap();
    assert_eq!(login.status(), 200);
    let cookie = login.headers()["set-cookie"].to_str().unwrap();
    let cookie = cookie.split(';').next().unwrap().to_string();
    let get = |path: String| {
        let request = http.get(format!("{base}{path}")).header("cookie", &cookie);
        async move {
            let response = request.send().await.unwrap();
            (
                response.status().as_u16(),
                response.json::<Value>().await.unwrap(),
            )
        }
    };
    let post = |path: String, body: Value| {
        let request = http
            .post(format!("{base}{path}"))
            .header("cookie", &cookie)
            .json(&body);
        async move {
            let response = request.send().await.unwrap();
            (
                response.status().as_u16(),
                response.json::<Value>().await.unwrap(),
            )
        }
    };
    let (status, list) = get("/api/v1/apps?phase=Held".into()).await;
    assert_eq!(status, 200, "{list}");
    assert_eq!(list["apps"].as_array().unwrap().len(), 2, "{list}");
    assert_eq!(list["apps"][0]["name"], "held");
    let (_, all) = get("/api/v1/apps?cluster=local".into()).await;
    assert_eq!(all["apps"].as_array().unwrap().len(), 3, "{all}");
    let (_, none) = get("/api/v1/apps?cluster=staging".into()).await;
    assert_eq!(none["apps"], json!([]));
    let (status, one) = get("/api/v1/apps/local/auto".into()).await;
    assert_eq!((status, &one["phase"]), (200, &json!("Synced")), "{one}");
    let (status, _) = get("/api/v1/apps/local/missing".into()).await;
    assert_eq!(status, 404);
    let (status, diff) = get("/api/v1/apps/local/held/diff".into()).await;
    assert_eq!(status, 200, "{diff}");
    assert!(
        diff["text"].as_str().unwrap().contains("held-config"),
        "{diff}"
    );

    // A stale plan hash is refused; the reviewed one applies.
    let (status, refused) = post(
        "/api/v1/apps/local/held/approve".into(),
        json!({"plan_hash": "0000"}),
    )
    .await;
    assert_eq!(status, 409, "{refused}");
    let (status, approved) = post(
        "/api/v1/apps/local/held/approve".into(),
        json!({"plan_hash": plan_hash}),
    )
    .await;
    assert_eq!(status, 200, "{approved}");
    assert!(
        sim.cluster
            .get_object("v1", "ConfigMap", Some("staging"), "held-config")
            .is_some(),
        "the approved plan was applied"
    );
    let (status, synced) = post("/api/v1/apps/local/auto/sync".into(), json!({})).await;
    assert_eq!(
        (status, &synced["status"]["phase"]),
        (200, &json!("Synced"))
    );
    let (_, audit) = get("/api/v1/audit".into()).await;
    let text = audit.to_string();
    assert!(
        text.contains("app.approve") && text.contains(&plan_hash),
        "{text}"
    );

    stop.send(()).unwrap();
    task.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_git_app_syncs_and_a_signed_webhook_deploys_the_next_commit() {
    let sim = common::start(&["staging"]).await;
    let work = tempfile::tempdir().unwrap();
    let upstream = support::Upstream::init(&work.path().join("upstream"));
    let configmap = |value: &str| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: git-config\ndata:\n  k: {value}\n"
        )
    };
    upstream.commit(
        &[
            (
                "deploy/kustomization.yaml",
                "resources:\n- configmap.yaml\n",
            ),
            ("deploy/configmap.yaml", &configmap("v1")),
        ],
        "first",
    );
    let apps = work.path().join("apps");
    std::fs::create_dir_all(&apps).unwrap();
    // An hour between polls: only the first poll and the webhook move the App.
    std::fs::write(
        apps.join("git.yaml"),
        format!(
            "apiVersion: cd.wardn.space/v1alpha1\nkind: App\nmetadata:\n  name: git\n\
             spec:\n  source:\n    type: Git\n    git:\n      repoURL: {}\n      branch: main\n\
             \x20     path: deploy\n      interval: 1h\n\
             \x20 destination:\n    namespace: staging\n  syncPolicy:\n    automated: true\n",
            upstream.url()
        ),
    )
    .unwrap();
    let options = ServeOptions {
        listen: "127.0.0.1:0".parse().unwrap(),
        data_dir: work.path().join("data"),
        database_url: None,
        admin_password: Some(PASSWORD.into()),
        internal_token: None,
        webhook_secret: Some("hook".into()),
        apps_dir: Some(apps),
        management_kubeconfig: Some(sim.kubeconfig.clone()),
        probe_interval: Duration::from_secs(3600),
        probe_timeout: Duration::from_secs(5),
        scheduling: wardn::reconcile::upkeep::Scheduling::default(),
    };
    std::fs::create_dir_all(&options.data_dir).unwrap();
    let server = Server::bind(options, Sealer::new(&[7u8; 32], None))
        .await
        .unwrap();
    let base = format!("http://{}", server.addr);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(server.run(async move {
        let _ = stopped.await;
    }));

    let value = || {
        sim.cluster
            .get_object("v1", "ConfigMap", Some("staging"), "git-config")
            .map(|o| o["data"]["k"].clone())
    };
    let mut seen = None;
    for _ in 0..600 {
        seen = value();
        if seen == Some(json!("v1")) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(seen, Some(json!("v1")));

    upstream.commit(&[("deploy/configmap.yaml", &configmap("v2"))], "second");
    let body = serde_json::to_vec(&json!({"repoURL": upstream.url()})).unwrap();
    let response = reqwest::Client::new()
        .post(format!("{base}/api/v1/webhooks/git"))
        .header(
            "x-wardn-signature",
            wardn::sources::webhook::sign(b"hook", &body),
        )
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    for _ in 0..600 {
        seen = value();
        if seen == Some(json!("v2")) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(seen, Some(json!("v2")));

    stop.send(()).unwrap();
    task.await.unwrap().unwrap();
}
