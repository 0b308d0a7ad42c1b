//! The web UI: static pages and assets embedded in the binary (`ui/` at build time), served at
//! `/` and `/ui/…`. Pages are shells without data; their scripts read everything through the
//! JSON API with the session cookie, so the UI has no logic or data path of its own. Every
//! answer carries a strict Content-Security-Policy (same-origin scripts and styles only, no
//! inline script). Pages other than the login redirect to it without a valid session.

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;

use super::AppState;
use super::auth::signed_in;

/// The Content-Security-Policy of every UI answer: only this origin's scripts, styles and
/// API; no inline script or style, no framing, no plugins, forms post nowhere else.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; \
     base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// The login page's path.
pub const LOGIN_PATH: &str = "/ui/login";
/// Where `/` leads.
pub const HOME_PATH: &str = "/ui/apps";

/// The page shell; `{{title}}` and `{{page}}` are replaced by constants of [`PAGES`].
const SHELL: &str = include_str!("../../ui/page.html");

/// A page: its title and the name of the script module (`/ui/assets/NAME.js`) that fills it.
struct Page {
    title: &'static str,
    page: &'static str,
}

const LOGIN: Page = Page {
    title: "Sign in",
    page: "login",
};
const CLUSTERS: Page = Page {
    title: "Clusters",
    page: "clusters",
};
const APPS: Page = Page {
    title: "Apps",
    page: "apps",
};
const APP: Page = Page {
    title: "App",
    page: "app",
};
const AUDIT: Page = Page {
    title: "Audit log",
    page: "audit",
};

/// Every embedded asset: its name under `/ui/assets/`, content type and bytes.
const ASSETS: &[(&str, &str, &[u8])] = &[
    (
        "app.css",
        "text/css; charset=utf-8",
        include_bytes!("../../ui/app.css"),
    ),
    (
        "icon.svg",
        "image/svg+xml",
        include_bytes!("../../ui/icon.svg"),
    ),
    ("api.js", JS, include_bytes!("../../ui/js/api.js")),
    ("dom.js", JS, include_bytes!("../../ui/js/dom.js")),
    ("layout.js", JS, include_bytes!("../../ui/js/layout.js")),
    ("login.js", JS, include_bytes!("../../ui/js/login.js")),
    ("clusters.js", JS, include_bytes!("../../ui/js/clusters.js")),
    ("apps.js", JS, include_bytes!("../../ui/js/apps.js")),
    ("app.js", JS, include_bytes!("../../ui/js/app.js")),
    ("audit.js", JS, include_bytes!("../../ui/js/audit.js")),
];

const JS: &str = "text/javascript; charset=utf-8";

/// The headers every UI answer carries.
fn hardened(mut response: Response) -> Response {
    let headers = response.headers_mut();
    for (name, value) in [
        (header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::REFERRER_POLICY, "no-referrer"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

fn render(page: &Page) -> Response {
    let html = SHELL
        .replace("{{title}}", page.title)
        .replace("{{page}}", page.page);
    hardened(
        (
            [
                (header::CONTENT_TYPE, "text/html; charset=utf-8"),
                (header::CACHE_CONTROL, "no-store"),
            ],
            html,
        )
            .into_response(),
    )
}

/// A page for signed-in users: the page, or a redirect to the login page.
async fn guarded(state: &AppState, headers: &HeaderMap, page: &Page) -> Response {
    if signed_in(state, headers).await {
        render(page)
    } else {
        hardened(Redirect::to(LOGIN_PATH).into_response())
    }
}

async fn home() -> Response {
    hardened(Redirect::to(HOME_PATH).into_response())
}

async fn login() -> Response {
    render(&LOGIN)
}

async fn clusters(State(state): State<AppState>, headers: HeaderMap) -> Response {
    guarded(&state, &headers, &CLUSTERS).await
}

async fn apps(State(state): State<AppState>, headers: HeaderMap) -> Response {
    guarded(&state, &headers, &APPS).await
}

async fn app(State(state): State<AppState>, headers: HeaderMap) -> Response {
    guarded(&state, &headers, &APP).await
}

async fn audit(State(state): State<AppState>, headers: HeaderMap) -> Response {
    guarded(&state, &headers, &AUDIT).await
}

async fn asset(Path(name): Path<String>) -> Response {
    match ASSETS.iter().find(|(asset, _, _)| *asset == name) {
        Some((_, content_type, bytes)) => hardened(
            (
                [
                    (header::CONTENT_TYPE, *content_type),
                    (header::CACHE_CONTROL, "no-cache"),
                ],
                *bytes,
            )
                .into_response(),
        ),
        None => hardened((StatusCode::NOT_FOUND, "no such asset").into_response()),
    }
}

/// The UI's routes: `/` (to the Apps page), the pages under `/ui/` and their assets. Not API
/// routes: they answer HTML and are absent from [`super::route_table`].
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/", get(home))
        .route("/ui", get(home))
        .route("/ui/", get(home))
        .route(LOGIN_PATH, get(login))
        .route("/ui/clusters", get(clusters))
        .route("/ui/apps", get(apps))
        .route("/ui/apps/{cluster}/{name}", get(app))
        .route("/ui/audit", get(audit))
        .route("/ui/assets/{name}", get(asset))
}
