//! The repositories API (`/api/v1/repositories`) against a real server: registration with
//! validation naming the field, one repository per normalised URL (409), listing without
//! secrets, rotation, removal, audit entries; and the `wardn repos` CLI with secrets on stdin.

mod support;

use std::io::Write;
use std::process::{Command, Stdio};

use reqwest::{Client, Method};
use serde_json::{Value, json};
use support::server::TestServer;
use wardn::server_link::ServerLink;
use wardn::sources::credentials::{Credentials, CredentialsProvider};
use wardn::sources::repositories::{Repositories, repository_id};
use wardn::sources::url::parse_repo_url;
use wardn::sources::webhook::WebhookSecretProvider;

async fn call(
    server: &TestServer,
    token: &str,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut request = Client::new()
        .request(method, server.url(path))
        .bearer_auth(token);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    let value = if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).unwrap()
    };
    (status, value)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repositories_are_registered_validated_listed_rotated_and_removed() {
    let server = TestServer::start(None).await;
    let token = server.token().await;
    let post = |body: Value| {
        call(
            &server,
            &token,
            Method::POST,
            "/api/v1/repositories",
            Some(body),
        )
    };

    // Every refusal names the field.
    for (body, field) in [
        (
            json!({"url": "http://git.example.com/org/app", "token": "t"}),
            "url",
        ),
        (
            json!({"url": "git@git.example.com:org/app.git", "username": "u", "password": "p"}),
            "url",
        ),
        (
            json!({"url": "https://u:pw@git.example.com/org/app"}),
            "url",
        ),
        (json!({"url": "ftp://git.example.com/org/app"}), "url"),
        (
            json!({"url": "https://git.example.com/org/app", "password": "p"}),
            "username",
        ),
        (
            json!({"url": "https://git.example.com/org/app", "username": "u", "password": "p", "token": "t"}),
            "token",
        ),
        (
            json!({"url": "https://git.example.com/org/app", "webhook_secret": ""}),
            "webhook_secret",
        ),
    ] {
        let (status, answer) = post(body.clone()).await;
        assert_eq!(status, 400, "{body} → {answer}");
        let message = answer["error"].as_str().unwrap();
        assert!(message.starts_with(&format!("{field}:")), "{message}");
        assert!(!message.contains("pw@"), "{message}");
    }
    let (status, _) = post(json!({"url": "https://h/o/r", "bogus": 1})).await;
    assert_eq!(status, 400, "unknown fields are refused");

    let (status, created) = post(json!({
        "url": "https://Git.Example.com/org/app.git", "username": "ci",
        "password": "pw-1", "webhook_secret": "hook-1"
    }))
    .await;
    assert_eq!(status, 201, "{created}");
    let id = repository_id("https://git.example.com/org/app").unwrap();
    assert_eq!(
        created,
        json!({"id": id, "url": "https://git.example.com/org/app", "auth": "basic",
               "username": "ci", "has_webhook_secret": true,
               "created_at": created["created_at"], "updated_at": created["updated_at"]})
    );
    // Another spelling of the same repository is a duplicate.
    let (status, dup) =
        post(json!({"url": "https://git.example.com/org/app/", "token": "t"})).await;
    assert_eq!(status, 409, "{dup}");
    let (status, _) = post(json!({"url": "http://git.example.com/org/hooks-only",
                                  "webhook_secret": "h"}))
    .await;
    assert_eq!(status, 201, "a webhook secret alone is fine over http");

    let (status, list) = call(&server, &token, Method::GET, "/api/v1/repositories", None).await;
    assert_eq!(status, 200);
    let text = list.to_string();
    assert!(!text.contains("pw-1") && !text.contains("hook-1"), "{text}");
    assert_eq!(list["repositories"].as_array().unwrap().len(), 2, "{list}");
    let path = format!("/api/v1/repositories/{id}");
    let (status, one) = call(&server, &token, Method::GET, &path, None).await;
    assert_eq!((status, &one["auth"]), (200, &json!("basic")));

    // The provider hands out the plain credentials; rotation applies at once.
    let repositories = Repositories::new(
        server.registry.store().clone(),
        wardn::seal::Sealer::new(&support::server::KEY, None),
    );
    let key = parse_repo_url("https://git.example.com/org/app")
        .unwrap()
        .key;
    assert_eq!(
        repositories.credentials(&key).await.unwrap(),
        Some(Credentials::Basic {
            username: "ci".into(),
            password: "pw-1".into()
        })
    );
    let (status, rotated) = call(
        &server,
        &token,
        Method::PUT,
        &path,
        Some(json!({"password": "pw-2", "webhook_secret": ""})),
    )
    .await;
    assert_eq!(status, 200, "{rotated}");
    assert_eq!(rotated["has_webhook_secret"], false);
    assert_eq!(
        repositories.credentials(&key).await.unwrap(),
        Some(Credentials::Basic {
            username: "ci".into(),
            password: "pw-2".into()
        }),
        "a lone password keeps the user"
    );
    assert_eq!(repositories.webhook_secret(&key).await.unwrap(), None);
    let (status, _) = call(
        &server,
        &token,
        Method::PUT,
        &path,
        Some(json!({"token": "tok"})),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        repositories.credentials(&key).await.unwrap(),
        Some(Credentials::Bearer {
            token: "tok".into()
        })
    );
    let (status, empty) = call(&server, &token, Method::PUT, &path, Some(json!({}))).await;
    assert_eq!(status, 400, "{empty}");

    let (status, _) = call(&server, &token, Method::DELETE, &path, None).await;
    assert_eq!(status, 204);
    let (status, _) = call(&server, &token, Method::DELETE, &path, None).await;
    assert_eq!(status, 404);
    let (status, _) = call(&server, &token, Method::GET, &path, None).await;
    assert_eq!(status, 404);
    assert_eq!(repositories.credentials(&key).await.unwrap(), None);

    let (_, audit) = call(&server, &token, Method::GET, "/api/v1/audit", None).await;
    let actions: Vec<(String, String, String)> = audit["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"].as_str().unwrap().starts_with("repository."))
        .map(|e| {
            (
                e["action"].as_str().unwrap().to_string(),
                e["target"].as_str().unwrap().to_string(),
                e["outcome"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let app = "https://git.example.com/org/app".to_string();
    assert!(actions.contains(&("repository.add".into(), app.clone(), "success".into())));
    assert!(actions.contains(&("repository.update".into(), app.clone(), "success".into())));
    assert!(actions.contains(&("repository.remove".into(), app.clone(), "success".into())));
    assert!(
        actions
            .iter()
            .any(|(a, _, o)| a == "repository.add" && o.starts_with("failure: url:")),
        "{actions:?}"
    );
    let text = audit.to_string();
    assert!(!text.contains("pw-1") && !text.contains("pw-2") && !text.contains("tok\""));
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_repos_cli_reads_secrets_from_stdin() {
    let server = TestServer::start(None).await;
    let token = server.token().await;
    let config = tempfile::tempdir().unwrap();
    let config_dir = config.path().to_path_buf();
    let base = server.base.clone();
    let run = move |args: &[&str], stdin: &str| {
        let mut child = Command::new(env!("CARGO_BIN_EXE_wardn"))
            .arg("repos")
            .args(["--server", &base, "--token", &token])
            .args(args)
            .env("WARDN_CONFIG_DIR", &config_dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(stdin.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    };
    let out = tokio::task::spawn_blocking({
        let run = run.clone();
        move || {
            run(
                &[
                    "add",
                    "https://git.example.com/org/cli.git",
                    "--username",
                    "ci",
                    "--password-stdin",
                    "--webhook-secret-stdin",
                ],
                "cli-password\ncli-hook\n",
            )
        }
    })
    .await
    .unwrap();
    assert!(out.status.success(), "{out:?}");
    let repositories = Repositories::new(
        server.registry.store().clone(),
        wardn::seal::Sealer::new(&support::server::KEY, None),
    );
    let key = parse_repo_url("https://git.example.com/org/cli")
        .unwrap()
        .key;
    assert_eq!(
        repositories.credentials(&key).await.unwrap(),
        Some(Credentials::Basic {
            username: "ci".into(),
            password: "cli-password".into()
        })
    );
    assert_eq!(
        repositories.webhook_secret(&key).await.unwrap(),
        Some(b"cli-hook".to_vec())
    );

    let (list, rotate, refused, reseal, rm) = tokio::task::spawn_blocking(move || {
        (
            run(&["list"], ""),
            run(
                &["rotate", "https://git.example.com/org/cli", "--token-stdin"],
                "cli-token\n",
            ),
            run(
                &["add", "http://git.example.com/org/x", "--token-stdin"],
                "t\n",
            ),
            run(&["reseal"], ""),
            run(&["rm", "https://GIT.example.com/org/cli/"], ""),
        )
    })
    .await
    .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&reseal.stdout).trim(),
        "1 repositories resealed",
        "{reseal:?}"
    );
    let listed = String::from_utf8(list.stdout).unwrap();
    assert!(
        listed.contains("https://git.example.com/org/cli") && listed.contains("basic"),
        "{listed}"
    );
    assert!(!listed.contains("cli-password"));
    assert!(rotate.status.success(), "{rotate:?}");
    assert!(
        String::from_utf8_lossy(&rotate.stdout).contains("auth bearer"),
        "{rotate:?}"
    );
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("url:"),
        "{refused:?}"
    );
    assert!(rm.status.success(), "{rm:?}");
    assert_eq!(repositories.credentials(&key).await.unwrap(), None);
    server.stop().await;
}

/// `GET /internal/repositories/{id}/credentials` gives operator-role processes the registered
/// credentials in the clear: to the internal token only, 404 for ids nobody registered
/// (hostile ones included), and rotations are seen at the next request (a thousand lookups
/// across ten rotations).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_internal_route_answers_registered_credentials_to_the_internal_token_only() {
    use support::server::INTERNAL_TOKEN;
    use wardn::sources::server_credentials::{InternalCredentials, ServerCredentials};

    let server = TestServer::start(None).await;
    let token = server.token().await;
    let url = "https://git.example.com/org/private";
    let (status, view) = call(
        &server,
        &token,
        Method::POST,
        "/api/v1/repositories",
        Some(json!({"url": url, "username": "ci", "password": "pw-one"})),
    )
    .await;
    assert_eq!(status, 201, "{view}");
    let id = view["id"].as_str().unwrap().to_string();
    let route = format!("/internal/repositories/{id}/credentials");

    let (status, answer) = call(&server, INTERNAL_TOKEN, Method::GET, &route, None).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        answer,
        json!({"url": "https://git.example.com/org/private", "auth": "basic", "username": "ci", "secret": "pw-one"})
    );
    // A user's token, even the admin's, or none at all: refused, nothing answered.
    for bearer in [token.as_str(), "", "not-the-internal-token"] {
        let (status, answer) = call(&server, bearer, Method::GET, &route, None).await;
        assert_eq!(status, 401, "{bearer:?}: {answer}");
        assert!(!answer.to_string().contains("pw-one"), "{answer}");
    }
    // Unknown and hostile ids: 404, never another repository's secret.
    let long = "a".repeat(10_000);
    for id in [
        "0000000000000000",
        "..%2F..%2Fetc",
        "%00",
        "' OR 1=1 --",
        long.as_str(),
    ] {
        let (status, answer) = call(
            &server,
            INTERNAL_TOKEN,
            Method::GET,
            &format!("/internal/repositories/{id}/credentials"),
            None,
        )
        .await;
        assert_eq!(status, 404, "{id}: {answer}");
        assert!(!answer.to_string().contains("pw-one"), "{answer}");
    }

    // The operator's provider reads them, follows a rotation to a token, and answers
    // nothing for a repository that is not registered.
    let link = |token: &str| {
        ServerLink::new(&server.base, token, None, std::time::Duration::from_secs(5)).unwrap()
    };
    let provider = ServerCredentials::new(link(INTERNAL_TOKEN));
    let key = parse_repo_url("https://git.example.com/org/private.git")
        .unwrap()
        .key;
    assert_eq!(
        provider.credentials(&key).await.unwrap(),
        Some(Credentials::Basic {
            username: "ci".into(),
            password: "pw-one".into()
        })
    );
    let (status, _) = call(
        &server,
        &token,
        Method::PUT,
        &format!("/api/v1/repositories/{id}"),
        Some(json!({"token": "tok-two"})),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        provider.credentials(&key).await.unwrap(),
        Some(Credentials::Bearer {
            token: "tok-two".into()
        })
    );
    let unknown = parse_repo_url("https://git.example.com/org/public")
        .unwrap()
        .key;
    assert_eq!(provider.credentials(&unknown).await.unwrap(), None);
    let (_, answer) = call(&server, INTERNAL_TOKEN, Method::GET, &route, None).await;
    let read: InternalCredentials = serde_json::from_value(answer).unwrap();
    assert_eq!(read.auth, "bearer");

    // Long run: a thousand lookups, the token rotated every hundredth; each lookup answers
    // the token of the last rotation.
    let mut current = "tok-two".to_string();
    for round in 0..1_000 {
        if round % 100 == 99 {
            current = format!("tok-{round}");
            let (status, _) = call(
                &server,
                &token,
                Method::PUT,
                &format!("/api/v1/repositories/{id}"),
                Some(json!({"token": current})),
            )
            .await;
            assert_eq!(status, 200);
        }
        assert_eq!(
            provider.credentials(&key).await.unwrap(),
            Some(Credentials::Bearer {
                token: current.clone()
            }),
            "lookup {round}"
        );
    }

    // A wrong internal token: the lookup fails, naming the repository and the 401.
    let wrong = ServerCredentials::new(link("wrong"));
    let err = wrong.credentials(&key).await.unwrap_err().to_string();
    assert!(
        err.contains("git.example.com/org/private") && err.contains("401"),
        "{err}"
    );
}
