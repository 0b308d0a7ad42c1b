//! Git mirrors over real smart HTTPS (`git http-backend` behind a local TLS bridge), with
//! bearer and basic token authentication, and a stopped server; the poller taking rotated
//! credentials from its provider at the next fetch.

mod support;

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use support::https_git::{Auth, HttpsGitServer};
use support::{Upstream, git};
use wardn::sources::credentials::{Credentials, CredentialsProvider, LookupError};
use wardn::sources::git::{ChangeKind, GitError, GitSettings, Mirror};
use wardn::sources::poller::{Poller, PollerConfig};
use wardn::sources::spec::{GitRef, GitSource};
use wardn::sources::status::{Reason, SourceUpdate};
use wardn::sources::url::{SourceKey, parse_repo_url};

/// A bare repository `name.git` under `root`, pushed from a fresh upstream.
fn served_repo(root: &std::path::Path, work: &std::path::Path) -> Upstream {
    let up = Upstream::init(work);
    up.commit(&[("app/cm.yaml", "kind: ConfigMap\n")], "one");
    git(root, &["init", "-q", "--bare", "repo.git"]);
    up.git(&[
        "push",
        "-q",
        root.join("repo.git").to_str().unwrap(),
        "main",
    ]);
    up
}

fn open(data: &std::path::Path, server: &HttpsGitServer, creds: Credentials) -> Mirror {
    Mirror::open(
        &GitSettings {
            data_dir: data.to_path_buf(),
            extra_roots_pem: Some(Arc::new(server.ca_pem.clone().into_bytes())),
            ..GitSettings::default()
        },
        parse_repo_url(&server.url("repo.git")).unwrap(),
        creds,
    )
    .unwrap()
}

#[test]
fn https_with_bearer_token_fetches_updates_and_reports_auth_and_network_failures() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("srv");
    std::fs::create_dir_all(&root).unwrap();
    let up = served_repo(&root, &tmp.path().join("work"));
    let mut server = HttpsGitServer::start(root.clone(), Auth::Bearer("s3cret".into()));

    // Without credentials the server's 401 becomes a clear authentication error (no prompt).
    let anon = open(&tmp.path().join("anon"), &server, Credentials::Anonymous);
    let err = anon.fetch().unwrap_err();
    assert!(matches!(err, GitError::Authentication { .. }), "{err}");

    let m = open(
        &tmp.path().join("data"),
        &server,
        Credentials::Bearer {
            token: "s3cret".into(),
        },
    );
    let created = m.fetch().unwrap();
    assert_eq!(created.changes[0].kind, ChangeKind::Created);
    let id = m.resolve(&GitRef::Branch("main".into())).unwrap();
    let snap = m.snapshot(id).unwrap();
    assert_eq!(
        snap.tree.read_file("app/cm.yaml", 100).unwrap(),
        b"kind: ConfigMap\n"
    );
    // A no-change poll is one ref advertisement: the v2 handshake and one ls-refs, no fetch.
    let served = server.requests.lock().unwrap().len();
    assert!(m.fetch().unwrap().changes.is_empty());
    let requests = server.requests.lock().unwrap()[served..].to_vec();
    assert_eq!(
        requests,
        [
            "GET /repo.git/info/refs",
            "POST /repo.git/git-upload-pack ls-refs"
        ],
        "{requests:?}"
    );

    let c2 = up.commit(&[("app/cm.yaml", "kind: ConfigMap\n# 2\n")], "two");
    up.git(&[
        "push",
        "-q",
        root.join("repo.git").to_str().unwrap(),
        "main",
    ]);
    assert_eq!(m.fetch().unwrap().changes[0].kind, ChangeKind::FastForward);
    assert_eq!(
        m.resolve(&GitRef::Branch("main".into()))
            .unwrap()
            .to_string(),
        c2
    );

    // Network failure: the server is gone.
    server.stop();
    let err = m.fetch().unwrap_err();
    assert!(matches!(err, GitError::Unreachable { .. }), "{err}");
    // The last fetched revision stays readable.
    assert_eq!(
        m.resolve(&GitRef::Branch("main".into()))
            .unwrap()
            .to_string(),
        c2
    );
}

#[test]
fn https_with_basic_credentials_and_untrusted_certificate() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("srv");
    std::fs::create_dir_all(&root).unwrap();
    served_repo(&root, &tmp.path().join("work"));
    let server = HttpsGitServer::start(root, Auth::Basic("bot".into(), "tok".into()));

    let m = open(
        &tmp.path().join("data"),
        &server,
        Credentials::Basic {
            username: "bot".into(),
            password: "tok".into(),
        },
    );
    m.fetch().unwrap();
    assert!(m.resolve(&GitRef::Branch("main".into())).is_ok());

    let wrong = open(
        &tmp.path().join("wrong"),
        &server,
        Credentials::Basic {
            username: "bot".into(),
            password: "nope".into(),
        },
    );
    let err = wrong.fetch().unwrap_err();
    assert!(err.to_string().contains("not accepted"), "{err}");
    assert!(matches!(err, GitError::Authentication { .. }), "{err}");

    // Without the test CA the certificate is not trusted.
    let untrusted = Mirror::open(
        &GitSettings {
            data_dir: tmp.path().join("untrusted"),
            extra_roots_pem: None,
            ..GitSettings::default()
        },
        parse_repo_url(&server.url("repo.git")).unwrap(),
        Credentials::Basic {
            username: "bot".into(),
            password: "tok".into(),
        },
    )
    .unwrap();
    let err = untrusted.fetch().unwrap_err();
    assert!(
        err.to_string().contains("invalid peer certificate"),
        "{err}"
    );
    assert!(matches!(err, GitError::Unreachable { .. }), "{err}");
}

/// Credentials held in memory and changed by the test, as the registry would after an API call.
struct Rotating(std::sync::Mutex<Option<Credentials>>);

impl CredentialsProvider for Rotating {
    fn credentials<'a>(
        &'a self,
        _key: &'a SourceKey,
    ) -> BoxFuture<'a, Result<Option<Credentials>, LookupError>> {
        let current = self.0.lock().unwrap().clone();
        Box::pin(async move { Ok(current) })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_poller_asks_the_provider_at_every_fetch_so_rotations_apply_at_the_next_poll() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("srv");
    std::fs::create_dir_all(&root).unwrap();
    let up = served_repo(&root, &tmp.path().join("work"));
    let server = HttpsGitServer::start(root.clone(), Auth::Basic("ci".into(), "right".into()));
    let provider = Arc::new(Rotating(std::sync::Mutex::new(Some(Credentials::Basic {
        username: "ci".into(),
        password: "wrong".into(),
    }))));
    let mut config = PollerConfig::new(GitSettings {
        data_dir: tmp.path().join("data"),
        extra_roots_pem: Some(Arc::new(server.ca_pem.clone().into_bytes())),
        ..GitSettings::default()
    });
    config.backoff_base = Duration::from_secs(3600);
    config.backoff_max = Duration::from_secs(7200);
    let (poller, mut rx) = Poller::with_provider(config, provider.clone());
    let source = GitSource {
        url: parse_repo_url(&server.url("repo.git")).unwrap(),
        reference: GitRef::Branch("main".into()),
        path: String::new(),
        interval: Duration::from_secs(3600),
    };
    // Subscribed anonymously, as the runner does: the provider's credentials are used.
    poller
        .subscribe("app", &source, Credentials::Anonymous)
        .await
        .unwrap();
    let next = async |rx: &mut tokio::sync::mpsc::UnboundedReceiver<SourceUpdate>| {
        tokio::time::timeout(Duration::from_secs(60), rx.recv())
            .await
            .expect("an update within a minute")
            .expect("channel open")
    };
    let failed = next(&mut rx).await;
    assert_eq!(failed.status.reason, Reason::AuthenticationFailed);

    // Rotated: the next poll (here triggered) uses the new password.
    *provider.0.lock().unwrap() = Some(Credentials::Basic {
        username: "ci".into(),
        password: "right".into(),
    });
    assert!(poller.trigger(&source.url.key));
    let fetched = next(&mut rx).await;
    assert_eq!(fetched.status.reason, Reason::Fetched, "{fetched:?}");
    assert_eq!(fetched.snapshot.unwrap().revision, up.head());
}

/// The commands that render Apps offline reach a private Git server as `serve` does:
/// `wardn generate rbac` of an App whose source is served over HTTPS under a private CA fails
/// naming the untrusted certificate without `--git-ca-file`, and writes the App's RBAC with
/// it. Hostile: a CA file that cannot be read and a `--git-timeout` out of range are refused
/// naming the file or the flag, without a backtrace, before anything is fetched.
#[test]
fn offline_commands_trust_the_git_ca_file() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("srv");
    std::fs::create_dir_all(&root).unwrap();
    served_repo(&root, &tmp.path().join("work"));
    let up = Upstream {
        dir: tmp.path().join("work"),
    };
    up.commit(
        &[(
            "app/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: offline\ndata:\n  k: v\n",
        )],
        "a real ConfigMap",
    );
    up.git(&[
        "push",
        "-q",
        root.join("repo.git").to_str().unwrap(),
        "main",
    ]);
    let server = HttpsGitServer::start(root, Auth::None);
    let ca = tmp.path().join("git-ca.pem");
    std::fs::write(&ca, &server.ca_pem).unwrap();
    let apps = tmp.path().join("apps");
    std::fs::create_dir_all(&apps).unwrap();
    std::fs::write(
        apps.join("app.yaml"),
        format!(
            "apiVersion: cd.wardn.space/v1alpha1\nkind: App\nmetadata:\n  name: private-ca\n  namespace: wardn\n\
             spec:\n  source:\n    type: Git\n    git:\n      repoURL: {}\n      branch: main\n      path: app\n\
             \x20 destination:\n    namespace: team-a\n",
            server.url("repo.git")
        ),
    )
    .unwrap();
    let generate = |extra: &[&str], out: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_wardn"))
            .args(["generate", "rbac", "--apps"])
            .arg(&apps)
            .arg("--out")
            .arg(tmp.path().join(out))
            .args(extra)
            .env_remove("WARDN_GIT_CA_FILE")
            .output()
            .unwrap()
    };
    let untrusted = generate(&[], "untrusted");
    let stderr = String::from_utf8_lossy(&untrusted.stderr);
    assert!(!untrusted.status.success(), "{stderr}");
    assert!(stderr.contains("invalid peer certificate"), "{stderr}");

    let trusted = generate(&["--git-ca-file", ca.to_str().unwrap()], "trusted");
    let stderr = String::from_utf8_lossy(&trusted.stderr);
    assert!(trusted.status.success(), "{stderr}");
    let written: String = std::fs::read_dir(tmp.path().join("trusted"))
        .unwrap()
        .map(|entry| std::fs::read_to_string(entry.unwrap().path()).unwrap())
        .collect();
    assert!(written.contains("configmaps"), "{written}");

    for (extra, named) in [
        (
            vec!["--git-ca-file", "/nonexistent/ca.pem"],
            "/nonexistent/ca.pem",
        ),
        (vec!["--git-timeout", "0"], "--git-timeout"),
    ] {
        let refused = generate(&extra, "refused");
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert!(!refused.status.success(), "{extra:?}: {stderr}");
        assert!(stderr.contains(named), "{extra:?}: {stderr}");
        assert!(!stderr.contains("stack backtrace"), "{extra:?}: {stderr}");
        assert!(!tmp.path().join("refused").exists(), "{extra:?}");
    }
}
