//! Handlers of the cluster shell (`cluster.shell`): opening and ending sessions, the proxy
//! that forwards a session's Kubernetes API requests with the cluster's sealed credentials,
//! and the command box's read verbs. Every refusal on the proxy routes is a Kubernetes
//! `Status` (see [`as_kubernetes_status`]), which kubectl prints as
//! `Error from server (Reason): message`.
//!
//! Audit (action `cluster.shell`, target the cluster): each session's start and end (with its
//! request counts), each forwarded write (method, path, status), each refused request, and
//! each command of the command box.

use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::AppState;
use super::auth::{self, Actor, Caller};
use super::body::JsonBody;
use super::error::{ApiError, ErrorMessage};
use crate::clusters::cache::CachedCluster;
use crate::clusters::registry::ResolveFailure;
use crate::shell::command::{Command, Verb};
use crate::shell::discover::{self, DiscoverError};
use crate::shell::path::{ApiPath, PathError};
use crate::shell::render;
use crate::shell::sessions::{Session, SessionError};
use crate::shell::status;
use crate::time::{now_rfc3339, rfc3339};

/// The largest request body the proxy forwards (Kubernetes' own limit is 3 MiB).
pub const MAX_PROXY_BODY_BYTES: usize = 3 * 1024 * 1024;

/// The largest cluster answer the command box reads (narrow the command beyond it).
pub const MAX_COMMAND_OUTPUT_BYTES: usize = 1024 * 1024;

/// Request headers forwarded to the cluster; every other one (Authorization, Cookie,
/// Impersonate-*, Connection, Upgrade…) stays behind.
const FORWARDED_REQUEST_HEADERS: [header::HeaderName; 2] = [header::ACCEPT, header::CONTENT_TYPE];

/// Response headers passed back to the client.
const FORWARDED_RESPONSE_HEADERS: [header::HeaderName; 2] = [header::CONTENT_TYPE, header::WARNING];

/// Middleware of the proxy routes: an [`ApiError`] answer (from authentication, the role check
/// or the handler) becomes a Kubernetes `Status` with the same code and message, so kubectl
/// shows the reason. Answers of the cluster pass unchanged.
pub async fn as_kubernetes_status(request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    match response.extensions().get::<ErrorMessage>() {
        Some(ErrorMessage(message)) => {
            let code = response.status();
            (code, Json(status::failure(code.as_u16(), message))).into_response()
        }
        None => response,
    }
}

fn session_error(err: SessionError) -> ApiError {
    let code = match err {
        SessionError::NotOpen(_) => StatusCode::UNAUTHORIZED,
        SessionError::OtherUser(_) => StatusCode::FORBIDDEN,
        SessionError::TooMany(_) => StatusCode::TOO_MANY_REQUESTS,
    };
    ApiError::new(code, err.to_string())
}

fn path_error(err: &PathError) -> ApiError {
    let code = match err {
        PathError::Malformed { .. } => StatusCode::BAD_REQUEST,
        _ => StatusCode::FORBIDDEN,
    };
    ApiError::new(code, err.to_string())
}

/// The cluster's cached client and allowlist; 404 for an unregistered cluster, 502 when no
/// client can be built from its kubeconfig.
async fn cluster(state: &AppState, name: &str) -> Result<CachedCluster, ApiError> {
    state
        .registry()
        .cached_cluster(name)
        .await
        .map_err(|err| match err {
            ResolveFailure::Registry(err) => ApiError::from(err),
            ResolveFailure::Connect(err) => ApiError::new(
                StatusCode::BAD_GATEWAY,
                format!("cannot connect to cluster {name:?}: {err}"),
            ),
        })
}

async fn audit(state: &AppState, actor: &str, cluster: &str, outcome: &str) {
    state
        .store()
        .record_audit(actor, "cluster.shell", cluster, outcome, &now_rfc3339())
        .await;
}

/// Ends (and audits) the sessions whose time is up.
async fn expire_sessions(state: &AppState) {
    for session in state.shell_sessions().expire(auth::now_secs()) {
        let outcome = format!(
            "success: session {} expired; {}",
            session.id,
            counts(&session)
        );
        audit(state, &session.actor, &session.cluster, &outcome).await;
    }
}

fn counts(session: &Session) -> String {
    format!("{} requests, {} writes", session.requests, session.writes)
}

/// `POST /api/v1/clusters/{name}/shell` answer.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct OpenedSession {
    /// The session id.
    pub session: String,
    /// The cluster.
    pub cluster: String,
    /// Path of the session's proxy: a kubeconfig's `server` is the wardn URL plus this.
    pub proxy_path: String,
    /// When the session ends at the latest (RFC 3339).
    pub expires_at: String,
    /// The namespaces reachable (empty: every namespace).
    pub namespaces: Vec<String>,
}

/// `POST /api/v1/clusters/{name}/shell`: opens a shell session on a registered cluster for the
/// caller (audited), at most [`crate::shell::sessions::MAX_SESSIONS_PER_USER`] per user.
pub async fn open(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Extension(caller): Extension<Caller>,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    let view = state.registry().get(&name).await?;
    expire_sessions(&state).await;
    let id = auth::random_secret(18).map_err(|err| ApiError::internal(&err))?;
    let now = auth::now_secs();
    let opened = state
        .shell_sessions()
        .open(id, &caller.user.username, &actor.0, &name, now);
    let session = match opened {
        Ok(session) => session,
        Err(err) => {
            audit(&state, &actor.0, &name, &format!("failure: {err}")).await;
            return Err(session_error(err));
        }
    };
    audit(
        &state,
        &actor.0,
        &name,
        &format!("success: session {} started", session.id),
    )
    .await;
    let expires_at = jiff::Timestamp::from_second(session.expires_at)
        .map(rfc3339)
        .map_err(|err| ApiError::internal(&err))?;
    let body = OpenedSession {
        proxy_path: format!("/api/v1/clusters/{name}/proxy/{}", session.id),
        session: session.id,
        cluster: name,
        expires_at,
        namespaces: view.namespaces,
    };
    Ok((StatusCode::CREATED, Json(body)).into_response())
}

/// `DELETE /api/v1/clusters/{name}/shell/{session}`: ends the caller's session (audited with
/// its request counts); its proxy URL stops working at once.
pub async fn close(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Extension(caller): Extension<Caller>,
    Path((name, id)): Path<(String, String)>,
) -> Result<StatusCode, ApiError> {
    let session = state
        .shell_sessions()
        .end(&id, &name, &caller.user.username)
        .map_err(|err| match err {
            SessionError::NotOpen(_) => ApiError::new(StatusCode::NOT_FOUND, err.to_string()),
            other => session_error(other),
        })?;
    let outcome = format!("success: session {id} ended; {}", counts(&session));
    audit(&state, &actor.0, &name, &outcome).await;
    Ok(StatusCode::NO_CONTENT)
}

/// Whether the request asks for a connection upgrade (exec, attach, port-forward: SPDY or
/// WebSocket).
fn wants_upgrade(headers: &HeaderMap) -> bool {
    headers.contains_key(header::UPGRADE)
        || headers
            .get_all(header::CONNECTION)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .any(|v| v.to_ascii_lowercase().contains("upgrade"))
}

/// The path after `/api/v1/clusters/NAME/proxy/SESSION`, exactly as received.
fn forwarded_path(raw: &str) -> &str {
    // "", api, v1, clusters, NAME, proxy, SESSION, then the rest.
    raw.match_indices('/')
        .nth(6)
        .map_or("", |(at, _)| &raw[at..])
}

/// `GET|POST|PUT|PATCH|DELETE /api/v1/clusters/{name}/proxy/{session}/{*path}`: forwards one
/// Kubernetes API request of an open session to the cluster with its sealed credentials.
/// Refused (as a `Status`): a session that is not the caller's open one on this cluster, a
/// malformed path, a namespace outside the allowlist, a cluster-wide request under a restricted
/// allowlist, exec/attach/port-forward/proxy and any connection upgrade, a body over
/// [`MAX_PROXY_BODY_BYTES`]. Answers, watches included, stream back unchanged.
pub async fn proxy(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Extension(caller): Extension<Caller>,
    Path((name, id, _)): Path<(String, String, String)>,
    request: Request,
) -> Result<Response, ApiError> {
    let entry = cluster(&state, &name).await?;
    let method = request.method().clone();
    let write = !matches!(method, Method::GET | Method::HEAD);
    state
        .shell_sessions()
        .record(&id, &name, &caller.user.username, write, auth::now_secs())
        .map_err(session_error)?;
    let raw = request.uri().path().to_string();
    let forwarded = forwarded_path(&raw).to_string();
    let what = format!("session {id}: {method} {forwarded}");
    let refuse = async |err: ApiError| {
        audit(
            &state,
            &actor.0,
            &name,
            &format!("failure: {what}: {}", err.message),
        )
        .await;
        err
    };
    let checked = ApiPath::parse(&forwarded)
        .and_then(|path| path.check(&name, &entry.namespaces).map(|()| path));
    if let Err(err) = checked {
        return Err(refuse(path_error(&err)).await);
    }
    if wants_upgrade(request.headers()) {
        let err = ApiError::new(
            StatusCode::FORBIDDEN,
            "connection upgrades (exec, attach, port-forward) are not available through the wardn cluster shell",
        );
        return Err(refuse(err).await);
    }
    let mut upstream =
        http::Request::builder()
            .method(method.clone())
            .uri(match request.uri().query() {
                Some(query) => format!("{forwarded}?{query}"),
                None => forwarded.clone(),
            });
    for name in FORWARDED_REQUEST_HEADERS {
        for value in request.headers().get_all(&name) {
            upstream = upstream.header(&name, value);
        }
    }
    let body = match axum::body::to_bytes(request.into_body(), MAX_PROXY_BODY_BYTES).await {
        Ok(body) => body,
        Err(_) => {
            let err = ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!(
                    "request body larger than {} MiB, or cut short",
                    MAX_PROXY_BODY_BYTES >> 20
                ),
            );
            return Err(refuse(err).await);
        }
    };
    let upstream = upstream
        .body(kube::client::Body::from(body))
        .map_err(|err| ApiError::new(StatusCode::BAD_REQUEST, format!("request: {err}")))?;
    let answer = match entry.client.send(upstream).await {
        Ok(answer) => answer,
        Err(err) => {
            let err = ApiError::new(
                StatusCode::BAD_GATEWAY,
                format!(
                    "cluster {name:?} did not answer: {}",
                    crate::clusters::connect::classify(&err)
                ),
            );
            return Err(refuse(err).await);
        }
    };
    if write {
        let outcome = if answer.status().is_success() {
            "success"
        } else {
            "failure"
        };
        let code = answer.status().as_u16();
        audit(
            &state,
            &actor.0,
            &name,
            &format!("{outcome}: {what}: {code}"),
        )
        .await;
    }
    let (parts, body) = answer.into_parts();
    let mut response = Response::new(Body::new(body));
    *response.status_mut() = parts.status;
    for name in FORWARDED_RESPONSE_HEADERS {
        for value in parts.headers.get_all(&name) {
            response.headers_mut().append(&name, value.clone());
        }
    }
    Ok(response)
}

/// `POST /api/v1/clusters/{name}/shell/commands` body.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CommandRequest {
    /// One command line: `get`, `describe` or `logs` (see [`crate::shell::command`]).
    pub command: String,
}

/// `POST /api/v1/clusters/{name}/shell/commands` answer.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CommandOutput {
    /// The command as run.
    pub command: String,
    /// The Kubernetes API path it read.
    pub path: String,
    /// What kubectl would print.
    pub text: String,
    /// For `get`: the rows, header first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rows: Vec<Vec<String>>,
}

fn discover_error(name: &str, err: DiscoverError) -> ApiError {
    match err {
        DiscoverError::Unknown(_) => ApiError::new(StatusCode::NOT_FOUND, err.to_string()),
        DiscoverError::Cluster(err) => ApiError::new(
            StatusCode::BAD_GATEWAY,
            format!(
                "cluster {name:?}: discovery failed: {}",
                crate::clusters::connect::classify(&err)
            ),
        ),
    }
}

/// The answer of a GET of `path` on the cluster with `accept`, read up to
/// [`MAX_COMMAND_OUTPUT_BYTES`]; a non-2xx answer is an error with the cluster's message.
async fn read(
    name: &str,
    entry: &CachedCluster,
    path: &str,
    accept: &'static str,
) -> Result<Vec<u8>, ApiError> {
    let request = http::Request::get(path)
        .header(header::ACCEPT, HeaderValue::from_static(accept))
        .body(kube::client::Body::empty())
        .map_err(|err| ApiError::new(StatusCode::BAD_REQUEST, format!("request: {err}")))?;
    let answer = entry.client.send(request).await.map_err(|err| {
        ApiError::new(
            StatusCode::BAD_GATEWAY,
            format!(
                "cluster {name:?} did not answer: {}",
                crate::clusters::connect::classify(&err)
            ),
        )
    })?;
    let code = answer.status();
    let body = axum::body::to_bytes(Body::new(answer.into_body()), MAX_COMMAND_OUTPUT_BYTES)
        .await
        .map_err(|_| {
            ApiError::new(
                StatusCode::BAD_GATEWAY,
                format!(
                    "the answer of cluster {name:?} is over {} MiB or was cut short: narrow the command",
                    MAX_COMMAND_OUTPUT_BYTES >> 20
                ),
            )
        })?;
    if code.is_success() {
        return Ok(body.to_vec());
    }
    let message = serde_json::from_slice::<Value>(&body)
        .ok()
        .and_then(|v| v["message"].as_str().map(str::to_string))
        .unwrap_or_else(|| String::from_utf8_lossy(&body).chars().take(300).collect());
    let status = match code {
        StatusCode::NOT_FOUND | StatusCode::FORBIDDEN | StatusCode::BAD_REQUEST => code,
        _ => StatusCode::BAD_GATEWAY,
    };
    Err(ApiError::new(
        status,
        format!("cluster {name:?} answered {}: {message}", code.as_u16()),
    ))
}

fn json_of(name: &str, body: &[u8]) -> Result<Value, ApiError> {
    serde_json::from_slice(body).map_err(|err| {
        ApiError::new(
            StatusCode::BAD_GATEWAY,
            format!("cluster {name:?} answered something that is not JSON: {err}"),
        )
    })
}

/// Runs one command of the command box on `entry` (the caller is authorised).
async fn run_command(
    name: &str,
    entry: &CachedCluster,
    command: &Command,
) -> Result<CommandOutput, ApiError> {
    let found = discover::find(&entry.client, &command.resource)
        .await
        .map_err(|err| discover_error(name, err))?;
    let namespace = match (&command.namespace, command.all_namespaces) {
        (_, true) => None,
        (Some(ns), false) => Some(ns.as_str()),
        (None, false) => Some("default"),
    };
    let mut path = found.path(namespace, command.name.as_deref());
    if command.verb == Verb::Logs {
        path.push_str("/log");
    }
    ApiPath::parse(&path)
        .and_then(|checked| checked.check(name, &entry.namespaces))
        .map_err(|err| path_error(&err))?;
    let now = auth::now_secs();
    let (text, rows, path) = match command.verb {
        Verb::Get => {
            let body = read(name, entry, &path, render::TABLE_ACCEPT).await?;
            let rows = render::get_rows(&json_of(name, &body)?, command.all_namespaces, now);
            (
                format!("{}\n", crate::text_table::render(&rows)),
                rows,
                path,
            )
        }
        Verb::Describe => {
            let body = read(name, entry, &path, "application/json").await?;
            (
                render::describe(&json_of(name, &body)?, now),
                Vec::new(),
                path,
            )
        }
        Verb::Logs => {
            let mut query = Vec::new();
            if let Some(container) = &command.container {
                query.push(format!("container={container}"));
            }
            if let Some(tail) = command.tail {
                query.push(format!("tailLines={tail}"));
            }
            let full = if query.is_empty() {
                path
            } else {
                format!("{path}?{}", query.join("&"))
            };
            let body = read(name, entry, &full, "text/plain, */*").await?;
            (
                String::from_utf8_lossy(&body).into_owned(),
                Vec::new(),
                full,
            )
        }
    };
    Ok(CommandOutput {
        command: String::new(),
        path,
        text,
        rows,
    })
}

/// `POST /api/v1/clusters/{name}/shell/commands` `{"command": "get pods -n demo"}`: runs one
/// read-only command (get, describe, logs where the cluster serves them) with the cluster's
/// sealed credentials, under the same allowlist as the proxy; audited.
pub async fn command(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(name): Path<String>,
    JsonBody(body): JsonBody<CommandRequest>,
) -> Result<Json<CommandOutput>, ApiError> {
    let parsed = Command::parse(&body.command)
        .map_err(|err| ApiError::new(StatusCode::BAD_REQUEST, err.to_string()))?;
    let entry = cluster(&state, &name).await?;
    let line = body
        .command
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let result = run_command(&name, &entry, &parsed).await;
    let outcome = match &result {
        Ok(_) => format!("success: command `{line}`"),
        Err(err) => format!("failure: command `{line}`: {}", err.message),
    };
    audit(&state, &actor.0, &name, &outcome).await;
    let mut output = result?;
    output.command = line;
    Ok(Json(output))
}
