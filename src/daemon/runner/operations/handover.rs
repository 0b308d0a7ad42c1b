//! Operations across replicas (`--shards auto`), and from a `--role server` process to its
//! operators: the process a person reached may not own the App (and, loading only its own
//! share, or being a server, has not rendered it). It records the operation in the store
//! ([`crate::store::requests`]) and waits for the outcome; the owner reads the open requests
//! every second ([`Requests`]: the store itself, or the server's routes for an operator),
//! claims the request (one claim wins, so a plan is approved once and a sync runs once),
//! performs it like a local one and writes the outcome back. Approvals and
//! rejections, diffs, syncs, refreshes, pushes (a webhook's poll), promotions, rollbacks and
//! unpins are handed over this way. Polling rather than PostgreSQL `LISTEN/NOTIFY`: the
//! store's `Any` driver has no listener, a second of latency is nothing next to a human's
//! request, and a poll cannot miss a notification sent while a replica was restarting.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;

use super::{Completed, Operation, OperationError};
use crate::app::AppStatus;
use crate::app::promotion::PromotedFrom;
use crate::daemon::runner::Runner;
use crate::reconcile::decide::Trigger;
use crate::reconcile::plan::Plan;
use crate::store::Store;
use crate::time::now_rfc3339;

/// How often the owner looks for requests, and the asker for their outcome.
const POLL: Duration = Duration::from_secs(1);
/// Every how many polls the requests no asker waits for any more are deleted.
const SWEEP_EVERY: u64 = 60;
/// How long after its asker's deadline (health timeout plus two minutes) a request is kept:
/// a request whose asker died would otherwise stay for ever.
const KEEP_AFTER_DEADLINE: Duration = Duration::from_secs(600);

/// The plan hash stored with the operations other than decisions. Replicas of an earlier
/// version read every request that is not an approval as a rejection checked against this
/// hash, which no plan has: during a rolling update they refuse such a request instead of
/// rejecting a Held plan.
const NOT_A_DECISION: &str = "not-a-decision";

/// An operation other than a decision as stored (JSON in the request's `operation`).
#[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Handed {
    /// `…/diff`.
    Diff,
    /// `…/sync`.
    Sync { override_windows: bool },
    /// `…/refresh`.
    Refresh,
    /// A push webhook another replica received.
    Poll,
    /// A promotion recorded as promotion `id`, from App `source`.
    Promote { source: String, id: String },
    /// A rollback (`Some`) or an unpin (`None`).
    Pin { promoted: Option<PromotedFrom> },
}

/// How `operation` is stored: its `operation` column and its plan hash; `None` for the
/// automatic passes, which are never handed over (the owner schedules its own).
fn encode(operation: &Operation) -> Option<(String, Option<String>)> {
    let handed = match operation {
        Operation::Approve(hash) => return Some(("approve".into(), hash.clone())),
        Operation::Reject(hash) => return Some(("reject".into(), hash.clone())),
        Operation::Plan => Handed::Diff,
        Operation::Pass(Trigger::Manual { override_windows }) => Handed::Sync {
            override_windows: *override_windows,
        },
        Operation::Pass(Trigger::Automatic | Trigger::Approved) => return None,
        Operation::Refresh => Handed::Refresh,
        Operation::Poll => Handed::Poll,
        Operation::Promote { source, id } => Handed::Promote {
            source: source.clone(),
            id: id.clone(),
        },
        Operation::Pin(promoted) => Handed::Pin {
            promoted: promoted.as_deref().cloned(),
        },
    };
    let text = serde_json::to_string(&handed).ok()?;
    Some((text, Some(NOT_A_DECISION.into())))
}

/// The operation a stored request names; an error for one this version does not know.
fn decode(operation: &str, hash: Option<String>) -> Result<Operation, String> {
    match operation {
        "approve" => return Ok(Operation::Approve(hash)),
        "reject" => return Ok(Operation::Reject(hash)),
        _ => {}
    }
    let handed: Handed = serde_json::from_str(operation)
        .map_err(|e| format!("unknown handed-over operation {operation:?}: {e}"))?;
    Ok(match handed {
        Handed::Diff => Operation::Plan,
        Handed::Sync { override_windows } => Operation::Pass(Trigger::Manual { override_windows }),
        Handed::Refresh => Operation::Refresh,
        Handed::Poll => Operation::Poll,
        Handed::Promote { source, id } => Operation::Promote { source, id },
        Handed::Pin { promoted } => Operation::Pin(promoted.map(Box::new)),
    })
}

/// A request's outcome as stored: the App's status after it (or the plan, for a diff), or
/// why it failed.
#[derive(serde::Serialize, serde::Deserialize)]
struct Outcome {
    replica: String,
    status: Option<AppStatus>,
    #[serde(default)]
    plan: Option<Box<Plan>>,
    error: Option<String>,
}

/// A request no owner has claimed yet, as an owner reads it (from the store, or from a
/// server's `GET /internal/app-requests`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct OpenRequest {
    /// The request's random id.
    pub id: String,
    /// The App's key (`namespace/name`).
    pub app_key: String,
    /// The operation (see [`encode`]).
    pub operation: String,
    /// The plan hash stored with it.
    pub plan_hash: Option<String>,
}

/// Where an owner finds the operations handed to it, claims them (one claim wins) and answers
/// them: the store (replicas of `--role all --shards auto`) or a wardn server's
/// `/internal/app-requests` routes (operators, [`super::server_requests`]). Errors are
/// messages for the log: the owner tries again at its next poll.
pub(in crate::daemon::runner) trait Requests:
    Send + Sync + 'static
{
    /// The requests nobody has claimed yet, oldest first.
    fn open(&self) -> BoxFuture<'_, Result<Vec<OpenRequest>, String>>;
    /// Claims request `id` for `replica`; false when another claimed it first.
    fn claim<'a>(&'a self, id: &'a str, replica: &'a str) -> BoxFuture<'a, Result<bool, String>>;
    /// Stores the outcome (JSON) of request `id`.
    fn finish<'a>(&'a self, id: &'a str, outcome: &'a str) -> BoxFuture<'a, Result<(), String>>;
    /// Deletes the requests recorded more than `age` ago (no asker waits for them).
    fn sweep(&self, age: Duration) -> BoxFuture<'_, ()>;
}

impl Requests for Store {
    fn open(&self) -> BoxFuture<'_, Result<Vec<OpenRequest>, String>> {
        Box::pin(async move {
            let open = self.open_app_requests().await.map_err(|e| e.to_string())?;
            Ok(open
                .into_iter()
                .map(|request| OpenRequest {
                    id: request.id,
                    app_key: request.app_key,
                    operation: request.operation,
                    plan_hash: request.plan_hash,
                })
                .collect())
        })
    }

    fn claim<'a>(&'a self, id: &'a str, replica: &'a str) -> BoxFuture<'a, Result<bool, String>> {
        Box::pin(async move {
            self.claim_app_request(id, replica)
                .await
                .map_err(|e| e.to_string())
        })
    }

    fn finish<'a>(&'a self, id: &'a str, outcome: &'a str) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            self.finish_app_request(id, outcome, &now_rfc3339())
                .await
                .map_err(|e| e.to_string())
        })
    }

    fn sweep(&self, age: Duration) -> BoxFuture<'_, ()> {
        Box::pin(sweep_requests(self, age))
    }
}

/// The age after which a request is deleted: its asker's deadline (`health_timeout` plus two
/// minutes) plus [`KEEP_AFTER_DEADLINE`].
pub(in crate::daemon::runner) fn requests_kept_for(health_timeout: Duration) -> Duration {
    health_timeout + Duration::from_secs(120) + KEEP_AFTER_DEADLINE
}

/// Deletes the requests of `store` recorded more than `age` ago.
pub(in crate::daemon::runner) async fn sweep_requests(store: &Store, age: Duration) {
    let before = jiff::Timestamp::now()
        .checked_sub(jiff::SignedDuration::try_from(age).unwrap_or(jiff::SignedDuration::MAX))
        .unwrap_or(jiff::Timestamp::UNIX_EPOCH);
    match store
        .delete_app_requests_before(&crate::time::rfc3339(before))
        .await
    {
        Ok(0) => {}
        Ok(n) => tracing::info!(
            requests = n,
            "deleted handed-over requests no asker waits for"
        ),
        Err(e) => tracing::warn!(error = %e, "cannot delete stale handed-over requests"),
    }
}

/// Whether `operation` may be handed to the owner of its App (see [`encode`]).
pub(super) fn can_hand_over(operation: &Operation) -> bool {
    encode(operation).is_some()
}

impl Runner {
    /// Hands `operation` on App `key` to the replica that owns it through `store`, and waits
    /// for its outcome (at most the health timeout plus two minutes; an unclaimed request is
    /// then withdrawn).
    pub(super) async fn hand_over(
        &self,
        store: &Store,
        key: &str,
        operation: &Operation,
    ) -> Result<Completed, OperationError> {
        let Some((name, hash)) = encode(operation) else {
            return Err(OperationError::Task(
                "automatic passes are not handed over".into(),
            ));
        };
        let mut nonce = [0u8; 16];
        getrandom::fill(&mut nonce).map_err(|e| OperationError::Task(e.to_string()))?;
        let id = hex::encode(nonce);
        store
            .insert_app_request(&id, key, &name, hash.as_deref(), &now_rfc3339())
            .await?;
        let deadline = Instant::now() + self.options.health_timeout + Duration::from_secs(120);
        let mut stopping = self.stopping.subscribe();
        loop {
            tokio::select! {
                () = tokio::time::sleep(POLL / 4) => {}
                _ = stopping.wait_for(|stopped| *stopped) => return Err(OperationError::Stopped),
            }
            let request = store.app_request(&id).await?;
            let Some(request) = request else {
                return Err(OperationError::Task(format!("request {id} vanished")));
            };
            if let Some(outcome) = request.outcome {
                store.delete_app_request(&id).await?;
                let outcome: Outcome = serde_json::from_str(&outcome)
                    .map_err(|e| OperationError::Task(format!("request {id}: {e}")))?;
                return match (outcome.status, outcome.plan, outcome.error) {
                    (Some(status), _, None) => Ok(Completed::Status(status)),
                    (None, Some(plan), None) => Ok(Completed::Plan(*plan)),
                    (_, _, error) => Err(OperationError::Remote {
                        app: key.to_string(),
                        replica: outcome.replica,
                        message: error.unwrap_or_default(),
                    }),
                };
            }
            if Instant::now() > deadline {
                if request.claimed_by.is_none() {
                    store.delete_app_request(&id).await?;
                }
                return Err(OperationError::Remote {
                    app: key.to_string(),
                    replica: request.claimed_by.unwrap_or_else(|| "none".into()),
                    message: "no outcome in time; an unclaimed request was withdrawn".into(),
                });
            }
        }
    }

    /// The owner's side: every [`POLL`], claims the open requests of the Apps this replica
    /// owns, performs them and stores their outcomes. Runs until the runner stops.
    pub(in crate::daemon::runner) async fn serve_handovers(
        self: Arc<Self>,
        requests: Arc<dyn Requests>,
        replica: String,
    ) {
        let mut ticker = tokio::time::interval(POLL);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let kept_for = requests_kept_for(self.options.health_timeout);
        for tick in 0u64.. {
            ticker.tick().await;
            if tick % SWEEP_EVERY == 0 {
                requests.sweep(kept_for).await;
            }
            let open = match requests.open().await {
                Ok(open) => open,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot read handed-over requests");
                    continue;
                }
            };
            for request in open {
                if self.elsewhere(&request.app_key).is_some()
                    || self.app(&request.app_key).is_none()
                {
                    continue;
                }
                match requests.claim(&request.id, &replica).await {
                    Ok(true) => {}
                    Ok(false) => continue,
                    Err(e) => {
                        tracing::warn!(error = %e, request = %request.id, "cannot claim request");
                        continue;
                    }
                }
                tracing::info!(app = %request.app_key, request = %request.id,
                    operation = %request.operation, "performing an operation handed over by another replica");
                let result = match decode(&request.operation, request.plan_hash.clone()) {
                    Ok(operation) => self
                        .operate(&request.app_key, operation)
                        .await
                        .map_err(|e| e.to_string()),
                    Err(e) => Err(e),
                };
                let replica = replica.clone();
                let outcome = match result {
                    Ok(Completed::Status(status)) => Outcome {
                        replica,
                        status: Some(status),
                        plan: None,
                        error: None,
                    },
                    Ok(Completed::Plan(plan)) => Outcome {
                        replica,
                        status: None,
                        plan: Some(Box::new(plan)),
                        error: None,
                    },
                    Err(error) => Outcome {
                        replica,
                        status: None,
                        plan: None,
                        error: Some(error),
                    },
                };
                let text = serde_json::to_string(&outcome).unwrap_or_default();
                if let Err(e) = requests.finish(&request.id, &text).await {
                    tracing::warn!(error = %e, request = %request.id, "cannot store the outcome");
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_handed_over_operation_reads_back_as_itself() {
        let promoted = PromotedFrom {
            app: "web".into(),
            cluster: "staging".into(),
            revision: "abc123".into(),
            images: Vec::new(),
            promotion: Some("7".into()),
        };
        for operation in [
            Operation::Approve(Some("abc".into())),
            Operation::Reject(None),
            Operation::Plan,
            Operation::Pass(Trigger::Manual {
                override_windows: true,
            }),
            Operation::Refresh,
            Operation::Poll,
            Operation::Promote {
                source: "fleet/a".into(),
                id: "3".into(),
            },
            Operation::Pin(Some(Box::new(promoted))),
            Operation::Pin(None),
        ] {
            let (name, hash) = encode(&operation).unwrap();
            let back = decode(&name, hash).unwrap();
            assert_eq!(format!("{back:?}"), format!("{operation:?}"));
        }
        assert!(encode(&Operation::Pass(Trigger::Automatic)).is_none());
    }

    #[test]
    fn an_unknown_operation_is_refused_not_taken_for_a_rejection() {
        let err = decode("drop-tables", None).unwrap_err();
        assert!(err.contains("unknown handed-over operation"), "{err}");
        let err = decode(r#"{"kind":"delete"}"#, None).unwrap_err();
        assert!(err.contains("delete"), "{err}");
    }
}
