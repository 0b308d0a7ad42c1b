//! The background prober, which fills the status board ([`super::status::Statuses`]).
//! Processes sharing one store share the probes: each round, a process claims the probes that
//! are due in the store ([`crate::store::Store::claim_probe`]), takes them, and records the
//! results there; it reads everyone's results back into its board, which the API answers
//! from. So N replicas probe each cluster once per interval between them, not N times, and a
//! replica's API shows a cluster's latest status whoever probed it. A replica of a sharded
//! fleet claims the probes of the clusters it owns when they fall due (it has their clients
//! and connections already) and those of other clusters only when they are a whole interval
//! overdue (their owner is gone).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;

use super::connect::{self, ConnectError};
use super::registry::{Registry, RegistryError, ResolveFailure};
use super::status::Status;
use crate::store::StoreError;
use crate::store::clusters::ClusterRecord;
use crate::store::probes::ProbeRow;

/// How many clusters a probe round contacts at once (a dead cluster holds one slot until its
/// timeout; the rest proceed).
pub const PROBE_CONCURRENCY: usize = 16;

/// How long before a credential expires the prober starts warning.
pub const EXPIRY_WARNING: Duration = Duration::from_secs(7 * 24 * 3600);

/// The longest time between two readings of the other processes' results: a status another
/// replica recorded shows in this one's API within this time, however long the probe interval.
pub const STATUS_REFRESH: Duration = Duration::from_secs(10);

/// Whether this process is the one expected to probe a cluster (in a sharded fleet: whether it
/// owns the cluster); others take the probe over only when it is a whole interval overdue.
pub type ProbePreference = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// When a round claims a probe: the interval between two probes of one cluster and the time
/// between rounds.
#[derive(Debug, Clone, Copy)]
pub struct ProbeSchedule {
    /// How often each cluster is probed (`--probe-interval`).
    pub interval: Duration,
    /// How often a round runs: the interval, or [`STATUS_REFRESH`] when that is shorter.
    pub tick: Duration,
}

impl ProbeSchedule {
    /// The schedule of probes every `interval`.
    pub fn every(interval: Duration) -> ProbeSchedule {
        ProbeSchedule {
            interval,
            tick: interval.min(STATUS_REFRESH),
        }
    }

    /// The due time a claim at `now_ms` sets: an interval on, less half a tick, so that the
    /// claiming process's round an interval later finds it due despite its timer's jitter.
    fn next_due(&self, now_ms: i64) -> i64 {
        now_ms + millis(self.interval) - millis(self.tick) / 2
    }

    /// The latest due time a process may claim at `now_ms`: any that is due for the preferred
    /// prober, only one a whole interval overdue for the others.
    fn claimable_by(&self, now_ms: i64, preferred: bool) -> i64 {
        match preferred {
            true => now_ms,
            false => now_ms - millis(self.interval),
        }
    }
}

fn millis(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX / 4)
}

impl Registry {
    /// Probes one registered cluster now and records the result on the status board and in the
    /// store. The probe uses the cluster's cached client when something deploys to it (or reads
    /// it) through the cache, and otherwise a client of its own, dropped with its connection
    /// afterwards: a replica of a sharded fleet keeps clients only for the clusters it works on.
    pub async fn probe(&self, name: &str) -> Status {
        let entry = match self.clients().get(name) {
            Some(entry) => Ok(entry),
            None => self.build_client(name).await,
        };
        let result = match entry {
            Ok(entry) => connect::probe(&entry.client, self.probe_timeout).await,
            Err(ResolveFailure::Connect(err)) => Err(err),
            Err(ResolveFailure::Registry(err)) => Err(ConnectError::Other(err.to_string())),
        };
        let status = Status::from_probe(result);
        self.record(name, &status).await;
        status
    }

    /// Keeps `status` as `name`'s latest result and writes it to the store for the other
    /// processes (a store failure is logged: the board still shows the result here).
    async fn record(&self, name: &str, status: &Status) {
        let at_ms = Timestamp::now().as_millisecond();
        self.statuses.put(name, status.clone(), at_ms);
        // The store refuses a result over its bound; `from_probe` keeps within it.
        let written = match serde_json::to_string(status) {
            Ok(json) => self.store.record_probe(name, &json, at_ms).await,
            Err(err) => Err(StoreError::Corrupt {
                field: "cluster_probes.status",
                reason: err.to_string(),
            }),
        };
        if let Err(error) = written {
            tracing::warn!(cluster = name, %error, "cannot share a probe result through the store");
        }
    }

    /// Probes every registered cluster now, whatever other processes did, [`PROBE_CONCURRENCY`]
    /// at a time, and warns about credentials that expire within [`EXPIRY_WARNING`].
    pub async fn probe_all(self: &Arc<Self>) -> Result<(), RegistryError> {
        let records = self.store.list_clusters().await?;
        self.probe_each(records).await;
        Ok(())
    }

    /// One round of the shared prober at `now_ms`: brings the registrations in step with the
    /// store (those made through other processes show up), reads every process's latest
    /// results into the board, claims the probes due for this process (those due, when
    /// `prefers` says it is the expected prober; else those a whole interval overdue), takes
    /// them and records the results. Returns the clusters it probed, sorted.
    pub async fn probe_due(
        self: &Arc<Self>,
        schedule: &ProbeSchedule,
        prefers: &ProbePreference,
        now_ms: i64,
    ) -> Result<Vec<String>, RegistryError> {
        let changes_seen = self.board_changes();
        let records = self.store.list_clusters().await?;
        self.refresh_board(&records, changes_seen).await?;
        let mut rows = self.store.probe_rows().await?;
        let registered: HashSet<&str> = records.iter().map(|r| r.name.as_str()).collect();
        if rows
            .iter()
            .any(|row| !registered.contains(row.name.as_str()))
        {
            self.store.prune_probes().await?;
            rows.retain(|row| registered.contains(row.name.as_str()));
        }
        let due: HashMap<&str, i64> = rows.iter().map(|r| (r.name.as_str(), r.due_ms)).collect();
        let mut claimed = Vec::new();
        for record in records {
            let preferred = prefers(&record.name);
            let claimable_by = schedule.claimable_by(now_ms, preferred);
            match due.get(record.name.as_str()) {
                // Never probed: anyone but the expected prober starts its grace now.
                None if !preferred => {
                    self.store.schedule_probe(&record.name, now_ms).await?;
                    continue;
                }
                Some(&due_ms) if due_ms > claimable_by => continue,
                _ => {}
            }
            if self
                .store
                .claim_probe(&record.name, claimable_by, schedule.next_due(now_ms))
                .await?
            {
                claimed.push(record);
            }
        }
        self.read_results(&rows);
        let mut names: Vec<String> = claimed.iter().map(|r| r.name.clone()).collect();
        names.sort();
        self.probe_each(claimed).await;
        Ok(names)
    }

    /// Copies the stored results of `rows` onto the board (those newer than its own).
    fn read_results(&self, rows: &[ProbeRow]) {
        for row in rows {
            let Some(json) = &row.status else { continue };
            match serde_json::from_str::<Status>(json) {
                Ok(status) => self.statuses.put(&row.name, status, row.probed_ms),
                Err(error) => {
                    tracing::warn!(cluster = %row.name, %error, "unreadable stored probe result")
                }
            }
        }
    }

    /// Probes `records`, [`PROBE_CONCURRENCY`] at a time, warning about expiring credentials.
    async fn probe_each(self: &Arc<Self>, records: Vec<ClusterRecord>) {
        let permits = Arc::new(tokio::sync::Semaphore::new(PROBE_CONCURRENCY));
        let mut tasks = tokio::task::JoinSet::new();
        for record in records {
            warn_if_expiring(&record);
            let registry = Arc::clone(self);
            let permits = Arc::clone(&permits);
            tasks.spawn(async move {
                // The semaphore is never closed, so acquiring only waits.
                let _permit = permits.acquire_owned().await;
                registry.probe(&record.name).await
            });
        }
        while tasks.join_next().await.is_some() {}
    }

    /// Runs [`Registry::probe_due`] every [`ProbeSchedule::tick`] of `schedule` until the task
    /// is dropped.
    pub async fn probe_loop(self: Arc<Self>, schedule: ProbeSchedule, prefers: ProbePreference) {
        let mut ticker = tokio::time::interval(schedule.tick);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticker.tick().await;
            let now_ms = Timestamp::now().as_millisecond();
            if let Err(err) = self.probe_due(&schedule, &prefers, now_ms).await {
                tracing::warn!(%err, "cluster probe round failed");
            }
        }
    }
}

/// Whether credentials expiring at `expires_at` (RFC 3339) are within [`EXPIRY_WARNING`] of
/// `now` (or already expired). Unknown or unreadable expiry is not "expiring".
pub fn expires_soon(expires_at: Option<&str>, now: Timestamp) -> bool {
    expires_at
        .and_then(|text| text.parse::<Timestamp>().ok())
        .is_some_and(|at| at.as_second() - now.as_second() <= EXPIRY_WARNING.as_secs() as i64)
}

fn warn_if_expiring(record: &ClusterRecord) {
    let expires = record.credential_expires_at.as_deref();
    if expires_soon(expires, Timestamp::now()) {
        tracing::warn!(
            cluster = %record.name,
            credential_expires_at = expires.unwrap_or_default(),
            "cluster credentials expire within 7 days (or have expired); register fresh credentials"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiry_warning_starts_seven_days_ahead() {
        let now: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        assert!(expires_soon(Some("2026-01-08T00:00:00Z"), now));
        assert!(expires_soon(Some("2025-12-01T00:00:00Z"), now));
        assert!(!expires_soon(Some("2026-01-08T00:00:01Z"), now));
        assert!(!expires_soon(None, now));
        assert!(!expires_soon(Some("garbage"), now));
    }
}
