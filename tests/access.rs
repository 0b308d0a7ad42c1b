//! Withdrawing access: API tokens are listed (never their secret), revoked and expire; a
//! password change ends every other session of the user; logout ends one session. Each is
//! audited.

mod support;

use reqwest::{Client, StatusCode};
use serde_json::{Value, json};
use support::server::{ADMIN_PASSWORD, TestServer};

async fn send(request: reqwest::RequestBuilder) -> (StatusCode, Value) {
    let response = request.send().await.unwrap();
    let status = response.status();
    let text = response.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

async fn create(server: &TestServer, auth: &str, body: Value) -> (StatusCode, Value) {
    send(
        Client::new()
            .post(server.url("/api/v1/tokens"))
            .bearer_auth(auth)
            .json(&body),
    )
    .await
}

async fn audit_actions(server: &TestServer, token: &str) -> Vec<(String, String, String)> {
    let (_, log) = send(
        Client::new()
            .get(server.url("/api/v1/audit"))
            .bearer_auth(token),
    )
    .await;
    log["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["action"].as_str().unwrap().to_string(),
                e["target"].as_str().unwrap().to_string(),
                e["outcome"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[tokio::test]
async fn tokens_are_listed_without_secrets_revoked_and_expire() {
    let server = TestServer::start(None).await;
    let admin = server.token().await;
    let http = Client::new();

    let (status, created) = create(&server, &admin, json!({"name": "ci", "ttl": "30d"})).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let ci = created["token"].as_str().unwrap().to_string();
    let ci_id = created["id"].as_str().unwrap().to_string();
    assert_eq!(ci_id.len(), 24, "{created}");
    let expires: jiff::Timestamp = created["expires_at"].as_str().unwrap().parse().unwrap();
    let days = (expires.as_second() - jiff::Timestamp::now().as_second()) / 86_400;
    assert!((29..=30).contains(&days), "{created}");

    // The default lifetime is 90 days.
    let (_, default) = create(&server, &admin, json!({"name": "default"})).await;
    let expires: jiff::Timestamp = default["expires_at"].as_str().unwrap().parse().unwrap();
    let days = (expires.as_second() - jiff::Timestamp::now().as_second()) / 86_400;
    assert!((89..=90).contains(&days), "{default}");

    // Using a token records when (to the minute).
    let (status, _) = send(http.get(server.url("/api/v1/clusters")).bearer_auth(&ci)).await;
    assert_eq!(status, StatusCode::OK);
    let (status, listed) = send(http.get(server.url("/api/v1/tokens")).bearer_auth(&admin)).await;
    assert_eq!(status, StatusCode::OK);
    let text = listed.to_string();
    for secret in [&admin, &ci] {
        assert!(
            !text.contains(secret.as_str()),
            "a secret is listed: {text}"
        );
        let hash = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(secret.as_bytes()));
        assert!(!text.contains(&hash), "a hash is listed: {text}");
    }
    let tokens = listed["tokens"].as_array().unwrap();
    // Oldest first, to the second: tokens made in one second may come in any order.
    let mut names: Vec<&str> = tokens.iter().map(|t| t["name"].as_str().unwrap()).collect();
    names.sort_unstable();
    assert_eq!(names, ["ci", "default", "tests"], "{listed}");
    let by_name = |name: &str| tokens.iter().find(|t| t["name"] == name).unwrap();
    let listed_ci = by_name("ci");
    assert_eq!(listed_ci["id"], ci_id.as_str());
    assert!(listed_ci["last_used_at"].is_string(), "{listed_ci}");
    assert_eq!(listed_ci["expired"], false);
    assert!(listed_ci["created_at"].is_string() && listed_ci["expires_at"].is_string());
    assert!(by_name("default")["last_used_at"].is_null(), "{listed}");

    // Revoked: refused at once, and a second revocation is a 404.
    let (status, _) = send(
        http.delete(server.url(&format!("/api/v1/tokens/{ci_id}")))
            .bearer_auth(&admin),
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) = send(http.get(server.url("/api/v1/clusters")).bearer_auth(&ci)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, body) = send(
        http.delete(server.url(&format!("/api/v1/tokens/{ci_id}")))
            .bearer_auth(&admin),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");

    // Expired: refused with 401, and listed as expired until revoked.
    let (status, short) = create(&server, &admin, json!({"name": "short", "ttl": "1s"})).await;
    assert_eq!(status, StatusCode::CREATED, "{short}");
    let short_token = short["token"].as_str().unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(2100)).await;
    let (status, body) = send(
        http.get(server.url("/api/v1/clusters"))
            .bearer_auth(short_token),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(
        body["error"].as_str().unwrap().contains("expired"),
        "{body}"
    );
    let (_, listed) = send(http.get(server.url("/api/v1/tokens")).bearer_auth(&admin)).await;
    let short_listed = listed["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "short")
        .unwrap()
        .clone();
    assert_eq!(short_listed["expired"], true, "{listed}");

    let actions = audit_actions(&server, &admin).await;
    assert!(
        actions.contains(&(
            "token.revoke".to_string(),
            format!("ci ({ci_id})"),
            "success".to_string()
        )),
        "{actions:?}"
    );
    assert!(
        actions.contains(&(
            "token.create".to_string(),
            format!("ci ({ci_id})"),
            "success role=admin".to_string()
        )),
        "{actions:?}"
    );
}

#[tokio::test]
async fn hostile_token_ids_and_ttls_are_a_400_naming_the_field() {
    let server = TestServer::start(None).await;
    let admin = server.token().await;
    let http = Client::new();
    for id in [
        "not-an-id",
        "..%2F..%2Fetc",
        "ABCDEF0123456789ABCDEF01",
        "' OR 1=1 --",
        &"a".repeat(4096),
    ] {
        let (status, body) = send(
            http.delete(server.url(&format!("/api/v1/tokens/{id}")))
                .bearer_auth(&admin),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{id}: {body}");
        assert!(
            body["error"].as_str().unwrap().starts_with("id: "),
            "{body}"
        );
    }
    // A well-formed id nobody has: 404.
    let (status, _) = send(
        http.delete(server.url(&format!("/api/v1/tokens/{}", "0".repeat(24))))
            .bearer_auth(&admin),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // Just under the 1 MiB body limit, so the ttl itself is what is refused (a body over the
    // limit is a 413 before any field is read).
    let huge = "9".repeat((1 << 20) - 64);
    for ttl in [
        json!("-5d"),
        json!("0"),
        json!("never"),
        json!("5w"),
        json!("366d"),
        json!(huge),
        json!(30),
    ] {
        let (status, body) = create(&server, &admin, json!({"name": "x", "ttl": ttl})).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        let message = body["error"].as_str().unwrap();
        assert!(message.contains("ttl"), "{message}");
        assert!(
            message.len() < 300,
            "the answer echoes the input: {}",
            message.len()
        );
    }
    let (_, listed) = send(http.get(server.url("/api/v1/tokens")).bearer_auth(&admin)).await;
    assert_eq!(listed["tokens"].as_array().unwrap().len(), 1, "{listed}");
}

async fn login(server: &TestServer, password: &str) -> String {
    support::server::login(&server.base, password).await
}

async fn change_password(
    server: &TestServer,
    cookie: &str,
    current: &str,
    new: &str,
) -> (StatusCode, Value) {
    send(
        Client::new()
            .post(server.url("/api/v1/auth/password"))
            .header("cookie", cookie)
            .json(&json!({"current_password": current, "new_password": new})),
    )
    .await
}

async fn clusters_status(server: &TestServer, cookie: &str) -> StatusCode {
    send(
        Client::new()
            .get(server.url("/api/v1/clusters"))
            .header("cookie", cookie),
    )
    .await
    .0
}

#[tokio::test]
async fn a_password_change_ends_the_other_sessions_only() {
    let server = TestServer::start(None).await;
    let token = server.token().await;
    let mine = login(&server, ADMIN_PASSWORD).await;
    let other = login(&server, ADMIN_PASSWORD).await;
    const NEW: &str = "a much better passphrase";

    let (status, body) = change_password(&server, &mine, "wrong password", NEW).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .starts_with("current_password")
    );
    let (status, body) = change_password(&server, &mine, ADMIN_PASSWORD, "short").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .starts_with("new_password: "),
        "{body}"
    );
    let (status, body) = send(
        Client::new()
            .post(server.url("/api/v1/auth/password"))
            .header("cookie", &mine)
            .json(&json!({"new_password": NEW})),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("current_password"),
        "{body}"
    );
    // Nothing changed so far.
    assert_eq!(clusters_status(&server, &other).await, StatusCode::OK);

    let (status, body) = change_password(&server, &mine, ADMIN_PASSWORD, NEW).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["sessions_ended"], 2, "{body}"); // `other` and the one token() logged in with
    assert_eq!(clusters_status(&server, &mine).await, StatusCode::OK);
    assert_eq!(
        clusters_status(&server, &other).await,
        StatusCode::UNAUTHORIZED
    );
    let (status, _) = send(
        Client::new()
            .get(server.url("/api/v1/clusters"))
            .bearer_auth(&token),
    )
    .await;
    assert_eq!(
        status,
        StatusCode::OK,
        "API tokens survive a password change"
    );
    // The old password no longer logs in; the new one does.
    let (status, _) = send(
        Client::new()
            .post(server.url("/api/v1/auth/login"))
            .json(&json!({"username": "admin", "password": ADMIN_PASSWORD})),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    login(&server, NEW).await;

    let actions = audit_actions(&server, &token).await;
    assert!(
        actions.contains(&(
            "auth.password".into(),
            "admin".into(),
            "success: 2 other session(s) ended".into()
        )),
        "{actions:?}"
    );
    assert!(
        actions.contains(&(
            "auth.password".into(),
            "admin".into(),
            "failure: wrong current password".into()
        )),
        "{actions:?}"
    );
}

#[tokio::test]
async fn logout_ends_one_session_and_is_audited() {
    let server = TestServer::start(None).await;
    let token = server.token().await;
    let first = login(&server, ADMIN_PASSWORD).await;
    let second = login(&server, ADMIN_PASSWORD).await;
    let logout = |cookie: &str| {
        Client::new()
            .post(server.url("/api/v1/auth/logout"))
            .header("cookie", cookie)
            .header("content-type", "application/json")
    };
    let response = logout(&first).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::NO_CONTENT);
    let cleared = response.headers()["set-cookie"].to_str().unwrap();
    assert!(cleared.contains("Max-Age=0"), "{cleared}");
    assert_eq!(
        clusters_status(&server, &first).await,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(clusters_status(&server, &second).await, StatusCode::OK);
    // The ended session cannot log out again.
    let (status, _) = send(logout(&first)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    // A token has no session to end.
    let (status, body) = send(
        Client::new()
            .post(server.url("/api/v1/auth/logout"))
            .bearer_auth(&token),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let actions = audit_actions(&server, &token).await;
    assert!(
        actions.contains(&("auth.logout".into(), "admin".into(), "success".into())),
        "{actions:?}"
    );
}
