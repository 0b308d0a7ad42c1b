//! Per-cluster client throttling: a token bucket per destination cluster (shared by every
//! client built for it) applied as a tower layer on the `kube::Client`, request and wait
//! counters for `/metrics`, and the last `Retry-After` the cluster sent, which the reconcile
//! backoff honours.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use http::{Request, Response};
use parking_lot::Mutex;
use tokio::time::{Instant, Sleep};
use tower::{Layer, Service};

/// Default sustained requests per second to one cluster.
pub const DEFAULT_QPS: f64 = 50.0;
/// Default burst of requests to one cluster.
pub const DEFAULT_BURST: u32 = 100;

/// A token bucket: `burst` tokens, refilled at `qps` per second. Callers reserve a token
/// and wait the returned delay (the balance may go negative, so waiters queue up in order).
pub struct TokenBucket {
    qps: f64,
    burst: f64,
    state: Mutex<(f64, Instant)>,
}

impl TokenBucket {
    /// A full bucket. `qps` must be positive and `burst` at least 1 (the flags check both).
    pub fn new(qps: f64, burst: u32) -> TokenBucket {
        let burst = f64::from(burst.max(1));
        TokenBucket {
            qps: if qps > 0.0 { qps } else { DEFAULT_QPS },
            burst,
            state: Mutex::new((burst, Instant::now())),
        }
    }

    /// Takes one token at `now`; returns how long the caller must wait before sending
    /// (zero when a token was available).
    pub fn reserve(&self, now: Instant) -> Duration {
        let mut state = self.state.lock();
        let (tokens, last) = *state;
        let refilled = (tokens + now.saturating_duration_since(last).as_secs_f64() * self.qps)
            .min(self.burst)
            - 1.0;
        *state = (refilled, now.max(last));
        if refilled >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-refilled / self.qps)
        }
    }
}

/// One cluster's bucket, counters and `Retry-After` note.
pub struct ClusterThrottle {
    bucket: TokenBucket,
    requests: AtomicU64,
    throttled: AtomicU64,
    retry_after: Mutex<Option<Instant>>,
}

impl ClusterThrottle {
    /// Records a `Retry-After` of `delay` from now (the latest deadline is kept).
    fn note_retry_after(&self, delay: Duration) {
        let deadline = Instant::now() + delay;
        let mut note = self.retry_after.lock();
        if note.is_none_or(|d| d < deadline) {
            *note = Some(deadline);
        }
    }
}

/// The throttles of every destination cluster, by cluster name (`""`: the management cluster).
pub struct Throttles {
    qps: f64,
    burst: u32,
    clusters: Mutex<BTreeMap<String, Arc<ClusterThrottle>>>,
}

impl Default for Throttles {
    fn default() -> Self {
        Throttles::new(DEFAULT_QPS, DEFAULT_BURST)
    }
}

/// Request counts of one cluster, for `/metrics`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterCounts {
    /// The cluster name (`""`: the management cluster).
    pub cluster: String,
    /// Requests sent.
    pub requests: u64,
    /// Requests that waited for a token.
    pub throttled: u64,
}

impl Throttles {
    /// Every cluster gets a bucket of `burst` tokens refilled at `qps` per second.
    pub fn new(qps: f64, burst: u32) -> Throttles {
        Throttles {
            qps,
            burst,
            clusters: Mutex::new(BTreeMap::new()),
        }
    }

    /// The throttle of `cluster`, created on first use; every client of the cluster shares it.
    pub fn cluster(&self, cluster: &str) -> Arc<ClusterThrottle> {
        Arc::clone(
            self.clusters
                .lock()
                .entry(cluster.to_string())
                .or_insert_with(|| {
                    Arc::new(ClusterThrottle {
                        bucket: TokenBucket::new(self.qps, self.burst),
                        requests: AtomicU64::new(0),
                        throttled: AtomicU64::new(0),
                        retry_after: Mutex::new(None),
                    })
                }),
        )
    }

    /// The layer to put on the clients of `cluster`.
    pub fn layer(&self, cluster: &str) -> ThrottleLayer {
        ThrottleLayer {
            cluster: self.cluster(cluster),
        }
    }

    /// Wraps an existing client of `cluster` (the management cluster's, built or inferred
    /// elsewhere) in the cluster's throttle.
    pub fn wrap(&self, cluster: &str, client: kube::Client) -> kube::Client {
        let namespace = client.default_namespace().to_string();
        let service = tower::ServiceBuilder::new()
            .layer(self.layer(cluster))
            .service(ClientService(client));
        kube::Client::new(service, namespace)
    }

    /// How much longer `cluster` asked wardn to wait (its latest `Retry-After`), if at all.
    pub fn retry_after(&self, cluster: &str) -> Option<Duration> {
        let throttle = self.clusters.lock().get(cluster).cloned()?;
        let deadline = (*throttle.retry_after.lock())?;
        let left = deadline.saturating_duration_since(Instant::now());
        (!left.is_zero()).then_some(left)
    }

    /// The request counts of every cluster used so far, by name.
    pub fn counts(&self) -> Vec<ClusterCounts> {
        self.clusters
            .lock()
            .iter()
            .map(|(name, t)| ClusterCounts {
                cluster: name.clone(),
                requests: t.requests.load(Ordering::Relaxed),
                throttled: t.throttled.load(Ordering::Relaxed),
            })
            .collect()
    }
}

/// A `kube::Client` as a tower service (for [`Throttles::wrap`]).
#[derive(Clone)]
struct ClientService(kube::Client);

impl Service<Request<kube::client::Body>> for ClientService {
    type Response = Response<kube::client::Body>;
    type Error = kube::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, kube::Error>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), kube::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<kube::client::Body>) -> Self::Future {
        let client = self.0.clone();
        Box::pin(async move { client.send(request).await })
    }
}

/// Throttles a client's requests through its cluster's bucket (see [`Throttles::layer`]).
#[derive(Clone)]
pub struct ThrottleLayer {
    cluster: Arc<ClusterThrottle>,
}

impl<S> Layer<S> for ThrottleLayer {
    type Service = Throttled<S>;

    fn layer(&self, inner: S) -> Throttled<S> {
        Throttled {
            inner,
            cluster: Arc::clone(&self.cluster),
            state: Gate::Idle,
        }
    }
}

enum Gate {
    /// No token reserved yet.
    Idle,
    /// Waiting for the reserved token.
    Waiting(Pin<Box<Sleep>>),
    /// A token is held; the next call may go.
    Open,
}

/// The throttled service: readiness waits for a token; responses' `Retry-After` is noted.
pub struct Throttled<S> {
    inner: S,
    cluster: Arc<ClusterThrottle>,
    state: Gate,
}

impl<S, B, R> Service<Request<B>> for Throttled<S>
where
    S: Service<Request<B>, Response = Response<R>>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        loop {
            match &mut self.state {
                Gate::Idle => {
                    let wait = self.cluster.bucket.reserve(Instant::now());
                    self.state = if wait.is_zero() {
                        Gate::Open
                    } else {
                        self.cluster.throttled.fetch_add(1, Ordering::Relaxed);
                        Gate::Waiting(Box::pin(tokio::time::sleep(wait)))
                    };
                }
                Gate::Waiting(sleep) => {
                    if sleep.as_mut().poll(cx).is_pending() {
                        return Poll::Pending;
                    }
                    self.state = Gate::Open;
                }
                Gate::Open => return self.inner.poll_ready(cx),
            }
        }
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        self.state = Gate::Idle;
        self.cluster.requests.fetch_add(1, Ordering::Relaxed);
        let cluster = Arc::clone(&self.cluster);
        let response = self.inner.call(request);
        Box::pin(async move {
            let response = response.await?;
            if let Some(secs) = response
                .headers()
                .get(http::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<u64>().ok())
            {
                cluster.note_retry_after(Duration::from_secs(secs));
            }
            Ok(response)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_allows_a_burst_then_spaces_requests_at_the_rate() {
        let bucket = TokenBucket::new(10.0, 3);
        let t0 = Instant::now();
        for _ in 0..3 {
            assert_eq!(bucket.reserve(t0), Duration::ZERO);
        }
        let waits: Vec<_> = (0..3).map(|_| bucket.reserve(t0)).collect();
        let ms: Vec<u128> = waits.iter().map(|w| w.as_millis()).collect();
        assert_eq!(ms, [100, 200, 300], "queued waiters are spaced 1/qps apart");
        // One second later the debt (3) is repaid and 7 tokens accrued, capped at the burst.
        let t1 = t0 + Duration::from_secs(1);
        for _ in 0..3 {
            assert_eq!(bucket.reserve(t1), Duration::ZERO);
        }
        assert!(bucket.reserve(t1) > Duration::ZERO);
    }

    #[test]
    fn retry_after_keeps_the_latest_deadline_until_it_passes() {
        let t = Throttles::new(1.0, 1);
        assert_eq!(t.retry_after("c"), None);
        t.cluster("c").note_retry_after(Duration::ZERO);
        assert_eq!(
            t.retry_after("c"),
            None,
            "a deadline in the past is no wait"
        );
        t.cluster("c").note_retry_after(Duration::from_secs(600));
        t.cluster("c").note_retry_after(Duration::from_secs(2));
        let left = t.retry_after("c").unwrap();
        assert!(
            left > Duration::from_secs(500),
            "the later deadline is kept: {left:?}"
        );
        assert_eq!(
            t.counts(),
            [ClusterCounts {
                cluster: "c".into(),
                requests: 0,
                throttled: 0
            }]
        );
    }

    #[tokio::test]
    async fn layer_counts_waits_and_notes_retry_after_headers() {
        use tower::ServiceExt;
        let throttles = Throttles::new(50.0, 2);
        let inner = tower::service_fn(|req: Request<()>| async move {
            let mut response = Response::new(());
            if req.uri().path() == "/busy" {
                *response.status_mut() = http::StatusCode::TOO_MANY_REQUESTS;
                response
                    .headers_mut()
                    .insert(http::header::RETRY_AFTER, "7".parse().unwrap());
            }
            Ok::<_, std::convert::Infallible>(response)
        });
        let mut svc = throttles.layer("c").layer(inner);
        for path in ["/a", "/b", "/c", "/d", "/busy"] {
            let req = Request::get(path).body(()).unwrap();
            svc.ready().await.unwrap().call(req).await.unwrap();
        }
        assert_eq!(
            throttles.counts(),
            [ClusterCounts {
                cluster: "c".into(),
                requests: 5,
                throttled: 3
            }],
            "a burst of 2 goes at once, the other 3 wait for tokens"
        );
        let left = throttles.retry_after("c").unwrap();
        assert!(left > Duration::from_secs(5) && left <= Duration::from_secs(7));
    }
}
