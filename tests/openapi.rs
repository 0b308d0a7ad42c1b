//! `GET /api/v1/openapi.json` against a real server: every route of `route_table()` is in the
//! document with its method, access and summary, nothing else is; the typed request bodies have
//! their schemas (and the server refuses what the schemas refuse); the document parses with
//! `openapiv3`; it reveals none of the server's secrets or data; and the 1,000th answer is the
//! same bytes as the first.

mod support;

use reqwest::{Client, Method, StatusCode};
use serde_json::{Value, json};
use support::server::{ADMIN_PASSWORD, INTERNAL_TOKEN, TestServer, WEBHOOK_SECRET, kubeconfig};
use wardn::server::openapi::{ROUTE, document, openapi_path, route_docs};
use wardn::server::{Access, route_table};

/// The document as served to an anonymous caller, raw.
async fn fetch_bytes(server: &TestServer, client: &Client) -> Vec<u8> {
    let response = client.get(server.url(ROUTE)).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response.headers()["content-type"].to_str().unwrap(),
        "application/json"
    );
    response.bytes().await.unwrap().to_vec()
}

async fn fetch(server: &TestServer) -> Value {
    serde_json::from_slice(&fetch_bytes(server, &Client::new()).await).unwrap()
}

/// The operation of `method path` (an axum path) in `doc`.
fn operation<'a>(doc: &'a Value, method: &Method, path: &str) -> &'a Value {
    &doc["paths"][openapi_path(path)][method.as_str().to_ascii_lowercase()]
}

/// The component a `{"$ref": "#/components/schemas/NAME"}` schema points at.
fn resolve<'a>(doc: &'a Value, schema: &'a Value) -> &'a Value {
    match schema["$ref"].as_str() {
        Some(reference) => {
            let name = reference
                .strip_prefix("#/components/schemas/")
                .unwrap_or_else(|| panic!("reference outside the components: {reference}"));
            let component = &doc["components"]["schemas"][name];
            assert!(component.is_object(), "dangling reference {reference}");
            component
        }
        None => schema,
    }
}

#[tokio::test]
async fn every_route_is_documented_with_its_method_and_access() {
    let server = TestServer::start(None).await;
    let doc = fetch(&server).await;
    let table = route_table();
    for route in &table {
        let what = format!("{} {}", route.method, route.path);
        let op = operation(&doc, &route.method, route.path);
        assert!(op.is_object(), "{what} is not in the document");
        let summary = op["summary"].as_str().unwrap_or_default();
        assert!(
            !summary.is_empty(),
            "{what} has no summary: add it to route_docs()"
        );
        let description = op["description"].as_str().unwrap();
        let security = op["security"].as_array().unwrap();
        match route.access {
            Access::Public => {
                assert!(security.is_empty(), "{what}");
                assert_eq!(op["x-wardn-access"], "public", "{what}");
            }
            Access::Role(role) => {
                assert_eq!(op["x-wardn-access"], role.as_str(), "{what}");
                assert!(
                    description.contains(&format!("Least role: `{role}`")),
                    "{what}: {description}"
                );
                assert_eq!(
                    *security,
                    [json!({"bearerToken": []}), json!({"sessionCookie": []})],
                    "{what}"
                );
            }
            Access::Internal | Access::Operators => {
                assert_eq!(*security, [json!({"internalToken": []})], "{what}")
            }
            Access::Webhook => {
                assert_eq!(*security, [json!({"webhookSignature": []})], "{what}")
            }
        }
        // Every `{param}` of the path is declared as a path parameter.
        let declared: Vec<&str> = op["parameters"]
            .as_array()
            .map(|p| {
                p.iter()
                    .filter(|p| p["in"] == "path")
                    .map(|p| p["name"].as_str().unwrap())
                    .collect()
            })
            .unwrap_or_default();
        let in_path: Vec<&str> = route
            .path
            .split('/')
            .filter_map(|s| s.strip_prefix('{')?.strip_suffix('}'))
            .map(|s| s.trim_start_matches('*'))
            .collect();
        assert_eq!(declared, in_path, "{what}");
        assert!(op["responses"]["default"].is_object(), "{what}");
    }
    // The table of documentation matches the route table one to one.
    let docs = route_docs();
    assert_eq!(
        docs.len(),
        table.len(),
        "route_docs() and route_table() differ in length"
    );
    for route in &table {
        let matching = docs
            .iter()
            .filter(|d| d.method == route.method && d.path == route.path)
            .count();
        assert_eq!(
            matching, 1,
            "{} {} documented {matching} times",
            route.method, route.path
        );
    }
    // The document describes itself, and is public.
    assert_eq!(
        operation(&doc, &Method::GET, ROUTE)["x-wardn-access"],
        "public"
    );
}

#[tokio::test]
async fn the_document_lists_nothing_the_server_does_not_route() {
    let server = TestServer::start(None).await;
    let doc = fetch(&server).await;
    let table = route_table();
    let mut operations = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            let method: Method = method.to_ascii_uppercase().parse().unwrap();
            assert!(
                table
                    .iter()
                    .any(|r| r.method == method && openapi_path(r.path) == *path),
                "{method} {path} is documented but not routed"
            );
            operations += 1;
        }
    }
    assert_eq!(operations, table.len());
    for doc in route_docs() {
        assert!(
            table
                .iter()
                .any(|r| r.method == doc.method && r.path == doc.path),
            "route_docs() has {} {}, which route_table() lacks",
            doc.method,
            doc.path
        );
    }
    // A documented path the server does not route answers 404, not the document's word.
    let response = Client::new()
        .get(server.url("/api/v1/openapi.yaml"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
}

/// The typed JSON bodies and fields each schema must name (required ones first, then optional).
fn typed_bodies() -> Vec<(
    Method,
    &'static str,
    &'static [&'static str],
    &'static [&'static str],
)> {
    vec![
        (
            Method::POST,
            "/api/v1/auth/login",
            &["username", "password"],
            &[],
        ),
        (
            Method::POST,
            "/api/v1/auth/password",
            &["current_password", "new_password"],
            &[],
        ),
        (Method::POST, "/api/v1/tokens", &["name"], &["ttl", "role"]),
        (
            Method::POST,
            "/api/v1/clusters",
            &["name", "server_url", "kubeconfig"],
            &["namespaces", "allow_insecure_tls"],
        ),
        (
            Method::POST,
            "/api/v1/clusters/test",
            &["server_url", "kubeconfig"],
            &["allow_insecure_tls"],
        ),
        (
            Method::PUT,
            "/api/v1/clusters/{name}",
            &[],
            &[
                "name",
                "server_url",
                "kubeconfig",
                "namespaces",
                "allow_insecure_tls",
            ],
        ),
        (
            Method::POST,
            "/api/v1/clusters/{name}/check",
            &[],
            &["resources", "kinds"],
        ),
        (
            Method::POST,
            "/api/v1/clusters/{name}/shell/commands",
            &["command"],
            &[],
        ),
        (
            Method::POST,
            "/api/v1/repositories",
            &["url"],
            &["username", "password", "token", "webhook_secret"],
        ),
        (
            Method::PUT,
            "/api/v1/repositories/{id}",
            &[],
            &["username", "password", "token", "webhook_secret"],
        ),
        (
            Method::POST,
            "/api/v1/users",
            &["username", "password", "role"],
            &["clusters", "email"],
        ),
        (
            Method::PATCH,
            "/api/v1/users/{name}",
            &[],
            &["role", "clusters", "email"],
        ),
        (
            Method::POST,
            "/api/v1/apps/{cluster}/{name}/approve",
            &[],
            &["plan_hash"],
        ),
        (
            Method::POST,
            "/api/v1/apps/{cluster}/{name}/reject",
            &[],
            &["plan_hash"],
        ),
        (
            Method::POST,
            "/api/v1/apps/{cluster}/{name}/sync",
            &[],
            &["override_window"],
        ),
    ]
}

#[tokio::test]
async fn typed_request_bodies_have_schemas_the_server_keeps_to() {
    let server = TestServer::start(None).await;
    let token = server.token().await;
    let doc = fetch(&server).await;
    for (method, path, required, optional) in typed_bodies() {
        let what = format!("{method} {path}");
        let body = &operation(&doc, &method, path)["requestBody"];
        let schema = &body["content"]["application/json"]["schema"];
        assert!(
            schema["$ref"].is_string(),
            "{what}: body is not a component: {body}"
        );
        let component = resolve(&doc, schema);
        assert_eq!(component["type"], "object", "{what}");
        let properties = component["properties"].as_object().unwrap();
        let mut names: Vec<&str> = properties.keys().map(String::as_str).collect();
        names.sort_unstable();
        let mut expected: Vec<&str> = required.iter().chain(optional).copied().collect();
        expected.sort_unstable();
        assert_eq!(names, expected, "{what}");
        let mut declared: Vec<&str> = component["required"]
            .as_array()
            .map(|r| r.iter().map(|v| v.as_str().unwrap()).collect())
            .unwrap_or_default();
        declared.sort_unstable();
        let mut required = required.to_vec();
        required.sort_unstable();
        assert_eq!(declared, required, "{what}: required fields");
        // Differential: a body the schema refuses (an unknown field, where the schema says
        // `additionalProperties: false`) is refused by the server too, naming the field.
        // (The App routes look the App up before reading the body: none exists here.)
        if component["additionalProperties"] == false && !path.contains("{cluster}") {
            let path = path
                .replace("{name}", "nothing-here")
                .replace("{cluster}", "local")
                .replace("{id}", "nothing-here");
            let response = Client::new()
                .request(method.clone(), server.url(&path))
                .bearer_auth(&token)
                .json(&json!({"no_such_field": 1}))
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{what}");
            let answer: Value = response.json().await.unwrap();
            assert!(
                answer["error"].as_str().unwrap().contains("no_such_field"),
                "{what}: {answer}"
            );
        }
    }
    // Differential for a typed answer: the fields of a real cluster view are those its schema
    // names, and the schema names no kubeconfig.
    let response = Client::new()
        .post(server.url("/api/v1/clusters"))
        .bearer_auth(&token)
        .json(
            &json!({"name": "typed", "server_url": "https://127.0.0.1:1",
                      "kubeconfig": kubeconfig("https://127.0.0.1:1", "t")}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::CREATED);
    let view: Value = response.json().await.unwrap();
    let answer = &operation(&doc, &Method::POST, "/api/v1/clusters")["responses"]["201"];
    let schema = resolve(&doc, &answer["content"]["application/json"]["schema"]);
    let properties = schema["properties"].as_object().unwrap();
    assert!(!properties.contains_key("kubeconfig"));
    for field in view.as_object().unwrap().keys() {
        assert!(
            properties.contains_key(field),
            "{field} is not in the ClusterView schema"
        );
    }
    // Every JSON body in the document resolves to a schema (no dangling references).
    for item in doc["paths"].as_object().unwrap().values() {
        for op in item.as_object().unwrap().values() {
            if let Some(schema) = op["requestBody"]["content"]["application/json"].get("schema") {
                assert!(resolve(&doc, schema).is_object());
            }
        }
    }
}

#[tokio::test]
async fn the_document_parses_as_openapi_3() {
    let server = TestServer::start(None).await;
    let bytes = fetch_bytes(&server, &Client::new()).await;
    let api: openapiv3::OpenAPI = serde_json::from_slice(&bytes).unwrap_or_else(|err| {
        let at = err.column().saturating_sub(1);
        let near =
            String::from_utf8_lossy(&bytes[at.saturating_sub(300)..(at + 50).min(bytes.len())]);
        panic!("not OpenAPI 3.0: {err}, near …{near}…")
    });
    assert!(api.openapi.starts_with("3.0."), "{}", api.openapi);
    assert_eq!(api.operations().count(), route_table().len());
    let schemes = api.components.as_ref().unwrap().security_schemes.keys();
    let mut schemes: Vec<&String> = schemes.collect();
    schemes.sort_unstable();
    assert_eq!(
        schemes,
        [
            "bearerToken",
            "internalToken",
            "sessionCookie",
            "webhookSignature"
        ]
    );
    for (path, method, op) in api.operations() {
        assert!(op.operation_id.is_some(), "{method} {path}");
        for response in op.responses.responses.values() {
            assert!(response.as_item().is_some(), "{method} {path}");
        }
    }
    // The query parameters of the typed queries are there, with their required flags.
    let promote = &api.paths.paths["/api/v1/apps/{cluster}/{name}/promote"];
    let parameters = &promote.as_item().unwrap().post.as_ref().unwrap().parameters;
    let to = parameters
        .iter()
        .filter_map(|p| p.as_item())
        .map(|p| p.parameter_data_ref())
        .find(|p| p.name == "to")
        .unwrap();
    assert!(to.required);
}

#[tokio::test]
async fn the_document_reveals_no_secret_or_data_of_the_server() {
    let server = TestServer::start(None).await;
    let token = server.token().await;
    let http = Client::new();
    let cluster_token = "kubeconfig-bearer-token-that-must-not-leak";
    let response = http
        .post(server.url("/api/v1/clusters"))
        .bearer_auth(&token)
        .json(&json!({
            "name": "secret-cluster-name",
            "server_url": "https://127.0.0.1:1",
            "kubeconfig": kubeconfig("https://127.0.0.1:1", cluster_token),
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::CREATED);
    let response = http
        .post(server.url("/api/v1/repositories"))
        .bearer_auth(&token)
        .json(
            &json!({"url": "https://git.example.com/org/hidden-repo", "username": "u",
                      "password": "repository-password-that-must-not-leak",
                      "webhook_secret": "repository-hook-secret-that-must-not-leak"}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::CREATED);

    let anonymous = fetch_bytes(&server, &http).await;
    // The same bytes for anyone: an admin's token, a bogus token, a forged cookie.
    for request in [
        http.get(server.url(ROUTE)).bearer_auth(&token),
        http.get(server.url(ROUTE)).bearer_auth("wardn_forged"),
        http.get(server.url(ROUTE))
            .header("cookie", "wardn_session=forged"),
        http.get(server.url(&format!("{ROUTE}?format=yaml&secret=1"))),
    ] {
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(response.bytes().await.unwrap().to_vec(), anonymous);
    }
    let text = String::from_utf8(anonymous).unwrap();
    let data_dir = server.data.path().to_str().unwrap().to_string();
    for secret in [
        ADMIN_PASSWORD,
        INTERNAL_TOKEN,
        WEBHOOK_SECRET,
        token.as_str(),
        cluster_token,
        "TUlTU0lOR19DQV9EQVRBX0ZPUl9URVNUUw==",
        "secret-cluster-name",
        "127.0.0.1",
        "hidden-repo",
        "repository-password-that-must-not-leak",
        "repository-hook-secret-that-must-not-leak",
        data_dir.as_str(),
    ] {
        assert!(!text.contains(secret), "the document contains {secret:?}");
    }
    // The sealing key (42 repeated) in any usual spelling.
    let key = support::server::KEY;
    for spelling in [
        hex(&key),
        base64::Engine::encode(&base64::engine::general_purpose::STANDARD, key),
    ] {
        assert!(!text.contains(&spelling), "the document contains the key");
    }
    // It is read-only: writes to it are refused, not served.
    for method in [Method::POST, Method::PUT, Method::DELETE] {
        let response = http
            .request(method.clone(), server.url(ROUTE))
            .json(&json!({}))
            .send()
            .await
            .unwrap();
        assert_eq!(
            response.status(),
            StatusCode::METHOD_NOT_ALLOWED,
            "{method}"
        );
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[tokio::test]
async fn a_thousand_gets_answer_the_same_bytes() {
    let server = TestServer::start(None).await;
    let http = Client::new();
    let first = fetch_bytes(&server, &http).await;
    assert_eq!(first, serde_json::to_vec(&document()).unwrap());
    for i in 1..1000 {
        let again = fetch_bytes(&server, &http).await;
        assert!(again == first, "answer {i} differs from the first");
    }
}
