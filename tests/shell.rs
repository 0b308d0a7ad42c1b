//! The cluster shell (`cluster.shell`) with the real kubectl 1.32 through wardn's proxy against
//! kubesim: `wardn clusters shell NAME -- kubectl …` applies, gets, lists and deletes in an
//! allowed namespace (with the cluster's sealed credentials, the caller's own token in a 0600
//! kubeconfig removed on exit); watches stream; namespaces outside the allowlist, cluster-wide
//! lists, exec and viewers' writes are refused with a Status kubectl prints; sessions and
//! writes are audited. Hostile: path traversal, another user's token, unregistered clusters,
//! ended sessions, an exec-plugin kubeconfig, oversized bodies. The command box's read verbs,
//! checked against kubectl's own output. Long run: 1,000 proxied requests (watches cut off
//! among them) leave open files and memory flat.

mod common;
mod support;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use common::KUBECTL;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret};
use kube::api::{Api, PostParams};
use kubesim::{Cluster, ClusterConfig};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use support::server::TestServer;
use wardn::server::shell::OpenedSession;

const WARDN: &str = env!("CARGO_BIN_EXE_wardn");

/// A kubesim cluster (namespaces `demo` and `other`) registered as `staging` with the
/// allowlist `demo`, and a wardn server with an admin token.
struct Fixture {
    cluster: Cluster,
    server: TestServer,
    admin: String,
    dir: tempfile::TempDir,
    /// Held until the fixture's server and cluster are gone (fields drop in order).
    _turn: Turn,
}

/// The memory test measures this process's resident memory, which every test of this file
/// moves (each runs its server and cluster in this process): the others share the lock, the
/// memory test holds it alone.
static PROCESS_MEMORY: tokio::sync::RwLock<()> = tokio::sync::RwLock::const_new(());

/// A test's hold on [`PROCESS_MEMORY`]: shared, or alone for the memory test.
struct Turn {
    _shared: Option<tokio::sync::RwLockReadGuard<'static, ()>>,
    _alone: Option<tokio::sync::RwLockWriteGuard<'static, ()>>,
}

impl Turn {
    async fn shared() -> Turn {
        Turn {
            _shared: Some(PROCESS_MEMORY.read().await),
            _alone: None,
        }
    }

    async fn alone() -> Turn {
        Turn {
            _shared: None,
            _alone: Some(PROCESS_MEMORY.write().await),
        }
    }
}

async fn fixture() -> Fixture {
    fixture_in(Turn::shared().await).await
}

async fn fixture_in(turn: Turn) -> Fixture {
    kubesim::install_crypto_provider();
    let cluster = Cluster::start(ClusterConfig {
        name: "staging".into(),
        namespaces: vec!["demo".into(), "other".into()],
        ready_delay: Duration::ZERO,
        ..ClusterConfig::default()
    })
    .await
    .unwrap();
    // kubectl sends credentials over https only: the server has a certificate of a test CA.
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start_https(dir.path()).await;
    let admin = server.token().await;
    let fixture = Fixture {
        cluster,
        server,
        admin,
        dir,
        _turn: turn,
    };
    let (status, body) = fixture.register("staging", &["demo"]).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    fixture
}

async fn send(request: reqwest::RequestBuilder) -> (StatusCode, Value) {
    let response = request.send().await.unwrap();
    let status = response.status();
    let text = response.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

impl Fixture {
    async fn call(
        &self,
        token: &str,
        method: Method,
        path: &str,
        body: Value,
    ) -> (StatusCode, Value) {
        send(
            self.server
                .http()
                .request(method, self.server.url(path))
                .bearer_auth(token)
                .json(&body),
        )
        .await
    }

    async fn register(&self, name: &str, namespaces: &[&str]) -> (StatusCode, Value) {
        let body = json!({"name": name, "server_url": self.cluster.url(),
            "kubeconfig": self.cluster.kubeconfig(), "namespaces": namespaces});
        self.call(&self.admin, Method::POST, "/api/v1/clusters", body)
            .await
    }

    /// Opens a session as `token` on `cluster`.
    async fn open(&self, token: &str, cluster: &str) -> OpenedSession {
        let path = format!("/api/v1/clusters/{cluster}/shell");
        let (status, body) = self.call(token, Method::POST, &path, json!({})).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        serde_json::from_value(body).unwrap()
    }

    /// A kubeconfig file for a new session of `token` on `staging`, as the CLI writes it.
    async fn session_kubeconfig(&self, token: &str) -> (PathBuf, OpenedSession) {
        let session = self.open(token, "staging").await;
        let text = wardn::cli::shell::kubeconfig(
            "staging",
            &self.server.url(&session.proxy_path),
            token,
            self.server.ca.as_deref().map(str::as_bytes),
        );
        let path = self
            .dir
            .path()
            .join(format!("{}.kubeconfig", session.session));
        std::fs::write(&path, text).unwrap();
        (path, session)
    }

    /// The `cluster.shell` audit entries, oldest first.
    async fn audit(&self) -> Vec<Value> {
        let (status, body) = self
            .call(
                &self.admin,
                Method::GET,
                "/api/v1/audit?action=cluster.shell&limit=1000",
                json!({}),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body["entries"].as_array().unwrap().clone()
    }

    /// `wardn clusters shell staging -- ARGS` as `token`.
    fn shell(&self, token: &str, args: &[&str]) -> Command {
        let mut command = Command::new(WARDN);
        command
            .args([
                "clusters",
                "shell",
                "staging",
                "--server",
                &self.server.base,
            ])
            .args(["--token", token, "--ca-file"])
            .arg(self.dir.path().join("ca.pem"))
            .arg("--")
            .args(args)
            .env("WARDN_CONFIG_DIR", self.dir.path())
            .env_remove("WARDN_SERVER")
            .env_remove("WARDN_TOKEN")
            .env_remove("KUBECONFIG");
        command
    }

    async fn pods(&self, names: &[&str]) {
        let pods: Api<Pod> = Api::namespaced(self.cluster.client().await.unwrap(), "demo");
        for name in names {
            let pod: Pod = serde_json::from_value(json!({"metadata": {"name": name},
                "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]}}))
            .unwrap();
            pods.create(&PostParams::default(), &pod).await.unwrap();
        }
    }
}

/// Runs `command` off the async runtime (the server runs on it).
async fn run(mut command: Command) -> Output {
    tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap()
}

fn kubectl(kubeconfig: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(KUBECTL);
    command.arg("--kubeconfig").arg(kubeconfig).args(args);
    command
}

fn ok(output: &Output) -> String {
    assert!(
        output.status.success(),
        "stdout: {}\nstderr: {}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn failed(output: &Output) -> String {
    assert!(
        !output.status.success(),
        "expected a failure: {}",
        String::from_utf8_lossy(&output.stdout)
    );
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn configmap(name: &str, step: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: demo\ndata:\n  step: \"{step}\"\n"
    )
}

fn outcomes(entries: &[Value]) -> Vec<String> {
    entries
        .iter()
        .map(|e| e["outcome"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_in_a_shell_applies_gets_lists_and_deletes_in_an_allowed_namespace() {
    let f = fixture().await;
    let manifest = f.dir.path().join("cm.yaml");
    std::fs::write(&manifest, configmap("shell-cm", "one")).unwrap();
    let manifest = manifest.to_str().unwrap();

    let out = ok(&run(f.shell(&f.admin, &[KUBECTL, "apply", "-f", manifest])).await);
    assert!(out.contains("configmap/shell-cm created"), "{out}");
    std::fs::write(manifest, configmap("shell-cm", "two")).unwrap();
    let out = ok(&run(f.shell(&f.admin, &[KUBECTL, "apply", "-f", manifest])).await);
    assert!(out.contains("configmap/shell-cm configured"), "{out}");
    let stored = f
        .cluster
        .get_object("v1", "ConfigMap", Some("demo"), "shell-cm")
        .unwrap();
    assert_eq!(stored["data"]["step"], "two");

    let args = [
        "get",
        "configmap",
        "shell-cm",
        "-n",
        "demo",
        "-o",
        "jsonpath={.data.step}",
    ];
    let out = ok(&run(f.shell(&f.admin, &[&[KUBECTL][..], &args[..]].concat())).await);
    assert_eq!(out, "two");
    let out = ok(&run(f.shell(&f.admin, &[KUBECTL, "get", "configmaps", "-n", "demo"])).await);
    assert!(out.starts_with("NAME") && out.contains("shell-cm"), "{out}");

    // The kubeconfig: mode 0600, the caller's own token (never the cluster's), gone on exit.
    let script = "stat -c %a \"$KUBECONFIG\"; echo \"$KUBECONFIG\"; cat \"$KUBECONFIG\"";
    let out = ok(&run(f.shell(&f.admin, &["sh", "-c", script])).await);
    let mut lines = out.lines();
    assert_eq!(lines.next(), Some("600"));
    let path = PathBuf::from(lines.next().unwrap());
    assert!(!path.exists(), "{} outlived its shell", path.display());
    assert!(out.contains(&f.admin), "{out}");
    assert!(!out.contains(&f.cluster.tokens().admin), "{out}");
    assert!(out.contains(&format!("{}/api/v1/clusters/staging/proxy/", f.server.base)));

    let out = ok(&run(f.shell(
        &f.admin,
        &[KUBECTL, "delete", "configmap", "shell-cm", "-n", "demo"],
    ))
    .await);
    assert!(out.contains("deleted"), "{out}");
    assert!(
        f.cluster
            .get_object("v1", "ConfigMap", Some("demo"), "shell-cm")
            .is_none()
    );

    // The command's exit code is the shell's.
    let out = run(f.shell(&f.admin, &["sh", "-c", "exit 7"])).await;
    assert_eq!(out.status.code(), Some(7));

    // Every session started and ended, every write recorded with its status, by the caller.
    let entries = f.audit().await;
    let outcomes = outcomes(&entries);
    let started = outcomes.iter().filter(|o| o.contains(" started")).count();
    let ended = outcomes.iter().filter(|o| o.contains(" ended; ")).count();
    assert_eq!((started, ended), (7, 7), "{outcomes:#?}");
    for write in [
        "POST /api/v1/namespaces/demo/configmaps: 201",
        "PATCH /api/v1/namespaces/demo/configmaps/shell-cm: 200",
        "DELETE /api/v1/namespaces/demo/configmaps/shell-cm: 200",
    ] {
        assert!(
            outcomes
                .iter()
                .any(|o| o.starts_with("success: session ") && o.ends_with(write)),
            "{write} not audited: {outcomes:#?}"
        );
    }
    assert!(
        entries.iter().all(|e| e["target"] == "staging"
            && e["actor"].as_str().unwrap().starts_with("admin/token:"))
    );
    assert!(f.server.state.shell_sessions().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watches_stream_through_the_proxy() {
    let f = fixture().await;
    let configmaps: Api<ConfigMap> = Api::namespaced(f.cluster.client().await.unwrap(), "demo");
    let create = |name: &str| {
        let cm: ConfigMap =
            serde_json::from_value(json!({"metadata": {"name": name}, "data": {"a": "1"}}))
                .unwrap();
        let configmaps = configmaps.clone();
        async move {
            configmaps
                .create(&PostParams::default(), &cm)
                .await
                .unwrap()
        }
    };
    create("watched-0").await;
    let (kubeconfig, _) = f.session_kubeconfig(&f.admin).await;
    let mut watch = kubectl(
        &kubeconfig,
        &[
            "get",
            "configmaps",
            "-n",
            "demo",
            "--watch",
            "--output-watch-events",
            "-o",
            "name",
        ],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let (lines, received) = std::sync::mpsc::channel();
    let stdout = watch.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = lines.send(line);
        }
    });
    let expect = |wanted: &str| {
        let wanted = wanted.to_string();
        let received = &received;
        move || loop {
            // A guard against a hung test, not a speed requirement.
            let line = received
                .recv_timeout(Duration::from_secs(120))
                .unwrap_or_else(|_| panic!("no {wanted:?} from the watch"));
            if line.trim() == wanted {
                return;
            }
        }
    };
    // The initial list, then events that can only come from the open watch.
    tokio::task::block_in_place(expect("configmap/watched-0"));
    create("watched-1").await;
    tokio::task::block_in_place(expect("configmap/watched-1"));
    create("watched-2").await;
    tokio::task::block_in_place(expect("configmap/watched-2"));
    watch.kill().unwrap();
    watch.wait().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namespaces_outside_the_allowlist_cluster_wide_lists_exec_and_viewer_writes_are_refused() {
    let f = fixture().await;
    f.pods(&["web"]).await;
    let (admin, _) = f.session_kubeconfig(&f.admin).await;

    let err = failed(&run(kubectl(&admin, &["get", "pods", "-n", "other"])).await);
    assert!(
        err.contains("Error from server (Forbidden): namespace \"other\" is not in the namespaces allowlist of cluster \"staging\""),
        "{err}"
    );
    let err = failed(&run(kubectl(&admin, &["get", "pods", "-A"])).await);
    assert!(
        err.contains("(Forbidden)") && err.contains("is cluster-wide"),
        "{err}"
    );
    let err = failed(&run(kubectl(&admin, &["get", "nodes"])).await);
    assert!(err.contains("(Forbidden)"), "{err}");
    let err = failed(&run(kubectl(&admin, &["exec", "-n", "demo", "web", "--", "ls"])).await);
    assert!(
        err.contains("not available through the wardn cluster shell"),
        "{err}"
    );
    let err = failed(
        &run(kubectl(
            &admin,
            &["port-forward", "-n", "demo", "pod/web", "18080:80"],
        ))
        .await,
    );
    assert!(
        err.contains("not available through the wardn cluster shell"),
        "{err}"
    );

    // Viewers and deployers read, and may not write; admins may.
    for (name, role) in [("vera", "viewer"), ("dave", "deployer")] {
        let token = f.server.user_token(&f.admin, name, role).await;
        let (kubeconfig, _) = f.session_kubeconfig(&token).await;
        let out = ok(&run(kubectl(&kubeconfig, &["get", "pods", "-n", "demo"])).await);
        assert!(out.contains("web"), "{out}");
        let err = failed(
            &run(kubectl(
                &kubeconfig,
                &["create", "configmap", "nope", "-n", "demo"],
            ))
            .await,
        );
        assert!(
            err.contains(&format!("route needs role admin; you are {role}")),
            "{err}"
        );
        let err = failed(
            &run(kubectl(
                &kubeconfig,
                &["delete", "pod", "web", "-n", "demo"],
            ))
            .await,
        );
        assert!(err.contains("route needs role admin"), "{err}");
    }
    assert!(
        f.cluster
            .get_object("v1", "Pod", Some("demo"), "web")
            .is_some()
    );
    assert!(
        f.cluster
            .get_object("v1", "ConfigMap", Some("demo"), "nope")
            .is_none()
    );
    let out = ok(&run(kubectl(
        &admin,
        &["create", "configmap", "yes", "-n", "demo"],
    ))
    .await);
    assert!(out.contains("configmap/yes created"), "{out}");

    // Refusals by the allowlist are audited as failures.
    let outcomes = outcomes(&f.audit().await);
    assert!(
        outcomes.iter().any(|o| o.starts_with("failure: session ")
            && o.contains("GET /api/v1/namespaces/other/pods")
            && o.contains("not in the namespaces allowlist")),
        "{outcomes:#?}"
    );
}

/// Sends `GET path` byte for byte (curl `--path-as-is`: no client-side normalisation) with
/// `token` and the `extra` headers; returns the status code and body.
async fn raw_get(f: &Fixture, path: &str, token: &str, extra: &[&str]) -> (u16, String) {
    let mut curl = Command::new("curl");
    curl.args([
        "-sS",
        "--path-as-is",
        "--max-time",
        "60",
        "-w",
        "\n%{http_code}",
    ])
    .arg("--cacert")
    .arg(f.dir.path().join("ca.pem"))
    .args(["-H", &format!("Authorization: Bearer {token}")]);
    for header in extra {
        curl.args(["-H", header]);
    }
    curl.arg(f.server.url(path));
    let output = ok(&run(curl).await);
    let (body, code) = output.rsplit_once('\n').unwrap();
    (code.trim().parse().unwrap(), body.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_paths_tokens_sessions_clusters_and_bodies_are_refused() {
    let f = fixture().await;
    let session = f.open(&f.admin, "staging").await;
    let proxy = session.proxy_path.clone();

    let pods = format!("{proxy}/api/v1/namespaces/demo/pods");
    let (code, body) = raw_get(&f, &pods, &f.admin, &[]).await;
    assert_eq!(code, 200, "{body}");
    for path in [
        "/api/v1/namespaces/demo/../../namespaces/other/pods",
        "/api/v1/namespaces/demo/..%2F..%2Fnamespaces/other/pods",
        "/api/v1/namespaces/%2e%2e/other/pods",
        "/api/v1/namespaces/demo/%2e%2e/%2e%2e/namespaces/other/pods",
        "//api/v1/namespaces/other/pods",
        "/api/v1//namespaces/other/pods",
        "/api/v1/namespaces/demo/pods/",
        "/../../../api/v1/audit",
    ] {
        let (code, body) = raw_get(&f, &format!("{proxy}{path}"), &f.admin, &[]).await;
        assert_eq!(code, 400, "{path}: {body}");
        let status: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(
            (status["kind"].as_str(), status["reason"].as_str()),
            (Some("Status"), Some("BadRequest")),
            "{path}"
        );
    }
    // An upgrade asked on an innocent path.
    let upgrade = ["Connection: Upgrade", "Upgrade: websocket"];
    let (code, body) = raw_get(&f, &pods, &f.admin, &upgrade).await;
    assert_eq!(code, 403, "{body}");

    // Another user's token on this session; no token; a session of another cluster.
    let viewer = f.server.user_token(&f.admin, "mallory", "viewer").await;
    let (code, body) = raw_get(&f, &pods, &viewer, &[]).await;
    assert_eq!(code, 403, "{body}");
    assert!(
        body.contains("belongs to another user") && body.contains("\"kind\":\"Status\""),
        "{body}"
    );
    let (status, body) = send(f.server.http().get(f.server.url(&format!("{proxy}/api")))).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    assert_eq!(body["kind"], "Status");
    assert_eq!(f.register("prod", &[]).await.0, StatusCode::CREATED);
    let elsewhere = proxy.replace("/staging/", "/prod/");
    let (code, body) = raw_get(&f, &format!("{elsewhere}/api/v1/pods"), &f.admin, &[]).await;
    assert_eq!(code, 401, "{body}");
    assert!(body.contains("is not open on this cluster"), "{body}");

    // An unregistered cluster: no session, no proxy.
    let (status, body) = f
        .call(
            &f.admin,
            Method::POST,
            "/api/v1/clusters/nowhere/shell",
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    let (code, body) = raw_get(&f, "/api/v1/clusters/nowhere/proxy/x/api", &f.admin, &[]).await;
    assert_eq!(code, 404, "{body}");
    assert!(body.contains("\"kind\":\"Status\""), "{body}");

    // A cluster whose kubeconfig runs a command is never registered, so no shell reaches it.
    let plugin = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {url}\n\
         users:\n- name: u\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: /bin/sh\n      args: [-c, 'touch /tmp/pwned']\n\
         contexts:\n- name: c\n  context: {{cluster: c, user: u}}\ncurrent-context: c\n",
        url = f.cluster.url()
    );
    let (status, body) = f
        .call(
            &f.admin,
            Method::POST,
            "/api/v1/clusters",
            json!({"name": "plugged", "server_url": f.cluster.url(), "kubeconfig": plugin}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body["error"].as_str().unwrap().contains("exec"), "{body}");
    let (status, _) = f
        .call(
            &f.admin,
            Method::POST,
            "/api/v1/clusters/plugged/shell",
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // A body over 3 MiB is refused before anything reaches the cluster.
    let big = format!("{{\"data\": \"{}\"}}", "x".repeat(4 << 20));
    let (status, body) = send(
        f.server
            .http()
            .post(
                f.server
                    .url(&format!("{proxy}/api/v1/namespaces/demo/configmaps")),
            )
            .bearer_auth(&f.admin)
            .header("content-type", "application/json")
            .body(big),
    )
    .await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{body}");
    assert_eq!(body["reason"], "RequestEntityTooLarge");

    // An ended session stops working at once; ending it twice is a 404.
    let end = format!("/api/v1/clusters/staging/shell/{}", session.session);
    assert_eq!(
        f.call(&viewer, Method::DELETE, &end, json!({})).await.0,
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        f.call(&f.admin, Method::DELETE, &end, json!({})).await.0,
        StatusCode::NO_CONTENT
    );
    assert_eq!(
        f.call(&f.admin, Method::DELETE, &end, json!({})).await.0,
        StatusCode::NOT_FOUND
    );
    let (code, body) = raw_get(&f, &format!("{proxy}/api"), &f.admin, &[]).await;
    assert_eq!(code, 401, "{body}");

    // A user holds a bounded number of sessions.
    for _ in 0..wardn::shell::sessions::MAX_SESSIONS_PER_USER {
        f.open(&viewer, "staging").await;
    }
    let (status, body) = f
        .call(
            &viewer,
            Method::POST,
            "/api/v1/clusters/staging/shell",
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{body}");
}

async fn command(f: &Fixture, token: &str, line: &str) -> (StatusCode, Value) {
    f.call(
        token,
        Method::POST,
        "/api/v1/clusters/staging/shell/commands",
        json!({ "command": line }),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_command_box_reads_like_kubectl_and_refuses_the_rest() {
    let f = fixture().await;
    f.pods(&["web-1", "web-2"]).await;
    let secrets: Api<Secret> = Api::namespaced(f.cluster.client().await.unwrap(), "demo");
    let secret: Secret = serde_json::from_value(json!({"metadata": {"name": "db"},
        "stringData": {"password": "hunter2-very-secret"}}))
    .unwrap();
    secrets
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    let viewer = f.server.user_token(&f.admin, "vic", "viewer").await;

    // Differential: the same names, header and order as kubectl's through the proxy.
    let (kubeconfig, _) = f.session_kubeconfig(&viewer).await;
    let theirs = ok(&run(kubectl(&kubeconfig, &["get", "pods", "-n", "demo"])).await);
    let (status, ours) = command(&f, &viewer, "get pods -n demo").await;
    assert_eq!(status, StatusCode::OK, "{ours}");
    let first_column = |text: &str| -> Vec<String> {
        text.lines()
            .map(|l| l.split_whitespace().next().unwrap_or("").to_string())
            .collect()
    };
    assert_eq!(
        first_column(ours["text"].as_str().unwrap()),
        first_column(&theirs)
    );
    assert_eq!(ours["rows"][0][0], "NAME");
    assert_eq!(ours["path"], "/api/v1/namespaces/demo/pods");
    let (status, one) = command(&f, &viewer, "kubectl get po web-1 --namespace=demo").await;
    assert_eq!(status, StatusCode::OK, "{one}");
    assert_eq!(one["rows"].as_array().unwrap().len(), 2);

    let (status, described) = command(&f, &viewer, "describe secret db -n demo").await;
    assert_eq!(status, StatusCode::OK, "{described}");
    let text = described["text"].as_str().unwrap();
    assert!(text.contains("password: 19 bytes"), "{text}");
    assert!(
        !text.contains("hunter2") && !text.contains("aHVudGVy"),
        "{text}"
    );
    let (status, described) = command(&f, &viewer, "describe pod web-1 -n demo").await;
    assert_eq!(status, StatusCode::OK, "{described}");
    assert!(described["text"].as_str().unwrap().contains("nginx:1.27"));

    // Logs are the cluster's (kubesim simulates a container's lines), through the log route.
    let (status, logs) = command(&f, &viewer, "logs web-1 -n demo --tail 5").await;
    assert_eq!(status, StatusCode::OK, "{logs}");
    assert_eq!(
        logs["path"],
        "/api/v1/namespaces/demo/pods/web-1/log?tailLines=5"
    );
    assert!(
        logs["text"]
            .as_str()
            .unwrap()
            .contains("starting nginx:1.27"),
        "{logs}"
    );

    for (line, code, says) in [
        (
            "get pods -n other",
            StatusCode::FORBIDDEN,
            "not in the namespaces allowlist",
        ),
        ("get pods -A", StatusCode::FORBIDDEN, "cluster-wide"),
        ("get nodes", StatusCode::FORBIDDEN, "cluster-wide"),
        (
            "delete pod web-1 -n demo",
            StatusCode::BAD_REQUEST,
            "read-only",
        ),
        (
            "get pods -n ../other",
            StatusCode::BAD_REQUEST,
            "is not a name",
        ),
        ("get pods -o yaml", StatusCode::BAD_REQUEST, "\"-o\""),
        (
            "get gizmos -n demo",
            StatusCode::NOT_FOUND,
            "doesn't have a resource type",
        ),
        (
            "get pod nothing -n demo",
            StatusCode::NOT_FOUND,
            "answered 404",
        ),
    ] {
        let (status, body) = command(&f, &viewer, line).await;
        assert_eq!(status, code, "{line}: {body}");
        assert!(
            body["error"].as_str().unwrap().contains(says),
            "{line}: {body}"
        );
    }
    let (status, _) = command(&f, &viewer, "get pods -n demo").await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = f
        .call(
            &viewer,
            Method::POST,
            "/api/v1/clusters/nowhere/shell/commands",
            json!({"command": "get pods"}),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    let outcomes = outcomes(&f.audit().await);
    assert!(
        outcomes.contains(&"success: command `describe secret db -n demo`".to_string()),
        "{outcomes:#?}"
    );
    assert!(
        outcomes
            .iter()
            .any(|o| o.starts_with("failure: command `get pods -n other`")),
        "{outcomes:#?}"
    );
}

fn open_files() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

fn resident_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_proxied_requests_leave_files_and_memory_flat() {
    let f = fixture_in(Turn::alone().await).await;
    let session = f.open(&f.admin, "staging").await;
    let http = f.server.http();
    let url = |path: &str| f.server.url(&format!("{}{path}", session.proxy_path));
    let one = |i: usize| {
        let name = format!("long-{}", i / 4);
        let request = match i % 4 {
            0 => http
                .post(url("/api/v1/namespaces/demo/configmaps"))
                .json(&json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": name}, "data": {"i": i.to_string()}})),
            1 => http.get(url("/api/v1/namespaces/demo/configmaps")),
            // A watch, cut off by the client once its answer starts.
            2 => http.get(url("/api/v1/namespaces/demo/configmaps?watch=1")),
            _ => http.delete(url(&format!("/api/v1/namespaces/demo/configmaps/{name}"))),
        };
        request.bearer_auth(&f.admin).send()
    };
    // A first thousand fills pools and caches; the second must leave files and memory as
    // they were.
    for i in 0..1000 {
        let response = one(i).await.unwrap();
        assert!(response.status().is_success(), "{i}: {}", response.status());
    }
    let (files, memory) = (open_files(), resident_kib());
    let started = std::time::Instant::now();
    for i in 0..1000 {
        let response = one(i).await.unwrap();
        assert!(response.status().is_success(), "{i}: {}", response.status());
        drop(response);
    }
    let elapsed = started.elapsed();
    let (files_after, memory_after) = (open_files(), resident_kib());
    println!(
        "1,000 proxied requests in {elapsed:?}; open files {files} -> {files_after}; RSS {memory} KiB -> {memory_after} KiB"
    );
    assert!(
        files_after <= files + 4,
        "open files grew: {files} -> {files_after}"
    );
    assert!(
        memory_after <= memory + 16 * 1024,
        "resident memory grew: {memory} KiB -> {memory_after} KiB"
    );
    assert!(f.cluster.list_objects("v1", "ConfigMap").iter().all(|cm| {
        !cm["metadata"]["name"]
            .as_str()
            .unwrap()
            .starts_with("long-")
    }));
    let writes = outcomes(&f.audit().await)
        .iter()
        .filter(|o| {
            o.starts_with("success: session ") && (o.contains(" POST ") || o.contains(" DELETE "))
        })
        .count();
    assert_eq!(writes, 1000);
}
