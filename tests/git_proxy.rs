//! Git remotes behind a proxy: `https://` remotes are fetched through the proxy named by the
//! environment (`HTTPS_PROXY`, with `NO_PROXY` exceptions, as curl and Git read them) as an
//! HTTP `CONNECT` tunnel with the proxy's credentials; a proxy that refuses or is down fails
//! the fetch, naming neither its password nor being bypassed.
//!
//! The environment is the process's, so this binary holds this one test only.

mod support;

use std::sync::Arc;

use support::Upstream;
use support::https_git::{Auth, HttpsGitServer};
use support::proxy::{Answer, Protocol, Proxy};
use wardn::sources::credentials::Credentials;
use wardn::sources::git::{GitError, GitSettings, Mirror};
use wardn::sources::spec::GitRef;
use wardn::sources::url::parse_repo_url;

/// Sets the proxy environment: `https_proxy` and `no_proxy` (each unset when `None`), and no
/// other spelling.
fn proxy_env(https_proxy: Option<&str>, no_proxy: Option<&str>) {
    for name in [
        "HTTPS_PROXY",
        "https_proxy",
        "HTTP_PROXY",
        "http_proxy",
        "ALL_PROXY",
        "all_proxy",
        "NO_PROXY",
        "no_proxy",
    ] {
        // SAFETY: this binary runs one test, and sets the environment before each fetch it
        // starts, never while another thread reads it.
        unsafe { std::env::remove_var(name) };
    }
    // SAFETY: as above.
    unsafe {
        if let Some(url) = https_proxy {
            std::env::set_var("HTTPS_PROXY", url);
        }
        if let Some(hosts) = no_proxy {
            std::env::set_var("NO_PROXY", hosts);
        }
    }
}

async fn fetch(data: &std::path::Path, server: &HttpsGitServer) -> Result<String, GitError> {
    let settings = GitSettings {
        data_dir: data.to_path_buf(),
        extra_roots_pem: Some(Arc::new(server.ca_pem.clone().into_bytes())),
        ..GitSettings::default()
    };
    let url = parse_repo_url(&server.url("repo.git")).unwrap();
    tokio::task::spawn_blocking(move || {
        let mirror = Mirror::open(&settings, url, Credentials::Anonymous)?;
        mirror.fetch()?;
        Ok(mirror.resolve(&GitRef::Branch("main".into()))?.to_string())
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_remotes_are_fetched_through_the_environments_proxy_unless_no_proxy_names_them() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("srv");
    let upstream = Upstream::init(&tmp.path().join("work"));
    upstream.commit(&[("app/cm.yaml", "kind: ConfigMap\n")], "one");
    upstream.push_to_bare(&root, "repo.git");
    let server = HttpsGitServer::start(root, Auth::None);
    let target = format!("127.0.0.1:{}", server.addr.port());
    let proxy = Proxy::start(Protocol::Http, Answer::Tunnel, Some("ops:p@ss")).await;

    // Through the proxy, with its credentials (percent-encoded in the URL, as curl reads them).
    proxy_env(Some(&proxy.url("ops:p%40ss@")), None);
    let head = fetch(&tmp.path().join("through"), &server).await.unwrap();
    assert_eq!(head, upstream.head());
    let seen = proxy.seen();
    assert!(!seen.is_empty(), "the fetch went around the proxy");
    for connect in &seen {
        assert_eq!(connect.target, target);
        assert_eq!(connect.credentials.as_deref(), Some("ops:p@ss"));
    }

    // The wrong password: the proxy refuses, the fetch fails without bypassing it and
    // without the password in its message.
    proxy_env(Some(&proxy.url("ops:wr%40ng-secret@")), None);
    let before = proxy.seen().len();
    let err = fetch(&tmp.path().join("refused"), &server)
        .await
        .unwrap_err();
    assert!(matches!(err, GitError::Unreachable { .. }), "{err:?}");
    let text = format!("{err} {err:?}");
    assert!(
        !text.contains("wr@ng-secret") && !text.contains("wr%40ng-secret"),
        "{text}"
    );
    assert!(proxy.seen().len() > before, "the proxy was bypassed");

    // A proxy that is down: the fetch fails, it never goes direct.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    proxy_env(Some(&format!("http://127.0.0.1:{port}")), None);
    let requests = server.requests.lock().unwrap().len();
    let err = fetch(&tmp.path().join("down"), &server).await.unwrap_err();
    assert!(matches!(err, GitError::Unreachable { .. }), "{err:?}");
    assert_eq!(
        server.requests.lock().unwrap().len(),
        requests,
        "went direct"
    );

    // NO_PROXY names the server: fetched directly, the proxy sees nothing more.
    proxy_env(
        Some(&proxy.url("ops:p%40ss@")),
        Some("example.com,127.0.0.1"),
    );
    let before = proxy.seen().len();
    let head = fetch(&tmp.path().join("direct"), &server).await.unwrap();
    assert_eq!(head, upstream.head());
    assert_eq!(proxy.seen().len(), before, "NO_PROXY was not honoured");
}
