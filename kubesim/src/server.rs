//! The HTTPS listener: TLS handshakes, HTTP/1.1 and HTTP/2 connections, authentication,
//! fault injection and body limits in front of the API handlers.

use std::convert::Infallible;
use std::sync::Arc;

use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::header::{ACCEPT, AUTHORIZATION, CONTENT_LENGTH};
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;
use tokio::task::{JoinHandle, JoinSet};
use tokio_rustls::TlsAcceptor;

use crate::auth::{authenticate, impersonate};
use crate::reply::{Body, error_reply, negotiate};
use crate::state::State;
use crate::status::ApiError;

/// The concurrent streams one HTTP/2 connection may carry: kube-apiserver's default since the
/// HTTP/2 rapid-reset fixes (`--http2-max-streams-per-connection` 0 means 100).
const MAX_STREAMS: u32 = 100;

/// The API server's request body limit (3 MiB); larger bodies get 413.
pub const MAX_BODY: usize = 3 * 1024 * 1024;

/// Serves HTTPS on the listener until the returned task is aborted; aborting it also closes
/// every open connection (so a restart can bind the same port).
pub fn spawn(
    state: Arc<State>,
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
) -> JoinHandle<()> {
    let acceptor = TlsAcceptor::from(tls);
    tokio::spawn(async move {
        let mut connections = JoinSet::new();
        loop {
            tokio::select! {
                accepted = listener.accept() => {
                    let Ok((tcp, _)) = accepted else { continue };
                    let _ = tcp.set_nodelay(true);
                    let acceptor = acceptor.clone();
                    let state = state.clone();
                    connections.spawn(async move {
                        let Ok(tls) = acceptor.accept(tcp).await else { return };
                        let http2 = tls.get_ref().1.alpn_protocol() == Some(b"h2");
                        let counts = state.clone();
                        let _open = counts.connections.opened(http2);
                        let service = hyper::service::service_fn(move |req| {
                            let state = state.clone();
                            async move { Ok::<_, Infallible>(handle(state, req).await) }
                        });
                        let mut builder = auto::Builder::new(TokioExecutor::new());
                        if counts.config.disable_http2 {
                            builder = builder.http1_only();
                        } else {
                            builder.http2().max_concurrent_streams(MAX_STREAMS);
                        }
                        if let Err(e) = builder.serve_connection(TokioIo::new(tls), service).await {
                            tracing::debug!(error = %e, "connection ended");
                        }
                    });
                }
                Some(_) = connections.join_next(), if !connections.is_empty() => {}
            }
        }
    })
}

fn is_public(path: &str) -> bool {
    matches!(path, "/version" | "/healthz" | "/livez" | "/readyz")
}

async fn handle(state: Arc<State>, req: Request<Incoming>) -> Response<Body> {
    let accept = req
        .headers()
        .get(ACCEPT)
        .and_then(|h| h.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let resp = match serve(state, req).await {
        Ok(resp) => resp,
        Err(e) => error_reply(&e),
    };
    negotiate(resp, &accept).await
}

async fn serve(state: Arc<State>, req: Request<Incoming>) -> Result<Response<Body>, ApiError> {
    let auth = req
        .headers()
        .get(AUTHORIZATION)
        .and_then(|h| h.to_str().ok());
    let identity = match (auth, is_public(req.uri().path())) {
        (None, true) => None,
        (auth, _) => {
            let header = |name: &str| {
                req.headers()
                    .get_all(name)
                    .iter()
                    .filter_map(|h| h.to_str().ok())
                    .collect::<Vec<&str>>()
            };
            let users = header("impersonate-user");
            let groups = header("impersonate-group");
            Some(impersonate(
                &state,
                authenticate(&state, auth)?,
                users.first().copied(),
                &groups,
            )?)
        }
    };
    let faults = state.faults();
    if !faults.latency.is_zero() {
        tokio::time::sleep(faults.latency).await;
    }
    if let Some(e) = faults.roll() {
        return Err(e);
    }
    if let Some(budget) = faults.fail_writes_after
        && crate::faults::is_write(req.method(), req.uri().query())
        && state.write_over_budget(budget)
    {
        return Err(ApiError::fault(match faults.error_status {
            429 | 503 => faults.error_status,
            _ => 500,
        }));
    }
    let declared = req
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|h| h.to_str().ok())
        .and_then(|s| s.parse::<usize>().ok());
    if declared.is_some_and(|n| n > MAX_BODY) {
        return Err(ApiError::too_large(MAX_BODY));
    }
    let (parts, body) = req.into_parts();
    let body = match Limited::new(body, MAX_BODY).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e)
            if e.downcast_ref::<http_body_util::LengthLimitError>()
                .is_some() =>
        {
            return Err(ApiError::too_large(MAX_BODY));
        }
        Err(e) => {
            return Err(ApiError::bad_request(format!(
                "reading the request body: {e}"
            )));
        }
    };
    crate::handlers::route(&state, identity, parts, body).await
}
