//! People with roles: every route of `route_table()` tried with every role and without
//! credentials (401/403 below the route's role, neither at or above it), the route roles
//! checked against a reviewed list, and the hostile cases: escalation through token creation,
//! a user changing its own role, the last admin, tokens across promotion and demotion, role
//! names that are not roles, deleted users' sessions and tokens, and the audit trail.

mod common;
mod support;

use reqwest::{Client, Method, StatusCode};
use serde_json::{Value, json};
use support::Upstream;
use support::server::{TestServer, login_as};
use wardn::app::Phase;
use wardn::server::{Access, ErrorShape, route_table};
use wardn::store::users::Role;

const PASSWORD: &str = "a long enough password";

async fn send(request: reqwest::RequestBuilder) -> (StatusCode, Value) {
    let response = request.send().await.unwrap();
    let status = response.status();
    let text = response.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// `method path` as a bearer-authenticated JSON request with `body`.
async fn call(
    server: &TestServer,
    token: &str,
    method: Method,
    path: &str,
    body: Value,
) -> (StatusCode, Value) {
    send(
        Client::new()
            .request(method, server.url(path))
            .bearer_auth(token)
            .json(&body),
    )
    .await
}

/// Creates `name` with `role` (as the admin `admin_token`), logs in as it and returns an API
/// token created through that session (with the user's role).
async fn user_with_token(server: &TestServer, admin_token: &str, name: &str, role: Role) -> String {
    let (status, body) = call(
        server,
        admin_token,
        Method::POST,
        "/api/v1/users",
        json!({"username": name, "password": PASSWORD, "role": role}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["role"], role.as_str());
    assert!(body.get("password").is_none() && body.get("password_hash").is_none());
    let cookie = login_as(&server.base, name, PASSWORD).await;
    let (status, body) = send(
        Client::new()
            .post(server.url("/api/v1/tokens"))
            .header("cookie", cookie)
            .json(&json!({"name": "t"})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["role"], role.as_str());
    body["token"].as_str().unwrap().to_string()
}

/// The role every user route needs, as reviewed: a route added to the table without an entry
/// here, or with another role, fails [`every_route_enforces_its_role_for_every_role`].
fn reviewed_roles() -> Vec<(Method, &'static str, Role)> {
    use Role::{Admin, Approver, Deployer, Viewer};
    vec![
        (Method::GET, "/api/v1/auth/me", Viewer),
        (Method::POST, "/api/v1/auth/logout", Viewer),
        (Method::POST, "/api/v1/auth/password", Viewer),
        (Method::GET, "/api/v1/tokens", Viewer),
        (Method::POST, "/api/v1/tokens", Viewer),
        (Method::DELETE, "/api/v1/tokens/{id}", Viewer),
        (Method::GET, "/api/v1/clusters", Viewer),
        (Method::POST, "/api/v1/clusters", Admin),
        (Method::POST, "/api/v1/clusters/test", Admin),
        (Method::POST, "/api/v1/clusters/reseal", Admin),
        (Method::GET, "/api/v1/clusters/{name}", Viewer),
        (Method::PUT, "/api/v1/clusters/{name}", Admin),
        (Method::DELETE, "/api/v1/clusters/{name}", Admin),
        (Method::POST, "/api/v1/clusters/{name}/check", Admin),
        (Method::POST, "/api/v1/clusters/{name}/shell", Viewer),
        (
            Method::DELETE,
            "/api/v1/clusters/{name}/shell/{session}",
            Viewer,
        ),
        (
            Method::POST,
            "/api/v1/clusters/{name}/shell/commands",
            Viewer,
        ),
        (Method::GET, wardn::server::SHELL_PROXY_PATH, Viewer),
        (Method::POST, wardn::server::SHELL_PROXY_PATH, Admin),
        (Method::PUT, wardn::server::SHELL_PROXY_PATH, Admin),
        (Method::PATCH, wardn::server::SHELL_PROXY_PATH, Admin),
        (Method::DELETE, wardn::server::SHELL_PROXY_PATH, Admin),
        (Method::GET, "/api/v1/audit", Admin),
        (Method::GET, "/api/v1/audit/verify", Admin),
        (Method::GET, "/api/v1/repositories", Viewer),
        (Method::POST, "/api/v1/repositories", Admin),
        (Method::POST, "/api/v1/repositories/reseal", Admin),
        (Method::GET, "/api/v1/repositories/{id}", Viewer),
        (Method::PUT, "/api/v1/repositories/{id}", Admin),
        (Method::DELETE, "/api/v1/repositories/{id}", Admin),
        (Method::GET, "/api/v1/users", Admin),
        (Method::POST, "/api/v1/users", Admin),
        (Method::GET, "/api/v1/users/{name}", Admin),
        (Method::PATCH, "/api/v1/users/{name}", Admin),
        (Method::DELETE, "/api/v1/users/{name}", Admin),
        (Method::GET, "/api/v1/shards", Viewer),
        (Method::GET, "/api/v1/apps", Viewer),
        (Method::GET, "/api/v1/apps/{cluster}/{name}", Viewer),
        (Method::GET, "/api/v1/apps/{cluster}/{name}/diff", Viewer),
        (Method::GET, "/api/v1/apps/{cluster}/{name}/events", Viewer),
        (
            Method::GET,
            "/api/v1/apps/{cluster}/{name}/resources",
            Viewer,
        ),
        (
            Method::POST,
            "/api/v1/apps/{cluster}/{name}/approve",
            Approver,
        ),
        (
            Method::POST,
            "/api/v1/apps/{cluster}/{name}/reject",
            Approver,
        ),
        (Method::POST, "/api/v1/apps/{cluster}/{name}/sync", Deployer),
        (
            Method::POST,
            "/api/v1/apps/{cluster}/{name}/refresh",
            Deployer,
        ),
        (
            Method::POST,
            "/api/v1/apps/{cluster}/{name}/promote",
            Approver,
        ),
        (
            Method::GET,
            "/api/v1/apps/{cluster}/{name}/promotions",
            Viewer,
        ),
        (
            Method::POST,
            "/api/v1/apps/{cluster}/{name}/rollback",
            Approver,
        ),
        (
            Method::POST,
            "/api/v1/apps/{cluster}/{name}/unpin",
            Approver,
        ),
    ]
}

#[tokio::test]
async fn every_route_enforces_its_role_for_every_role() {
    let server = TestServer::start(None).await;
    let admin = server.token().await;
    let mut callers = vec![(None, None)];
    for role in Role::ALL {
        let token = user_with_token(&server, &admin, &format!("{role}-user"), role).await;
        callers.push((Some(role), Some(token)));
    }
    let table = route_table();
    let mut reviewed = reviewed_roles();
    let mut tried = 0;
    for route in &table {
        let Access::Role(needed) = route.access else {
            continue;
        };
        let position = reviewed
            .iter()
            .position(|(m, p, _)| *m == route.method && *p == route.path)
            .unwrap_or_else(|| {
                panic!(
                    "{} {} has no reviewed role: add it to reviewed_roles()",
                    route.method, route.path
                )
            });
        let (_, _, expected) = reviewed.remove(position);
        assert_eq!(needed, expected, "{} {}", route.method, route.path);
        // Placeholders that exist nowhere, so that no call at or above the role changes
        // anything: every one of them is a 400 or a 404 from the handler.
        let path = route
            .path
            .replace("{name}", "nothing-here")
            .replace("{cluster}", "local")
            .replace("{id}", "nothing-here")
            .replace("{session}", "nothing-here")
            .replace("{*path}", "api/v1/namespaces/default/pods");
        for (role, token) in &callers {
            let mut request = Client::new()
                .request(route.method.clone(), server.url(&path))
                .header("content-type", "application/json")
                .body("{}");
            if let Some(token) = token {
                request = request.bearer_auth(token);
            }
            let (status, body) = send(request).await;
            let what = format!("{} {} as {role:?}: {status} {body}", route.method, path);
            match role {
                None => assert_eq!(status, StatusCode::UNAUTHORIZED, "{what}"),
                Some(role) if *role < needed => {
                    assert_eq!(status, StatusCode::FORBIDDEN, "{what}");
                    // The cluster shell's proxy answers a Kubernetes Status (for kubectl).
                    let message = match route.errors {
                        ErrorShape::Json => &body["error"],
                        ErrorShape::KubernetesStatus => &body["message"],
                    };
                    assert_eq!(
                        *message,
                        format!("route needs role {needed}; you are {role}"),
                        "{what}"
                    );
                }
                Some(_) => assert!(
                    status != StatusCode::UNAUTHORIZED && status != StatusCode::FORBIDDEN,
                    "{what}"
                ),
            }
            tried += 1;
        }
    }
    assert!(
        reviewed.is_empty(),
        "reviewed routes missing from route_table(): {reviewed:?}"
    );
    assert_eq!(tried, 49 * 5);
}

#[tokio::test]
async fn tokens_never_act_above_their_creator_or_their_user() {
    let server = TestServer::start(None).await;
    let admin = server.token().await;
    let deployer = user_with_token(&server, &admin, "dee", Role::Deployer).await;
    let tokens = |token: String, body: Value| {
        let server = &server;
        async move { call(server, &token, Method::POST, "/api/v1/tokens", body).await }
    };

    // Asking for more than the creator has: 403 naming both roles, no token made.
    for role in ["approver", "admin"] {
        let (status, body) = tokens(deployer.clone(), json!({"name": "x", "role": role})).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
        assert_eq!(
            body["error"],
            format!(
                "role: a token cannot do more than its creator: asked for {role}; you are deployer"
            )
        );
    }
    let (_, listed) = call(&server, &deployer, Method::GET, "/api/v1/tokens", json!({})).await;
    assert_eq!(listed["tokens"].as_array().unwrap().len(), 1);

    // Role names that are not roles: 400 naming the field.
    for bad in [json!("root"), json!("Admin"), json!(""), json!("admin ")] {
        let (status, body) = tokens(deployer.clone(), json!({"name": "x", "role": bad})).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert!(
            body["error"].as_str().unwrap().starts_with("role: "),
            "{body}"
        );
    }
    let (status, _) = tokens(deployer.clone(), json!({"name": "x", "role": 3})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);

    // A lower role is fine, and the token acts with it.
    let (status, body) = tokens(deployer.clone(), json!({"name": "ro", "role": "viewer"})).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let read_only = body["token"].as_str().unwrap().to_string();
    let (status, body) = call(
        &server,
        &read_only,
        Method::POST,
        "/api/v1/apps/local/x/sync",
        json!({}),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(body["error"], "route needs role deployer; you are viewer");

    // A viewer token of an admin makes (by default) viewer tokens only, never admin ones.
    let (_, body) = tokens(admin.clone(), json!({"name": "admin-ro", "role": "viewer"})).await;
    let admin_read_only = body["token"].as_str().unwrap().to_string();
    let (status, body) = tokens(admin_read_only.clone(), json!({"name": "child"})).await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(body["role"], "viewer");
    let child = body["token"].as_str().unwrap().to_string();
    let (status, _) = call(&server, &child, Method::GET, "/api/v1/users", json!({})).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = tokens(admin_read_only, json!({"name": "x", "role": "admin"})).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn promotion_and_demotion_reach_existing_tokens_and_sessions() {
    let server = TestServer::start(None).await;
    let admin = server.token().await;
    let viewer = user_with_token(&server, &admin, "vic", Role::Viewer).await;
    let deployer = user_with_token(&server, &admin, "dora", Role::Deployer).await;
    let dora_session = login_as(&server.base, "dora", PASSWORD).await;
    let set_role = |name: &'static str, role: &'static str| {
        let server = &server;
        let admin = admin.clone();
        async move {
            let (status, body) = call(
                server,
                &admin,
                Method::PATCH,
                &format!("/api/v1/users/{name}"),
                json!({ "role": role }),
            )
            .await;
            assert_eq!(status, StatusCode::OK, "{body}");
        }
    };
    let sync = |token: String| {
        let server = &server;
        async move {
            call(
                server,
                &token,
                Method::POST,
                "/api/v1/apps/local/x/sync",
                json!({}),
            )
            .await
        }
    };

    // A viewer's token stays a viewer's after its user is promoted: it was made as one.
    set_role("vic", "admin").await;
    let (status, body) = call(&server, &viewer, Method::GET, "/api/v1/users", json!({})).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(body["error"], "route needs role admin; you are viewer");

    // A deployer's token is demoted with its user, on the next request, and comes back with
    // the promotion; so does the session. Many times over.
    for round in 0..50 {
        set_role("dora", "viewer").await;
        let (status, body) = sync(deployer.clone()).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "round {round}");
        assert_eq!(body["error"], "route needs role deployer; you are viewer");
        let (status, _) = send(
            Client::new()
                .post(server.url("/api/v1/apps/local/x/refresh"))
                .header("cookie", &dora_session)
                .json(&json!({})),
        )
        .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "round {round}");
        set_role("dora", "admin").await;
        // Promoted above the token's role: the token still acts as a deployer.
        let (status, _) = sync(deployer.clone()).await;
        assert_eq!(
            status,
            StatusCode::NOT_FOUND,
            "round {round}: allowed, no such App"
        );
        let (status, _) = call(&server, &deployer, Method::GET, "/api/v1/users", json!({})).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "round {round}");
        let (status, _) = send(
            Client::new()
                .get(server.url("/api/v1/users"))
                .header("cookie", &dora_session),
        )
        .await;
        assert_eq!(
            status,
            StatusCode::OK,
            "round {round}: the session has the user's role"
        );
    }
}

#[tokio::test]
async fn users_cannot_raise_themselves_and_the_last_admin_stays() {
    let server = TestServer::start(None).await;
    let admin = server.token().await;
    let approver = user_with_token(&server, &admin, "apu", Role::Approver).await;

    // A non-admin changing its own role, creating a user or deleting another: 403.
    for (method, path, body) in [
        (Method::PATCH, "/api/v1/users/apu", json!({"role": "admin"})),
        (
            Method::POST,
            "/api/v1/users",
            json!({"username": "mine", "password": PASSWORD, "role": "admin"}),
        ),
        (Method::DELETE, "/api/v1/users/admin", json!({})),
    ] {
        let (status, reply) = call(&server, &approver, method, path, body).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{path}: {reply}");
        assert_eq!(reply["error"], "route needs role admin; you are approver");
    }
    let (_, user) = call(&server, &admin, Method::GET, "/api/v1/users/apu", json!({})).await;
    assert_eq!(user["role"], "approver");

    // The only admin can neither be demoted nor deleted (itself included): 409.
    let (status, body) = call(
        &server,
        &admin,
        Method::PATCH,
        "/api/v1/users/admin",
        json!({"role": "viewer"}),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(
        body["error"],
        "admin is the last admin: make another user admin first"
    );
    let (status, _) = call(
        &server,
        &admin,
        Method::DELETE,
        "/api/v1/users/admin",
        json!({}),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT);

    // With a second admin, the first may go; then the second is the last.
    let (status, _) = call(
        &server,
        &admin,
        Method::PATCH,
        "/api/v1/users/apu",
        json!({"role": "admin"}),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = call(
        &server,
        &approver,
        Method::DELETE,
        "/api/v1/users/admin",
        json!({}),
    )
    .await;
    assert_eq!(
        status,
        StatusCode::FORBIDDEN,
        "apu's token was made as an approver"
    );
    let apu = login_as(&server.base, "apu", PASSWORD).await;
    let (status, _) = send(
        Client::new()
            .delete(server.url("/api/v1/users/admin"))
            .header("cookie", &apu)
            .header("content-type", "application/json"),
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    // The deleted admin's token and sessions are gone.
    let (status, body) = call(&server, &admin, Method::GET, "/api/v1/clusters", json!({})).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    let (status, _) = send(
        Client::new()
            .delete(server.url("/api/v1/users/apu"))
            .header("cookie", &apu)
            .header("content-type", "application/json"),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT);
}

#[tokio::test]
async fn hostile_user_fields_are_a_400_naming_the_field() {
    let server = TestServer::start(None).await;
    let admin = server.token().await;
    let create = |body: Value| {
        let server = &server;
        let admin = admin.clone();
        async move { call(server, &admin, Method::POST, "/api/v1/users", body).await }
    };
    let base = json!({"username": "bob", "password": PASSWORD, "role": "viewer"});
    let with = |field: &str, value: Value| {
        let mut body = base.clone();
        body[field] = value;
        body
    };
    let cases = [
        (with("role", json!("root")), "role: "),
        (with("role", json!("Admin")), "role: "),
        (with("role", json!("viewer\u{0}")), "role: "),
        (with("role", json!("x".repeat(1 << 16))), "role: "),
        (with("username", json!("")), "username: "),
        (with("username", json!("a/b")), "username: "),
        (with("username", json!("al ice")), "username: "),
        (with("username", json!("é")), "username: "),
        (with("username", json!("u".repeat(65))), "username: "),
        (with("password", json!("short")), "password: "),
        (with("password", json!("p".repeat(1025))), "password: "),
        (with("clusters", json!(["staging"])), "clusters: "),
        (with("email", json!("not an address")), "email: "),
        (
            with("email", json!(format!("{}@x", "a".repeat(300)))),
            "email: ",
        ),
        (
            json!({"username": "bob", "password": PASSWORD, "role": "approver", "clusters": ["Prod!"]}),
            "clusters[0]: ",
        ),
        (
            json!({"username": "bob", "password": PASSWORD, "role": "approver",
                   "clusters": vec!["a"; 257]}),
            "clusters: ",
        ),
        (
            with("rol", json!("admin")),
            "request body: unknown field `rol`",
        ),
    ];
    for (body, prefix) in cases {
        let (status, reply) = create(body).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{reply}");
        let message = reply["error"].as_str().unwrap();
        assert!(message.starts_with(prefix), "{prefix}: {message}");
        assert!(message.len() < 400, "{message}");
    }
    let (_, users) = call(&server, &admin, Method::GET, "/api/v1/users", json!({})).await;
    assert_eq!(
        users["users"].as_array().unwrap().len(),
        1,
        "nothing was created"
    );

    // Patches: a role that is not one, clusters for a non-approver.
    let (status, _) = create(base.clone()).await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, _) = create(base.clone()).await;
    assert_eq!(status, StatusCode::CONFLICT, "the name is taken");
    for (body, prefix) in [
        (json!({"role": "superuser"}), "role: "),
        (json!({"clusters": ["staging"]}), "clusters: "),
        (json!({"role": "deployer", "clusters": ["a"]}), "clusters: "),
        (json!({"password": PASSWORD}), "request body: unknown field"),
    ] {
        let (status, reply) = call(&server, &admin, Method::PATCH, "/api/v1/users/bob", body).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{reply}");
        assert!(
            reply["error"].as_str().unwrap().starts_with(prefix),
            "{reply}"
        );
    }
    let (status, _) = call(
        &server,
        &admin,
        Method::PATCH,
        "/api/v1/users/nobody",
        json!({"role": "viewer"}),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // An approver's clusters are kept across other changes and dropped with the role.
    let patch = |body: Value| {
        let server = &server;
        let admin = admin.clone();
        async move { call(server, &admin, Method::PATCH, "/api/v1/users/bob", body).await }
    };
    let (_, bob) = patch(json!({"role": "approver", "clusters": ["staging"]})).await;
    assert_eq!(bob["clusters"], json!(["staging"]));
    let (_, bob) = patch(json!({"email": "bob@example.com"})).await;
    assert_eq!(
        (
            bob["role"].clone(),
            bob["clusters"].clone(),
            bob["email"].clone()
        ),
        (
            json!("approver"),
            json!(["staging"]),
            json!("bob@example.com")
        )
    );
    let (_, bob) = patch(json!({"clusters": null})).await;
    assert_eq!(bob["clusters"], Value::Null);
    let (_, bob) = patch(json!({"clusters": ["a"]})).await;
    assert_eq!(bob["clusters"], json!(["a"]));
    let (_, bob) = patch(json!({"role": "deployer"})).await;
    assert_eq!(bob["clusters"], Value::Null);
}

#[tokio::test]
async fn user_changes_are_audited_with_the_acting_user_and_token() {
    let server = TestServer::start(None).await;
    let admin = server.token().await;
    let (_, listed) = call(&server, &admin, Method::GET, "/api/v1/tokens", json!({})).await;
    let token_id = listed["tokens"][0]["id"].as_str().unwrap().to_string();
    let token_actor = format!("admin/token:tests ({token_id})");
    let _ = user_with_token(&server, &admin, "carol", Role::Deployer).await;
    let (status, _) = call(
        &server,
        &admin,
        Method::PATCH,
        "/api/v1/users/carol",
        json!({"role": "approver", "clusters": ["staging", "prod"]}),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = call(
        &server,
        &admin,
        Method::PATCH,
        "/api/v1/users/admin",
        json!({"role": "viewer"}),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT);
    let (status, _) = call(
        &server,
        &admin,
        Method::DELETE,
        "/api/v1/users/carol",
        json!({}),
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT);

    let (_, log) = call(
        &server,
        &admin,
        Method::GET,
        "/api/v1/audit?action=user.",
        json!({}),
    )
    .await;
    let entries: Vec<(String, String, String, String)> = log["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let field = |f: &str| e[f].as_str().unwrap().to_string();
            (
                field("actor"),
                field("action"),
                field("target"),
                field("outcome"),
            )
        })
        .collect();
    let expected = [
        ("user.create", "carol", "success role=deployer"),
        (
            "user.update",
            "carol",
            "success role=approver clusters=staging,prod (was role=deployer)",
        ),
        (
            "user.update",
            "admin",
            "refused: admin is the last admin: make another user admin first",
        ),
        ("user.delete", "carol", "success"),
    ];
    assert_eq!(entries.len(), expected.len(), "{entries:?}");
    for (entry, (action, target, outcome)) in entries.iter().zip(expected) {
        assert_eq!(
            (
                entry.0.as_str(),
                entry.1.as_str(),
                entry.2.as_str(),
                entry.3.as_str()
            ),
            (token_actor.as_str(), action, target, outcome)
        );
    }
    // The user's own token creation names the user (a session) and the token's role.
    let (_, log) = call(
        &server,
        &admin,
        Method::GET,
        "/api/v1/audit?action=token.create&actor=carol",
        json!({}),
    )
    .await;
    assert_eq!(log["entries"][0]["outcome"], "success role=deployer");
}

/// An App that requires approval, deploying to the management cluster (`local`) from a
/// Directory source with one ConfigMap.
fn held_app(root: &std::path::Path) -> std::path::PathBuf {
    let source = root.join("source");
    std::fs::create_dir_all(&source).unwrap();
    std::fs::write(
        source.join("configmap.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: held-config\ndata:\n  k: v\n",
    )
    .unwrap();
    let apps = root.join("apps");
    std::fs::create_dir_all(&apps).unwrap();
    std::fs::write(
        apps.join("held.yaml"),
        format!(
            "apiVersion: cd.wardn.space/v1alpha1\nkind: App\nmetadata:\n  name: held\n  namespace: wardn\n\
             spec:\n  source:\n    type: Directory\n    directory:\n      path: {}\n\
             \x20 destination:\n    cluster: \"\"\n    namespace: staging\n\
             \x20 syncPolicy:\n    automated: true\n    requiresApproval: true\n",
            source.display()
        ),
    )
    .unwrap();
    apps
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approvers_limited_to_clusters_decide_only_there() {
    let sim = common::start(&["staging"]).await;
    let work = tempfile::tempdir().unwrap();
    let apps = held_app(work.path());
    let kubeconfig = sim.kubeconfig.clone();
    let server = TestServer::start_with_options(move |options| {
        options.apps_dir = Some(apps);
        options.management_kubeconfig = Some(kubeconfig);
    })
    .await;
    let runner = server.state.runner().clone();
    let mut held = None;
    for _ in 0..600 {
        held = runner
            .status("wardn/held")
            .filter(|s| s.phase == Some(Phase::Held));
        if held.is_some() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let plan_hash = held
        .and_then(|s| s.plan_hash)
        .unwrap_or_else(|| panic!("never Held: {:?}", runner.status("wardn/held")));

    let admin = server.token().await;
    let approver = user_with_token(&server, &admin, "apu", Role::Approver).await;
    let deployer = user_with_token(&server, &admin, "dee", Role::Deployer).await;
    let limit = |clusters: Value| {
        let server = &server;
        let admin = admin.clone();
        async move {
            let (status, body) = call(
                server,
                &admin,
                Method::PATCH,
                "/api/v1/users/apu",
                json!({ "clusters": clusters }),
            )
            .await;
            assert_eq!(status, StatusCode::OK, "{body}");
        }
    };
    let decide = |token: String, action: &'static str| {
        let server = &server;
        let plan_hash = plan_hash.clone();
        async move {
            call(
                server,
                &token,
                Method::POST,
                &format!("/api/v1/apps/local/held/{action}"),
                json!({ "plan_hash": plan_hash }),
            )
            .await
        }
    };

    // A deployer may sync but not decide.
    let (status, body) = decide(deployer.clone(), "approve").await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(body["error"], "route needs role approver; you are deployer");

    // Limited to other clusters: 403 naming the App's cluster, for approve and reject alike,
    // and the plan stays Held.
    limit(json!(["staging", "prod"])).await;
    for action in ["approve", "reject"] {
        let (status, body) = decide(approver.clone(), action).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
        assert_eq!(
            body["error"],
            "cluster local: apu may approve and reject only on cluster(s) [staging, prod]"
        );
    }
    assert_eq!(
        runner.status("wardn/held").unwrap().phase,
        Some(Phase::Held)
    );
    let (_, log) = call(
        &server,
        &admin,
        Method::GET,
        "/api/v1/audit?action=app.approve",
        json!({}),
    )
    .await;
    let entry = &log["entries"][0];
    assert!(
        entry["actor"]
            .as_str()
            .unwrap()
            .starts_with("apu/token:t ("),
        "{entry}"
    );
    assert_eq!(
        entry["outcome"],
        format!(
            "refused plan={plan_hash}: cluster local: apu may approve and reject only on cluster(s) [staging, prod]"
        )
    );

    // Limited to this cluster, or to none: the approval goes through.
    limit(json!(["local"])).await;
    let (status, body) = decide(approver.clone(), "approve").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(
        sim.cluster
            .get_object("v1", "ConfigMap", Some("staging"), "held-config")
            .is_some(),
        "the approved plan was applied"
    );
}

/// An App `name` that requires approval (and four eyes when `four_eyes`), deploying `source`
/// (`type: Directory` or `type: Git` with its settings) to `staging` on the management cluster.
fn gated_app(apps: &std::path::Path, name: &str, source: &str, four_eyes: bool) {
    std::fs::write(
        apps.join(format!("{name}.yaml")),
        format!(
            "apiVersion: cd.wardn.space/v1alpha1\nkind: App\nmetadata:\n  name: {name}\n  namespace: wardn\n\
             spec:\n  source:\n{source}\
             \x20 destination:\n    cluster: \"\"\n    namespace: staging\n\
             \x20 syncPolicy:\n    automated: true\n    requiresApproval: true\n    fourEyes: {four_eyes}\n"
        ),
    )
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_eyes_refuses_the_trigger_and_the_commit_author() {
    let sim = common::start(&["staging"]).await;
    let work = tempfile::tempdir().unwrap();
    let apps = work.path().join("apps");
    std::fs::create_dir_all(&apps).unwrap();
    for name in ["dir4", "plain"] {
        let dir = work.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("cm.yaml"),
            format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  k: v\n"),
        )
        .unwrap();
        let source = format!(
            "    type: Directory\n    directory:\n      path: {}\n",
            dir.display()
        );
        gated_app(&apps, name, &source, name == "dir4");
    }
    // Commits by test@example.com (the test repositories' author).
    let upstream = Upstream::init(&work.path().join("upstream"));
    let revision = upstream.commit(
        &[(
            "deploy/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: git4\ndata:\n  k: v\n",
        )],
        "first",
    );
    let source = format!(
        "    type: Git\n    git:\n      repoURL: {}\n      branch: main\n      path: deploy\n      interval: 1h\n",
        upstream.url()
    );
    gated_app(&apps, "git4", &source, true);
    let kubeconfig = sim.kubeconfig.clone();
    let data = work.path().join("data");
    let server = TestServer::start_with_options(move |options| {
        options.apps_dir = Some(apps);
        options.management_kubeconfig = Some(kubeconfig);
        options.data_dir = data;
    })
    .await;
    let runner = server.state.runner().clone();
    let held = |name: &str| {
        runner
            .status(&format!("wardn/{name}"))
            .filter(|s| s.phase == Some(Phase::Held))
            .and_then(|s| s.plan_hash)
    };
    for _ in 0..600 {
        if ["dir4", "plain", "git4"].iter().all(|n| held(n).is_some()) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let plan = |name: &str| {
        held(name).unwrap_or_else(|| {
            panic!(
                "{name} never Held: {:?}",
                runner.status(&format!("wardn/{name}"))
            )
        })
    };
    let (dir4, plain, git4) = (plan("dir4"), plan("plain"), plan("git4"));
    assert_eq!(
        runner.status("wardn/git4").unwrap().revision.as_deref(),
        Some(revision.as_str())
    );

    let admin = server.token().await;
    let apu = user_with_token(&server, &admin, "apu", Role::Approver).await;
    let tess = user_with_token(&server, &admin, "tess", Role::Approver).await;
    let (status, _) = call(
        &server,
        &admin,
        Method::PATCH,
        "/api/v1/users/tess",
        json!({"email": "Test@Example.com"}),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let post = |token: &str, path: String, body: Value| {
        let server = &server;
        let token = token.to_string();
        async move { call(server, &token, Method::POST, &path, body).await }
    };

    // apu refreshes dir4 (four eyes) and syncs plain (no four eyes): both stay Held with the
    // same plans, now produced by apu.
    let (status, body) = post(&apu, "/api/v1/apps/local/dir4/refresh".into(), json!({})).await;
    assert_eq!(
        (status, &body["status"]["phase"]),
        (StatusCode::OK, &json!("Held")),
        "{body}"
    );
    let (status, body) = post(&apu, "/api/v1/apps/local/plain/sync".into(), json!({})).await;
    assert_eq!(
        (status, &body["status"]["phase"]),
        (StatusCode::OK, &json!("Held")),
        "{body}"
    );
    assert_eq!((plan("dir4"), plan("plain")), (dir4.clone(), plain.clone()));

    // The trigger may not approve a four-eyes plan, with a session or any token.
    let (status, body) = post(
        &apu,
        "/api/v1/apps/local/dir4/approve".into(),
        json!({"plan_hash": dir4}),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(
        body["error"],
        format!(
            "four-eyes: apu triggered the pass that produced plan {dir4}; another approver must approve this plan"
        )
    );
    let session = login_as(&server.base, "apu", PASSWORD).await;
    let (status, _) = send(
        Client::new()
            .post(server.url("/api/v1/apps/local/dir4/approve"))
            .header("cookie", session)
            .json(&json!({})),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    // Without four eyes, the trigger may approve; with them, someone else may.
    let (status, body) = post(
        &apu,
        "/api/v1/apps/local/plain/approve".into(),
        json!({"plan_hash": plain}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = post(
        &tess,
        "/api/v1/apps/local/dir4/approve".into(),
        json!({"plan_hash": dir4}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");

    // The commit author (matched by email, whatever its case) may not approve the revision.
    let (status, body) = post(
        &tess,
        "/api/v1/apps/local/git4/approve".into(),
        json!({"plan_hash": git4}),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(
        body["error"],
        format!(
            "four-eyes: tess (Test@Example.com) authored revision {revision}; another approver must approve this plan"
        )
    );
    // A rejection needs no second pair of eyes; an approval by someone else goes through.
    let (status, body) = post(
        &apu,
        "/api/v1/apps/local/git4/approve".into(),
        json!({"plan_hash": git4}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    for name in ["dir4", "plain", "git4"] {
        assert!(
            sim.cluster
                .get_object("v1", "ConfigMap", Some("staging"), name)
                .is_some(),
            "{name} was applied"
        );
    }

    // The audit says who refreshed, synced, was refused and approved.
    let (_, log) = call(
        &server,
        &admin,
        Method::GET,
        "/api/v1/audit?target=local/dir4",
        json!({}),
    )
    .await;
    let summary: Vec<String> = log["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let actor = e["actor"].as_str().unwrap();
            let user = actor.split('/').next().unwrap();
            let outcome = e["outcome"].as_str().unwrap();
            format!(
                "{user} {} {}",
                e["action"].as_str().unwrap(),
                outcome.split(':').next().unwrap()
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            format!("apu app.refresh success hard phase=Held plan={dir4}"),
            format!("apu app.approve refused plan={dir4}"),
            format!("apu app.approve refused plan={dir4}"),
            format!("tess app.approve success plan={dir4}"),
        ]
    );
}
