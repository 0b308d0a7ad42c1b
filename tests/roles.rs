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
        git_ca_file: None,
        git_timeout: Duration::from_secs(60),
        notify: Vec::new(),
        notify_secret: None,
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
/// App's to its own `spec.notify`; a Held plan's carries no approve link (approvals through
/// the server do not reach operators).
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
    assert!(body["approveUrl"].is_null(), "{body}");
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
        ..options
    })
    .await
    .err()
    .unwrap();
    assert!(err.to_string().contains("WARDN_INTERNAL_TOKEN"), "{err}");
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
        (
            &["--public-url", "https://wardn.example"],
            "drop --public-url",
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
