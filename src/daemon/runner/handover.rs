//! Approvals and rejections across replicas (`--shards auto`): the replica an approver reached
//! may not own the App. It records the decision in the store ([`crate::store::requests`]) and
//! waits for the outcome; the owner polls the store every second, claims the request (one
//! claim wins, so a plan is approved once), performs it like a local one and writes the
//! outcome back. Polling rather than PostgreSQL `LISTEN/NOTIFY`: the store's `Any` driver has
//! no listener, a second of latency is nothing next to a human's approval, and a poll cannot
//! miss a notification sent while a replica was restarting.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::Runner;
use super::operations::{Completed, Operation, OperationError};
use crate::app::AppStatus;
use crate::store::Store;
use crate::time::now_rfc3339;

/// How often the owner looks for requests, and the asker for their outcome.
const POLL: Duration = Duration::from_secs(1);

/// A request's outcome as stored: the App's status after it, or why it failed.
#[derive(serde::Serialize, serde::Deserialize)]
struct Outcome {
    replica: String,
    status: Option<AppStatus>,
    error: Option<String>,
}

impl Runner {
    /// Hands `operation` (an approval or rejection) on App `key` to the replica that owns it
    /// through `store`, and waits for its outcome (at most the health timeout plus two
    /// minutes; an unclaimed request is then withdrawn).
    pub(super) async fn hand_over(
        &self,
        store: &Store,
        key: &str,
        operation: &Operation,
    ) -> Result<Completed, OperationError> {
        let (name, hash) = match operation {
            Operation::Approve(hash) => ("approve", hash.as_deref()),
            Operation::Reject(hash) => ("reject", hash.as_deref()),
            _ => {
                return Err(OperationError::Task(
                    "only decisions are handed over".into(),
                ));
            }
        };
        let mut nonce = [0u8; 16];
        getrandom::fill(&mut nonce).map_err(|e| OperationError::Task(e.to_string()))?;
        let id = hex::encode(nonce);
        store
            .insert_app_request(&id, key, name, hash, &now_rfc3339())
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
                return match (outcome.status, outcome.error) {
                    (Some(status), None) => Ok(Completed::Status(status)),
                    (_, error) => Err(OperationError::Remote {
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
    pub(super) async fn serve_handovers(self: Arc<Self>, store: Store, replica: String) {
        let mut ticker = tokio::time::interval(POLL);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticker.tick().await;
            let open = match store.open_app_requests().await {
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
                match store.claim_app_request(&request.id, &replica).await {
                    Ok(true) => {}
                    Ok(false) => continue,
                    Err(e) => {
                        tracing::warn!(error = %e, request = %request.id, "cannot claim request");
                        continue;
                    }
                }
                let hash = request.plan_hash.clone();
                let operation = match request.operation.as_str() {
                    "approve" => Operation::Approve(hash),
                    _ => Operation::Reject(hash),
                };
                tracing::info!(app = %request.app_key, request = %request.id,
                    operation = %request.operation, "performing a decision handed over by another replica");
                let result = self.operate(&request.app_key, operation).await;
                let outcome = match result {
                    Ok(Completed::Status(status)) => Outcome {
                        replica: replica.clone(),
                        status: Some(status),
                        error: None,
                    },
                    Ok(Completed::Plan(_)) => Outcome {
                        replica: replica.clone(),
                        status: None,
                        error: Some("unexpected plan".into()),
                    },
                    Err(e) => Outcome {
                        replica: replica.clone(),
                        status: None,
                        error: Some(e.to_string()),
                    },
                };
                let text = serde_json::to_string(&outcome).unwrap_or_default();
                if let Err(e) = store
                    .finish_app_request(&request.id, &text, &now_rfc3339())
                    .await
                {
                    tracing::warn!(error = %e, request = %request.id, "cannot store the outcome");
                }
            }
        }
    }
}
