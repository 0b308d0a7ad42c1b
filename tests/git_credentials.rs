//! Git credentials end to end: `wardn serve` with a Git App on a private repository served by
//! the real `git http-backend` over HTTPS (basic authentication). The App fails with
//! AuthenticationFailed in its status (API included) until credentials are registered through
//! the repositories API; then a webhook signed with the repository's own secret triggers a
//! poll that uses them and the App syncs, while one signed with another secret gets 401.

mod common;
mod support;

use std::time::Duration;

use serde_json::{Value, json};
use support::Upstream;
use support::https_git::{Auth, HttpsGitServer};
use wardn::app::Phase;
use wardn::daemon::ServeOptions;
use wardn::seal::Sealer;
use wardn::server::Server;
use wardn::sources::webhook::sign;

const PASSWORD: &str = "correct horse battery staple";
const GIT_USER: &str = "ci";
const GIT_PASSWORD: &str = "git-pass-123";
const REPO_HOOK: &str = "repo-hook-secret";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_private_repo_syncs_once_credentials_are_registered_and_its_webhook_secret_applies() {
    let sim = common::start(&["staging"]).await;
    let work = tempfile::tempdir().unwrap();
    let root = work.path().join("srv");
    std::fs::create_dir_all(&root).unwrap();
    let upstream = Upstream::init(&work.path().join("upstream"));
    upstream.commit(
        &[
            (
                "deploy/kustomization.yaml",
                "resources:\n- configmap.yaml\n",
            ),
            (
                "deploy/configmap.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: private-config\ndata:\n  k: v1\n",
            ),
        ],
        "first",
    );
    upstream.push_to_bare(&root, "repo.git");
    let git_server = HttpsGitServer::start(
        root.clone(),
        Auth::Basic(GIT_USER.into(), GIT_PASSWORD.into()),
    );
    let ca_file = work.path().join("git-ca.pem");
    std::fs::write(&ca_file, &git_server.ca_pem).unwrap();

    let apps = work.path().join("apps");
    std::fs::create_dir_all(&apps).unwrap();
    // An hour between polls: after the first (failing) poll only the webhook polls again.
    std::fs::write(
        apps.join("private.yaml"),
        format!(
            "apiVersion: cd.wardn.space/v1alpha1\nkind: App\nmetadata:\n  name: private\n  namespace: wardn\n\
             spec:\n  source:\n    type: Git\n    git:\n      repoURL: {}\n      branch: main\n\
             \x20     path: deploy\n      interval: 1h\n\
             \x20 destination:\n    namespace: staging\n  syncPolicy:\n    automated: true\n",
            git_server.url("repo.git")
        ),
    )
    .unwrap();
    let options = ServeOptions {
        listen: "127.0.0.1:0".parse().unwrap(),
        data_dir: work.path().join("data"),
        admin_password: Some(PASSWORD.into()),
        webhook_secret: Some("server-hook".into()),
        apps_dir: Some(apps),
        management_kubeconfig: Some(sim.kubeconfig.clone()),
        git_ca_file: Some(ca_file),
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
    let http = reqwest::Client::new();
    let cookie = support::server::login(&base, PASSWORD).await;

    // Without credentials: Failed, the reason in the message and a SourceReady=False condition.
    let mut failed = None;
    for _ in 0..600 {
        failed = runner.status("wardn/private");
        if failed.as_ref().and_then(|s| s.phase) == Some(Phase::Failed) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let failed = failed.expect("a status");
    assert_eq!(failed.phase, Some(Phase::Failed), "{failed:?}");
    let message = failed.message.clone().unwrap_or_default();
    assert!(
        message.starts_with("source: ") && message.contains("authentication failed"),
        "{message}"
    );
    let shown: Value = http
        .get(format!("{base}/api/v1/apps/local/private"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(shown["phase"], "Failed", "{shown}");
    let condition = shown["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "SourceReady")
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        (&condition["status"], &condition["reason"]),
        (&json!("False"), &json!("AuthenticationFailed")),
        "{shown}"
    );

    // Register the credentials (another spelling of the URL) with a per-repository secret.
    let created = http
        .post(format!("{base}/api/v1/repositories"))
        .header("cookie", &cookie)
        .json(&json!({"url": git_server.url("repo"), "username": GIT_USER,
                      "password": GIT_PASSWORD, "webhook_secret": REPO_HOOK}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);

    let body =
        serde_json::to_vec(&json!({"repository": {"clone_url": git_server.url("repo.git")}}))
            .unwrap();
    let webhook = |secret: &'static str| {
        let request = http
            .post(format!("{base}/api/v1/webhooks/git"))
            .header("x-hub-signature-256", sign(secret.as_bytes(), &body))
            .body(body.clone());
        async move { request.send().await.unwrap().status().as_u16() }
    };
    assert_eq!(
        webhook("server-hook").await,
        401,
        "the repository's own secret replaces the server secret"
    );
    assert_eq!(webhook(REPO_HOOK).await, 200);

    let mut synced = None;
    for _ in 0..600 {
        synced = runner.status("wardn/private");
        if synced.as_ref().and_then(|s| s.phase) == Some(Phase::Synced) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let synced = synced.expect("a status");
    assert_eq!(synced.phase, Some(Phase::Synced), "{synced:?}");
    assert!(
        synced
            .conditions
            .iter()
            .any(|c| c.type_ == "SourceReady" && c.status == "True"),
        "{synced:?}"
    );
    let applied = sim
        .cluster
        .get_object("v1", "ConfigMap", Some("staging"), "private-config")
        .expect("the private repository's ConfigMap was applied");
    assert_eq!(applied["data"]["k"], "v1");

    stop.send(()).unwrap();
    task.await.unwrap().unwrap();
}
