//! The seed document's curl commands run verbatim (host and port, and the kubeconfig
//! placeholder, substituted) with the real `curl` against a real server; the database files
//! and a PostgreSQL dump scanned for secrets (kubeconfigs, Git passwords, tokens and webhook
//! secrets); key rotation with reseal.

mod support;

use std::process::Command;

use reqwest::Client;
use serde_json::{Value, json};
use support::postgres::Postgres;
use support::server::{ADMIN_PASSWORD, INTERNAL_TOKEN, KEY, TestServer, kubeconfig};
use wardn::seal::Sealer;
use wardn::sources::credentials::{Credentials, CredentialsProvider};
use wardn::sources::repositories::Repositories;
use wardn::sources::url::parse_repo_url;
use wardn::sources::webhook::WebhookSecretProvider;

/// Runs a shell command line in `dir`, asserting success; returns stdout.
fn sh(dir: &std::path::Path, line: &str) -> String {
    let output = Command::new("bash")
        .arg("-c")
        .arg(line)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{line}\nstdout: {}\nstderr: {}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// A seed command with the server address and a real kubeconfig for `server_url` filled in.
fn seed(command: &str, server: &TestServer, placeholder: &str, server_url: &str) -> String {
    let escaped = serde_json::to_string(&kubeconfig(server_url, "tok")).unwrap();
    command
        .replace("http://localhost:8080", &server.base)
        .replace(&format!("\"{placeholder}\""), &escaped)
}

const LOGIN: &str = r#"curl -c cookies.txt -X POST http://localhost:8080/api/v1/auth/login -H "Content-Type: application/json" -d '{"username":"admin","password":"PASSWORD"}'"#;

const VIA_THE_API: &str = r#"curl -X POST http://localhost:8080/api/v1/clusters \
  -b cookies.txt -H "Content-Type: application/json" \
  -d '{
    "name": "staging",
    "server_url": "https://staging.example.com:6443",
    "kubeconfig": "apiVersion: v1\nkind: Config\n...",
    "namespaces": ["staging", "default"]
  }'"#;

const VERIFY: &str = r#"curl http://localhost:8080/api/v1/clusters -b cookies.txt | jq '.clusters[] | {name, status, version, node_count}'"#;

const STEP_1_STAGING: &str = r#"curl -X POST http://localhost:8080/api/v1/clusters -b cookies.txt \
  -H "Content-Type: application/json" \
  -d '{"name":"staging","server_url":"https://staging.example.com:6443","kubeconfig":"…"}'"#;

const STEP_1_PRODUCTION: &str = r#"curl -X POST http://localhost:8080/api/v1/clusters -b cookies.txt \
  -H "Content-Type: application/json" \
  -d '{"name":"production","server_url":"https://prod.example.com:6443","kubeconfig":"…","namespaces":["production"]}'"#;

const TROUBLESHOOT: &str = r#"curl -X POST http://localhost:8080/api/v1/clusters/test -b cookies.txt \
  -H "Content-Type: application/json" \
  -d '{"server_url":"https://staging.example.com:6443","kubeconfig":"…"}'"#;

fn login(server: &TestServer, dir: &std::path::Path) {
    let line = LOGIN
        .replace("http://localhost:8080", &server.base)
        .replace("PASSWORD", ADMIN_PASSWORD);
    assert!(sh(dir, &line).contains("\"username\":\"admin\""));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_seed_curl_commands_work_verbatim() {
    let staging = "https://staging.example.com:6443";
    let server = TestServer::start(None).await;
    let dir = tempfile::tempdir().unwrap();
    login(&server, dir.path());
    let placeholder = "apiVersion: v1\\nkind: Config\\n...";
    let created = sh(
        dir.path(),
        &seed(VIA_THE_API, &server, placeholder, staging),
    );
    let created: Value = serde_json::from_str(&created).unwrap();
    assert_eq!(created["name"], "staging");
    assert_eq!(created["namespaces"], json!(["staging", "default"]));
    server.registry.probe("staging").await;
    let verified = sh(dir.path(), &seed(VERIFY, &server, "", staging));
    let verified: Value = serde_json::from_str(&verified).unwrap();
    assert_eq!(
        verified,
        json!({"name": "staging", "status": "disconnected", "version": null, "node_count": null})
    );

    // The tutorial, on a second server (it registers staging again).
    let server = TestServer::start(None).await;
    let dir = tempfile::tempdir().unwrap();
    login(&server, dir.path());
    let out = sh(dir.path(), &seed(STEP_1_STAGING, &server, "…", staging));
    assert!(out.contains("\"name\":\"staging\""), "{out}");
    let prod = "https://prod.example.com:6443";
    let out = sh(dir.path(), &seed(STEP_1_PRODUCTION, &server, "…", prod));
    assert!(out.contains("\"namespaces\":[\"production\"]"), "{out}");
    let out = sh(dir.path(), &seed(TROUBLESHOOT, &server, "…", staging));
    let report: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["status"], "disconnected");
    assert!(
        report["error"].as_str().unwrap().starts_with("DNS failure"),
        "{report}"
    );
}

/// Strings that must never appear in stored data.
fn secrets(api_token: &str) -> Vec<String> {
    let key_b64 = {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.encode(KEY)
    };
    vec![
        "SEKRIT-bearer-token-0123456789".to_string(),
        "apiVersion: v1".to_string(),
        "kind: Config".to_string(),
        "TUlTU0lOR19DQV9EQVRBX0ZPUl9URVNUUw==".to_string(),
        api_token.to_string(),
        ADMIN_PASSWORD.to_string(),
        INTERNAL_TOKEN.to_string(),
        hex::encode(KEY),
        key_b64,
        GIT_PASSWORD.to_string(),
        GIT_TOKEN.to_string(),
        GIT_WEBHOOK_SECRET.to_string(),
    ]
}

const GIT_PASSWORD: &str = "SEKRIT-git-password-4711";
const GIT_TOKEN: &str = "SEKRIT-git-token-0815";
const GIT_WEBHOOK_SECRET: &str = "SEKRIT-git-webhook-secret-42";

/// Registers Git credentials (basic with a webhook secret, and bearer) through the API.
async fn register_secret_repositories(server: &TestServer, token: &str) {
    for body in [
        json!({"url": "https://git.example.com/org/app.git", "username": "ci",
               "password": GIT_PASSWORD, "webhook_secret": GIT_WEBHOOK_SECRET}),
        json!({"url": "https://git.example.com/org/other", "token": GIT_TOKEN}),
    ] {
        let response = Client::new()
            .post(server.url("/api/v1/repositories"))
            .bearer_auth(token)
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 201);
    }
}

async fn register_secret_cluster(server: &TestServer) -> String {
    let token = server.token().await;
    let url = "https://staging.example.com:6443";
    let response = Client::new()
        .post(server.url("/api/v1/clusters"))
        .bearer_auth(&token)
        .json(&json!({"name": "staging", "server_url": url,
                      "kubeconfig": kubeconfig(url, "SEKRIT-bearer-token-0123456789")}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
    token
}

fn assert_clean(haystack: &[u8], needles: &[String], what: &str) {
    for needle in needles {
        let found = haystack
            .windows(needle.len())
            .any(|w| w == needle.as_bytes());
        assert!(!found, "{what} contains {needle:?}");
    }
    assert!(
        haystack.windows(7).any(|w| w == b"enc:v1:"),
        "{what} holds the sealed blob"
    );
}

#[tokio::test]
async fn the_sqlite_files_hold_no_kubeconfig_token_or_key_material() {
    let server = TestServer::start(None).await;
    let token = register_secret_cluster(&server).await;
    register_secret_repositories(&server, &token).await;
    // Read while running (WAL) and after shutdown (checkpointed).
    let mut bytes = Vec::new();
    for entry in std::fs::read_dir(server.data.path()).unwrap() {
        bytes.extend(std::fs::read(entry.unwrap().path()).unwrap());
    }
    let data = server.stop().await;
    for entry in std::fs::read_dir(data.path()).unwrap() {
        bytes.extend(std::fs::read(entry.unwrap().path()).unwrap());
    }
    assert_clean(&bytes, &secrets(&token), "SQLite data dir");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_backend_serves_the_api_and_its_dump_holds_no_secrets() {
    let pg = Postgres::start();
    let url = pg.create_database("api_suite");
    let server = TestServer::start(Some(url)).await;
    let token = register_secret_cluster(&server).await;
    register_secret_repositories(&server, &token).await;
    let http = Client::new();
    let list: Value = http
        .get(server.url("/api/v1/clusters"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(list["clusters"][0]["name"], "staging");
    let resolved: Value = http
        .get(server.url("/internal/clusters/staging/kubeconfig"))
        .bearer_auth(INTERNAL_TOKEN)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(
        resolved["kubeconfig"]
            .as_str()
            .unwrap()
            .contains("SEKRIT-bearer-token")
    );
    let dump = pg.dump("api_suite");
    assert!(
        dump.contains("cluster.register") && dump.contains("repository.add"),
        "the dump holds the audit log"
    );
    assert!(
        dump.contains("https://git.example.com/org/app"),
        "the dump holds the repositories"
    );
    assert_clean(dump.as_bytes(), &secrets(&token), "pg_dump");
    let files: Vec<_> = server
        .data
        .path()
        .read_dir()
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|name| name != wardn::daemon::lock::LOCK_FILE)
        .collect();
    assert!(
        files.is_empty(),
        "no SQLite file with --database-url: {files:?}"
    );
    server.stop().await;
}

#[tokio::test]
async fn key_rotation_with_previous_key_and_reseal() {
    let old = [1u8; 32];
    let new = [2u8; 32];
    let server =
        TestServer::start_with(None, Sealer::new(&old, None), tempfile::tempdir().unwrap()).await;
    let token = register_secret_cluster(&server).await;
    register_secret_repositories(&server, &token).await;
    let data = server.stop().await;

    let fetch = |server: &TestServer| {
        let url = server.url("/internal/clusters/staging/kubeconfig");
        async move {
            Client::new()
                .get(url)
                .bearer_auth(INTERNAL_TOKEN)
                .send()
                .await
                .unwrap()
                .status()
        }
    };
    // The new key alone cannot open the old blob.
    let server = TestServer::start_with(None, Sealer::new(&new, None), data).await;
    assert_eq!(fetch(&server).await, 500);
    let failed: Value = Client::new()
        .post(server.url("/api/v1/clusters/reseal"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(
        failed["error"]
            .as_str()
            .unwrap()
            .contains("cannot be opened with the configured keys"),
        "{failed}"
    );
    let data = server.stop().await;

    let server = TestServer::start_with(None, Sealer::new(&new, Some(&old)), data).await;
    assert_eq!(fetch(&server).await, 200);
    let resealed: Value = Client::new()
        .post(server.url("/api/v1/clusters/reseal"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    // The audit log is re-chained only when it verifies under the previous key; here the start
    // with the new key alone already appended under it, so nothing is re-chained.
    assert_eq!(resealed, json!({"resealed": 1, "audit_rechained": 0}));
    let resealed: Value = Client::new()
        .post(server.url("/api/v1/repositories/reseal"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(resealed, json!({"resealed": 2}));
    let data = server.stop().await;

    let server = TestServer::start_with(None, Sealer::new(&new, None), data).await;
    assert_eq!(
        fetch(&server).await,
        200,
        "after reseal the new key alone suffices"
    );
    let repositories = Repositories::new(server.registry.store().clone(), Sealer::new(&new, None));
    let key = parse_repo_url("https://git.example.com/org/app")
        .unwrap()
        .key;
    assert_eq!(
        repositories.credentials(&key).await.unwrap(),
        Some(Credentials::Basic {
            username: "ci".into(),
            password: GIT_PASSWORD.into()
        })
    );
    assert_eq!(
        repositories.webhook_secret(&key).await.unwrap(),
        Some(GIT_WEBHOOK_SECRET.as_bytes().to_vec())
    );
    server.stop().await;
}
