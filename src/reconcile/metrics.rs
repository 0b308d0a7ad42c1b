//! Reconcile metrics for `/metrics`, kept and encoded by the `prometheus-client` crate in the
//! Prometheus text format: passes by outcome, pass duration histogram, objects applied and
//! pruned, retries and drift events, the scheduler's queue depth, and requests and rate-limit
//! waits per destination cluster. Only aggregate numbers and cluster names: nothing of an
//! App's manifests or secrets.
//!
//! Counters are registered without their `_total` suffix: the encoder appends it, so the
//! exposed names (`wardn_reconcile_total`, …) are the ones the README lists.

use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::encoding::prometheus_text;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use super::error::ReconcileError;
use super::pass::Outcome;
use crate::clusters::throttle::ClusterCounts;

/// The content type of the Prometheus text exposition format (version 0.0.4).
pub const CONTENT_TYPE: &str = prometheus_text::CONTENT_TYPE;

/// Upper bounds (seconds) of the duration histogram buckets.
const BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0,
];

/// The `outcome` label of `wardn_reconcile_total`: a phase, or `error_<class>` (`invalid`,
/// `forbidden`, `conflict` or `cluster`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabel {
    outcome: String,
}

/// The `cluster` label of the per-cluster counters (`local`: the management cluster).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ClusterLabel {
    cluster: String,
}

/// The reconcile counters of one process.
pub struct Metrics {
    /// Every metric this process keeps (the scrape-time ones are added per scrape).
    registry: Registry,
    outcomes: Family<OutcomeLabel, Counter>,
    duration: Histogram,
    applied: Counter,
    pruned: Counter,
    retries: Counter,
    drift_events: Counter,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    /// Empty counters.
    pub fn new() -> Metrics {
        let outcomes = Family::<OutcomeLabel, Counter>::default();
        let duration = Histogram::new(BUCKETS.iter().copied());
        let applied = Counter::default();
        let pruned = Counter::default();
        let retries = Counter::default();
        let drift_events = Counter::default();
        let mut registry = Registry::default();
        registry.register(
            "wardn_reconcile",
            "Reconcile passes by outcome (phase or error status)",
            outcomes.clone(),
        );
        registry.register(
            "wardn_reconcile_duration_seconds",
            "Duration of reconcile passes",
            duration.clone(),
        );
        registry.register(
            "wardn_apply_objects",
            "Objects created or updated by server-side apply",
            applied.clone(),
        );
        registry.register(
            "wardn_prune_objects",
            "Objects deleted by prune",
            pruned.clone(),
        );
        registry.register(
            "wardn_reconcile_retries",
            "Passes requeued with backoff after a transient cluster error",
            retries.clone(),
        );
        registry.register(
            "wardn_drift_events",
            "Changes to inventory objects not made by wardn",
            drift_events.clone(),
        );
        Metrics {
            registry,
            outcomes,
            duration,
            applied,
            pruned,
            retries,
            drift_events,
        }
    }

    /// Counts a pass requeued with backoff after a transient failure.
    pub fn record_retry(&self) {
        self.retries.inc();
    }

    /// Counts a watch event that found drift on an object in an App's inventory.
    pub fn record_drift(&self) {
        self.drift_events.inc();
    }

    /// Records one pass: its result (the phase, or `error`) and how long it took.
    pub fn observe(&self, result: &Result<Outcome, ReconcileError>, duration: Duration) {
        let outcome = match result {
            Ok(o) => o
                .status
                .phase
                .map_or("Unknown".to_string(), |p| format!("{p:?}")),
            Err(e) => format!("error_{}", e.class().as_str()),
        };
        self.outcomes.get_or_create(&OutcomeLabel { outcome }).inc();
        self.duration.observe(duration.as_secs_f64());
        if let Ok(o) = result
            && let Some(report) = &o.pruned
        {
            let s = o.plan.summary();
            self.applied
                .inc_by(u64::from(s.creates) + u64::from(s.updates));
            self.pruned.inc_by(report.deleted.len() as u64);
        }
    }

    /// The exposition text, with the current `queue_depth` and the request counts of the
    /// destination `clusters` (the management cluster's name `""` shows as `local`).
    pub fn render(&self, queue_depth: usize, clusters: &[ClusterCounts]) -> String {
        // Values owned elsewhere (the scheduler, the throttles) are read at scrape time into
        // a registry of their own, encoded after the kept one.
        let depth = Gauge::<i64>::default();
        depth.set(i64::try_from(queue_depth).unwrap_or(i64::MAX));
        let requests = Family::<ClusterLabel, Counter>::default();
        let throttled = Family::<ClusterLabel, Counter>::default();
        for c in clusters {
            let label = ClusterLabel {
                cluster: label(&c.cluster),
            };
            requests.get_or_create(&label).inc_by(c.requests);
            throttled.get_or_create(&label).inc_by(c.throttled);
        }
        let mut scrape = Registry::default();
        scrape.register(
            "wardn_queue_depth",
            "Apps waiting for a reconcile worker",
            depth,
        );
        scrape.register(
            "wardn_cluster_requests",
            "API requests sent to each destination cluster",
            requests,
        );
        scrape.register(
            "wardn_cluster_ratelimited",
            "Requests that waited for the cluster's rate limit",
            throttled,
        );
        crate::telemetry::prometheus_text(&[&self.registry, &scrape])
    }
}

/// A cluster name as a label value: `local` for the management cluster (the encoder escapes
/// quotes and backslashes).
fn label(cluster: &str) -> String {
    if cluster.is_empty() {
        "local".to_string()
    } else {
        cluster.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::{AppStatus, Phase};
    use crate::apply::prune::PruneReport;
    use crate::diff::{Action, ObjectDiff};
    use crate::object::ObjectRef;
    use crate::reconcile::plan::Plan;

    fn outcome(phase: Phase, applied: bool) -> Outcome {
        let r = ObjectRef {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            namespace: Some("n".into()),
            name: "c".into(),
        };
        let d = ObjectDiff {
            object: r.clone(),
            action: Action::Create,
            live_resource_version: None,
            changes: vec![],
            text: String::new(),
        };
        Outcome {
            status: AppStatus {
                phase: Some(phase),
                ..Default::default()
            },
            plan: Plan::new("ns/app", "c", "r".into(), "d".into(), vec![d], vec![]),
            pruned: applied.then(|| PruneReport {
                deleted: vec![r],
                skipped: vec![],
            }),
            verified: Default::default(),
            adopted: Vec::new(),
        }
    }

    #[test]
    fn renders_counters_histogram_and_gauge() {
        let m = Metrics::new();
        m.observe(&Ok(outcome(Phase::Synced, true)), Duration::from_millis(30));
        m.observe(&Ok(outcome(Phase::Held, false)), Duration::from_millis(3));
        m.observe(&Err(ReconcileError::NothingHeld), Duration::from_secs(2));
        m.record_retry();
        m.record_drift();
        m.record_drift();
        let clusters = [
            ClusterCounts {
                cluster: String::new(),
                requests: 7,
                throttled: 0,
            },
            ClusterCounts {
                cluster: "prod".into(),
                requests: 120,
                throttled: 20,
            },
        ];
        let text = m.render(4, &clusters);
        for line in [
            "wardn_reconcile_total{outcome=\"Synced\"} 1",
            "wardn_reconcile_total{outcome=\"Held\"} 1",
            "wardn_reconcile_total{outcome=\"error_conflict\"} 1",
            "wardn_reconcile_duration_seconds_bucket{le=\"0.005\"} 1",
            "wardn_reconcile_duration_seconds_bucket{le=\"0.05\"} 2",
            "wardn_reconcile_duration_seconds_bucket{le=\"2.5\"} 3",
            "wardn_reconcile_duration_seconds_bucket{le=\"+Inf\"} 3",
            "wardn_reconcile_duration_seconds_count 3",
            "wardn_apply_objects_total 1",
            "wardn_prune_objects_total 1",
            "wardn_queue_depth 4",
            "wardn_reconcile_retries_total 1",
            "wardn_drift_events_total 2",
            "wardn_cluster_requests_total{cluster=\"local\"} 7",
            "wardn_cluster_requests_total{cluster=\"prod\"} 120",
            "wardn_cluster_ratelimited_total{cluster=\"prod\"} 20",
            "# TYPE wardn_reconcile_total counter",
            "# HELP wardn_reconcile_total Reconcile passes by outcome (phase or error status).",
            "# TYPE wardn_reconcile_duration_seconds histogram",
            "# TYPE wardn_apply_objects_total counter",
            "# TYPE wardn_prune_objects_total counter",
            "# TYPE wardn_queue_depth gauge",
            "# TYPE wardn_reconcile_retries_total counter",
            "# TYPE wardn_drift_events_total counter",
            "# TYPE wardn_cluster_requests_total counter",
            "# TYPE wardn_cluster_ratelimited_total counter",
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "missing {line:?} in\n{text}"
            );
        }
    }

    #[test]
    fn cluster_label_values_are_escaped_and_names_not_doubled() {
        let clusters = [ClusterCounts {
            cluster: "a\"b".into(),
            requests: 1,
            throttled: 0,
        }];
        let text = Metrics::new().render(0, &clusters);
        assert!(
            text.lines()
                .any(|l| l == "wardn_cluster_requests_total{cluster=\"a\\\"b\"} 1"),
            "{text}"
        );
        assert!(!text.contains("_total_total"), "{text}");
    }
}
