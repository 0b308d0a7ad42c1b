//! What happens between passes: after each pass of an App, the next one is scheduled (after a
//! backoff when it failed with a transient cluster error, else after the periodic resync
//! interval), the App's inventory is handed to the drift watches, and the pass is counted in
//! the metrics. The runner calls [`Upkeep::after_pass`]; `/metrics` renders
//! [`Upkeep::metrics_text`].

use std::sync::Arc;
use std::time::Duration;

use super::drift::{DriftWatches, WatchClient};
use super::error::ReconcileError;
use super::live::ClusterLive;
use super::metrics::Metrics;
use super::pass::Outcome;
use super::retry;
use super::scheduler::Scheduler;
use crate::backoff::{self, Backoff};
use crate::clusters::throttle::{DEFAULT_BURST, DEFAULT_QPS, Throttles};

/// How many passes run at once by default. Passes mostly wait on the clusters (dry-runs,
/// applies, health), so this is well above the core count; the per-cluster rate limits bound
/// the load on each cluster.
pub const DEFAULT_WORKERS: usize = 16;

/// Scheduling settings of `wardn serve` (`--workers`, `--resync-interval`, `--cluster-qps`,
/// `--cluster-burst`).
#[derive(Debug, Clone, PartialEq)]
pub struct Scheduling {
    /// How many App passes run at once (one per App at a time).
    pub workers: usize,
    /// Every App is reconciled at least this often (±10 %), events or not.
    pub resync_interval: Duration,
    /// Sustained API requests per second to one destination cluster.
    pub cluster_qps: f64,
    /// Requests to one destination cluster that may go at once before the rate applies.
    pub cluster_burst: u32,
    /// The first retry delay after a transient failure.
    pub backoff_base: Duration,
    /// The longest retry delay.
    pub backoff_max: Duration,
    /// How long drift events on one App are gathered before its pass.
    pub drift_debounce: Duration,
}

impl Default for Scheduling {
    fn default() -> Self {
        Scheduling {
            workers: DEFAULT_WORKERS,
            resync_interval: Duration::from_secs(180),
            cluster_qps: DEFAULT_QPS,
            cluster_burst: DEFAULT_BURST,
            backoff_base: retry::DEFAULT_BASE,
            backoff_max: retry::DEFAULT_MAX,
            drift_debounce: Duration::from_secs(1),
        }
    }
}

/// The follow-up machinery of one runner (cheap to share behind an `Arc`).
pub struct Upkeep {
    scheduler: Scheduler<String>,
    settings: Scheduling,
    backoff: Backoff<String>,
    metrics: Arc<Metrics>,
    throttles: Arc<Throttles>,
    drift: DriftWatches,
}

/// How a finished pass ended, for [`Upkeep::after_pass`].
pub enum PassEnd<'a> {
    /// The pipeline ran (to an outcome or an error).
    Ran(&'a Result<Outcome, ReconcileError>),
    /// The destination cluster could not be resolved or reached (retried with backoff).
    Unreachable,
}

impl Upkeep {
    /// Upkeep for the Apps of `scheduler`, with the clusters' `throttles` (the ones the
    /// resolver's clients use, for `Retry-After` and the request counters).
    pub fn new(
        scheduler: Scheduler<String>,
        throttles: Arc<Throttles>,
        settings: Scheduling,
    ) -> Upkeep {
        let metrics = Arc::new(Metrics::new());
        let on_drift = {
            let scheduler = scheduler.clone();
            let metrics = Arc::clone(&metrics);
            let debounce = settings.drift_debounce;
            Arc::new(move |app: &str| {
                metrics.record_drift();
                scheduler.enqueue_after(app.to_string(), debounce);
            })
        };
        Upkeep {
            backoff: Backoff::new(settings.backoff_base, settings.backoff_max),
            scheduler,
            settings,
            metrics,
            throttles,
            drift: DriftWatches::new(on_drift),
        }
    }

    /// Follows up a pass of App `key` on destination `cluster` (`""`: the management
    /// cluster) that took `duration`: counts it, schedules the next pass, and (when it ran)
    /// points the drift watches at the App's inventory through `client`. Returns the delay
    /// until the next pass.
    pub fn after_pass(
        &self,
        key: &str,
        cluster: &str,
        client: Option<WatchClient<'_>>,
        end: PassEnd<'_>,
        duration: Duration,
    ) -> Duration {
        let transient = match end {
            PassEnd::Ran(result) => {
                self.metrics.observe(result, duration);
                match result {
                    Ok(outcome) => {
                        if let Some(client) = client {
                            self.drift
                                .track(key, cluster, client, &outcome.status.inventory);
                        }
                        None
                    }
                    Err(e) if retry::transient(e) => Some(retry::status_retry_after(e)),
                    Err(_) => None,
                }
            }
            PassEnd::Unreachable => Some(None),
        };
        let key = key.to_string();
        let delay = match transient {
            Some(status_hint) => {
                let retry_after = status_hint.max(self.throttles.retry_after(cluster));
                let delay = self.backoff.failure(&key, retry_after);
                self.metrics.record_retry();
                tracing::debug!(app = %key, ?delay, "transient failure: retrying after backoff");
                delay
            }
            None => {
                self.backoff.reset(&key);
                backoff::spread(self.settings.resync_interval)
            }
        };
        self.scheduler.enqueue_after(key, delay);
        delay
    }

    /// What the drift watches see of destination `cluster` (`""`: the management cluster).
    pub fn live(&self, cluster: &str) -> ClusterLive {
        self.drift.live(cluster)
    }

    /// Stops following App `key` (it was removed): its drift watches stop.
    pub fn forget(&self, key: &str) {
        self.drift.forget(key);
        self.backoff.reset(&key.to_string());
    }

    /// The Prometheus exposition text for `/metrics`.
    pub fn metrics_text(&self) -> String {
        self.metrics
            .render(self.scheduler.queue_depth(), &self.throttles.counts())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn upkeep() -> (Upkeep, Scheduler<String>) {
        let scheduler = Scheduler::new();
        let u = Upkeep::new(
            scheduler.clone(),
            Arc::new(Throttles::default()),
            Scheduling::default(),
        );
        (u, scheduler)
    }

    fn unavailable() -> ReconcileError {
        ReconcileError::Object {
            object: "ConfigMap n/c (v1)".into(),
            step: "dry-run",
            error: kube::Error::Api(Box::new(kube::core::Status {
                code: 503,
                ..Default::default()
            })),
        }
    }

    #[tokio::test]
    async fn transient_failures_back_off_and_other_ends_resync() {
        let (u, sched) = upkeep();
        let zero = Duration::ZERO;
        let secs = Duration::from_secs;
        let first = u.after_pass("ns/a", "c", None, PassEnd::Ran(&Err(unavailable())), zero);
        assert!(first <= secs(1), "{first:?}");
        assert_eq!(sched.delayed_count(), 1, "a retry is scheduled");
        let second = u.after_pass("ns/a", "c", None, PassEnd::Ran(&Err(unavailable())), zero);
        assert!(second >= secs(1) && second <= secs(2), "{second:?}");
        let third = u.after_pass("ns/a", "c", None, PassEnd::Unreachable, zero);
        assert!(third >= secs(2) && third <= secs(4), "{third:?}");

        // A non-transient end resets the backoff and schedules the periodic resync.
        let held = Err(ReconcileError::NothingHeld);
        let resync = u.after_pass("ns/a", "c", None, PassEnd::Ran(&held), zero);
        assert!(resync >= secs(162) && resync <= secs(198), "{resync:?}");
        let again = u.after_pass("ns/a", "c", None, PassEnd::Ran(&Err(unavailable())), zero);
        assert!(again <= secs(1), "backoff starts over: {again:?}");

        let text = u.metrics_text();
        assert!(text.contains("wardn_reconcile_retries_total 4\n"), "{text}");
        assert!(text.contains("wardn_reconcile_total{outcome=\"error_cluster\"} 3\n"));
        assert!(text.contains("wardn_reconcile_total{outcome=\"error_conflict\"} 1\n"));
    }
}
