//! The web UI's pages and assets over HTTP, without a browser: pages other than the login
//! redirect to it without a live session and carry no data; every answer has the strict
//! Content-Security-Policy; assets are the embedded files and nothing else; the scripts never
//! turn text into HTML; `GET /api/v1/auth/me` says who is signed in (and the UI's App routes
//! answer 404 for an unknown App); 1,000 page requests
//! with and without a session are each answered as the first was.

mod support;

use reqwest::header::{CONTENT_SECURITY_POLICY, CONTENT_TYPE, LOCATION};
use reqwest::{Client, StatusCode, redirect};
use support::server::TestServer;
use wardn::server::ui::CONTENT_SECURITY_POLICY as CSP;

/// The pages a session is needed for.
const GUARDED: &[&str] = &[
    "/ui/apps",
    "/ui/clusters",
    "/ui/audit",
    "/ui/apps/local/some-app",
];

fn client() -> Client {
    Client::builder()
        .redirect(redirect::Policy::none())
        .build()
        .unwrap()
}

async fn get(path: &str, server: &TestServer, cookie: Option<&str>) -> reqwest::Response {
    let mut request = client().get(server.url(path));
    if let Some(cookie) = cookie {
        request = request.header("cookie", cookie);
    }
    request.send().await.unwrap()
}

fn header(response: &reqwest::Response, name: reqwest::header::HeaderName) -> String {
    response
        .headers()
        .get(name)
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default()
}

#[tokio::test]
async fn pages_need_a_live_session_and_show_nothing_without_one() {
    let server = TestServer::start(None).await;
    let cookie = server.login().await;

    let root = get("/", &server, None).await;
    assert_eq!(root.status(), StatusCode::SEE_OTHER);
    assert_eq!(header(&root, LOCATION), "/ui/apps");

    let forged = "wardn_session=not-a-session";
    for path in GUARDED {
        for who in [None, Some(forged)] {
            let response = get(path, &server, who).await;
            assert_eq!(response.status(), StatusCode::SEE_OTHER, "{path} {who:?}");
            assert_eq!(header(&response, LOCATION), "/ui/login");
            assert_eq!(header(&response, CONTENT_SECURITY_POLICY), CSP);
            assert_eq!(
                response.text().await.unwrap(),
                "",
                "{path}: a redirect only"
            );
        }
        let page = get(path, &server, Some(&cookie)).await;
        assert_eq!(page.status(), StatusCode::OK, "{path}");
        assert_eq!(header(&page, CONTENT_SECURITY_POLICY), CSP);
        assert_eq!(header(&page, CONTENT_TYPE), "text/html; charset=utf-8");
        let html = page.text().await.unwrap();
        // The shell carries no data: it is the same for every App.
        assert!(!html.contains("some-app"), "{path}: {html}");
        assert_no_inline_script(path, &html);
    }
    let login = get("/ui/login", &server, None).await;
    assert_eq!(login.status(), StatusCode::OK);
    assert_eq!(header(&login, CONTENT_SECURITY_POLICY), CSP);
    assert_no_inline_script("/ui/login", &login.text().await.unwrap());

    // After logout the same cookie opens nothing.
    let logout = client()
        .post(server.url("/api/v1/auth/logout"))
        .header("cookie", &cookie)
        .header("content-type", "application/json")
        .send()
        .await
        .unwrap();
    assert_eq!(logout.status(), StatusCode::NO_CONTENT);
    for path in GUARDED {
        let response = get(path, &server, Some(&cookie)).await;
        assert_eq!(response.status(), StatusCode::SEE_OTHER, "{path}");
    }
    server.stop().await;
}

/// Every `<script` of `html` loads a same-origin file (`src="/ui/assets/…"`), none is inline.
fn assert_no_inline_script(path: &str, html: &str) {
    let scripts: Vec<&str> = html.split("<script").skip(1).collect();
    assert!(!scripts.is_empty(), "{path} loads its module");
    for script in scripts {
        let tag = &script[..script.find('>').unwrap()];
        assert!(tag.contains("src=\"/ui/assets/"), "{path}: <script{tag}>");
        assert!(script[tag.len() + 1..].starts_with("</script>"), "{path}");
    }
    for attribute in ["onclick", "onload", "onerror", "style=", "javascript:"] {
        assert!(!html.contains(attribute), "{path} has {attribute}");
    }
}

#[tokio::test]
async fn assets_are_the_embedded_files_and_nothing_else() {
    let server = TestServer::start(None).await;
    let css = get("/ui/assets/app.css", &server, None).await;
    assert_eq!(css.status(), StatusCode::OK);
    assert_eq!(header(&css, CONTENT_TYPE), "text/css; charset=utf-8");
    assert_eq!(
        header(&css, "x-content-type-options".parse().unwrap()),
        "nosniff"
    );
    assert_eq!(
        css.text().await.unwrap(),
        include_str!("../ui/app.css"),
        "the embedded stylesheet"
    );
    let js = get("/ui/assets/api.js", &server, None).await;
    assert_eq!(header(&js, CONTENT_TYPE), "text/javascript; charset=utf-8");
    for hostile in [
        "/ui/assets/..%2F..%2FCargo.toml",
        "/ui/assets/%2E%2E%2Fpage.html",
        "/ui/assets/page.html",
        "/ui/assets/",
        "/ui/assets/API.JS",
    ] {
        let response = get(hostile, &server, None).await;
        assert_eq!(response.status(), StatusCode::NOT_FOUND, "{hostile}");
        let body = response.text().await.unwrap();
        assert!(
            !body.contains("[package]") && !body.contains("<html"),
            "{hostile}"
        );
    }
    server.stop().await;
}

/// The scripts build the page from text nodes and attributes only: none of them parses a
/// string as HTML or code, so no API value can become markup or script.
#[test]
fn scripts_never_turn_strings_into_html_or_code() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("ui/js");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let source = std::fs::read_to_string(&path).unwrap();
        for sink in [
            "innerHTML",
            "outerHTML",
            "insertAdjacentHTML",
            "document.write",
            "eval(",
            "new Function",
            "setTimeout('",
            "DOMParser",
            "createContextualFragment",
        ] {
            assert!(!source.contains(sink), "{} uses {sink}", path.display());
        }
        seen += 1;
    }
    assert!(seen >= 8, "the UI's scripts were read");
}

#[tokio::test]
async fn me_names_the_signed_in_user_and_how() {
    let server = TestServer::start(None).await;
    let cookie = server.login().await;
    let me: serde_json::Value = get("/api/v1/auth/me", &server, Some(&cookie))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        me,
        serde_json::json!({"username": "admin", "role": "admin", "clusters": null, "via": "session"})
    );
    let token = server.token().await;
    let me: serde_json::Value = client()
        .get(server.url("/api/v1/auth/me"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(me["via"], "token");
    let nobody = get("/api/v1/auth/me", &server, None).await;
    assert_eq!(nobody.status(), StatusCode::UNAUTHORIZED);
    for route in ["events", "resources"] {
        let path = format!("/api/v1/apps/local/nothing/{route}");
        let unknown = get(&path, &server, Some(&cookie)).await;
        assert_eq!(unknown.status(), StatusCode::NOT_FOUND, "{path}");
    }
    server.stop().await;
}

#[tokio::test]
async fn the_thousandth_page_request_is_answered_as_the_first() {
    let server = TestServer::start(None).await;
    let cookie = server.login().await;
    let first_page = get("/ui/apps", &server, Some(&cookie))
        .await
        .text()
        .await
        .unwrap();
    for i in 0..1000 {
        let path = GUARDED[i % GUARDED.len()];
        if i % 2 == 0 {
            let response = get(path, &server, Some(&cookie)).await;
            assert_eq!(response.status(), StatusCode::OK, "request {i}: {path}");
            let html = response.text().await.unwrap();
            if path == "/ui/apps" {
                assert_eq!(html, first_page, "request {i}");
            }
        } else {
            let response = get(path, &server, None).await;
            assert_eq!(
                response.status(),
                StatusCode::SEE_OTHER,
                "request {i}: {path}"
            );
            assert_eq!(header(&response, LOCATION), "/ui/login");
        }
    }
    server.stop().await;
}
