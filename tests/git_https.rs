//! Git mirrors over real smart HTTPS (`git http-backend` behind a local TLS bridge), with
//! bearer and basic token authentication, and a stopped server.

mod support;

use std::sync::Arc;

use support::https_git::{Auth, HttpsGitServer};
use support::{Upstream, git};
use wardn::sources::credentials::Credentials;
use wardn::sources::git::{ChangeKind, GitError, GitSettings, Mirror};
use wardn::sources::spec::GitRef;
use wardn::sources::url::parse_repo_url;

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
