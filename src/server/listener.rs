//! The HTTP listener: an accept loop over hyper with deadlines and a bound on connections, so
//! connections that never finish their headers (slowloris) cannot exhaust file descriptors and
//! `/api/v1/health` keeps answering.
//!
//! - Every connection must send a request's headers within [`HEADER_READ_TIMEOUT`] of waiting
//!   for them; hyper applies the same deadline to an idle keep-alive connection waiting for its
//!   next request, so it is also the idle timeout.
//! - Above [`BUSY_CONNECTIONS`] open connections, new ones get [`BUSY_HEADER_READ_TIMEOUT`]
//!   instead: a client that sends its request at once (a health probe) is served, a slow one is
//!   closed quickly.
//! - At [`MAX_CONNECTIONS`] open connections, new ones are accepted and closed at once.
//! - With TLS, the handshake has the same deadline as the headers.
//! - On shutdown the loop stops accepting, asks every connection to finish its request in
//!   flight and close, and waits at most [`SHUTDOWN_GRACE`] for them.

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use axum::http::Request;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tower::ServiceExt;

/// How long a connection may take to send a request's headers (and stay idle between
/// requests).
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// The header deadline of connections accepted while more than [`BUSY_CONNECTIONS`] are open.
pub const BUSY_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(2);
/// Open connections above which new ones get [`BUSY_HEADER_READ_TIMEOUT`].
pub const BUSY_CONNECTIONS: usize = 512;
/// Most connections open at once; beyond it new ones are closed unanswered.
pub const MAX_CONNECTIONS: usize = 4096;
/// How long shutdown waits for connections to finish.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(8);

/// Serves `router` on `listener` (over TLS with `tls`) until `shutdown` completes (see the
/// module documentation); handlers see the peer address as `ConnectInfo<std::net::SocketAddr>`.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    tls: Option<Arc<rustls::ServerConfig>>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    let tls = tls.map(tokio_rustls::TlsAcceptor::from);
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let graceful = GracefulShutdown::new();
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(err) => {
                    // Out of file descriptors or a transient network error: back off briefly.
                    tracing::warn!(%err, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let Ok(slot) = Arc::clone(&slots).try_acquire_owned() else {
            tracing::warn!(%peer, limit = MAX_CONNECTIONS, "too many connections; closing a new one");
            drop(stream);
            continue;
        };
        let open = MAX_CONNECTIONS - slots.available_permits();
        let header_timeout = if open > BUSY_CONNECTIONS {
            BUSY_HEADER_READ_TIMEOUT
        } else {
            HEADER_READ_TIMEOUT
        };
        let service = router
            .clone()
            .map_request(move |mut request: Request<Incoming>| {
                request.extensions_mut().insert(ConnectInfo(peer));
                request
            });
        let service = TowerToHyperService::new(service.map_err(|never: Infallible| never));
        let mut builder = hyper::server::conn::http1::Builder::new();
        builder
            .timer(TokioTimer::new())
            .header_read_timeout(header_timeout)
            .keep_alive(true);
        let watcher = graceful.watcher();
        let tls = tls.clone();
        tokio::spawn(async move {
            let served = match tls {
                None => {
                    let io = TokioIo::new(stream);
                    watcher.watch(builder.serve_connection(io, service)).await
                }
                Some(acceptor) => {
                    let handshake = tokio::time::timeout(header_timeout, acceptor.accept(stream));
                    match handshake.await {
                        Ok(Ok(stream)) => {
                            let io = TokioIo::new(stream);
                            watcher.watch(builder.serve_connection(io, service)).await
                        }
                        Ok(Err(err)) => {
                            tracing::debug!(%peer, %err, "TLS handshake failed");
                            Ok(())
                        }
                        Err(_) => {
                            tracing::debug!(%peer, "TLS handshake not done in time");
                            Ok(())
                        }
                    }
                }
            };
            if let Err(err) = served {
                tracing::debug!(%peer, %err, "connection ended with an error");
            }
            drop(slot);
        });
    }
    drop(listener);
    if tokio::time::timeout(SHUTDOWN_GRACE, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!(grace = ?SHUTDOWN_GRACE, "connections still open at shutdown; closing them");
    }
}
