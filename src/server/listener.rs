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
//! - At most [`connection_cap`] connections are open: [`MAX_CONNECTIONS`], fewer when the
//!   file-descriptor limit would not leave half of it (or [`FD_HEADROOM`]) to the rest of the
//!   process. At the cap, a new connection is accepted by closing the oldest one that has not
//!   yet sent its first request's headers (the likeliest slowloris), so a client that sends
//!   its request at once is always served; when every open connection has sent a request, the
//!   new one is closed unanswered instead.
//! - With TLS, the handshake has the same deadline as the headers.
//! - On shutdown the loop stops accepting, asks every connection to finish its request in
//!   flight and close (closing those still waiting for headers), and waits at most
//!   [`SHUTDOWN_GRACE`] for them.

use std::collections::VecDeque;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use axum::http::Request;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use parking_lot::Mutex;
use tokio::net::TcpListener;
use tokio::sync::Notify;
use tokio::task::JoinSet;
use tower::ServiceExt;

/// How long a connection may take to send a request's headers (and stay idle between
/// requests).
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// The header deadline of connections accepted while more than [`BUSY_CONNECTIONS`] are open.
pub const BUSY_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(2);
/// Open connections above which new ones get [`BUSY_HEADER_READ_TIMEOUT`].
pub const BUSY_CONNECTIONS: usize = 512;
/// Most connections open at once (see [`connection_cap`]).
pub const MAX_CONNECTIONS: usize = 4096;
/// File descriptors left to the rest of the process (database, Git, cluster clients) at
/// least, when the limit is low enough to lower [`MAX_CONNECTIONS`].
pub const FD_HEADROOM: usize = 1024;
/// How long shutdown waits for connections to finish.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(8);

/// The connection cap under a file-descriptor limit of `fd_limit`: [`MAX_CONNECTIONS`], or
/// fewer so that at least half the limit, or [`FD_HEADROOM`] descriptors, stay free.
pub fn connection_cap(fd_limit: usize) -> usize {
    let usable = (fd_limit / 2).max(fd_limit.saturating_sub(FD_HEADROOM));
    MAX_CONNECTIONS.min(usable).max(1)
}

/// The process's soft limit on open file descriptors (1,024 if it cannot be read).
fn fd_limit() -> usize {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit only writes into the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return 1024;
    }
    usize::try_from(limit.rlim_cur).unwrap_or(usize::MAX)
}

/// One open connection, as the accept loop sees it.
#[derive(Default)]
struct Connection {
    /// It has sent a whole request head (set by the service, for good).
    started: AtomicBool,
    /// It was chosen to close (counted out of the open connections already).
    evicted: AtomicBool,
    /// Its task ended.
    ended: AtomicBool,
    /// Wakes its task to close (eviction, shutdown).
    close: Notify,
}

/// The open connections, oldest first, and how many count against the cap.
struct Connections {
    cap: usize,
    open: AtomicUsize,
    order: Mutex<VecDeque<Arc<Connection>>>,
}

impl Connections {
    fn new(cap: usize) -> Connections {
        Connections {
            cap,
            open: AtomicUsize::new(0),
            order: Mutex::new(VecDeque::new()),
        }
    }

    /// Room for one more connection: at the cap, the oldest connection that has not sent a
    /// request head is told to close and no longer counts. `None` when there is no room.
    fn admit(&self) -> Option<Arc<Connection>> {
        let mut order = self.order.lock();
        let gone = |c: &Arc<Connection>| {
            c.ended.load(Ordering::SeqCst) || c.evicted.load(Ordering::SeqCst)
        };
        while order.front().is_some_and(gone) {
            order.pop_front();
        }
        if self.open.load(Ordering::SeqCst) >= self.cap {
            let victim = order
                .iter()
                .find(|c| !c.started.load(Ordering::SeqCst) && !gone(c))?;
            victim.evicted.store(true, Ordering::SeqCst);
            victim.close.notify_one();
            self.open.fetch_sub(1, Ordering::SeqCst);
        }
        // Forget connections gone or going, once they are as many as the live ones.
        if order.len() > 2 * self.cap {
            order.retain(|c| !gone(c));
        }
        let connection = Arc::new(Connection::default());
        order.push_back(Arc::clone(&connection));
        self.open.fetch_add(1, Ordering::SeqCst);
        Some(connection)
    }

    /// `connection`'s task ended.
    fn ended(&self, connection: &Connection) {
        // Under the same lock as eviction, so a connection is counted out once.
        let _order = self.order.lock();
        connection.ended.store(true, Ordering::SeqCst);
        if !connection.evicted.load(Ordering::SeqCst) {
            self.open.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// Open connections counted against the cap.
    fn open(&self) -> usize {
        self.open.load(Ordering::SeqCst)
    }

    /// Tells every connection to close.
    fn close_all(&self) {
        for connection in self.order.lock().iter() {
            connection.close.notify_one();
        }
    }
}

/// Serves `router` on `listener` (over TLS with `tls`) until `shutdown` completes (see the
/// module documentation); handlers see the peer address as `ConnectInfo<std::net::SocketAddr>`.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    tls: Option<Arc<rustls::ServerConfig>>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    serve_capped(listener, router, tls, connection_cap(fd_limit()), shutdown).await;
}

/// [`serve`] with a given connection cap.
pub async fn serve_capped(
    listener: TcpListener,
    router: Router,
    tls: Option<Arc<rustls::ServerConfig>>,
    cap: usize,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    let tls = tls.map(tokio_rustls::TlsAcceptor::from);
    let connections = Arc::new(Connections::new(cap));
    let mut tasks = JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            () = &mut shutdown => break,
            Some(_) = tasks.join_next(), if !tasks.is_empty() => continue,
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
        let Some(connection) = connections.admit() else {
            tracing::warn!(%peer, limit = cap, "too many connections; closing a new one");
            drop(stream);
            continue;
        };
        let header_timeout = if connections.open() > BUSY_CONNECTIONS {
            BUSY_HEADER_READ_TIMEOUT
        } else {
            HEADER_READ_TIMEOUT
        };
        let router = router.clone();
        let started = Arc::clone(&connection);
        let service = hyper::service::service_fn(move |mut request: Request<Incoming>| {
            started.started.store(true, Ordering::SeqCst);
            request.extensions_mut().insert(ConnectInfo(peer));
            router.clone().oneshot(request)
        });
        let mut builder = hyper::server::conn::http1::Builder::new();
        builder
            .timer(TokioTimer::new())
            .header_read_timeout(header_timeout)
            .keep_alive(true);
        let tls = tls.clone();
        let connections = Arc::clone(&connections);
        tasks.spawn(async move {
            let served = match tls {
                None => serve_one(&builder, TokioIo::new(stream), service, &connection).await,
                Some(acceptor) => {
                    let handshake = tokio::time::timeout(header_timeout, acceptor.accept(stream));
                    tokio::select! {
                        done = handshake => match done {
                            Ok(Ok(stream)) => {
                                serve_one(&builder, TokioIo::new(stream), service, &connection)
                                    .await
                            }
                            Ok(Err(err)) => {
                                tracing::debug!(%peer, %err, "TLS handshake failed");
                                Ok(())
                            }
                            Err(_) => {
                                tracing::debug!(%peer, "TLS handshake not done in time");
                                Ok(())
                            }
                        },
                        () = connection.close.notified() => Ok(()),
                    }
                }
            };
            if let Err(err) = served {
                tracing::debug!(%peer, %err, "connection ended with an error");
            }
            connections.ended(&connection);
        });
    }
    drop(listener);
    connections.close_all();
    let drained = async { while tasks.join_next().await.is_some() {} };
    if tokio::time::timeout(SHUTDOWN_GRACE, drained).await.is_err() {
        tracing::warn!(grace = ?SHUTDOWN_GRACE, "connections still open at shutdown; closing them");
        tasks.shutdown().await;
    }
}

/// Serves one connection until it ends or is told to close: then a connection still waiting
/// for its first request's headers is dropped at once, one that has sent a request finishes
/// it (hyper's graceful shutdown).
async fn serve_one<I, S>(
    builder: &hyper::server::conn::http1::Builder,
    io: I,
    service: S,
    connection: &Connection,
) -> hyper::Result<()>
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
    S: hyper::service::HttpService<Incoming> + Send,
    S::ResBody: 'static,
    <S::ResBody as hyper::body::Body>::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let served = builder.serve_connection(io, service);
    tokio::pin!(served);
    tokio::select! {
        result = served.as_mut() => return result,
        () = connection.close.notified() => {}
    }
    if !connection.started.load(Ordering::SeqCst) {
        return Ok(());
    }
    served.as_mut().graceful_shutdown();
    served.await
}
