//! The HTTP API end to end against an in-process server: authentication on every route,
//! cookies and CSRF, tokens, every clusters route and error case, audit and the internal
//! endpoint.

mod support;

use reqwest::{Client, StatusCode};
use serde_json::{Value, json};
use support::running::{client_from, login_status_at};
use support::server::{INTERNAL_TOKEN, TestServer, WEBHOOK_SECRET, kubeconfig};
use wardn::server::{Access, route_table};
use wardn::store::audit;

const STAGING: &str = "https://staging.example.com:6443";

async fn send(request: reqwest::RequestBuilder) -> (StatusCode, Value) {
    let response = request.send().await.unwrap();
    let status = response.status();
    let text = response.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

fn register_body(name: &str, server: &str) -> Value {
    json!({"name": name, "server_url": server, "kubeconfig": kubeconfig(server, "tok-123"),
           "namespaces": ["staging", "default"]})
}

#[tokio::test]
async fn every_route_but_login_and_health_requires_authentication() {
    let server = TestServer::start(None).await;
    let token = server.token().await;
    let http = Client::new();
    let table = route_table();
    assert!(table.len() >= 13);
    let public: Vec<&str> = table
        .iter()
        .filter(|r| r.access == Access::Public)
        .map(|r| r.path)
        .collect();
    assert_eq!(
        public,
        [
            "/api/v1/health",
            "/metrics",
            "/api/v1/auth/login",
            "/api/v1/openapi.json"
        ]
    );
    let webhooks: Vec<&str> = table
        .iter()
        .filter(|r| r.access == Access::Webhook)
        .map(|r| r.path)
        .collect();
    assert_eq!(webhooks, ["/api/v1/webhooks/git"]);
    for route in table {
        let url = server.url(
            &route
                .path
                .replace("{name}", "staging")
                .replace("{cluster}", "local"),
        );
        let anonymous = http
            .request(route.method.clone(), &url)
            .header("content-type", "application/json");
        let (status, _) = send(anonymous.body("{}")).await;
        match route.access {
            Access::Public => assert_ne!(
                status,
                StatusCode::UNAUTHORIZED,
                "{} {}",
                route.method,
                route.path
            ),
            // Webhooks carry no session: an unsigned request is refused by the handler.
            Access::Role(_) | Access::Internal | Access::Operators | Access::Webhook => {
                assert_eq!(
                    status,
                    StatusCode::UNAUTHORIZED,
                    "{} {}",
                    route.method,
                    route.path
                );
                let forged = http
                    .request(route.method.clone(), &url)
                    .bearer_auth("wardn_forged");
                let (status, _) = send(forged).await;
                assert_eq!(
                    status,
                    StatusCode::UNAUTHORIZED,
                    "{} {}",
                    route.method,
                    route.path
                );
            }
        }
        if matches!(route.access, Access::Internal | Access::Operators) {
            // A user's API token is not the internal token.
            let (status, _) =
                send(http.request(route.method.clone(), &url).bearer_auth(&token)).await;
            assert_eq!(status, StatusCode::UNAUTHORIZED, "{}", route.path);
        }
    }
}

#[tokio::test]
async fn the_git_webhook_is_mounted_and_checks_signatures() {
    let server = TestServer::start(None).await;
    let http = Client::new();
    let url = server.url(wardn::sources::webhook::ROUTE);
    let body = serde_json::to_vec(&json!({"repoURL": "https://git.example.com/o/r.git"})).unwrap();
    let signed = |secret: &[u8]| {
        http.post(&url)
            .header(
                "x-wardn-signature",
                wardn::sources::webhook::sign(secret, &body),
            )
            .body(body.clone())
    };
    // Right signature, repository no App uses: accepted, nothing to poll.
    let (status, reply) = send(signed(WEBHOOK_SECRET.as_bytes())).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{reply}");
    assert_eq!(reply["status"], "ignored");
    // Wrong secret: refused.
    let (status, _) = send(signed(b"not the secret")).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    // Payloads above the API's 1 MB limit but under the webhook's 25 MB are read.
    let big = vec![b' '; 2 << 20];
    let (status, _) = send(
        http.post(&url)
            .header(
                "x-wardn-signature",
                wardn::sources::webhook::sign(WEBHOOK_SECRET.as_bytes(), &big),
            )
            .body(big.clone()),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn login_sets_an_httponly_samesite_cookie_and_cookie_writes_need_json() {
    let server = TestServer::start(None).await;
    let http = Client::new();
    let (status, body) = send(
        http.post(server.url("/api/v1/auth/login"))
            .json(&json!({"username": "admin", "password": "wrong"})),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(body["error"], "invalid username or password");

    let response = http
        .post(server.url("/api/v1/auth/login"))
        .json(&json!({"username": "admin", "password": support::server::ADMIN_PASSWORD}))
        .send()
        .await
        .unwrap();
    let set_cookie = response.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(set_cookie.starts_with("wardn_session="), "{set_cookie}");
    assert!(set_cookie.contains("HttpOnly") && set_cookie.contains("SameSite=Strict"));
    let cookie = set_cookie.split(';').next().unwrap().to_string();

    let (status, body) = send(
        http.get(server.url("/api/v1/clusters"))
            .header("cookie", &cookie),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body, json!({"clusters": []}));

    // A cross-site form post cannot set a JSON content type: refused.
    let form = http
        .post(server.url("/api/v1/clusters"))
        .header("cookie", &cookie)
        .header("content-type", "application/x-www-form-urlencoded")
        .body("name=x");
    let (status, body) = send(form).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(body["error"].as_str().unwrap().contains("CSRF"));

    let logout = http
        .post(server.url("/api/v1/auth/logout"))
        .header("cookie", &cookie)
        .header("content-type", "application/json");
    let (status, _) = send(logout).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) = send(
        http.get(server.url("/api/v1/clusters"))
            .header("cookie", &cookie),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn api_tokens_authenticate_and_are_audited_by_name() {
    let server = TestServer::start(None).await;
    let token = server.token().await;
    assert!(token.starts_with("wardn_"));
    let http = Client::new();
    let (status, _) = send(http.get(server.url("/api/v1/clusters")).bearer_auth(&token)).await;
    assert_eq!(status, StatusCode::OK);
    // Token-authenticated writes need no cookie-CSRF header.
    let (status, _) = send(
        http.post(server.url("/api/v1/clusters"))
            .bearer_auth(&token)
            .json(&register_body("staging", STAGING)),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    let (_, log) = send(http.get(server.url("/api/v1/audit")).bearer_auth(&token)).await;
    let actions: Vec<(&str, &str)> = log["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["action"].as_str().unwrap(), e["actor"].as_str().unwrap()))
        .collect();
    assert!(actions.contains(&("token.create", "admin")), "{actions:?}");
    // A token's actor names its user, its name and its id.
    let (_, listed) = send(http.get(server.url("/api/v1/tokens")).bearer_auth(&token)).await;
    let id = listed["tokens"][0]["id"].as_str().unwrap();
    let actor = format!("admin/token:tests ({id})");
    assert!(
        actions.contains(&("cluster.register", actor.as_str())),
        "{actions:?}"
    );
    let (status, body) = send(
        http.post(server.url("/api/v1/tokens"))
            .bearer_auth(&token)
            .json(&json!({"name": ""})),
    )
    .await;
    assert_eq!(
        (status, body["error"].as_str().unwrap()),
        (StatusCode::BAD_REQUEST, "name: must be 1-100 characters")
    );
}

async fn post_cluster(server: &TestServer, token: &str, body: &Value) -> (StatusCode, Value) {
    send(
        Client::new()
            .post(server.url("/api/v1/clusters"))
            .bearer_auth(token)
            .json(body),
    )
    .await
}

#[tokio::test]
async fn registration_validates_each_field_with_a_400_naming_it() {
    let server = TestServer::start(None).await;
    let token = server.token().await;
    let exec = "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://staging.example.com:6443\nusers:\n- name: u\n  user:\n    exec:\n      command: /bin/sh\n";
    let provider = exec.replace(
        "exec:\n      command: /bin/sh",
        "auth-provider:\n      name: gcp",
    );
    let cases: Vec<(Value, &str)> = vec![
        (
            json!({"name": "x", "server_url": STAGING, "kubeconfig": exec}),
            "kubeconfig.users[0].user.exec",
        ),
        (
            json!({"name": "x", "server_url": STAGING, "kubeconfig": provider}),
            "kubeconfig.users[0].user.auth-provider",
        ),
        (
            json!({"name": "x", "server_url": "http://staging.example.com:6443", "kubeconfig": kubeconfig(STAGING, "t")}),
            "server_url",
        ),
        (
            json!({"name": "x", "server_url": STAGING, "kubeconfig": kubeconfig("https://other:6443", "t")}),
            "kubeconfig.clusters[0].cluster.server",
        ),
        (
            json!({"name": "x", "server_url": STAGING, "kubeconfig": ""}),
            "kubeconfig",
        ),
        (
            json!({"name": "x", "server_url": STAGING, "kubeconfig": "{{{{ not yaml"}),
            "kubeconfig",
        ),
        (
            json!({"name": "x", "server_url": STAGING, "kubeconfig": "x".repeat(300_000)}),
            "kubeconfig",
        ),
        (
            json!({"name": "Not_A_Label", "server_url": STAGING, "kubeconfig": kubeconfig(STAGING, "t")}),
            "name",
        ),
        (
            json!({"name": "x", "server_url": STAGING, "kubeconfig": kubeconfig(STAGING, "t"), "namespaces": ["ok", "Bad NS"]}),
            "namespaces[1]",
        ),
    ];
    for (body, field) in cases {
        let (status, answer) = post_cluster(&server, &token, &body).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{field}: {answer}");
        let message = answer["error"].as_str().unwrap();
        assert!(
            message.starts_with(&format!("{field}: ")),
            "{field}: {message}"
        );
        assert!(!message.contains("/bin/sh"), "{message}");
    }
    let (status, answer) = post_cluster(&server, &token, &json!({"name": "x"})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        answer["error"].as_str().unwrap().contains("server_url"),
        "{answer}"
    );
    let (status, _) = send(
        Client::new()
            .post(server.url("/api/v1/clusters"))
            .bearer_auth(&token)
            .header("content-type", "application/json")
            .body(vec![b' '; wardn::server::MAX_BODY_BYTES + 1]),
    )
    .await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    let long = json!({"name": "n".repeat(10_000), "server_url": STAGING, "kubeconfig": kubeconfig(STAGING, "t")});
    let (status, _) = post_cluster(&server, &token, &long).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (_, log) = send(
        Client::new()
            .get(server.url("/api/v1/audit"))
            .bearer_auth(&token),
    )
    .await;
    let last = log["entries"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["action"], "cluster.register");
    assert_eq!(
        last["target"].as_str().unwrap().len(),
        253,
        "audit targets are bounded"
    );
    let (_, list) = send(
        Client::new()
            .get(server.url("/api/v1/clusters"))
            .bearer_auth(&token),
    )
    .await;
    assert_eq!(list, json!({"clusters": []}), "nothing stored");
}

#[tokio::test]
async fn clusters_crud_with_409_404_cached_status_and_audit() {
    let server = TestServer::start(None).await;
    let token = server.token().await;
    let http = Client::new();
    let (status, created) = post_cluster(&server, &token, &register_body("staging", STAGING)).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert_eq!(created["name"], "staging");
    assert_eq!(created["status"], "disconnected");
    assert_eq!(created["namespaces"], json!(["staging", "default"]));
    assert!(created.get("kubeconfig").is_none());

    let (status, dup) = post_cluster(&server, &token, &register_body("staging", STAGING)).await;
    assert_eq!(status, StatusCode::CONFLICT, "{dup}");

    // The registry probes in the background; staging.example.com does not resolve here.
    let probed = server.registry.probe("staging").await;
    assert_eq!(
        probed.status,
        wardn::clusters::connect::Connectivity::Disconnected
    );
    let (status, list) = send(http.get(server.url("/api/v1/clusters")).bearer_auth(&token)).await;
    assert_eq!(status, StatusCode::OK);
    let entry = &list["clusters"][0];
    for key in [
        "name",
        "server_url",
        "status",
        "version",
        "node_count",
        "namespaces",
        "error",
    ] {
        assert!(entry.get(key).is_some(), "{key} missing in {entry}");
    }
    assert_eq!(entry["status"], "disconnected");

    let (status, got) = send(
        http.get(server.url("/api/v1/clusters/staging"))
            .bearer_auth(&token),
    )
    .await;
    assert_eq!(
        (status, got["server_url"].as_str()),
        (StatusCode::OK, Some(STAGING))
    );
    for method in [
        reqwest::Method::GET,
        reqwest::Method::PUT,
        reqwest::Method::DELETE,
    ] {
        let (status, body) = send(
            http.request(method.clone(), server.url("/api/v1/clusters/nope"))
                .bearer_auth(&token)
                .json(&json!({})),
        )
        .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{method} {body}");
        assert_eq!(body["error"], "cluster \"nope\" not found");
    }

    server.registry.cached_cluster("staging").await.unwrap();
    assert!(server.registry.clients().contains("staging"));
    let (status, updated) = send(
        http.put(server.url("/api/v1/clusters/staging"))
            .bearer_auth(&token)
            .json(&json!({"namespaces": ["staging"]})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{updated}");
    assert_eq!(updated["namespaces"], json!(["staging"]));
    // The update dropped the stale client: whatever is cached now carries the new allowlist
    // (a background re-probe may already have rebuilt it).
    let cached = server.registry.cached_cluster("staging").await.unwrap();
    assert_eq!(
        cached.namespaces,
        ["staging"],
        "update drops the cached client"
    );
    let (status, bad) = send(
        http.put(server.url("/api/v1/clusters/staging"))
            .bearer_auth(&token)
            .json(&json!({"server_url": "https://elsewhere:6443"})),
    )
    .await;
    assert_eq!(
        status,
        StatusCode::BAD_REQUEST,
        "the stored kubeconfig points elsewhere: {bad}"
    );
    let (status, _) = send(
        http.put(server.url("/api/v1/clusters/staging"))
            .bearer_auth(&token)
            .json(&json!({"server_url": "https://elsewhere:6443", "kubeconfig": kubeconfig("https://elsewhere:6443", "t2")})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);

    let (status, _) = send(
        http.delete(server.url("/api/v1/clusters/staging"))
            .bearer_auth(&token),
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) = send(
        http.get(server.url("/api/v1/clusters/staging"))
            .bearer_auth(&token),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    let (_, log) = send(http.get(server.url("/api/v1/audit")).bearer_auth(&token)).await;
    let entries: Vec<audit::Entry> = serde_json::from_value(log["entries"].clone()).unwrap();
    let (_, verified) = send(
        http.get(server.url("/api/v1/audit/verify"))
            .bearer_auth(&token),
    )
    .await;
    assert_eq!(verified["intact"], true, "{verified}");
    let summary: Vec<(String, String, String)> = entries
        .iter()
        .filter(|e| e.action.starts_with("cluster."))
        .map(|e| {
            (
                e.action.clone(),
                e.target.clone(),
                e.outcome.split(':').next().unwrap().to_string(),
            )
        })
        .collect();
    let expected = [
        ("cluster.register", "staging", "success"),
        ("cluster.register", "staging", "failure"),
        ("cluster.update", "staging", "success"),
        ("cluster.update", "staging", "failure"),
        ("cluster.update", "staging", "success"),
        ("cluster.remove", "staging", "success"),
    ];
    let expected: Vec<(String, String, String)> = expected
        .iter()
        .map(|(a, t, o)| (a.to_string(), t.to_string(), o.to_string()))
        .collect();
    // GET/PUT/DELETE on the unknown cluster add update/remove failures for "nope".
    let staging: Vec<_> = summary
        .into_iter()
        .filter(|(_, t, _)| t == "staging")
        .collect();
    assert_eq!(staging, expected);
    let text = serde_json::to_string(&entries).unwrap();
    assert!(
        !text.contains("tok-123") && !text.contains("apiVersion"),
        "no secrets in audit"
    );
}

#[tokio::test]
async fn internal_endpoint_serves_the_unsealed_kubeconfig_to_the_internal_token_only() {
    let server = TestServer::start(None).await;
    let token = server.token().await;
    let body = register_body("staging", STAGING);
    post_cluster(&server, &token, &body).await;
    let http = Client::new();
    let url = server.url("/internal/clusters/staging/kubeconfig");
    let (status, resolved) = send(http.get(&url).bearer_auth(INTERNAL_TOKEN)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(resolved["kubeconfig"], body["kubeconfig"]);
    assert_eq!(resolved["namespaces"], json!(["staging", "default"]));
    let (status, _) = send(http.get(&url).bearer_auth(&token)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _) = send(
        http.get(server.url("/internal/clusters/nope/kubeconfig"))
            .bearer_auth(INTERNAL_TOKEN),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn credential_expiry_from_a_jwt_is_shown() {
    use base64::Engine;
    let server = TestServer::start(None).await;
    let token = server.token().await;
    let claims = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(br#"{"exp":1893456000}"#);
    let jwt = format!("eyJhbGciOiJSUzI1NiJ9.{claims}.c2ln");
    let body =
        json!({"name": "jwt", "server_url": STAGING, "kubeconfig": kubeconfig(STAGING, &jwt)});
    let (status, view) = post_cluster(&server, &token, &body).await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(view["credential_expires_at"], "2030-01-01T00:00:00Z");
    let (_, view) = send(
        Client::new()
            .get(server.url("/api/v1/clusters/jwt"))
            .bearer_auth(&token),
    )
    .await;
    assert_eq!(view["credential_expires_at"], "2030-01-01T00:00:00Z");
}

#[tokio::test]
async fn repeated_failed_logins_are_rate_limited_per_user_and_audited() {
    let server = TestServer::start(None).await;
    let http = Client::new();
    let attempt = |user: &str, password: &str| {
        http.post(server.url("/api/v1/auth/login"))
            .json(&json!({"username": user, "password": password}))
            .send()
    };
    for _ in 0..wardn::server::login_limit::MAX_PER_USER {
        assert_eq!(
            attempt("mallory", "guess").await.unwrap().status(),
            StatusCode::UNAUTHORIZED
        );
    }
    let limited = attempt("mallory", "guess").await.unwrap();
    assert_eq!(limited.status(), StatusCode::TOO_MANY_REQUESTS);
    let retry: u64 = limited.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=60).contains(&retry), "{retry}");
    let body: Value = limited.json().await.unwrap();
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("too many login attempts"),
        "{body}"
    );
    // Other users are not affected.
    let token = server.token().await;
    let (_, log) = send(http.get(server.url("/api/v1/audit")).bearer_auth(&token)).await;
    assert!(
        log["entries"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["action"] == "auth.login"
                && e["actor"] == "mallory"
                && e["outcome"] == "failure: rate limited (from 127.0.0.1)"),
        "{log}"
    );
}

/// A client whose connections come from `ip` (any 127.0.0.0/8 address is loopback on Linux).
async fn login_status(http: &Client, server: &TestServer, user: &str, password: &str) -> u16 {
    login_status_at(http, &server.url(""), user, password).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn parallel_guesses_are_counted_before_the_check_and_do_not_lock_out_other_addresses() {
    use wardn::server::login_limit::{MAX_CONCURRENT_CHECKS, MAX_PER_USER};
    let server = TestServer::start(None).await;
    let attacker = client_from([127, 0, 0, 1]);
    let guesses = (0..200).map(|i| login_status(&attacker, &server, "admin", ["a", "b"][i % 2]));
    let statuses = futures_util::future::join_all(guesses).await;
    let checks = server.state.password_checks();
    assert!(
        checks.total() <= MAX_PER_USER,
        "{} guesses reached argon2",
        checks.total()
    );
    assert!(checks.peak() <= MAX_CONCURRENT_CHECKS, "{}", checks.peak());
    let unauthorized = statuses.iter().filter(|s| **s == 401).count();
    let limited = statuses.iter().filter(|s| **s == 429).count();
    assert_eq!((unauthorized, limited), (MAX_PER_USER, 200 - MAX_PER_USER));
    // The real admin, from another address, still logs in; the attacker still may not.
    let admin = client_from([127, 0, 0, 2]);
    assert_eq!(
        login_status(&admin, &server, "admin", support::server::ADMIN_PASSWORD).await,
        200
    );
    assert_eq!(
        login_status(&attacker, &server, "admin", support::server::ADMIN_PASSWORD).await,
        429
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn bad_logins_from_many_addresses_never_run_more_than_a_few_password_checks_at_once() {
    use wardn::server::login_limit::MAX_CONCURRENT_CHECKS;
    let server = TestServer::start(None).await;
    let clients: Vec<Client> = (1..=40u8).map(|i| client_from([127, 0, 1, i])).collect();
    let server_ref = &server;
    let attempts = clients
        .iter()
        .flat_map(|c| (0..2).map(move |_| login_status(c, server_ref, "admin", "wrong")));
    let statuses = futures_util::future::join_all(attempts).await;
    assert!(
        statuses.iter().all(|s| *s == 401 || *s == 429),
        "{statuses:?}"
    );
    let checks = server.state.password_checks();
    assert!(checks.total() >= 1, "the first attempt finds a free slot");
    assert!(
        checks.peak() <= MAX_CONCURRENT_CHECKS,
        "{} checks ran at once",
        checks.peak()
    );
    // Each attempt was either checked (401) or refused for want of a slot (429): none
    // reached the limiter's limits, and none waited without an answer.
    assert_eq!(checks.total() + checks.refused(), statuses.len());
    let refused = statuses.iter().filter(|s| **s == 429).count();
    assert_eq!(refused, checks.refused(), "{statuses:?}");
}

/// How many failed attempts an `auth.login` failure entry stands for: 1, or 1 + N for a
/// window's summary (`…, N more from ADDRESS within 60 s`) — which stands for N only, the
/// first one having its own entry.
fn failures_counted(outcome: &str) -> usize {
    match outcome.split_once(", ") {
        Some((_, rest)) => rest
            .split_once(" more from ")
            .and_then(|(n, _)| n.parse().ok())
            .unwrap_or_else(|| panic!("unexpected summary {outcome}")),
        None => 1,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_login_flood_is_audited_per_source_and_window_and_the_database_stays_small() {
    const SOURCES: u8 = 20;
    const ATTEMPTS: usize = 400;
    // Sizes are taken with the server stopped, when SQLite has folded its write-ahead log
    // into the database file (and the open windows' counts are written).
    let data = TestServer::start(None).await.stop().await;
    let before = dir_bytes(data.path());
    let sealer = wardn::seal::Sealer::new(&support::server::KEY, None);
    let server = TestServer::start_with(None, sealer, data).await;
    let clients: Vec<Client> = (1..=SOURCES).map(|i| client_from([127, 0, 3, i])).collect();
    let attempts =
        (0..ATTEMPTS).map(|i| login_status(&clients[i % clients.len()], &server, "admin", "x"));
    let statuses = futures_util::future::join_all(attempts).await;
    assert!(
        statuses.iter().all(|s| *s == 401 || *s == 429),
        "{statuses:?}"
    );
    let data = server.stop().await;
    let grown = dir_bytes(data.path()).saturating_sub(before);
    assert!(grown < 1 << 20, "the data directory grew by {grown} bytes");
    let store = wardn::store::Store::open(data.path(), None).await.unwrap();
    let (entries, _) = store.audit_log().await.unwrap();
    let failures: Vec<&str> = entries
        .iter()
        .filter(|e| e.action == "auth.login" && e.outcome.starts_with("failure: "))
        .map(|e| e.outcome.as_str())
        .collect();
    // Every failed attempt is in the log, in its own entry or counted in a summary...
    let counted: usize = failures.iter().map(|o| failures_counted(o)).sum();
    assert_eq!(counted, ATTEMPTS, "{failures:#?}");
    // ...in at most two entries per source and kind of failure (its first, its summary).
    assert!(
        failures.len() <= 2 * 3 * usize::from(SOURCES),
        "{} entries for {ATTEMPTS} failures",
        failures.len()
    );
    assert!(
        failures.iter().all(|o| o.contains("from 127.0.3.")),
        "entries name the source: {failures:#?}"
    );
    store.close().await;
}

#[tokio::test]
async fn the_sqlite_write_ahead_log_stays_small_under_many_small_writes() {
    use wardn::store::{SQLITE_FILE, SQLITE_WAL_LIMIT_BYTES};
    let server = TestServer::start(None).await;
    let wal = server.data.path().join(format!("{SQLITE_FILE}-wal"));
    let mut largest = 0;
    for i in 0..600 {
        server
            .registry
            .store()
            .record_audit(
                "tester",
                "test.write",
                &format!("t{i}"),
                "success",
                "2026-01-01T00:00:00Z",
            )
            .await;
        largest = largest.max(std::fs::metadata(&wal).map_or(0, |m| m.len()));
    }
    // SQLite's defaults let the log reach about 4 MiB and keep it.
    assert!(
        largest < 4 * SQLITE_WAL_LIMIT_BYTES,
        "the write-ahead log reached {largest} bytes"
    );
    let (entries, _) = server.registry.store().audit_log().await.unwrap();
    assert!(entries.len() >= 600);
    server.stop().await;
}

fn dir_bytes(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(Result::ok)
        .filter_map(|e| e.metadata().ok())
        .filter(|m| m.is_file())
        .map(|m| m.len())
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn huge_user_names_are_capped_in_the_limiter_and_the_audit_log() {
    use wardn::server::login_limit::MAX_USERNAME_CHARS;
    // Sizes are taken with the server stopped, when SQLite has folded its write-ahead log
    // into the database file.
    let data = TestServer::start(None).await.stop().await;
    let before = dir_bytes(data.path());
    let sealer = wardn::seal::Sealer::new(&support::server::KEY, None);
    let server = TestServer::start_with(None, sealer, data).await;
    let name = "m".repeat(1_000_000);
    for i in 0..200u32 {
        let http = client_from([127, 0, 2, (i % 50) as u8 + 1]);
        let status = login_status(&http, &server, &format!("{i}{name}"), "x").await;
        assert!(status == 401 || status == 429, "{status}");
    }
    let (rows, longest) = server.state.login_limiter().footprint().await.unwrap();
    assert!(rows <= 2 * 200, "{rows} rows");
    assert!(
        longest <= 2 + 39 + 1 + 4 * MAX_USERNAME_CHARS as i64,
        "a subject of {longest} bytes"
    );
    assert_eq!(server.state.password_checks().total(), 0, "no such user");
    let token = server.token().await;
    let (_, log) = send(
        Client::new()
            .get(server.url("/api/v1/audit?limit=1000"))
            .bearer_auth(&token),
    )
    .await;
    let entries = log["entries"].as_array().unwrap();
    assert!(entries.len() >= 200, "{}", entries.len());
    for entry in entries {
        assert!(entry["actor"].as_str().unwrap().chars().count() <= MAX_USERNAME_CHARS);
        assert!(entry["target"].as_str().unwrap().chars().count() <= MAX_USERNAME_CHARS);
    }
    let data = server.stop().await;
    let grown = dir_bytes(data.path()).saturating_sub(before);
    assert!(grown < 1 << 20, "the data directory grew by {grown} bytes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_answers_through_a_slowloris_and_partial_connections_are_closed() {
    use std::time::{Duration, Instant};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use wardn::server::listener::HEADER_READ_TIMEOUT;
    let server = TestServer::start(None).await;
    let addr = server.base.trim_start_matches("http://").to_string();
    let mut held = Vec::new();
    for _ in 0..1500 {
        let mut stream = tokio::net::TcpStream::connect(&addr).await.unwrap();
        stream
            .write_all(b"GET /api/v1/health HTTP/1.1\r\nHost: x\r\n")
            .await
            .unwrap();
        held.push(stream);
    }
    let started = Instant::now();
    let health = tokio::time::timeout(
        Duration::from_secs(5),
        reqwest::get(server.url("/api/v1/health")),
    )
    .await
    .expect("/health answers within 5 s during the slowloris")
    .unwrap();
    assert_eq!(health.status(), StatusCode::OK);
    eprintln!(
        "/health answered in {:?} with 1,500 partial connections open",
        started.elapsed()
    );
    // Every partial connection is closed by the server within the header deadline.
    let closed = held.into_iter().map(|mut stream| async move {
        let mut buf = [0u8; 512];
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => continue,
            }
        }
    });
    tokio::time::timeout(
        HEADER_READ_TIMEOUT + Duration::from_secs(5),
        futures_util::future::join_all(closed),
    )
    .await
    .expect("partial connections are closed within the header deadline");
}

/// The audit API: pages and filters, verification with an expected head, the head on
/// `/metrics`, and a key rotation that the reseal re-chains (audited as `audit.rechain`).
#[tokio::test]
async fn audit_pages_verifies_and_rechains_on_rotation() {
    use wardn::seal::Sealer;
    let old_key = [5u8; 32];
    let server = TestServer::start_with(
        None,
        Sealer::new(&old_key, None),
        tempfile::tempdir().unwrap(),
    )
    .await;
    let token = server.token().await;
    let http = Client::new();
    for name in ["a", "b", "c"] {
        let body = json!({"name": name, "server_url": "https://x", "kubeconfig": "x"});
        post_cluster(&server, &token, &body).await;
    }
    let get = |path: &str| send(http.get(server.url(path)).bearer_auth(&token));
    let (_, all) = get("/api/v1/audit").await;
    let entries = all["entries"].as_array().unwrap();
    let last = entries.last().unwrap()["seq"].as_i64().unwrap();
    assert_eq!(all["head"]["seq"], last, "{all}");
    let (_, page) = get("/api/v1/audit?limit=2").await;
    assert_eq!(page["entries"].as_array().unwrap().len(), 2);
    assert_eq!(page["next_before"], last - 1, "{page}");
    let (_, older) = get(&format!("/api/v1/audit?limit=2&before={}", last - 1)).await;
    assert_eq!(older["entries"][1]["seq"], last - 2, "{older}");
    let (_, clusters) = get("/api/v1/audit?action=cluster.&target=b").await;
    let clusters = clusters["entries"].as_array().unwrap();
    assert_eq!(clusters.len(), 1, "{clusters:?}");
    assert_eq!(clusters[0]["action"], "cluster.register");
    let (status, _) = get("/api/v1/audit?limit=0").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);

    // Verification with the head from /metrics; a bad expected head is a 400.
    let metrics = http
        .get(server.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let mac = all["head"]["hash"].as_str().unwrap();
    assert!(
        metrics.contains(&format!("wardn_audit_head_seq {last}")),
        "{metrics}"
    );
    assert!(metrics.contains(&format!("mac=\"{mac}\"")), "{metrics}");
    let (_, verified) = get(&format!("/api/v1/audit/verify?expect_head={last}:{mac}")).await;
    assert_eq!(verified["intact"], true, "{verified}");
    assert_eq!(verified["key"], "current");
    let (_, ahead) = get(&format!(
        "/api/v1/audit/verify?expect_head={}:{mac}",
        last + 5
    ))
    .await;
    assert_eq!(ahead["intact"], false, "{ahead}");
    assert_eq!(ahead["first_bad_seq"], last + 1);
    let (status, _) = get("/api/v1/audit/verify?expect_head=nope").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let data = server.stop().await;

    // Rotation: the new server still verifies under the previous key, and the reseal
    // re-chains the log under the new one.
    let new_key = [6u8; 32];
    let server = TestServer::start_with(None, Sealer::new(&new_key, Some(&old_key)), data).await;
    let token = server.token().await;
    let get = |path: &str| send(http.get(server.url(path)).bearer_auth(&token));
    let (_, verified) = get("/api/v1/audit/verify").await;
    assert_eq!(verified["key"], "previous", "{verified}");
    let (status, resealed) = send(
        http.post(server.url("/api/v1/clusters/reseal"))
            .bearer_auth(&token),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{resealed}");
    assert!(
        resealed["audit_rechained"].as_i64().unwrap() > last,
        "{resealed}"
    );
    let (_, verified) = get("/api/v1/audit/verify").await;
    assert_eq!(
        (verified["intact"].clone(), verified["key"].clone()),
        (json!(true), json!("current")),
        "{verified}"
    );
    let (_, rechains) = get("/api/v1/audit?action=audit.rechain").await;
    assert_eq!(
        rechains["entries"][0]["target"], "previous key",
        "{rechains}"
    );
    let data = server.stop().await;

    // Without the previous key the old chain would fail; with only the new key it is intact.
    let server = TestServer::start_with(None, Sealer::new(&new_key, None), data).await;
    let token = server.token().await;
    let (_, verified) = send(
        http.get(server.url("/api/v1/audit/verify"))
            .bearer_auth(&token),
    )
    .await;
    assert_eq!(verified["intact"], true, "{verified}");
    let data = server.stop().await;
    let server = TestServer::start_with(None, Sealer::new(&old_key, None), data).await;
    let token = server.token().await;
    let (_, verified) = send(
        http.get(server.url("/api/v1/audit/verify"))
            .bearer_auth(&token),
    )
    .await;
    assert_eq!(verified["intact"], false, "a wrong key fails: {verified}");
    assert_eq!(verified["first_bad_seq"], 1);
    server.stop().await;
}
