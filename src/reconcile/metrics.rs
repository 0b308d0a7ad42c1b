//! Reconcile metrics in the Prometheus text format, for `/metrics`: passes by outcome, pass
//! duration histogram, objects applied and pruned, retries and drift events, the scheduler's
//! queue depth, and requests and rate-limit waits per destination cluster. Only aggregate
//! numbers and cluster names: nothing of an App's manifests or secrets.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::time::Duration;

use super::pipeline::{Outcome, ReconcileError};
use crate::clusters::throttle::ClusterCounts;

/// Upper bounds (seconds) of the duration histogram buckets.
const BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0,
];

#[derive(Default)]
struct Inner {
    outcomes: BTreeMap<String, u64>,
    bucket_counts: Vec<u64>,
    duration_sum: f64,
    duration_count: u64,
    applied: u64,
    pruned: u64,
    retries: u64,
    drift_events: u64,
}

/// The reconcile counters of one process.
#[derive(Default)]
pub struct Metrics {
    inner: Mutex<Inner>,
}

impl Metrics {
    /// Empty counters.
    pub fn new() -> Metrics {
        Metrics::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counts a pass requeued with backoff after a transient failure.
    pub fn record_retry(&self) {
        self.lock().retries += 1;
    }

    /// Counts a watch event that found drift on an object in an App's inventory.
    pub fn record_drift(&self) {
        self.lock().drift_events += 1;
    }

    /// Records one pass: its result (the phase, or `error`) and how long it took.
    pub fn observe(&self, result: &Result<Outcome, ReconcileError>, duration: Duration) {
        let mut m = self.lock();
        let outcome = match result {
            Ok(o) => o
                .status
                .phase
                .map_or("Unknown".to_string(), |p| format!("{p:?}")),
            Err(e) => format!("error_{}", e.class().as_str()),
        };
        *m.outcomes.entry(outcome).or_default() += 1;
        if m.bucket_counts.is_empty() {
            m.bucket_counts = vec![0; BUCKETS.len()];
        }
        let secs = duration.as_secs_f64();
        for (count, bound) in m.bucket_counts.iter_mut().zip(BUCKETS) {
            if secs <= *bound {
                *count += 1;
            }
        }
        m.duration_sum += secs;
        m.duration_count += 1;
        if let Ok(o) = result
            && let Some(report) = &o.pruned
        {
            let s = o.plan.summary();
            m.applied += u64::from(s.creates) + u64::from(s.updates);
            m.pruned += report.deleted.len() as u64;
        }
    }

    /// The exposition text, with the current `queue_depth` and the request counts of the
    /// destination `clusters` (the management cluster's name `""` shows as `local`).
    pub fn render(&self, queue_depth: usize, clusters: &[ClusterCounts]) -> String {
        let m = self.lock();
        let mut out = String::new();
        let _ = writeln!(
            out,
            "# HELP wardn_reconcile_total Reconcile passes by outcome (phase or error status)."
        );
        let _ = writeln!(out, "# TYPE wardn_reconcile_total counter");
        for (outcome, n) in &m.outcomes {
            let _ = writeln!(out, "wardn_reconcile_total{{outcome=\"{outcome}\"}} {n}");
        }
        let _ = writeln!(
            out,
            "# HELP wardn_reconcile_duration_seconds Duration of reconcile passes."
        );
        let _ = writeln!(out, "# TYPE wardn_reconcile_duration_seconds histogram");
        for (i, bound) in BUCKETS.iter().enumerate() {
            let n = m.bucket_counts.get(i).copied().unwrap_or(0);
            let _ = writeln!(
                out,
                "wardn_reconcile_duration_seconds_bucket{{le=\"{bound}\"}} {n}"
            );
        }
        let _ = writeln!(
            out,
            "wardn_reconcile_duration_seconds_bucket{{le=\"+Inf\"}} {}",
            m.duration_count
        );
        let _ = writeln!(
            out,
            "wardn_reconcile_duration_seconds_sum {}",
            m.duration_sum
        );
        let _ = writeln!(
            out,
            "wardn_reconcile_duration_seconds_count {}",
            m.duration_count
        );
        let _ = writeln!(
            out,
            "# HELP wardn_apply_objects_total Objects created or updated by server-side apply."
        );
        let _ = writeln!(out, "# TYPE wardn_apply_objects_total counter");
        let _ = writeln!(out, "wardn_apply_objects_total {}", m.applied);
        let _ = writeln!(
            out,
            "# HELP wardn_prune_objects_total Objects deleted by prune."
        );
        let _ = writeln!(out, "# TYPE wardn_prune_objects_total counter");
        let _ = writeln!(out, "wardn_prune_objects_total {}", m.pruned);
        let _ = writeln!(
            out,
            "# HELP wardn_queue_depth Apps waiting for a reconcile worker."
        );
        let _ = writeln!(out, "# TYPE wardn_queue_depth gauge");
        let _ = writeln!(out, "wardn_queue_depth {queue_depth}");
        let _ = writeln!(
            out,
            "# HELP wardn_reconcile_retries_total Passes requeued with backoff after a transient cluster error."
        );
        let _ = writeln!(out, "# TYPE wardn_reconcile_retries_total counter");
        let _ = writeln!(out, "wardn_reconcile_retries_total {}", m.retries);
        let _ = writeln!(
            out,
            "# HELP wardn_drift_events_total Changes to inventory objects not made by wardn."
        );
        let _ = writeln!(out, "# TYPE wardn_drift_events_total counter");
        let _ = writeln!(out, "wardn_drift_events_total {}", m.drift_events);
        let _ = writeln!(
            out,
            "# HELP wardn_cluster_requests_total API requests sent to each destination cluster."
        );
        let _ = writeln!(out, "# TYPE wardn_cluster_requests_total counter");
        for c in clusters {
            let _ = writeln!(
                out,
                "wardn_cluster_requests_total{{cluster=\"{}\"}} {}",
                label(&c.cluster),
                c.requests
            );
        }
        let _ = writeln!(
            out,
            "# HELP wardn_cluster_ratelimited_total Requests that waited for the cluster's rate limit."
        );
        let _ = writeln!(out, "# TYPE wardn_cluster_ratelimited_total counter");
        for c in clusters {
            let _ = writeln!(
                out,
                "wardn_cluster_ratelimited_total{{cluster=\"{}\"}} {}",
                label(&c.cluster),
                c.throttled
            );
        }
        out
    }
}

/// A cluster name as a label value: `local` for the management cluster; quotes and
/// backslashes escaped (cluster names are DNS labels, so this is defensive).
fn label(cluster: &str) -> String {
    if cluster.is_empty() {
        return "local".to_string();
    }
    cluster.replace('\\', "\\\\").replace('"', "\\\"")
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
            "wardn_reconcile_total{outcome=\"error_409\"} 1",
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
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "missing {line:?} in\n{text}"
            );
        }
    }
}
