//! `wardn serve --role server|operator`: a server-role process holds the registry; an
//! operator-role process (in-process, port 0) reconciles an App onto a kubesim cluster
//! registered on the server, resolving it through `/internal/clusters/{name}/kubeconfig`;
//! with a wrong internal token the App's status names the 401. The operator serves health
//! and nothing of the user API.

mod common;
mod support;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use support::server::{INTERNAL_TOKEN, TestServer};
use wardn::app::Phase;
use wardn::clusters::registry::RegisterRequest;
use wardn::daemon::operator::OperatorOptions;
use wardn::daemon::runner::Runner;
use wardn::server::OperatorServer;

fn write_app(root: &Path) -> std::path::PathBuf {
    let source = root.join("source");
    std::fs::create_dir_all(&source).unwrap();
    std::fs::write(
        source.join("configmap.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-operator\ndata:\n  k: v\n",
    )
    .unwrap();
    let apps = root.join("apps");
    std::fs::create_dir_all(&apps).unwrap();
    std::fs::write(
        apps.join("app.yaml"),
        format!(
            "apiVersion: cd.wardn.space/v1alpha1\nkind: App\nmetadata:\n  name: remote\n  namespace: wardn\n\
             spec:\n  source:\n    type: Directory\n    directory:\n      path: {}\n\
             \x20 destination:\n    cluster: target\n    namespace: team-a\n\
             \x20 syncPolicy:\n    automated: true\n",
            source.display()
        ),
    )
    .unwrap();
    apps
}

/// The options of an operator of `server` reconciling `apps`, its mirrors in `data`.
fn operator_options(
    server: &str,
    token: &str,
    apps: Option<&Path>,
    data: &Path,
) -> OperatorOptions {
    OperatorOptions {
        listen: "127.0.0.1:0".parse().unwrap(),
        data_dir: data.to_path_buf(),
        apps_dir: apps.map(Path::to_path_buf),
        server: server.to_string(),
        server_ca_file: None,
        internal_token: token.to_string(),
        management_kubeconfig: None,
        app_namespaces: Vec::new(),
        cache_ttl: Duration::from_secs(60),
        timeout: Duration::from_secs(5),
        scheduling: Default::default(),
        pipeline: Default::default(),
        shards: None,
        replica_id: None,
        git_ca_file: None,
        git_timeout: Duration::from_secs(60),
        notify: Vec::new(),
        notify_secret: None,
        public_url: None,
    }
}

async fn start_operator(
    server: &str,
    token: &str,
    apps: &Path,
    data: &Path,
    git_ca_file: Option<std::path::PathBuf>,
) -> (Arc<Runner>, String, tokio::sync::oneshot::Sender<()>) {
    start_operator_with(OperatorOptions {
        git_ca_file,
        ..operator_options(server, token, Some(apps), data)
    })
    .await
}

/// Starts an operator with `options`: its runner, its base URL and what stops it.
async fn start_operator_with(
    options: OperatorOptions,
) -> (Arc<Runner>, String, tokio::sync::oneshot::Sender<()>) {
    let operator = OperatorServer::bind(options).await.unwrap();
    let runner = Arc::clone(operator.runner());
    let base = format!("http://{}", operator.addr);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(operator.run(async move {
        let _ = stopped.await;
    }));
    (runner, base, stop)
}

/// A server-role test server on which the kubesim cluster of `sim` is registered as `target`
/// (namespace `team-a` allowed).
async fn server_with_target(sim: &common::Sim) -> TestServer {
    let server = TestServer::start(None).await;
    register_target(&server, sim).await;
    server
}

/// Registers the kubesim cluster of `sim` on `server` as `target` (namespace `team-a`).
async fn register_target(server: &TestServer, sim: &common::Sim) {
    server
        .registry
        .register(
            "tests",
            RegisterRequest {
                name: "target".into(),
                server_url: sim.cluster.url(),
                kubeconfig: sim.cluster.kubeconfig(),
                namespaces: vec!["team-a".into()],
                allow_insecure_tls: false,
            },
        )
        .await
        .unwrap();
}

/// Waits (up to a minute) until `done` holds for the status of the App `wardn/remote`.
async fn wait_for(runner: &Runner, done: impl Fn(&wardn::app::AppStatus) -> bool) -> bool {
    wait_for_app(runner, "wardn/remote", done).await
}

/// Waits (up to a minute) until `done` holds for the status of the App `key`.
async fn wait_for_app(
    runner: &Runner,
    key: &str,
    done: impl Fn(&wardn::app::AppStatus) -> bool,
) -> bool {
    for _ in 0..600 {
        if runner.status(key).is_some_and(|s| done(&s)) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_deploys_to_a_cluster_registered_on_the_server() {
    let sim = common::start(&["team-a"]).await;
    let server = server_with_target(&sim).await;
    let work = tempfile::tempdir().unwrap();
    let apps = write_app(work.path());

    let (runner, base, stop) = start_operator(
        &server.base,
        INTERNAL_TOKEN,
        &apps,
        &work.path().join("ok"),
        None,
    )
    .await;
    let synced = wait_for(&runner, |s| s.phase == Some(Phase::Synced)).await;
    assert!(synced, "{:?}", runner.status("wardn/remote"));
    let applied = sim
        .cluster
        .get_object("v1", "ConfigMap", Some("team-a"), "from-operator")
        .expect("the operator applied the App's ConfigMap");
    assert_eq!(applied["data"]["k"], "v");

    // Health only: the user API is not served by an operator.
    let http = reqwest::Client::new();
    let health = http
        .get(format!("{base}/api/v1/health"))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
    let clusters = http
        .get(format!("{base}/api/v1/clusters"))
        .send()
        .await
        .unwrap();
    assert_eq!(clusters.status(), 404);
    // A `--role all` server refuses an operator's reports (409), and the operator counts them.
    let refused = wardn_metric(
        &format!("{base}/metrics"),
        "wardn_server_reports_refused_total",
    )
    .await;
    assert!(refused.is_some_and(|n| n >= 1.0), "{refused:?}");
    let _ = stop.send(());

    // A wrong internal token: the App fails and its status names the 401.
    let (runner, _, stop) = start_operator(
        &server.base,
        "wrong-token",
        &apps,
        &work.path().join("bad"),
        None,
    )
    .await;
    let failed = wait_for(&runner, |s| {
        s.phase == Some(Phase::Failed) && s.message.as_deref().is_some_and(|m| m.contains("401"))
    })
    .await;
    assert!(failed, "{:?}", runner.status("wardn/remote"));
    let _ = stop.send(());
}

/// An operator fetches a private repository (the real `git http-backend` over HTTPS, basic
/// authentication, a CA given with `--git-ca-file`) with the credentials registered on the
/// server: none registered, the App fails on authentication; once they are registered, its
/// next poll uses them and the App syncs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_fetches_a_private_repository_with_credentials_registered_on_the_server() {
    use support::Upstream;
    use support::https_git::{Auth, HttpsGitServer};

    let sim = common::start(&["team-a"]).await;
    let server = server_with_target(&sim).await;
    let work = tempfile::tempdir().unwrap();
    let root = work.path().join("srv");
    let upstream = Upstream::init(&work.path().join("upstream"));
    upstream.commit(
        &[(
            "deploy/configmap.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: private-config\ndata:\n  k: v1\n",
        )],
        "first",
    );
    upstream.push_to_bare(&root, "repo.git");
    let git_server = HttpsGitServer::start(root, Auth::Basic("ci".into(), "git-pass".into()));
    let ca_file = work.path().join("git-ca.pem");
    std::fs::write(&ca_file, &git_server.ca_pem).unwrap();
    let apps = work.path().join("apps");
    std::fs::create_dir_all(&apps).unwrap();
    std::fs::write(
        apps.join("private.yaml"),
        format!(
            "apiVersion: cd.wardn.space/v1alpha1\nkind: App\nmetadata:\n  name: private\n  namespace: wardn\n\
             spec:\n  source:\n    type: Git\n    git:\n      repoURL: {}\n      branch: main\n\
             \x20     path: deploy\n\
             \x20 destination:\n    cluster: target\n    namespace: team-a\n\
             \x20 syncPolicy:\n    automated: true\n",
            git_server.url("repo.git")
        ),
    )
    .unwrap();

    let (runner, _, stop) = start_operator(
        &server.base,
        INTERNAL_TOKEN,
        &apps,
        &work.path().join("data"),
        Some(ca_file),
    )
    .await;
    let failed = wait_for_app(&runner, "wardn/private", |s| {
        s.phase == Some(Phase::Failed)
            && s.message
                .as_deref()
                .is_some_and(|m| m.contains("authentication failed"))
    })
    .await;
    assert!(failed, "{:?}", runner.status("wardn/private"));

    server
        .state
        .repositories()
        .add(
            "tests",
            wardn::sources::repositories::AddRequest {
                url: git_server.url("repo"),
                username: Some("ci".into()),
                password: Some("git-pass".into()),
                token: None,
                webhook_secret: None,
            },
        )
        .await
        .unwrap();
    let synced = wait_for_app(&runner, "wardn/private", |s| s.phase == Some(Phase::Synced)).await;
    assert!(synced, "{:?}", runner.status("wardn/private"));
    let applied = sim
        .cluster
        .get_object("v1", "ConfigMap", Some("team-a"), "private-config")
        .expect("the operator applied the private repository's ConfigMap");
    assert_eq!(applied["data"]["k"], "v1");
    let _ = stop.send(());
}

/// A push webhook delivered to a `--role server` process reaches the operators: the server
/// records it (200) and the operator polls the repository at once, although its App polls
/// hourly. Hostile: a wrongly signed delivery (401) records nothing; the internal route
/// answers only the internal token and names a bad `since_ms`. Long run: two hundred
/// deliveries of one push keep one row, and the operator still follows the next ten
/// pushes, each deployed in turn. A push the store cannot take is a 503.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_delivered_to_the_server_reaches_the_operators() {
    use support::Upstream;
    use support::server::WEBHOOK_SECRET;
    use wardn::sources::webhook::sign;

    let sim = common::start(&["team-a"]).await;
    let server = TestServer::start_with_options(|options| options.reconcile_apps = false).await;
    register_target(&server, &sim).await;
    let work = tempfile::tempdir().unwrap();
    let upstream = Upstream::init(&work.path().join("upstream"));
    let root = work.path().join("srv");
    let publish = |version: &str| {
        upstream.commit(
            &[(
                "deploy/configmap.yaml",
                &format!(
                    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: pushed\ndata:\n  version: \"{version}\"\n"
                ),
            )],
            &format!("version {version}"),
        );
        upstream.push_to_bare(&root, "repo.git")
    };
    let bare = publish("1");
    let apps = work.path().join("apps");
    std::fs::create_dir_all(&apps).unwrap();
    std::fs::write(
        apps.join("pushed.yaml"),
        format!(
            "apiVersion: cd.wardn.space/v1alpha1\nkind: App\nmetadata:\n  name: pushed\n  namespace: wardn\n\
             spec:\n  source:\n    type: Git\n    git:\n      repoURL: {}\n      branch: main\n\
             \x20     path: deploy\n      interval: 1h\n\
             \x20 destination:\n    cluster: target\n    namespace: team-a\n\
             \x20 syncPolicy:\n    automated: true\n",
            bare.display()
        ),
    )
    .unwrap();
    let (runner, operator, stop) = start_operator(
        &server.base,
        INTERNAL_TOKEN,
        &apps,
        &work.path().join("data"),
        None,
    )
    .await;
    let deployed = |version: &str| {
        let (sim, version) = (&sim, version.to_string());
        move |_: &wardn::app::AppStatus| {
            sim.cluster
                .get_object("v1", "ConfigMap", Some("team-a"), "pushed")
                .is_some_and(|cm| cm["data"]["version"] == version.as_str())
        }
    };
    assert!(
        wait_for_app(&runner, "wardn/pushed", deployed("1")).await,
        "{:?}",
        runner.status("wardn/pushed")
    );

    let http = reqwest::Client::new();
    let body = serde_json::json!({"repoURL": bare.to_str().unwrap()}).to_string();
    let deliver = |secret: &'static str| {
        http.post(server.url("/api/v1/webhooks/git"))
            .header("content-type", "application/json")
            .header(
                "x-wardn-signature",
                sign(secret.as_bytes(), body.as_bytes()),
            )
            .body(body.clone())
            .send()
    };
    let recorded = || async {
        let answer = http
            .get(server.url("/internal/pushes"))
            .bearer_auth(INTERNAL_TOKEN)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 200);
        answer.json::<serde_json::Value>().await.unwrap()["pushes"]
            .as_array()
            .unwrap()
            .clone()
    };

    // Hostile: a wrongly signed delivery is refused and records nothing.
    publish("2");
    let refused = deliver("not-the-secret").await.unwrap();
    assert_eq!(refused.status(), 401);
    assert!(recorded().await.is_empty());
    // Signed: recorded (200), and the operator follows within seconds.
    let answer = deliver(WEBHOOK_SECRET).await.unwrap();
    assert_eq!(answer.status(), 200, "{}", answer.text().await.unwrap());
    assert!(
        wait_for_app(&runner, "wardn/pushed", deployed("2")).await,
        "{:?}",
        runner.status("wardn/pushed")
    );

    // The internal route: the internal token only; a bad since_ms is named.
    let user = server.token().await;
    for bearer in [user.as_str(), "", "internal-token-for-tests-012345678"] {
        let answer = http
            .get(server.url("/internal/pushes"))
            .bearer_auth(bearer)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 401, "bearer {bearer:?}");
    }
    for query in ["since_ms=-1", "since_ms=ten", "since_ms=1.5", "after=0"] {
        let answer = http
            .get(server.url(&format!("/internal/pushes?{query}")))
            .bearer_auth(INTERNAL_TOKEN)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 400, "{query}");
        let text = answer.text().await.unwrap();
        assert!(
            text.contains(query.split('=').next().unwrap()),
            "{query}: {text}"
        );
    }

    // Long run: two hundred deliveries keep one row; the next push is still followed.
    for _ in 0..200 {
        assert_eq!(deliver(WEBHOOK_SECRET).await.unwrap().status(), 200);
    }
    let rows = recorded().await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["repository"], format!("file://{}", bare.display()));
    // And ten pushes in a row are each deployed in turn, by push alone.
    for version in 3..13 {
        let version = version.to_string();
        publish(&version);
        assert_eq!(deliver(WEBHOOK_SECRET).await.unwrap().status(), 200);
        assert!(
            wait_for_app(&runner, "wardn/pushed", deployed(&version)).await,
            "version {version}: {:?}",
            runner.status("wardn/pushed")
        );
    }
    // Seen in the metrics: the server answered 211 deliveries 200 and one 401; the operator
    // polled for at least the eleven versions it deployed, and counts its failed readings.
    let metrics = |base: String| {
        let http = http.clone();
        async move {
            let text = http.get(format!("{base}/metrics")).send().await.unwrap();
            text.text().await.unwrap()
        }
    };
    let served = metrics(server.base.clone()).await;
    assert!(
        served.contains("wardn_webhook_deliveries_total{code=\"200\"} 211"),
        "{served}"
    );
    assert!(
        served.contains("wardn_webhook_deliveries_total{code=\"401\"} 1"),
        "{served}"
    );
    let followed = metrics(operator).await;
    let polled: u64 = followed
        .lines()
        .find_map(|line| line.strip_prefix("wardn_server_pushes_polled_total "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("{followed}"));
    assert!((11..=211).contains(&polled), "{polled}: {followed}");
    assert!(
        followed.contains("wardn_server_push_reads_failed_total "),
        "{followed}"
    );
    let _ = stop.send(());

    // A push that cannot be recorded (its table is gone) is a 503 naming the repository, so
    // the forge delivers it again.
    let database = format!(
        "sqlite://{}",
        server.data.path().join(wardn::store::SQLITE_FILE).display()
    );
    support::execute(&database, "DROP TABLE git_pushes").await;
    let failed = deliver(WEBHOOK_SECRET).await.unwrap();
    assert_eq!(failed.status(), 503);
    let text = failed.text().await.unwrap();
    assert!(
        text.contains("cannot pass on the push of file://"),
        "{text}"
    );
}

/// Differential against the forges' documented push payloads: a `--role server` process
/// records every spelling of the pushed repository that GitHub's and GitLab's push events
/// carry (https, ssh, git), so an operator's App following the repository by any of them
/// polls it; a delivery signed with another secret records nothing.
#[tokio::test]
async fn the_server_records_every_spelling_a_forge_sends() {
    use support::server::WEBHOOK_SECRET;
    use wardn::sources::url::parse_repo_url;
    use wardn::sources::webhook::sign;

    let server = TestServer::start_with_options(|options| options.reconcile_apps = false).await;
    // Abridged from GitHub's "push" event and GitLab's "Push events" documentation.
    let github = serde_json::json!({
        "ref": "refs/heads/main",
        "repository": {
            "full_name": "Codertocat/Hello-World",
            "html_url": "https://github.com/Codertocat/Hello-World",
            "url": "https://github.com/Codertocat/Hello-World",
            "git_url": "git://github.com/Codertocat/Hello-World.git",
            "ssh_url": "git@github.com:Codertocat/Hello-World.git",
            "clone_url": "https://github.com/Codertocat/Hello-World.git",
            "homepage": null
        }
    });
    let gitlab = serde_json::json!({
        "object_kind": "push",
        "project": {
            "web_url": "http://example.com/mike/diaspora",
            "git_ssh_url": "git@example.com:mike/diaspora.git",
            "git_http_url": "http://example.com/mike/diaspora.git"
        },
        "repository": {
            "url": "git@example.com:mike/diaspora.git",
            "homepage": "http://example.com/mike/diaspora",
            "git_http_url": "http://example.com/mike/diaspora.git",
            "git_ssh_url": "git@example.com:mike/diaspora.git"
        }
    });
    let http = reqwest::Client::new();
    let recorded = || async {
        let answer: serde_json::Value = http
            .get(server.url("/internal/pushes"))
            .bearer_auth(INTERNAL_TOKEN)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        answer["pushes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["repository"].as_str().unwrap().to_string())
            .collect::<std::collections::BTreeSet<String>>()
    };
    for payload in [&github, &gitlab] {
        let body = payload.to_string();
        let refused = http
            .post(server.url("/api/v1/webhooks/git"))
            .header(
                "x-hub-signature-256",
                sign(b"another secret", body.as_bytes()),
            )
            .body(body.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(refused.status(), 401);
        assert!(recorded().await.is_empty());
    }
    for (payload, header) in [
        (&github, "x-hub-signature-256"),
        (&gitlab, "x-gitlab-token"),
    ] {
        let body = payload.to_string();
        let signature = match header {
            "x-gitlab-token" => WEBHOOK_SECRET.to_string(),
            _ => sign(WEBHOOK_SECRET.as_bytes(), body.as_bytes()),
        };
        let answer = http
            .post(server.url("/api/v1/webhooks/git"))
            .header(header, signature)
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 200, "{}", answer.text().await.unwrap());
    }
    let keys = recorded().await;
    for spelling in [
        "https://github.com/Codertocat/Hello-World",
        "git@github.com:Codertocat/Hello-World.git",
        "git://github.com/Codertocat/Hello-World",
        "http://example.com/mike/diaspora.git",
        "git@example.com:mike/diaspora.git",
    ] {
        let key = parse_repo_url(spelling).unwrap().key;
        assert!(keys.contains(key.as_str()), "{spelling}: {keys:?}");
    }
}

/// A `--role server` process says that it reconciles no Apps, so its empty App list does not
/// read as an empty fleet: the API's `reconciles_apps` is false (true on `--role all`), and
/// `wardn apps list` notes it on stderr and still succeeds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_role_says_it_reconciles_no_apps() {
    let server = TestServer::start_with_options(|options| options.reconcile_apps = false).await;
    let all = TestServer::start(None).await;
    for (process, reconciles) in [(&server, false), (&all, true)] {
        let token = process.token().await;
        let list: serde_json::Value = process
            .http()
            .get(process.url("/api/v1/apps"))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(list["reconciles_apps"], reconciles, "{list}");
        assert_eq!(list["apps"], serde_json::json!([]), "{list}");
        let token = token.clone();
        let base = process.base.clone();
        let output = tokio::task::spawn_blocking(move || {
            std::process::Command::new(env!("CARGO_BIN_EXE_wardn"))
                .args(["apps", "list"])
                .env("WARDN_SERVER", &base)
                .env("WARDN_TOKEN", &token)
                .env("WARDN_CONFIG_DIR", "/nonexistent-wardn-config")
                .output()
                .unwrap()
        })
        .await
        .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{stderr}");
        assert_eq!(
            stderr.contains("reconciles no Apps (--role server)"),
            !reconciles,
            "{stderr}"
        );
    }
}

/// An operator sends notifications as a `--role all` process does: every App's to
/// `--notify-url` (JSON, signed with `WARDN_NOTIFY_SECRET`, retried after a 500) and each
/// App's to its own `spec.notify`; a Held plan's links to the approve route of the server's
/// `--public-url` (the server hands the approval to the operator).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_notifies_every_apps_events_and_each_apps_own_targets() {
    use support::receiver::receiver;
    use wardn::notify::{Format, Target, signature};

    const SECRET: &str = "operator-notify-secret";
    let sim = common::start(&["team-a"]).await;
    let server = server_with_target(&sim).await;
    let (hooks, received) = receiver().await;
    let work = tempfile::tempdir().unwrap();
    let source = work.path().join("source");
    std::fs::create_dir_all(&source).unwrap();
    std::fs::write(
        source.join("cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: gated\ndata:\n  k: v\n",
    )
    .unwrap();
    let apps = work.path().join("apps");
    std::fs::create_dir_all(&apps).unwrap();
    let app = |name: &str, cluster: &str, extra: &str| {
        format!(
            "apiVersion: cd.wardn.space/v1alpha1\nkind: App\nmetadata:\n  name: {name}\n  namespace: wardn\n\
             spec:\n  source:\n    type: Directory\n    directory:\n      path: {}\n\
             \x20 destination:\n    cluster: {cluster}\n    namespace: team-a\n\
             \x20 syncPolicy:\n    automated: true\n    requiresApproval: true\n{extra}",
            source.display()
        )
    };
    let own = format!("  notify:\n  - url: {hooks}/app\n");
    std::fs::write(apps.join("gated.yaml"), app("gated", "target", &own)).unwrap();
    std::fs::write(apps.join("lost.yaml"), app("lost", "nowhere", "")).unwrap();

    let (runner, _, stop) = start_operator_with(OperatorOptions {
        notify: vec![Target {
            url: format!("{hooks}/flaky"),
            format: Format::Json,
        }],
        notify_secret: Some(SECRET.into()),
        public_url: Some("https://wardn.example/".into()),
        ..operator_options(
            &server.base,
            INTERNAL_TOKEN,
            Some(&apps),
            &work.path().join("data"),
        )
    })
    .await;
    let events = |path: &str, event: &str, app: &str| -> Vec<(Option<String>, serde_json::Value)> {
        received
            .lock()
            .iter()
            .filter(|(p, _, v)| p == path && v["event"] == event && v["app"] == app)
            .map(|(_, signed, v)| (signed.clone(), v.clone()))
            .collect()
    };
    assert!(
        wait_for_app(&runner, "wardn/gated", |_| {
            !events("/flaky", "Held", "wardn/gated").is_empty()
                && !events("/app", "Held", "wardn/gated").is_empty()
                && !events("/flaky", "Failed", "wardn/lost").is_empty()
        })
        .await,
        "notifications: {:?}; statuses {:?} {:?}",
        received.lock(),
        runner.status("wardn/gated"),
        runner.status("wardn/lost")
    );
    let held = runner.status("wardn/gated").unwrap();
    assert_eq!(held.phase, Some(Phase::Held));
    let (signed, body) = events("/flaky", "Held", "wardn/gated").remove(0);
    assert_eq!(body["planHash"], held.plan_hash.clone().unwrap().as_str());
    assert_eq!(body["address"], "target/gated");
    assert_eq!(
        body["approveUrl"], "https://wardn.example/api/v1/apps/target/gated/approve",
        "{body}"
    );
    assert_eq!(
        signed.as_deref(),
        Some(signature(SECRET.as_bytes(), body.to_string().as_bytes()).as_str())
    );
    // Each App's own targets get its events only.
    assert!(events("/app", "Failed", "wardn/lost").is_empty());
    let _ = stop.send(());
}

/// An operator reaches a server serving `https://` under a private CA when given
/// `--server-ca-file`: without it every request to the server fails on the certificate (the
/// App's status says so); with it the App deploys. Hostile: a CA file that is missing or holds
/// no certificate, and a server URL that is not http(s), stop the operator naming the flag.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_trusts_the_server_ca_file() {
    let sim = common::start(&["team-a"]).await;
    let certs = tempfile::tempdir().unwrap();
    let server = TestServer::start_https(certs.path()).await;
    assert!(server.base.starts_with("https://"), "{}", server.base);
    register_target(&server, &sim).await;
    let work = tempfile::tempdir().unwrap();
    let apps = write_app(work.path());

    let (runner, _, stop) = start_operator(
        &server.base,
        INTERNAL_TOKEN,
        &apps,
        &work.path().join("untrusted"),
        None,
    )
    .await;
    let failed = wait_for(&runner, |s| {
        s.phase == Some(Phase::Failed)
            && s.message
                .as_deref()
                .is_some_and(|m| m.contains("certificate"))
    })
    .await;
    assert!(failed, "{:?}", runner.status("wardn/remote"));
    let _ = stop.send(());

    let ca = certs.path().join("ca.pem");
    let (runner, _, stop) = start_operator_with(OperatorOptions {
        server_ca_file: Some(ca.clone()),
        ..operator_options(
            &server.base,
            INTERNAL_TOKEN,
            Some(&apps),
            &work.path().join("trusted"),
        )
    })
    .await;
    let synced = wait_for(&runner, |s| s.phase == Some(Phase::Synced)).await;
    assert!(synced, "{:?}", runner.status("wardn/remote"));
    let _ = stop.send(());

    let not_pem = work.path().join("not.pem");
    std::fs::write(&not_pem, "not a certificate").unwrap();
    for (base, ca_file, named) in [
        (
            server.base.as_str(),
            Some(work.path().join("missing.pem")),
            "--server-ca-file",
        ),
        (server.base.as_str(), Some(not_pem), "--server-ca-file"),
        ("wardn.wardn.svc", None, "--server"),
    ] {
        let options = OperatorOptions {
            server_ca_file: ca_file,
            ..operator_options(
                base,
                INTERNAL_TOKEN,
                Some(&apps),
                &work.path().join("refused"),
            )
        };
        let err = OperatorServer::bind(options).await.err().unwrap();
        assert!(err.to_string().contains(named), "{named}: {err}");
    }
}

#[tokio::test]
async fn operator_settings_are_checked() {
    let work = tempfile::tempdir().unwrap();
    let options = operator_options("", INTERNAL_TOKEN, None, work.path());
    let err = OperatorServer::bind(options.clone()).await.err().unwrap();
    assert!(err.to_string().contains("--server URL"), "{err}");
    let err = OperatorServer::bind(OperatorOptions {
        server: "http://127.0.0.1:1".into(),
        internal_token: String::new(),
        ..options.clone()
    })
    .await
    .err()
    .unwrap();
    assert!(err.to_string().contains("WARDN_INTERNAL_TOKEN"), "{err}");
    // Hostile: an id the server would list under a name no Pod can have.
    for id in ["", "Op_1", "op 1", "-op", &"a".repeat(201)] {
        let err = OperatorServer::bind(OperatorOptions {
            server: "http://127.0.0.1:1".into(),
            replica_id: Some(id.to_string()),
            ..options.clone()
        })
        .await
        .err()
        .unwrap();
        assert!(err.to_string().contains("--replica-id"), "{id}: {err}");
    }
}

#[test]
fn the_binary_refuses_inconsistent_roles() {
    let run = |args: &[&str]| {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_wardn"))
            .args(args)
            .env_remove("WARDN_SERVER")
            .env_remove("WARDN_INTERNAL_TOKEN")
            .env_remove("WARDN_APPS_DIR")
            .env_remove("WARDN_ROLE")
            .output()
            .unwrap();
        assert!(!output.status.success(), "{output:?}");
        String::from_utf8_lossy(&output.stderr).into_owned()
    };
    let server = run(&["serve", "--role", "server", "--apps", "/nonexistent"]);
    assert!(
        server.contains("--role server reconciles no Apps"),
        "{server}"
    );
    let sqlite = run(&["serve", "--shards", "auto", "--listen", "127.0.0.1:0"]);
    assert!(
        sqlite.contains("--shards auto needs a store every replica shares"),
        "{sqlite}"
    );
    let server = run(&["serve", "--role", "server", "--shards", "auto"]);
    assert!(server.contains("drop --shards"), "{server}");
    for (id, reason) in [
        ("Wardn-0", "only lowercase letters"),
        ("-r0", "start and end"),
        ("", "must not be empty"),
    ] {
        let bad = run(&[
            "serve",
            "--shards",
            "auto",
            &format!("--replica-id={id}"),
            "--database-url",
            "postgres://127.0.0.1:1/none",
        ]);
        assert!(
            bad.contains("--replica-id") && bad.contains(reason),
            "{id}: {bad}"
        );
    }
    let short = run(&[
        "serve",
        "--role",
        "operator",
        "--shards",
        "auto",
        "--replica-id",
        "r0",
        "--lease-duration",
        "1s",
    ]);
    assert!(short.contains("--lease-duration"), "{short}");
    let operator = run(&["serve", "--role", "operator", "--listen", "127.0.0.1:0"]);
    assert!(
        operator.contains("--role operator needs --server URL"),
        "{operator}"
    );
    let unsharded = run(&["serve", "--role", "operator", "--replica-id", "Op_1"]);
    assert!(
        unsharded.contains("--replica-id \"Op_1\"") && unsharded.contains("only lowercase"),
        "{unsharded}"
    );
    assert!(!unsharded.contains("stack backtrace"), "{unsharded}");
    // A careless operator: settings only the server uses are refused, named, not ignored.
    for (flags, named) in [
        (
            &["--database-url", "postgres://db/wardn"][..],
            "drop --database-url",
        ),
        (
            &["--tls-cert", "cert.pem", "--tls-key", "key.pem"],
            "drop --tls-cert",
        ),
    ] {
        let mut args = vec![
            "serve",
            "--role",
            "operator",
            "--server",
            "http://127.0.0.1:1",
        ];
        args.extend_from_slice(flags);
        let refused = run(&args);
        assert!(refused.contains(named), "{flags:?}: {refused}");
        assert!(!refused.contains("stack backtrace"), "{flags:?}: {refused}");
    }
}

/// The value of the unlabelled sample `name` on the metrics page at `url`.
async fn wardn_metric(url: &str, name: &str) -> Option<f64> {
    let text = reqwest::get(url).await.unwrap().text().await.unwrap();
    text.lines()
        .find_map(|line| line.strip_prefix(&format!("{name} ")))
        .and_then(|value| value.trim().parse().ok())
}

/// A `--role server` test server on which the kubesim cluster of `sim` is registered as
/// `target`.
async fn server_role_with_target(sim: &common::Sim) -> TestServer {
    let server = TestServer::start_with_options(|options| options.reconcile_apps = false).await;
    register_target(&server, sim).await;
    server
}

/// Waits (up to a minute) until `done` holds for what `read` answers; panics naming `what`.
async fn until_value<F, Fut>(
    what: &str,
    read: F,
    done: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = serde_json::Value>,
{
    let mut last = serde_json::Value::Null;
    for _ in 0..600 {
        last = read().await;
        if done(&last) {
            return last;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{what}: still {last}");
}

/// The split install's operations: the operator reports its Apps to the `--role server`
/// process, which lists them with their statuses; a Held plan approved through the server is
/// applied by the operator, once, and a stale plan hash is refused with nothing applied;
/// syncs and diffs asked for there are the operator's too. Long run: eight source changes in
/// a row, each Held and approved through the server, each applied once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operations_through_the_server_reach_the_operator() {
    let sim = common::start(&["team-a"]).await;
    let server = server_role_with_target(&sim).await;
    let work = tempfile::tempdir().unwrap();
    let apps = work.path().join("apps");
    let source = write_app_with_extra(work.path(), &apps, ("wardn", "gated"), "target", true);
    write_app_with_extra(work.path(), &apps, ("wardn", "plain"), "target", false);
    let write_source =
        |version: u32| write_config_map(&source, "main", "gated-wardn", &format!("v{version}"));
    let (runner, operator, stop) = start_operator(
        &server.base,
        INTERNAL_TOKEN,
        &apps,
        &work.path().join("data"),
        None,
    )
    .await;
    let token = server.token().await;
    let http = server.http();
    let get = |path: &'static str| {
        let request = http.get(server.url(path)).bearer_auth(&token);
        async move {
            let response = request.send().await.unwrap();
            response.json::<serde_json::Value>().await.unwrap()
        }
    };
    let post = |path: &'static str, body: serde_json::Value| {
        let request = http.post(server.url(path)).bearer_auth(&token).json(&body);
        async move {
            let response = request.send().await.unwrap();
            let status = response.status().as_u16();
            (status, response.json::<serde_json::Value>().await.unwrap())
        }
    };
    let data = |name: &str| {
        sim.cluster
            .get_object("v1", "ConfigMap", Some("team-a"), name)
            .map(|cm| cm["data"]["k"].clone())
    };
    let writes = |name: &str| {
        sim.cluster
            .writes()
            .into_iter()
            .filter(|w| w.name == name && w.resource == "configmaps")
            .count()
    };

    // The server lists the operator's Apps with the statuses the operator reports.
    let list = until_value(
        "both Apps listed",
        || get("/api/v1/apps"),
        |list| list["apps"].as_array().is_some_and(|apps| apps.len() == 2),
    )
    .await;
    assert_eq!(list["reconciles_apps"], false, "{list}");
    // Each names the operator that reconciles it (its replica id: host name and process id),
    // and so does `wardn apps list`.
    let replica = format!("-{}", std::process::id());
    for app in list["apps"].as_array().unwrap() {
        let operator = app["operator"].as_str().unwrap_or_default();
        assert!(operator.ends_with(&replica), "{app}");
    }
    let (base, cli_token) = (server.base.clone(), token.clone());
    let output = tokio::task::spawn_blocking(move || {
        std::process::Command::new(env!("CARGO_BIN_EXE_wardn"))
            .args(["apps", "list"])
            .env("WARDN_SERVER", &base)
            .env("WARDN_TOKEN", &cli_token)
            .env("WARDN_CONFIG_DIR", "/nonexistent-wardn-config")
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let table = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{table}");
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[0].contains("OPERATOR"), "{table}");
    assert_eq!(
        lines[1..].iter().filter(|l| l.contains(&replica)).count(),
        2,
        "{table}"
    );
    until_value(
        "plain Synced through the server",
        || get("/api/v1/apps/target/plain"),
        |app| app["phase"] == "Synced",
    )
    .await;
    let held = until_value(
        "gated Held through the server",
        || get("/api/v1/apps/target/gated"),
        |app| app["phase"] == "Held",
    )
    .await;
    assert_eq!(data("gated-wardn"), None, "Held: not applied");

    // Hostile: a stale plan hash is refused by the operator, and nothing is applied.
    let (status, body) = post(
        "/api/v1/apps/target/gated/approve",
        serde_json::json!({"plan_hash": "0".repeat(64)}),
    )
    .await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(
        data("gated-wardn"),
        None,
        "a refused approval applies nothing"
    );

    // Long run: eight changes, each Held, approved through the server, applied once.
    let mut hash = held["status"]["planHash"].as_str().unwrap().to_string();
    for version in 0..8u32 {
        if version > 0 {
            write_source(version);
            let before = hash.clone();
            let held = until_value(
                "a new plan Held through the server",
                || get("/api/v1/apps/target/gated"),
                |app| {
                    app["phase"] == "Held"
                        && app["status"]["planHash"]
                            .as_str()
                            .is_some_and(|h| h != before)
                },
            )
            .await;
            hash = held["status"]["planHash"].as_str().unwrap().to_string();
        }
        let (status, body) = post(
            "/api/v1/apps/target/gated/approve",
            serde_json::json!({"plan_hash": hash}),
        )
        .await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["status"]["phase"], "Synced", "{body}");
        assert_eq!(data("gated-wardn"), Some(format!("v{version}").into()));
        assert_eq!(writes("gated-wardn"), version as usize + 1, "applied once");
        // Approving the same plan again: nothing is Held any more.
        let (again, body) = post(
            "/api/v1/apps/target/gated/approve",
            serde_json::json!({"plan_hash": hash}),
        )
        .await;
        assert_eq!(again, 409, "{body}");
    }
    assert_eq!(
        runner.status("wardn/gated").and_then(|s| s.phase),
        Some(Phase::Synced)
    );

    // A sync and a diff asked for through the server are the operator's.
    let (status, body) = post("/api/v1/apps/target/plain/sync", serde_json::json!({})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"]["phase"], "Synced", "{body}");
    let diff = get("/api/v1/apps/target/plain/diff").await;
    assert!(
        diff.get("plan").is_some() || diff.get("changes").is_some(),
        "{diff}"
    );
    // The server took every report.
    let refused = wardn_metric(
        &format!("{operator}/metrics"),
        "wardn_server_reports_refused_total",
    )
    .await;
    assert_eq!(refused, Some(0.0));
    let _ = stop.send(());
}

/// An operator's heartbeat: between reports of its Apps it sends one every 30 s naming its
/// last report's digest; when the server no longer holds that report (here its rows are
/// deleted from the server's database, as a new database would have none), the heartbeat is
/// answered 409 and the operator sends its Apps again at once, so they are listed again
/// within a period. Its `/metrics` count each kind. An App added or removed is reported at
/// once, whatever the period.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_sends_its_apps_again_when_the_server_lost_them() {
    let sim = common::start(&["team-a"]).await;
    let server = server_role_with_target(&sim).await;
    let work = tempfile::tempdir().unwrap();
    let apps = work.path().join("apps");
    write_app_with_extra(work.path(), &apps, ("wardn", "plain"), "target", false);
    let (_runner, operator, stop) = start_operator(
        &server.base,
        INTERNAL_TOKEN,
        &apps,
        &work.path().join("data"),
        None,
    )
    .await;
    let token = server.token().await;
    let http = server.http();
    let list = || {
        let request = http.get(server.url("/api/v1/apps")).bearer_auth(&token);
        async move { request.send().await.unwrap().json().await.unwrap() }
    };
    let listed = |count: usize| {
        move |list: &serde_json::Value| list["apps"].as_array().is_some_and(|a| a.len() == count)
    };
    until_value("the App listed", list, listed(1)).await;
    // An App added, then removed, is reported at the next look (every 2 s), not at the next
    // heartbeat (30 s): the operator encodes its report again whenever an App changed.
    let prompt = |count: usize| async move {
        for _ in 0..100 {
            if listed(count)(&list().await) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("{count} App(s) not listed within 10 s: {}", list().await);
    };
    write_app_with_extra(work.path(), &apps, ("wardn", "second"), "target", false);
    prompt(2).await;
    std::fs::remove_file(apps.join("wardn-second.yaml")).unwrap();
    prompt(1).await;
    let reports = |kind: &'static str| {
        let operator = operator.clone();
        async move {
            wardn_metric(
                &format!("{operator}/metrics"),
                &format!("wardn_server_app_reports_total{{kind=\"{kind}\"}}"),
            )
            .await
            .unwrap_or_default()
        }
    };
    let sent = reports("apps").await;
    assert!(sent >= 1.0, "{sent}");
    // The server loses the operator's report.
    let database = server.data.path().join(wardn::store::SQLITE_FILE);
    let pool = sqlx::sqlite::SqlitePool::connect(&format!("sqlite://{}", database.display()))
        .await
        .unwrap();
    sqlx::query("DELETE FROM operator_apps")
        .execute(&pool)
        .await
        .unwrap();
    sqlx::query("DELETE FROM operators")
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;
    until_value("the lost App no longer listed", list, listed(0)).await;
    // Within one heartbeat period (30 s; `until_value` waits a minute) it is listed again.
    until_value("the App listed again", list, listed(1)).await;
    assert_eq!(reports("heartbeat_refused").await, 1.0);
    assert_eq!(
        reports("apps").await,
        sent + 1.0,
        "the Apps sent again once"
    );
    let _ = stop.send(());
}

/// Hostile: the routes operators report to take only what an operator sends, with the
/// internal token, on a `--role server` process; each refusal names the field. A long run of
/// reports (the set of Apps changing each time) leaves the server listing the last one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_servers_operator_routes_refuse_what_an_operator_would_not_send() {
    let server = TestServer::start_with_options(|options| options.reconcile_apps = false).await;
    let all = TestServer::start(None).await;
    let http = server.http();
    let app = |name: &str| {
        serde_json::json!({"app": {
            "apiVersion": "cd.wardn.space/v1alpha1", "kind": "App",
            "metadata": {"name": name, "namespace": "wardn"},
            "spec": {
                "source": {"type": "Directory", "directory": {"path": "/srv/apps"}},
                "destination": {"cluster": "target", "namespace": "team-a"}
            }
        }})
    };
    let send =
        |process: &TestServer, method: reqwest::Method, path: &str, token: &str, body: String| {
            let request = http
                .request(method, process.url(path))
                .bearer_auth(token)
                .header("content-type", "application/json")
                .body(body);
            async move {
                let response = request.send().await.unwrap();
                (response.status().as_u16(), response.text().await.unwrap())
            }
        };
    let put = reqwest::Method::PUT;
    let report = |apps: serde_json::Value| serde_json::json!({ "apps": apps }).to_string();
    let user = server.token().await;
    let cases: Vec<(&str, &str, String, u16, &str)> = vec![
        (
            "/internal/operators/op-1/apps",
            user.as_str(),
            report(serde_json::json!([])),
            401,
            "",
        ),
        (
            "/internal/operators/op%201/apps",
            INTERNAL_TOKEN,
            report(serde_json::json!([])),
            400,
            "operator",
        ),
        (
            "/internal/operators/op-1/apps",
            INTERNAL_TOKEN,
            "not json".into(),
            400,
            "body",
        ),
        (
            "/internal/operators/op-1/apps",
            INTERNAL_TOKEN,
            r#"{"apps":[],"extra":1}"#.into(),
            400,
            "extra",
        ),
        (
            "/internal/operators/op-1/apps",
            INTERNAL_TOKEN,
            report(serde_json::json!([app("a"), app("a")])),
            400,
            "reported twice",
        ),
        (
            "/internal/operators/op-1/apps",
            INTERNAL_TOKEN,
            report(serde_json::json!([app("")])),
            400,
            "apps[0].app.metadata.name",
        ),
        (
            "/internal/operators/op-1/apps",
            INTERNAL_TOKEN,
            report(
                serde_json::json!([{"app": {"apiVersion": "cd.wardn.space/v1alpha1", "kind": "App",
            "metadata": {"name": "b", "namespace": "wardn"},
            "spec": {"source": {"type": "Git", "git": {"repoURL": "ftp://x"}},
                     "destination": {"cluster": "target", "namespace": "team-a"}}}}]),
            ),
            400,
            "apps[0] (wardn/b)",
        ),
        (
            "/internal/app-status",
            INTERNAL_TOKEN,
            r#"{"key":"wardn/a","cluster":"target","name":"a","status":{"phase":"Nope"}}"#.into(),
            400,
            "status",
        ),
        (
            "/internal/app-status",
            INTERNAL_TOKEN,
            r#"{"key":"nokey","cluster":"target","name":"a","status":{}}"#.into(),
            400,
            "key",
        ),
        (
            "/internal/app-requests/zz/outcome",
            INTERNAL_TOKEN,
            r#"{"outcome":"{}"}"#.into(),
            404,
            "no request",
        ),
        (
            "/internal/app-requests/0123456789abcdef0123456789abcdef/outcome",
            INTERNAL_TOKEN,
            r#"{"outcome":"{}"}"#.into(),
            404,
            "no request",
        ),
    ];
    for (path, token, body, code, says) in cases {
        let (status, text) = send(&server, put.clone(), path, token, body.clone()).await;
        assert_eq!(status, code, "{path} {body}: {text}");
        assert!(text.contains(says), "{path} {body}: {text}");
    }
    let (status, text) = send(
        &server,
        reqwest::Method::POST,
        "/internal/app-requests/../../etc/claim",
        INTERNAL_TOKEN,
        r#"{"replica":"op-1"}"#.into(),
    )
    .await;
    assert_eq!(status, 404, "{text}");
    // A process that reconciles Apps itself refuses operators' reports.
    let (status, text) = send(
        &all,
        put.clone(),
        "/internal/operators/op-1/apps",
        INTERNAL_TOKEN,
        report(serde_json::json!([app("a")])),
    )
    .await;
    assert_eq!(status, 409, "{text}");
    assert!(text.contains("--role server"), "{text}");

    // Statuses read back a page at a time: a careless query is refused naming the parameter;
    // 1,200 statuses of two clusters come back each once, in key order, whole or by cluster.
    for (query, says) in [
        ("limit=0", "limit"),
        ("limit=501", "limit"),
        ("limit=ten", "limit"),
        ("since=1", "since"),
        ("key=nokey", "key"),
        ("key=wardn%2Fapp-0001&limit=5", "key"),
        ("key=wardn%2Fapp-0001&cluster=east", "key"),
    ] {
        let response = http
            .get(server.url(&format!("/internal/app-status?{query}")))
            .bearer_auth(INTERNAL_TOKEN)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        assert_eq!(status, 400, "{query}: {text}");
        assert!(text.contains(says), "{query}: {text}");
    }
    for i in 0..1200u32 {
        let cluster = if i % 3 == 0 { "east" } else { "west" };
        let body = serde_json::json!({
            "key": format!("wardn/app-{i:04}"), "cluster": cluster, "name": format!("app-{i:04}"),
            "status": {"phase": "Synced"}
        });
        let (status, text) = send(
            &server,
            put.clone(),
            "/internal/app-status",
            INTERNAL_TOKEN,
            body.to_string(),
        )
        .await;
        assert_eq!(status, 204, "{text}");
    }
    let internal_get = |path: String| {
        let request = http.get(server.url(&path)).bearer_auth(INTERNAL_TOKEN);
        async move {
            let response = request.send().await.unwrap();
            response.json::<serde_json::Value>().await.unwrap()
        }
    };
    let read_all = |cluster: Option<&'static str>| {
        let internal_get = &internal_get;
        async move {
            let mut keys = Vec::new();
            let mut after = String::new();
            loop {
                let encoded = percent_encoding::utf8_percent_encode(
                    &after,
                    percent_encoding::NON_ALPHANUMERIC,
                );
                let mut path = format!("/internal/app-status?after={encoded}&limit=200");
                if let Some(cluster) = cluster {
                    path.push_str(&format!("&cluster={cluster}"));
                }
                let page = internal_get(path).await;
                for status in page["statuses"].as_array().unwrap() {
                    assert_eq!(status["status"]["phase"], "Synced");
                    keys.push(status["key"].as_str().unwrap().to_string());
                }
                match page["next"].as_str() {
                    Some(next) => after = next.to_string(),
                    None => return keys,
                }
            }
        }
    };
    let every = read_all(None).await;
    let expected: Vec<String> = (0..1200).map(|i| format!("wardn/app-{i:04}")).collect();
    assert_eq!(every, expected);
    // One App's status by key (a sharded operator reading a promotion's source); none for
    // an App without one.
    for (key, found) in [("wardn/app-0003", 1), ("wardn/app-9999", 0)] {
        let page = internal_get(format!("/internal/app-status?key={key}")).await;
        let statuses = page["statuses"].as_array().unwrap();
        assert_eq!(statuses.len(), found, "{page}");
        assert!(statuses.iter().all(|s| s["key"] == key), "{page}");
        assert_eq!(page["next"], serde_json::Value::Null);
    }
    let east = read_all(Some("east")).await;
    assert_eq!(east.len(), 400);
    assert!(
        east.iter()
            .all(|key| key[10..].parse::<u32>().unwrap() % 3 == 0)
    );

    // Long run: two hundred reports, each a different set of Apps; the server lists the last.
    for round in 0..200u32 {
        let names: Vec<serde_json::Value> = (0..(round % 7))
            .map(|i| app(&format!("app-{round}-{i}")))
            .collect();
        let (status, text) = send(
            &server,
            put.clone(),
            "/internal/operators/op-1/apps",
            INTERNAL_TOKEN,
            report(serde_json::Value::Array(names)),
        )
        .await;
        assert_eq!(status, 204, "{text}");
    }
    // Another operator reads a reported App by key (a promotion's source): the last report's
    // Apps are found as reported, an App of an earlier report is a 404 naming it, a careless
    // query a 400 naming `key`, a user's token a 401, a `--role all` process a 409.
    let reported = |process: &TestServer, query: &str, token: &str| {
        let request = http
            .get(process.url(&format!("/internal/reported-apps?{query}")))
            .bearer_auth(token);
        async move {
            let response = request.send().await.unwrap();
            (response.status().as_u16(), response.text().await.unwrap())
        }
    };
    let found = until_value(
        "the last report's App readable by key",
        || async {
            let (status, text) = reported(&server, "key=wardn%2Fapp-199-2", INTERNAL_TOKEN).await;
            serde_json::json!({"status": status, "text": text})
        },
        |answer| answer["status"] == 200,
    )
    .await;
    let found: serde_json::Value = serde_json::from_str(found["text"].as_str().unwrap()).unwrap();
    assert_eq!(found["app"]["metadata"]["name"], "app-199-2", "{found}");
    assert_eq!(
        found["app"]["spec"]["destination"]["cluster"], "target",
        "{found}"
    );
    for (process, query, token, code, says) in [
        (
            &server,
            "key=wardn%2Fapp-198-2",
            INTERNAL_TOKEN,
            404,
            "App wardn/app-198-2",
        ),
        (&server, "key=nokey", INTERNAL_TOKEN, 400, "key"),
        (&server, "", INTERNAL_TOKEN, 400, "key"),
        (
            &server,
            "key=wardn%2Fa&cluster=east",
            INTERNAL_TOKEN,
            400,
            "key",
        ),
        (&server, "key=wardn%2Fa&name=a", INTERNAL_TOKEN, 400, "key"),
        (&server, "name=", INTERNAL_TOKEN, 400, "key"),
        (
            &server,
            "name=app-199-2&cluster=target",
            INTERNAL_TOKEN,
            200,
            "\"app-199-2\"",
        ),
        (
            &server,
            "name=app-199-2&cluster=east",
            INTERNAL_TOKEN,
            404,
            "app-199-2 on cluster east",
        ),
        (&server, "name=app-198-2", INTERNAL_TOKEN, 404, "app-198-2"),
        (&server, "key=wardn%2Fapp-199-2", user.as_str(), 401, ""),
        (
            &all,
            "key=wardn%2Fapp-199-2",
            INTERNAL_TOKEN,
            409,
            "--role server",
        ),
    ] {
        let (status, text) = reported(process, query, token).await;
        assert_eq!(status, code, "{query}: {text}");
        assert!(text.contains(says), "{query}: {text}");
    }

    // Automatic promotions an operator records: only `wardn/autoPromote`'s, pending when
    // posted, finished once, for the App they were posted for; each careless body named.
    let record = |actor: &str, key: &str, outcome: &str| {
        serde_json::json!({
            "id": 0, "target_key": key, "target": "target/app-199-0", "source": "east/stage",
            "revision": "", "images": [], "actor": actor,
            "created_at": "2026-12-05T00:00:00Z", "plan_hash": "", "outcome": outcome,
        })
    };
    let post = reqwest::Method::POST;
    let auto = "wardn/autoPromote";
    for (body, code, says) in [
        (
            record("alice", "wardn/app-199-0", "pending").to_string(),
            400,
            "actor",
        ),
        (
            record(auto, "wardn/app-199-0", "Synced").to_string(),
            400,
            "outcome",
        ),
        (record(auto, "nokey", "pending").to_string(), 400, "key"),
        ("{}".to_string(), 400, "body"),
    ] {
        let (status, text) = send(
            &server,
            post.clone(),
            "/internal/promotions",
            INTERNAL_TOKEN,
            body,
        )
        .await;
        assert_eq!(status, code, "{text}");
        assert!(text.contains(says), "{says}: {text}");
    }
    let body = record(auto, "wardn/app-199-0", "pending").to_string();
    let (status, text) = send(
        &server,
        post.clone(),
        "/internal/promotions",
        user.as_str(),
        body.clone(),
    )
    .await;
    assert_eq!(status, 401, "{text}");
    let (status, text) = send(
        &all,
        post.clone(),
        "/internal/promotions",
        INTERNAL_TOKEN,
        body.clone(),
    )
    .await;
    assert_eq!(status, 409, "{text}");
    // Long run: a hundred recorded and finished, each once; the App's history lists them all.
    let finish = |id: i64, key: &str, outcome: &str| {
        let mut record = record(auto, key, outcome);
        record["id"] = id.into();
        serde_json::json!({"record": record, "audit": format!("success id={id}")}).to_string()
    };
    let mut ids = std::collections::BTreeSet::new();
    for _ in 0..100 {
        let (status, text) = send(
            &server,
            post.clone(),
            "/internal/promotions",
            INTERNAL_TOKEN,
            body.clone(),
        )
        .await;
        assert_eq!(status, 200, "{text}");
        let id = serde_json::from_str::<serde_json::Value>(&text).unwrap()["id"]
            .as_i64()
            .unwrap();
        assert!(ids.insert(id), "{id} twice");
        let path = format!("/internal/promotions/{id}");
        for (body, code, says) in [
            (
                finish(id + 1, "wardn/app-199-0", "Synced"),
                400,
                "record.id",
            ),
            (
                finish(id, "wardn/app-199-0", "pending"),
                400,
                "record.outcome",
            ),
            (
                finish(id, "wardn/app-199-1", "Synced"),
                409,
                "not an automatic promotion",
            ),
            (finish(id, "wardn/app-199-0", "Synced"), 204, ""),
            (
                finish(id, "wardn/app-199-0", "Synced"),
                409,
                "finished already",
            ),
        ] {
            let (status, text) = send(&server, put.clone(), &path, INTERNAL_TOKEN, body).await;
            assert_eq!(status, code, "{says}: {text}");
            assert!(text.contains(says), "{says}: {text}");
        }
    }
    let (status, text) = send(
        &server,
        put.clone(),
        "/internal/promotions/999999",
        INTERNAL_TOKEN,
        finish(999_999, "wardn/app-199-0", "Synced"),
    )
    .await;
    assert_eq!(status, 404, "{text}");
    let history = get_json(
        &http,
        &server,
        &user,
        "/api/v1/apps/target/app-199-0/promotions",
    )
    .await;
    let listed = history["promotions"].as_array().unwrap();
    assert_eq!(listed.len(), 100, "{history}");
    assert!(
        listed.iter().all(|r| r["outcome"] == "Synced"
            && r["actor"] == auto
            && r["target"] == "target/app-199-0"),
        "{history}"
    );

    // Heartbeats: the digest of the last report taken (the SHA-256 of its body) is 204; any
    // other, an operator never reported, or a careless body is refused, naming why.
    let last: Vec<serde_json::Value> = (0..(199 % 7))
        .map(|i| app(&format!("app-199-{i}")))
        .collect();
    let last_body = report(serde_json::Value::Array(last));
    let digest = wardn::daemon::runner::report_digest(last_body.as_bytes());
    let beat = |digest: &str| serde_json::json!({ "digest": digest }).to_string();
    let zeros = "0".repeat(64);
    let heartbeats: Vec<(&str, &str, String, u16, &str)> = vec![
        (
            "/internal/operators/op-1/heartbeat",
            INTERNAL_TOKEN,
            beat(&digest),
            204,
            "",
        ),
        (
            "/internal/operators/op-1/heartbeat",
            INTERNAL_TOKEN,
            beat(&zeros),
            409,
            "send the Apps again",
        ),
        (
            "/internal/operators/op-2/heartbeat",
            INTERNAL_TOKEN,
            beat(&digest),
            409,
            "operator op-2",
        ),
        (
            "/internal/operators/op-1/heartbeat",
            user.as_str(),
            beat(&digest),
            401,
            "",
        ),
        (
            "/internal/operators/op-1/heartbeat",
            INTERNAL_TOKEN,
            beat(&digest.to_uppercase()),
            400,
            "digest",
        ),
        (
            "/internal/operators/op-1/heartbeat",
            INTERNAL_TOKEN,
            beat("abc"),
            400,
            "digest",
        ),
        (
            "/internal/operators/op-1/heartbeat",
            INTERNAL_TOKEN,
            r#"{"digest":1}"#.into(),
            400,
            "body",
        ),
        (
            "/internal/operators/op-1/heartbeat",
            INTERNAL_TOKEN,
            format!(r#"{{"digest":"{digest}","apps":[]}}"#),
            400,
            "apps",
        ),
        (
            "/internal/operators/op%2F1/heartbeat",
            INTERNAL_TOKEN,
            beat(&digest),
            400,
            "operator",
        ),
    ];
    for (path, token, body, code, says) in heartbeats {
        let (status, text) = send(&server, put.clone(), path, token, body.clone()).await;
        assert_eq!(status, code, "{path} {body}: {text}");
        assert!(text.contains(says), "{path} {body}: {text}");
    }
    let (status, text) = send(
        &all,
        put.clone(),
        "/internal/operators/op-1/heartbeat",
        INTERNAL_TOKEN,
        beat(&digest),
    )
    .await;
    assert_eq!(status, 409, "{text}");
    assert!(text.contains("--role server"), "{text}");
    // Long run: a thousand heartbeats in a row are each taken, and change nothing listed.
    for round in 0..1000 {
        let (status, text) = send(
            &server,
            put.clone(),
            "/internal/operators/op-1/heartbeat",
            INTERNAL_TOKEN,
            beat(&digest),
        )
        .await;
        assert_eq!(status, 204, "heartbeat {round}: {text}");
    }
    let token = server.token().await;
    let listed = until_value(
        "the last report listed",
        || {
            let request = http.get(server.url("/api/v1/apps")).bearer_auth(&token);
            async move { request.send().await.unwrap().json().await.unwrap() }
        },
        |list| {
            let names: Vec<&str> = list["apps"]
                .as_array()
                .map(|apps| apps.iter().filter_map(|a| a["name"].as_str()).collect())
                .unwrap_or_default();
            names == ["app-199-0", "app-199-1", "app-199-2"]
        },
    )
    .await;
    assert_eq!(listed["reconciles_apps"], false);
}

/// Writes ConfigMap `name` (`k: value`) as `dir/file.yaml`.
fn write_config_map(dir: &Path, file: &str, name: &str, value: &str) {
    std::fs::write(
        dir.join(format!("{file}.yaml")),
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  k: {value}\n"
        ),
    )
    .unwrap();
}

/// Writes App `namespace/name` deploying to `cluster` (namespace `team-a`; automated, with
/// prune, requiring approval when `approval`) into `apps`. Its source, `work/namespace/name`
/// (returned), holds ConfigMaps `name-namespace` (`main.yaml`, `k: v0`) and
/// `extra-namespace-name` (`extra.yaml`).
fn write_app_with_extra(
    work: &Path,
    apps: &Path,
    (namespace, name): (&str, &str),
    cluster: &str,
    approval: bool,
) -> std::path::PathBuf {
    let source = work.join(namespace).join(name);
    std::fs::create_dir_all(&source).unwrap();
    std::fs::create_dir_all(apps).unwrap();
    write_config_map(&source, "main", &format!("{name}-{namespace}"), "v0");
    write_config_map(&source, "extra", &format!("extra-{namespace}-{name}"), "v");
    std::fs::write(
        apps.join(format!("{namespace}-{name}.yaml")),
        format!(
            "apiVersion: cd.wardn.space/v1alpha1\nkind: App\nmetadata:\n  name: {name}\n  namespace: {namespace}\n\
             spec:\n  source:\n    type: Directory\n    directory:\n      path: {}\n\
             \x20 destination:\n    cluster: {cluster}\n    namespace: team-a\n\
             \x20 syncPolicy:\n    automated: true\n    prune: true\n    requiresApproval: {approval}\n",
            source.display()
        ),
    )
    .unwrap();
    source
}

/// GETs `path` from `server` with `token` until `done` holds for the answer (see
/// [`until_value`]).
async fn until_app(
    server: &TestServer,
    token: &str,
    path: &str,
    what: &str,
    done: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    let http = server.http();
    until_value(
        what,
        || {
            let request = http.get(server.url(path)).bearer_auth(token);
            async move { request.send().await.unwrap().json().await.unwrap() }
        },
        done,
    )
    .await
}

/// Approves the plan `hash` of the App at `path` (`/api/v1/apps/CLUSTER/NAME`) through
/// `server`: the answer's status code and body.
async fn approve(
    server: &TestServer,
    token: &str,
    path: &str,
    hash: &str,
) -> (u16, serde_json::Value) {
    let response = server
        .http()
        .post(server.url(&format!("{path}/approve")))
        .bearer_auth(token)
        .json(&serde_json::json!({ "plan_hash": hash }))
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

/// The plan hash of an App as the API shows it.
fn plan_hash(app: &serde_json::Value) -> &str {
    app["status"]["planHash"].as_str().unwrap()
}

/// Removes `extra.yaml` from the source `source` of App `CLUSTER/gated` (see
/// [`write_app_with_extra`]), waits until the server shows the prune Held, stops its operator with
/// `stop`, and checks that `next` (another operator) holds the same plan, read back from the
/// server, and applies it once approved through the server.
async fn held_prune_survives(
    server: &TestServer,
    token: &str,
    source: &Path,
    cluster: &str,
    stop: tokio::sync::oneshot::Sender<()>,
    next: &Runner,
) {
    std::fs::remove_file(source.join("extra.yaml")).unwrap();
    let path = format!("/api/v1/apps/{cluster}/gated");
    let held = until_app(server, token, &path, "the prune Held", |app| {
        app["phase"] == "Held" && app["status"]["plan"]["prunes"] == 1
    })
    .await;
    let hash = plan_hash(&held).to_string();
    let _ = stop.send(());
    let key = format!("{cluster}/gated");
    let continued = wait_for_app(next, &key, |status| {
        status.phase == Some(Phase::Held) && status.plan_hash.as_deref() == Some(hash.as_str())
    })
    .await;
    assert!(continued, "the same plan Held: {:?}", next.status(&key));
    let (status, body) = approve(server, token, &path, &hash).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"]["phase"], "Synced", "{body}");
}

/// A restarted (unsharded) operator reads its statuses back from the server before adding
/// its Apps: a plan Held when it stopped is Held again with the same hash and, approved
/// through the server, prunes what its predecessor's inventory names.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_operator_keeps_its_held_plan_and_inventory() {
    let sim = common::start(&["team-a"]).await;
    let server = server_role_with_target(&sim).await;
    let work = tempfile::tempdir().unwrap();
    let apps = work.path().join("apps");
    let source = write_app_with_extra(work.path(), &apps, ("team", "gated"), "target", true);
    let (_, _, first) = start_operator(
        &server.base,
        INTERNAL_TOKEN,
        &apps,
        &work.path().join("first"),
        None,
    )
    .await;
    let token = server.token().await;
    let path = "/api/v1/apps/target/gated";
    let held = until_app(&server, &token, path, "Held", |app| app["phase"] == "Held").await;
    let (status, body) = approve(&server, &token, path, plan_hash(&held)).await;
    assert_eq!(status, 200, "{body}");
    let extra = || {
        sim.cluster
            .get_object("v1", "ConfigMap", Some("team-a"), "extra-team-gated")
    };
    assert!(extra().is_some());
    std::fs::remove_file(source.join("extra.yaml")).unwrap();
    let held = until_app(&server, &token, path, "the prune Held", |app| {
        app["phase"] == "Held" && app["status"]["plan"]["prunes"] == 1
    })
    .await;
    let hash = plan_hash(&held).to_string();
    // Restarted: the first stops, another starts (with a new data directory).
    let _ = first.send(());
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (second, _, second_stop) = start_operator(
        &server.base,
        INTERNAL_TOKEN,
        &apps,
        &work.path().join("second"),
        None,
    )
    .await;
    let continued = wait_for_app(&second, "team/gated", |status| {
        status.phase == Some(Phase::Held) && status.plan_hash.as_deref() == Some(hash.as_str())
    })
    .await;
    assert!(
        continued,
        "the same plan Held: {:?}",
        second.status("team/gated")
    );
    let (status, body) = approve(&server, &token, path, &hash).await;
    assert_eq!(status, 200, "{body}");
    assert!(extra().is_none(), "pruned by the restarted operator");
    let _ = second_stop.send(());
}

/// `list`'s items sorted by their `operator`.
fn sorted(list: &serde_json::Value) -> serde_json::Value {
    let mut items = list.as_array().cloned().unwrap_or_default();
    items.sort_by_key(|o| o["operator"].to_string());
    serde_json::Value::Array(items)
}

/// The split install of the sharded-operator tests: a management cluster (for the Leases, which
/// the server lists too), a `--role server` test server, and two kubesim clusters, `east-0`
/// and `east-1` (namespace `team-a`), registered on it.
async fn split_fleet() -> (common::Sim, TestServer, Vec<(&'static str, common::Sim)>) {
    let management = common::start(&["default"]).await;
    let kubeconfig = management.kubeconfig.clone();
    let server = TestServer::start_with_options(|options| {
        options.reconcile_apps = false;
        options.management_kubeconfig = Some(kubeconfig);
        options.operator_leases = Some("default".into());
    })
    .await;
    let mut sims = Vec::new();
    for name in ["east-0", "east-1"] {
        let sim = common::start(&["team-a"]).await;
        server
            .registry
            .register(
                "tests",
                RegisterRequest {
                    name: name.into(),
                    server_url: sim.cluster.url(),
                    kubeconfig: sim.cluster.kubeconfig(),
                    namespaces: vec!["team-a".into()],
                    allow_insecure_tls: false,
                },
            )
            .await
            .unwrap();
        sims.push((name, sim));
    }
    (management, server, sims)
}

/// Operators `op-0` and `op-1` (`--shards auto`, 3 s Leases in `management`) of `server`,
/// reading the Apps of `apps`, their data directories in `work`.
async fn start_sharded_operators(
    server: &TestServer,
    management: &common::Sim,
    apps: &Path,
    work: &Path,
) -> Vec<(Arc<Runner>, String, tokio::sync::oneshot::Sender<()>)> {
    use wardn::shard::membership::ShardConfig;
    let mut operators = Vec::new();
    for id in ["op-0", "op-1"] {
        let options = OperatorOptions {
            management_kubeconfig: Some(management.kubeconfig.clone()),
            shards: Some(ShardConfig {
                renew_every: Duration::from_millis(250),
                ..ShardConfig::new(id, "default", Duration::from_secs(3)).unwrap()
            }),
            ..operator_options(&server.base, INTERNAL_TOKEN, Some(apps), &work.join(id))
        };
        operators.push(start_operator_with(options).await);
    }
    operators
}

/// Writes the Apps of the promotion tests, each into the `--apps` directory `dir_of` names
/// for it: `stage` on `east-0` (image 1.28), `prod` on `east-1` taking promotions from it
/// (1.27), `other` on `east-1` taking them from another App (1.0), and `canary` on `east-1`
/// promoted from `stage` automatically (1.0).
fn write_promotion_fleet(work: &Path, dir_of: impl Fn(&str) -> std::path::PathBuf) {
    use support::workloads::write_workload;
    for (name, cluster, tag, promotion) in [
        ("stage", "east-0", "1.28", ""),
        (
            "prod",
            "east-1",
            "1.27",
            "  promotion:\n    from: east-0/stage\n",
        ),
        (
            "other",
            "east-1",
            "1.0",
            "  promotion:\n    from: east-0/elsewhere\n",
        ),
        (
            "canary",
            "east-1",
            "1.0",
            "  promotion:\n    from: east-0/stage\n    autoPromote: true\n",
        ),
    ] {
        let source = work.join("sources").join(name);
        write_workload(&source, name, &format!("{PROMOTED_REPO}:{tag}"));
        let apps = dir_of(name);
        std::fs::create_dir_all(&apps).unwrap();
        std::fs::write(
            apps.join(format!("{name}.yaml")),
            format!(
                "apiVersion: cd.wardn.space/v1alpha1\nkind: App\nmetadata:\n  name: {name}\n  namespace: fleet\n\
                 spec:\n  source:\n    type: Directory\n    directory:\n      path: {}\n\
                 \x20 destination:\n    cluster: {cluster}\n    namespace: team-a\n\
                 \x20 syncPolicy:\n    automated: true\n{promotion}",
                source.display()
            ),
        )
        .unwrap();
    }
}

/// The image repository of [`write_promotion_fleet`]'s workloads.
const PROMOTED_REPO: &str = "ghcr.io/acme/web";

/// Waits until `stage` and `prod` of [`write_promotion_fleet`] are Synced and Healthy as
/// `server` lists them.
async fn until_promotion_fleet_synced(server: &TestServer, token: &str) {
    for path in ["/api/v1/apps/east-0/stage", "/api/v1/apps/east-1/prod"] {
        until_app(server, token, path, "Synced and Healthy", |app| {
            app["phase"] == "Synced" && app["status"]["health"] == "Healthy"
        })
        .await;
    }
}

/// Promotes `east-0/stage` into `east-1/prod` through `server`: the digest stage's Pod runs on
/// `east-0` is pinned on prod and runs on `east-1`. Hostile: `east-1/other`, which takes
/// promotions from another App, is refused with a 409 naming it, nothing pinned.
async fn promote_stage_into_prod(
    server: &TestServer,
    token: &str,
    sims: &[(&'static str, common::Sim)],
) {
    use support::workloads::{deployed_image, pod_digests};
    let (source, target) = (&sims[0].1.cluster, &sims[1].1.cluster);
    let digests = pod_digests(source, "team-a", "stage");
    assert_eq!(digests.len(), 1, "{digests:?}");
    let digest = digests.into_iter().next().unwrap();
    let promote = |to: &str| {
        let request = server
            .http()
            .post(server.url(&format!("/api/v1/apps/east-0/stage/promote?to={to}")))
            .bearer_auth(token)
            .json(&serde_json::json!({}));
        async move {
            let response = request.send().await.unwrap();
            let status = response.status().as_u16();
            (status, response.json::<serde_json::Value>().await.unwrap())
        }
    };
    let (status, body) = promote("east-1/prod").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"]["phase"], "Synced", "{body}");
    assert_eq!(
        body["status"]["promotedFrom"]["images"][0]["digest"],
        digest.as_str(),
        "{body}"
    );
    assert_eq!(
        deployed_image(target, "team-a", "prod"),
        Some(format!("{PROMOTED_REPO}@{digest}"))
    );
    let (status, body) = promote("east-1/other").await;
    assert_eq!(status, 409, "{body}");
    assert!(body.to_string().contains("east-0/elsewhere"), "{body}");
    assert_eq!(
        deployed_image(target, "team-a", "other"),
        Some(format!("{PROMOTED_REPO}:1.0"))
    );
    // `canary` takes the same digest on its own (`autoPromote`), by its operator, recorded in
    // the server's promotion history and audit log like a promotion asked for there.
    let automatic = Some(format!("{PROMOTED_REPO}@{digest}"));
    let http = server.http();
    let history = until_value(
        "canary promoted automatically and its record finished",
        || {
            get_json(
                &http,
                server,
                token,
                "/api/v1/apps/east-1/canary/promotions",
            )
        },
        |history| history["promotions"][0]["outcome"] == "Synced",
    )
    .await;
    assert_eq!(deployed_image(target, "team-a", "canary"), automatic);
    let record = &history["promotions"][0];
    assert_eq!(
        history["promotions"].as_array().map(Vec::len),
        Some(1),
        "{history}"
    );
    assert_eq!(record["actor"], "wardn/autoPromote", "{history}");
    assert_eq!(record["target"], "east-1/canary", "{history}");
    assert_eq!(record["source"], "east-0/stage", "{history}");
    assert_eq!(record["images"][0]["digest"], digest.as_str(), "{history}");
    let id = record["id"].as_i64().unwrap();
    assert!(id > 0, "{history}");
    assert_eq!(
        history["promotedFrom"]["promotion"],
        id.to_string(),
        "{history}"
    );
    let audit = get_json(&http, server, token, "/api/v1/audit?limit=200").await;
    let entries: Vec<&serde_json::Value> = audit["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["actor"] == "wardn/autoPromote")
        .collect();
    assert_eq!(entries.len(), 1, "{audit}");
    assert_eq!(entries[0]["action"], "app.promote", "{audit}");
    assert_eq!(entries[0]["target"], "east-1/canary", "{audit}");
    let outcome = entries[0]["outcome"].as_str().unwrap();
    assert!(
        outcome.starts_with(&format!("success id={id} from=east-0/stage"))
            && outcome.contains(&digest),
        "{outcome}"
    );
}

/// A promotion through the server between Apps of two operators that are not sharded, each
/// reading its own `--apps`: the target's operator does not know the source App at all, and
/// reads it and its status from the server (as the source's operator reported them), then
/// the digest its Pods run from the source's cluster.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_promotion_through_the_server_crosses_operators_with_their_own_apps() {
    let (management, server, sims) = split_fleet().await;
    let work = tempfile::tempdir().unwrap();
    let dir_of = |name: &str| match name {
        "stage" => work.path().join("staging-apps"),
        _ => work.path().join("production-apps"),
    };
    write_promotion_fleet(work.path(), dir_of);
    let mut operators = Vec::new();
    for (id, apps) in [("op-staging", "stage"), ("op-production", "prod")] {
        let options = OperatorOptions {
            replica_id: Some(id.into()),
            ..operator_options(
                &server.base,
                INTERNAL_TOKEN,
                Some(&dir_of(apps)),
                &work.path().join(id),
            )
        };
        operators.push(start_operator_with(options).await);
    }
    let token = server.token().await;
    until_promotion_fleet_synced(&server, &token).await;
    let production = &operators[1].0;
    assert!(
        production.app("fleet/stage").is_none(),
        "not among its Apps"
    );
    let listed = get_json(&server.http(), &server, &token, "/api/v1/apps/east-0/stage").await;
    assert_eq!(listed["operator"], "op-staging", "{listed}");
    promote_stage_into_prod(&server, &token, &sims).await;
    // A promotion into an App that requires approval is Held; approved through the server,
    // its operator applies it, and the server's record of the promotion says so.
    let source = work.path().join("sources").join("gated");
    support::workloads::write_workload(&source, "gated", &format!("{PROMOTED_REPO}:1.0"));
    std::fs::write(
        dir_of("gated").join("gated.yaml"),
        format!(
            "apiVersion: cd.wardn.space/v1alpha1\nkind: App\nmetadata:\n  name: gated\n  namespace: fleet\n\
             spec:\n  source:\n    type: Directory\n    directory:\n      path: {}\n\
             \x20 destination:\n    cluster: east-1\n    namespace: team-a\n\
             \x20 syncPolicy:\n    automated: true\n    requiresApproval: true\n\
             \x20 promotion:\n    from: east-0/stage\n",
            source.display()
        ),
    )
    .unwrap();
    let gated = "/api/v1/apps/east-1/gated";
    let held = until_app(&server, &token, gated, "gated Held", |app| {
        app["phase"] == "Held"
    })
    .await;
    let (code, body) = approve(&server, &token, gated, plan_hash(&held)).await;
    assert_eq!(code, 200, "{body}");
    let promoted: serde_json::Value = server
        .http()
        .post(server.url("/api/v1/apps/east-0/stage/promote?to=east-1/gated"))
        .bearer_auth(&token)
        .json(&serde_json::json!({}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(promoted["status"]["phase"], "Held", "{promoted}");
    assert_eq!(promoted["promotion"]["outcome"], "Held", "{promoted}");
    let (code, body) = approve(&server, &token, gated, plan_hash(&promoted)).await;
    assert_eq!(code, 200, "{body}");
    let history = until_app(
        &server,
        &token,
        &format!("{gated}/promotions"),
        "the promotion's approval recorded",
        |history| history["promotions"][0]["outcome"] == "Approved: Synced",
    )
    .await;
    assert_eq!(
        history["promotions"].as_array().map(Vec::len),
        Some(1),
        "{history}"
    );
    // Unsharded operators hold no Lease.
    let http = server.http();
    let shards = get_json(&http, &server, &token, "/api/v1/shards").await;
    assert_eq!(shards["replicas"], serde_json::json!([]), "{shards}");
    let operators_listed = shards["operators"].as_array().unwrap();
    assert_eq!(operators_listed.len(), 2, "{shards}");
    assert!(
        operators_listed
            .iter()
            .all(|o| o["lease_expires_at"].is_null() && o["reported_at"].is_string()),
        "{shards}"
    );
    // Hostile: the management cluster gone, the Leases cannot be listed; the answer says so,
    // naming their namespace, and still lists the operators from their reports.
    management.cluster.stop().await;
    let shards = until_value(
        "the Leases' listing failing",
        || get_json(&http, &server, &token, "/api/v1/shards"),
        |shards| shards["lease_error"].is_string(),
    )
    .await;
    let error = shards["lease_error"].as_str().unwrap();
    assert!(error.contains("namespace default"), "{shards}");
    assert_eq!(shards["operators"].as_array().unwrap().len(), 2, "{shards}");
    for (_, _, stop) in operators {
        let _ = stop.send(());
    }
}

/// `GET path` of `server` with `token`, through `http`: its JSON answer, which must be a 200.
async fn get_json(
    http: &reqwest::Client,
    server: &TestServer,
    token: &str,
    path: &str,
) -> serde_json::Value {
    let response = http
        .get(server.url(path))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200, "{path}");
    response.json().await.unwrap()
}

/// A promotion through the server between Apps of two operator shards: the source deploys
/// to one operator's cluster, the target to the other's, which holds no status of the source;
/// the target's owner reads the source's status from the server (Synced and Healthy, its
/// inventory naming its Deployment), reads the digest its Pods run from the source's cluster,
/// and pins it on the target. An App that does not take promotions from the source is still
/// refused, naming its `promotion.from`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_promotion_through_the_server_crosses_operator_shards() {
    let (management, server, sims) = split_fleet().await;
    let work = tempfile::tempdir().unwrap();
    let apps = work.path().join("apps");
    write_promotion_fleet(work.path(), |_| apps.clone());
    let operators = start_sharded_operators(&server, &management, &apps, work.path()).await;
    let token = server.token().await;
    until_promotion_fleet_synced(&server, &token).await;
    // Each cluster has its own owner, and the target's owner holds no status of the source.
    let owner_of = |cluster: &str| {
        operators
            .iter()
            .position(|(runner, _, _)| runner.sharding().is_some_and(|m| m.owns(cluster)))
            .unwrap()
    };
    let (source_owner, target_owner) = (owner_of("east-0"), owner_of("east-1"));
    assert_ne!(source_owner, target_owner, "one cluster per operator");
    // The server lists its operators with the clusters and Apps each reports and, read from
    // the management cluster, each one's live Lease and the clusters it claims.
    let expected = |owner: usize, cluster: &str, apps: u64| serde_json::json!({"operator": format!("op-{owner}"), "clusters": [cluster], "apps": apps});
    let expected = serde_json::json!([
        expected(source_owner, "east-0", 1),
        expected(target_owner, "east-1", 3)
    ]);
    let expected_replicas = serde_json::json!([
        {"replica": "op-0", "clusters": [if source_owner == 0 { "east-0" } else { "east-1" }], "apps": if source_owner == 0 { 1 } else { 3 }},
        {"replica": "op-1", "clusters": [if source_owner == 1 { "east-0" } else { "east-1" }], "apps": if source_owner == 1 { 1 } else { 3 }},
    ]);
    let live = |o: &mut serde_json::Value, field: &str| {
        let at = o[field].as_str().map(str::parse::<jiff::Timestamp>);
        assert!(matches!(at, Some(Ok(_))), "{field}: {o}");
        o.as_object_mut().map(|o| o.remove(field));
        at.and_then(Result::ok)
    };
    let http = server.http();
    let shards = until_value(
        "the server lists both operators' shares and Leases",
        || get_json(&http, &server, &token, "/api/v1/shards"),
        |shards| {
            let mut listed: Vec<serde_json::Value> =
                shards["operators"].as_array().cloned().unwrap_or_default();
            let mut replicas: Vec<serde_json::Value> =
                shards["replicas"].as_array().cloned().unwrap_or_default();
            let now = jiff::Timestamp::now();
            for operator in &mut listed {
                live(operator, "reported_at");
                if operator["lease_expires_at"].is_null() {
                    return false;
                }
                let expires = live(operator, "lease_expires_at");
                assert!(
                    expires.is_some_and(|t| t > now - jiff::SignedDuration::from_secs(1)),
                    "{shards}"
                );
            }
            for replica in &mut replicas {
                let expires = live(replica, "lease_expires_at");
                assert!(
                    expires.is_some_and(|t| t > now - jiff::SignedDuration::from_secs(1)),
                    "{shards}"
                );
            }
            sorted(&serde_json::Value::Array(listed)) == sorted(&expected)
                && serde_json::Value::Array(replicas) == expected_replicas
        },
    )
    .await;
    assert!(shards.get("lease_error").is_none(), "{shards}");
    // Long run: a page polled by many viewers, 300 reads, 30 at a time; each lists both.
    for _ in 0..10 {
        let reads = (0..30).map(|_| get_json(&http, &server, &token, "/api/v1/shards"));
        for shards in futures_util::future::join_all(reads).await {
            assert_eq!(
                shards["replicas"].as_array().map(Vec::len),
                Some(2),
                "{shards}"
            );
            assert!(shards.get("lease_error").is_none(), "{shards}");
        }
    }
    assert_eq!(
        shards["sharded"], false,
        "the server itself owns no cluster"
    );
    assert_eq!(
        operators[target_owner]
            .0
            .status("fleet/stage")
            .and_then(|s| s.phase),
        None
    );
    promote_stage_into_prod(&server, &token, &sims).await;
    for (_, _, stop) in operators {
        let _ = stop.send(());
    }
}

/// `--role operator --shards auto` replicas behind one `--role server` process: each reports
/// the Apps of the clusters it owns, the server lists them all, and an approval asked for
/// there is performed by the replica that owns the App (the other holds no status for it),
/// once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sharded_operators_each_perform_the_approvals_of_their_own_apps() {
    let (management, server, sims) = split_fleet().await;
    let work = tempfile::tempdir().unwrap();
    let apps = work.path().join("apps");
    for (cluster, _) in &sims {
        write_app_with_extra(work.path(), &apps, (cluster, "gated"), cluster, true);
    }
    let mut operators = start_sharded_operators(&server, &management, &apps, work.path()).await;
    let token = server.token().await;
    for (cluster, sim) in &sims {
        let path = format!("/api/v1/apps/{cluster}/gated");
        let held = until_app(&server, &token, &path, "each App Held", |app| {
            app["phase"] == "Held"
        })
        .await;
        let (status, body) = approve(&server, &token, &path, plan_hash(&held)).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["status"]["phase"], "Synced", "{body}");
        // The server names the owner as the App's operator.
        let owner = operators
            .iter()
            .zip(["op-0", "op-1"])
            .find(|((runner, _, _), _)| runner.sharding().is_some_and(|m| m.owns(cluster)))
            .map(|(_, id)| id);
        let shown = until_app(&server, &token, &path, "the owner named", |app| {
            app["operator"].as_str() == owner
        })
        .await;
        assert_eq!(shown["operator"].as_str(), owner);
        let name = format!("gated-{cluster}");
        let writes = sim
            .cluster
            .writes()
            .into_iter()
            .filter(|w| w.name == name && w.resource == "configmaps")
            .count();
        assert_eq!(writes, 1, "applied once");
        // The owner performed it: it holds the App's status, the other replica none.
        let key = format!("{cluster}/gated");
        let phases: Vec<(bool, Option<Phase>)> = operators
            .iter()
            .map(|(runner, _, _)| {
                let owns = runner.sharding().is_some_and(|m| m.owns(cluster));
                (owns, runner.status(&key).and_then(|s| s.phase))
            })
            .collect();
        assert!(
            phases.contains(&(true, Some(Phase::Synced))) && phases.contains(&(false, None)),
            "{cluster}: {phases:?}"
        );
    }

    // Takeover: an object leaves east-0's source, its owner Holds the prune; the owner stops,
    // and the other replica takes east-0 over with the status read back from the server: the
    // same Held plan (its inventory still names the object), approved through the server and
    // pruned by the new owner.
    let owner = operators
        .iter()
        .position(|(runner, _, _)| runner.sharding().is_some_and(|m| m.owns("east-0")))
        .unwrap();
    let (_, _, stop) = operators.remove(owner);
    let (survivor, _, survivor_stop) = operators.remove(0);
    held_prune_survives(
        &server,
        &token,
        &work.path().join("east-0").join("gated"),
        "east-0",
        stop,
        &survivor,
    )
    .await;
    assert!(
        sims[0]
            .1
            .cluster
            .get_object("v1", "ConfigMap", Some("team-a"), "extra-east-0-gated")
            .is_none(),
        "pruned by the new owner"
    );
    let _ = survivor_stop.send(());
}
