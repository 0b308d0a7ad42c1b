//! Push webhooks for operator-role processes, which hold no store and receive no webhooks.
//!
//! A `--role server` process records each authenticated push (`crate::store::pushes`: one
//! row per repository, its latest push with a random id) and answers the recent ones on
//! [`ROUTE`] (`GET /internal/pushes?since_ms=`, internal token only). [`ServerPushes`] reads
//! them every [`READ_EVERY`] and triggers a poll of each repository this operator polls, so a
//! push reaches the operators within seconds instead of at their Apps' next interval.
//!
//! Each reading asks for the pushes received since [`OVERLAP_MS`] before the newest one seen
//! (the server replicas' clocks may differ, and a push may be recorded while a reading runs)
//! and triggers only pushes whose id it has not seen, so a push is neither missed nor
//! triggered twice. The first reading takes every push still recorded: an operator that
//! restarts polls what was pushed while it was away.

use std::collections::HashMap;
use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::registry::Registry;
use serde::{Deserialize, Serialize};
use tokio::task::JoinHandle;

use super::poller::Poller;
use super::url::parse_repo_url;
use crate::server_link::ServerLink;

/// The server's route.
pub const ROUTE: &str = "/internal/pushes";
/// The most pushes one answer carries, oldest first.
pub const MAX_PUSHES_PER_ANSWER: usize = 1000;
/// How often an operator reads the recorded pushes.
pub const READ_EVERY: Duration = Duration::from_secs(2);
/// How far before the newest push seen each reading starts.
pub const OVERLAP_MS: i64 = 10_000;

/// The internal route's answer: the pushes received since the time asked for, oldest first.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct InternalPushes {
    /// At most [`MAX_PUSHES_PER_ANSWER`].
    pub pushes: Vec<InternalPush>,
}

/// One repository's latest push.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InternalPush {
    /// The repository's key (its normalised URL).
    pub repository: String,
    /// The push's id: a later push of the repository has another.
    pub id: String,
    /// When the server received it (Unix milliseconds, that server's clock).
    pub pushed_ms: i64,
}

/// What an operator has read of the recorded pushes: where the next reading starts, and the
/// pushes already triggered that it may read again.
#[derive(Debug, Default)]
pub struct PushCursor {
    /// Repository → (id, received) of the pushes read within the overlap.
    seen: HashMap<String, (String, i64)>,
    /// The newest push read.
    newest: Option<i64>,
    /// Whether the last answer was full (more may follow at once).
    full: bool,
}

impl PushCursor {
    /// The `since_ms` of the next reading: everything at first; then [`OVERLAP_MS`] before
    /// the newest push read, or the newest itself after a full answer (so a burst of more
    /// than an answer's worth of pushes within the overlap cannot hold the reading back).
    pub fn since_ms(&self) -> i64 {
        match self.newest {
            None => 0,
            Some(newest) if self.full => newest,
            Some(newest) => newest.saturating_sub(OVERLAP_MS).max(0),
        }
    }

    /// Takes one answer in; returns the repositories pushed to since the last reading (each
    /// once, whatever the answer repeats).
    pub fn take(&mut self, answer: InternalPushes) -> Vec<String> {
        self.full = answer.pushes.len() >= MAX_PUSHES_PER_ANSWER;
        let mut pushed = Vec::new();
        for push in answer.pushes {
            self.newest = Some(
                self.newest
                    .map_or(push.pushed_ms, |n| n.max(push.pushed_ms)),
            );
            let known = self
                .seen
                .get(&push.repository)
                .is_some_and(|(id, _)| *id == push.id);
            if !known {
                self.seen
                    .insert(push.repository.clone(), (push.id, push.pushed_ms));
                pushed.push(push.repository);
            }
        }
        // A push older than the next reading's start is never answered again.
        let since = self.since_ms();
        self.seen.retain(|_, (_, at)| *at >= since);
        pushed
    }
}

/// Reads the pushes a wardn server recorded, through [`ROUTE`] with the internal token.
#[derive(Debug)]
pub struct ServerPushes {
    server: ServerLink,
}

/// The task following a server's pushes; dropping it stops following.
pub struct PushFollower {
    task: JoinHandle<()>,
    counts: FollowCounts,
}

/// What a follower did, for `/metrics` (the counters share their values with the task's).
#[derive(Debug, Clone, Default)]
struct FollowCounts {
    /// Pushes that made this operator poll a repository.
    polled: Counter,
    /// Readings the server did not answer.
    failed_reads: Counter,
}

impl PushFollower {
    /// `wardn_server_pushes_polled_total` and `wardn_server_push_reads_failed_total`, in the
    /// Prometheus text format.
    pub fn metrics_text(&self) -> String {
        let mut registry = Registry::default();
        registry.register(
            "wardn_server_pushes_polled",
            "Pushes recorded by the server that made this operator poll a repository",
            self.counts.polled.clone(),
        );
        registry.register(
            "wardn_server_push_reads_failed",
            "Readings of the server's recorded pushes that failed",
            self.counts.failed_reads.clone(),
        );
        crate::telemetry::prometheus_text(&[&registry])
    }
}

impl Drop for PushFollower {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl ServerPushes {
    /// Reads pushes from `server`.
    pub fn new(server: ServerLink) -> Self {
        Self { server }
    }

    /// One reading: the pushes received since `since_ms`.
    pub async fn read(&self, since_ms: i64) -> Result<InternalPushes, String> {
        self.server
            .get_json(&format!("{ROUTE}?since_ms={since_ms}"))
            .await
            .map_err(|e| e.to_string())
    }

    /// Reads every [`READ_EVERY`] and triggers a poll of each pushed repository `poller`
    /// polls. A failed reading is logged when it starts failing and when it recovers, and the
    /// next one starts where the last good one left off.
    pub fn follow(self, poller: Poller) -> PushFollower {
        let counts = FollowCounts::default();
        let counted = counts.clone();
        let task = tokio::spawn(async move {
            let mut cursor = PushCursor::default();
            let mut failing = false;
            let mut every = tokio::time::interval(READ_EVERY);
            every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                every.tick().await;
                let answer = match self.read(cursor.since_ms()).await {
                    Ok(answer) => answer,
                    Err(error) => {
                        counted.failed_reads.inc();
                        if !failing {
                            tracing::warn!(server = %self.server.base(), %error, "cannot read the server's pushes; Apps wait for their next poll");
                        }
                        failing = true;
                        continue;
                    }
                };
                if failing {
                    tracing::info!(server = %self.server.base(), "reading the server's pushes again");
                    failing = false;
                }
                for repository in cursor.take(answer) {
                    let Ok(url) = parse_repo_url(&repository) else {
                        continue;
                    };
                    if poller.trigger(&url.key) {
                        counted.polled.inc();
                        tracing::debug!(%repository, "push recorded on the server: poll triggered");
                    }
                }
            }
        });
        PushFollower { task, counts }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn push(repository: &str, id: &str, pushed_ms: i64) -> InternalPush {
        InternalPush {
            repository: repository.into(),
            id: id.into(),
            pushed_ms,
        }
    }

    fn answer(pushes: Vec<InternalPush>) -> InternalPushes {
        InternalPushes { pushes }
    }

    #[test]
    fn each_push_is_taken_once_whatever_the_overlap_repeats() {
        let mut cursor = PushCursor::default();
        assert_eq!(cursor.since_ms(), 0);
        let first = answer(vec![
            push("https://a/x", "1", 100_000),
            push("https://a/y", "2", 101_000),
        ]);
        assert_eq!(cursor.take(first.clone()), ["https://a/x", "https://a/y"]);
        assert_eq!(cursor.since_ms(), 101_000 - OVERLAP_MS);
        // The same answer again (the overlap): nothing new.
        assert!(cursor.take(first).is_empty());
        // A later push of x replaces its row: taken, y not again.
        let later = answer(vec![
            push("https://a/y", "2", 101_000),
            push("https://a/x", "3", 105_000),
        ]);
        assert_eq!(cursor.take(later), ["https://a/x"]);
        assert_eq!(cursor.since_ms(), 105_000 - OVERLAP_MS);
    }

    /// A push a server replica with a slower clock received after the newest one read is
    /// still taken when it is within the overlap.
    #[test]
    fn a_push_stamped_by_a_slower_clock_is_taken() {
        let mut cursor = PushCursor::default();
        cursor.take(answer(vec![push("https://a/x", "1", 200_000)]));
        let skewed = answer(vec![
            push("https://a/y", "2", 195_000),
            push("https://a/x", "1", 200_000),
        ]);
        assert_eq!(cursor.take(skewed), ["https://a/y"]);
        assert_eq!(cursor.since_ms(), 200_000 - OVERLAP_MS);
    }

    /// Long run: a thousand readings of a busy repository take each of its pushes once, and
    /// what the cursor remembers stays within the overlap.
    #[test]
    fn a_thousand_readings_take_every_push_once_and_stay_bounded() {
        let mut cursor = PushCursor::default();
        let mut taken = 0;
        for round in 0..1000i64 {
            let at = 1_000_000 + round * 2_000;
            let pushes = (0..3)
                .map(|r| {
                    push(
                        &format!("https://a/r{}", (round + r) % 50),
                        &format!("{round}-{r}"),
                        at,
                    )
                })
                .collect();
            taken += cursor.take(answer(pushes)).len();
            assert!(
                cursor.seen.len() <= 3 * (OVERLAP_MS / 2_000 + 1) as usize,
                "{}",
                cursor.seen.len()
            );
        }
        assert_eq!(taken, 3000);
    }

    /// A full answer moves the next reading past the overlap, so more pushes than an answer
    /// holds within the overlap cannot hold the reading back.
    #[test]
    fn a_full_answer_starts_the_next_reading_at_its_newest_push() {
        let mut cursor = PushCursor::default();
        let pushes = (0..MAX_PUSHES_PER_ANSWER as i64)
            .map(|i| push(&format!("https://a/r{i}"), "1", 50_000 + i))
            .collect();
        assert_eq!(cursor.take(answer(pushes)).len(), MAX_PUSHES_PER_ANSWER);
        assert_eq!(cursor.since_ms(), 50_000 + MAX_PUSHES_PER_ANSWER as i64 - 1);
    }
}
