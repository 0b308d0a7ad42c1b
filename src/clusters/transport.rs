//! The HTTP transport of wardn's clients to destination clusters: HTTP/2 when the API server
//! offers it, as kubectl and client-go use it, with watches spread over a few connections.
//!
//! kube-rs builds its clients HTTP/1-only, so each open watch held a TCP and TLS connection of
//! its own: a replica watching a dozen kinds on each of 100 clusters held about 1,300
//! connections. Here a cluster's requests share one HTTP/2 connection and its watches share
//! others, [`WATCHES_PER_CONNECTION`] to each. Watches get connections of their own because an
//! API server caps the streams of one connection (kube-apiserver 1.32: 100), and a watch holds
//! its stream for minutes: requests queued behind watches for a free stream would wait until
//! one ends. An API server without HTTP/2 (behind a proxy that strips it, or run with
//! `--disable-http2-serving`) is spoken to over HTTP/1.1, one connection per request in flight,
//! as before.
//!
//! A cluster whose kubeconfig names a `proxy-url` is reached through that proxy's tunnels
//! ([`super::proxy`]), with everything above unchanged inside them.
//!
//! HTTP/2 connections are pinged when they have been silent for [`Keepalive::interval`] with
//! streams open and closed when no answer comes within [`Keepalive::timeout`] (client-go's
//! health check, 30 s and 15 s): a connection a network failure left half-open fails its
//! watches within 45 s, and they re-list through a new one, where HTTP/1.1 noticed it only at
//! the read timeout (295 s).

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use http::{Request, Response};
use hyper::body::Incoming;
use hyper_rustls::{FixedServerNameResolver, HttpsConnector};
use hyper_timeout::TimeoutConnector;
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use kube::client::{Body, ConfigExt};
use parking_lot::Mutex;
use tower::{BoxError, Service, ServiceBuilder};

use super::proxy::Dial;
use super::throttle::ThrottleLayer;

/// How many watches share one HTTP/2 connection: half of kube-apiserver's default limit of
/// concurrent streams (100), so a server configured lower still serves them all.
pub const WATCHES_PER_CONNECTION: usize = 50;

/// When an HTTP/2 connection with streams open is pinged, and how long its answer may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Keepalive {
    /// Silence after which a ping is sent.
    pub interval: Duration,
    /// How long the ping's answer may take before the connection is closed.
    pub timeout: Duration,
}

impl Default for Keepalive {
    /// client-go's HTTP/2 health check: `ReadIdleTimeout` 30 s, `PingTimeout` 15 s.
    fn default() -> Keepalive {
        Keepalive {
            interval: Duration::from_secs(30),
            timeout: Duration::from_secs(15),
        }
    }
}

/// Why a cluster's client could not be built from its configuration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TransportError {
    /// The configuration names something this transport does not do, or is malformed.
    #[error("{0}")]
    Config(String),
    /// The TLS material (CA, client certificate) cannot be used.
    #[error("{0}")]
    Tls(String),
}

type Connector = TimeoutConnector<HttpsConnector<Dial>>;
type Http = HyperClient<Connector, Body>;

/// Builds a client of the cluster `config` describes on this module's transport, every request
/// passing through `throttle` when given, and every connection through the `proxy-url`'s
/// tunnel when there is one ([`Dial`]). Fails on a proxy URL [`Dial`] does not take and on TLS
/// material rustls refuses.
pub fn client(
    config: &kube::Config,
    throttle: Option<&ThrottleLayer>,
    keepalive: Keepalive,
) -> Result<kube::Client, TransportError> {
    let transport = Transport::new(config, keepalive)?;
    let layer_error = |e: kube::Error| TransportError::Config(e.to_string());
    let service = ServiceBuilder::new()
        .option_layer(throttle.cloned())
        .layer(config.base_uri_layer())
        .option_layer(config.auth_layer().map_err(layer_error)?)
        .layer(config.extra_headers_layer().map_err(layer_error)?)
        .service(transport);
    Ok(kube::Client::new(service, config.default_namespace.clone()))
}

/// One cluster's connections: the one requests share and those watches share.
#[derive(Clone)]
struct Transport {
    requests: Http,
    watches: Arc<Mutex<Vec<WatchConnection>>>,
    builder: hyper_util::client::legacy::Builder,
    connector: Connector,
}

/// A connection carrying watches, and how many it carries now.
struct WatchConnection {
    http: Http,
    open: Arc<AtomicUsize>,
}

impl Transport {
    fn new(config: &kube::Config, keepalive: Keepalive) -> Result<Transport, TransportError> {
        let tls = config
            .rustls_client_config()
            .map_err(|e| TransportError::Tls(e.to_string()))?;
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        // As Go's net package does for client-go: small writes (an HTTP/2 frame, a window
        // update) go out at once instead of waiting for the previous segment's ACK.
        http.set_nodelay(true);
        let dial = Dial::new(http, config.proxy_url.as_ref())
            .map_err(|e| TransportError::Config(e.to_string()))?;
        let mut https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http();
        if let Some(name) = &config.tls_server_name {
            let name = name
                .clone()
                .try_into()
                .map_err(|e| TransportError::Config(format!("tls-server-name {name:?}: {e}")))?;
            https = https.with_server_name_resolver(FixedServerNameResolver::new(name));
        }
        let mut connector = TimeoutConnector::new(https.enable_all_versions().wrap_connector(dial));
        connector.set_connect_timeout(config.connect_timeout);
        connector.set_read_timeout(config.read_timeout);
        connector.set_write_timeout(config.write_timeout);
        let mut builder = HyperClient::builder(TokioExecutor::new());
        builder
            .timer(TokioTimer::new())
            .pool_timer(TokioTimer::new())
            .http2_keep_alive_interval(keepalive.interval)
            .http2_keep_alive_timeout(keepalive.timeout);
        Ok(Transport {
            requests: builder.build(connector.clone()),
            watches: Arc::default(),
            builder,
            connector,
        })
    }

    /// The connection for one more watch: the first with room, else a new one. One whose
    /// watches have all ended stays for the next (a watch ends and restarts every few minutes);
    /// its connection closes after the pool's idle timeout (90 s) if none comes.
    fn watch_connection(&self) -> (Http, WatchSlot) {
        let mut watches = self.watches.lock();
        let connection = match watches
            .iter()
            .find(|c| c.open.load(Ordering::Acquire) < WATCHES_PER_CONNECTION)
        {
            Some(connection) => connection,
            None => {
                watches.push(WatchConnection {
                    http: self.builder.build(self.connector.clone()),
                    open: Arc::default(),
                });
                &watches[watches.len() - 1]
            }
        };
        connection.open.fetch_add(1, Ordering::AcqRel);
        (
            connection.http.clone(),
            WatchSlot(Arc::clone(&connection.open)),
        )
    }
}

/// Whether `request` holds its stream open for as long as the server sends: a watch
/// (`?watch=true`) or a followed log (`?follow=true`, e.g. `kubectl logs -f` through a cluster
/// shell). Both go on the watch connections, so that no number of them starves requests.
fn is_long_running<B>(request: &Request<B>) -> bool {
    request.uri().query().is_some_and(|query| {
        query
            .split('&')
            .any(|pair| matches!(pair, "watch=true" | "watch=1" | "follow=true" | "follow=1"))
    })
}

impl Service<Request<Body>> for Transport {
    type Response = Response<SlotBody>;
    type Error = BoxError;
    type Future = BoxFuture<'static, Result<Response<SlotBody>, BoxError>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        // hyper's pooled client is always ready: it queues requests itself.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let (http, slot) = if is_long_running(&request) {
            let (http, slot) = self.watch_connection();
            (http, Some(slot))
        } else {
            (self.requests.clone(), None)
        };
        async move {
            let response = http.request(request).await?;
            Ok(response.map(|body| SlotBody { body, _slot: slot }))
        }
        .boxed()
    }
}

/// A long-running request's place on its connection, given back when its response (or its
/// failure) is dropped.
struct WatchSlot(Arc<AtomicUsize>);

impl Drop for WatchSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A response body holding its request's slot, if it is long-running.
pub struct SlotBody {
    body: Incoming,
    _slot: Option<WatchSlot>,
}

impl http_body::Body for SlotBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, hyper::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watches_and_followed_logs_are_long_running_nothing_else_is() {
        let request = |uri: &str| Request::get(uri).body(()).unwrap();
        let long_running = |uri: &str| is_long_running(&request(uri));
        assert!(long_running("/api/v1/configmaps?watch=true"));
        assert!(long_running("/api/v1/configmaps?resourceVersion=5&watch=1"));
        assert!(long_running(
            "/api/v1/namespaces/a/pods/p/log?container=c&follow=true"
        ));
        assert!(!long_running("/api/v1/configmaps"));
        assert!(!long_running("/api/v1/configmaps?watch=false"));
        assert!(!long_running(
            "/api/v1/namespaces/a/pods/p/log?follow=false"
        ));
        assert!(!long_running("/api/v1/configmaps?allowWatchBookmarks=true"));
        assert!(!long_running("/api/v1/namespaces/watch=true/configmaps"));
    }
}
