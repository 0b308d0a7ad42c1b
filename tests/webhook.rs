//! The webhook route end to end: a real repository, the poller, and the axum router.

mod support;

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use support::Upstream;
use tower::ServiceExt;
use wardn::server::webhook::{WebhookState, router};
use wardn::sources::credentials::Credentials;
use wardn::sources::git::GitSettings;
use wardn::sources::poller::{Poller, PollerConfig};
use wardn::sources::spec::{GitRef, GitSource};
use wardn::sources::url::parse_repo_url;
use wardn::sources::webhook::{ROUTE, WebhookSecrets, sign};

async fn post(app: &axum::Router, headers: &[(&str, String)], body: &str) -> StatusCode {
    let mut req = Request::post(ROUTE).header("content-type", "application/json");
    for (name, value) in headers {
        req = req.header(*name, value);
    }
    let res = app
        .clone()
        .oneshot(req.body(Body::from(body.to_string())).unwrap())
        .await
        .unwrap();
    res.status()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signed_push_triggers_a_poll_and_bad_or_unknown_ones_do_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let up = Upstream::init(&tmp.path().join("up"));
    let c1 = up.commit(&[("f", "1")], "one");
    let mut config = PollerConfig::new(GitSettings {
        data_dir: tmp.path().join("data"),
        extra_roots_pem: None,
        ..GitSettings::default()
    });
    config.backoff_base = Duration::from_secs(3600);
    let (poller, mut rx) = Poller::new(config);
    let src = GitSource {
        url: parse_repo_url(&up.url()).unwrap(),
        reference: GitRef::Branch("main".into()),
        path: String::new(),
        interval: Duration::from_secs(3600),
    };
    poller
        .subscribe("app", &src, Credentials::Anonymous)
        .await
        .unwrap();
    assert_eq!(rx.recv().await.unwrap().status.revision.unwrap(), c1);
    let polls = poller.stats(&src.url.key).unwrap().polls;

    let secrets = WebhookSecrets::new(Some("server-secret"))
        .with_repository("https://example.com/other/repo", "repo-secret")
        .unwrap();
    let app = router(WebhookState::new(poller.clone(), Arc::new(secrets)));
    let c2 = up.commit(&[("f", "2")], "two");
    // GitHub-style payload naming our repository by its file:// clone URL.
    let body = serde_json::json!({
        "ref": "refs/heads/main",
        "repository": {"clone_url": format!("file://{}/", up.url()), "html_url": "https://example.com/x"}
    })
    .to_string();

    // Missing and bad signatures: 401, nothing polled.
    assert_eq!(post(&app, &[], &body).await, StatusCode::UNAUTHORIZED);
    let bad = sign(b"wrong", body.as_bytes());
    assert_eq!(
        post(&app, &[("x-hub-signature-256", bad)], &body).await,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        post(&app, &[("x-gitlab-token", "nope".into())], &body).await,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(poller.stats(&src.url.key).unwrap().polls, polls);
    assert!(rx.try_recv().is_err());

    // A repository no App uses: 202, nothing polled.
    let other = r#"{"project": {"git_http_url": "https://gitlab.example.com/a/b.git"}}"#;
    assert_eq!(
        post(&app, &[("x-gitlab-token", "server-secret".into())], other).await,
        StatusCode::ACCEPTED
    );
    // A per-repository secret replaces the server secret for that repository.
    let per_repo = r#"{"repoURL": "https://example.com/other/repo.git"}"#;
    assert_eq!(
        post(
            &app,
            &[(
                "x-wardn-signature",
                sign(b"server-secret", per_repo.as_bytes())
            )],
            per_repo
        )
        .await,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        post(
            &app,
            &[(
                "x-wardn-signature",
                sign(b"repo-secret", per_repo.as_bytes())
            )],
            per_repo
        )
        .await,
        StatusCode::ACCEPTED
    );
    assert_eq!(poller.stats(&src.url.key).unwrap().polls, polls);

    // Not JSON, but correctly signed: 400.
    assert_eq!(
        post(
            &app,
            &[("x-wardn-signature", sign(b"server-secret", b"nope"))],
            "nope"
        )
        .await,
        StatusCode::BAD_REQUEST
    );

    // Valid GitHub signature: 200 and the App gets the pushed commit.
    let good = sign(b"server-secret", body.as_bytes());
    assert_eq!(
        post(&app, &[("x-hub-signature-256", good)], &body).await,
        StatusCode::OK
    );
    let update = tokio::time::timeout(Duration::from_secs(60), rx.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(update.snapshot.unwrap().revision, c2);
}

#[tokio::test]
async fn unsigned_or_missigned_bodies_are_refused_unparsed() {
    let (poller, _rx) = Poller::new(PollerConfig::new(GitSettings::default()));
    let secrets = WebhookSecrets::new(Some("server-secret"))
        .with_repository("https://example.com/other/repo", "repo-secret")
        .unwrap();
    let app = router(WebhookState::new(poller, Arc::new(secrets)));
    // 20 MB, not JSON: were it parsed before the signature check it would be a 400.
    let body = "x".repeat(20 << 20);
    assert_eq!(post(&app, &[], &body).await, StatusCode::UNAUTHORIZED);
    let forged = sign(b"guess", body.as_bytes());
    assert_eq!(
        post(&app, &[("x-hub-signature-256", forged)], &body).await,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        post(&app, &[("x-gitlab-token", "guess".into())], &body).await,
        StatusCode::UNAUTHORIZED
    );
    // The same body signed with the server secret is read, and is not JSON.
    let signed = sign(b"server-secret", body.as_bytes());
    assert_eq!(
        post(&app, &[("x-hub-signature-256", signed)], &body).await,
        StatusCode::BAD_REQUEST
    );
    // Over the limit: 413 before anything else.
    let huge = "x".repeat(wardn::sources::webhook::MAX_BODY + 1);
    let signed = sign(b"server-secret", huge.as_bytes());
    assert_eq!(
        post(&app, &[("x-hub-signature-256", signed)], &huge).await,
        StatusCode::PAYLOAD_TOO_LARGE
    );
}

/// A per-repository secret authenticates payloads for its own repository only: a payload that
/// names the polled repository beside one whose secret the sender knows is checked against the
/// polled repository's secret (its own, else the server's).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repository_secret_does_not_trigger_another_repository() {
    let tmp = tempfile::tempdir().unwrap();
    let up = Upstream::init(&tmp.path().join("up"));
    up.commit(&[("f", "1")], "one");
    let mut config = PollerConfig::new(GitSettings {
        data_dir: tmp.path().join("data"),
        extra_roots_pem: None,
        ..GitSettings::default()
    });
    config.backoff_base = Duration::from_secs(3600);
    let (poller, mut rx) = Poller::new(config);
    let src = GitSource {
        url: parse_repo_url(&up.url()).unwrap(),
        reference: GitRef::Branch("main".into()),
        path: String::new(),
        interval: Duration::from_secs(3600),
    };
    poller
        .subscribe("app", &src, Credentials::Anonymous)
        .await
        .unwrap();
    rx.recv().await.unwrap();
    let polls = poller.stats(&src.url.key).unwrap().polls;
    let polled = format!("file://{}/", up.url());
    // The other repository's URL comes first, where the secret used to be looked up.
    let body = serde_json::json!({
        "repository": {"clone_url": "https://example.com/other/repo.git"},
        "repoURL": polled,
    })
    .to_string();
    let signed = |secret: &[u8]| vec![("x-wardn-signature", sign(secret, body.as_bytes()))];

    // The polled repository has no secret of its own: the server secret governs it.
    let app = router(WebhookState::new(
        poller.clone(),
        Arc::new(
            WebhookSecrets::new(Some("server-secret"))
                .with_repository("https://example.com/other/repo", "other-secret")
                .unwrap(),
        ),
    ));
    assert_eq!(
        post(&app, &signed(b"other-secret"), &body).await,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(poller.stats(&src.url.key).unwrap().polls, polls);

    // The polled repository has its own secret: neither the other's nor the server's will do.
    let app = router(WebhookState::new(
        poller.clone(),
        Arc::new(
            WebhookSecrets::new(Some("server-secret"))
                .with_repository("https://example.com/other/repo", "other-secret")
                .unwrap()
                .with_repository(&up.url(), "own-secret")
                .unwrap(),
        ),
    ));
    for wrong in [&b"other-secret"[..], b"server-secret"] {
        assert_eq!(
            post(&app, &signed(wrong), &body).await,
            StatusCode::UNAUTHORIZED
        );
    }
    assert_eq!(poller.stats(&src.url.key).unwrap().polls, polls);
    assert!(rx.try_recv().is_err());
    assert_eq!(
        post(&app, &signed(b"own-secret"), &body).await,
        StatusCode::OK
    );
}
