//! Operations on one App, each serialised with the App's others and cancelled when the App is
//! removed or the runner stops: a reconcile pass, a plan (`…/diff`), a hard refresh, and the
//! approval or rejection of a Held plan. An operation on an App another replica owns is
//! handed over to it ([`handover`]).

pub(super) mod handover;
pub mod server_requests;

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use jiff::Timestamp;

use super::Runner;
use super::pins::pinned;
use crate::app::promotion::PromotedFrom;
use crate::app::{App, AppStatus};
use crate::clusters::allowlist::Allowlist;
use crate::clusters::resolve::ResolveError;
use crate::diff::known::{Known, Verified};
use crate::notify::Event;
use crate::reconcile::decide::Trigger;
use crate::reconcile::drift::WatchClient;
use crate::reconcile::error::ReconcileError;
use crate::reconcile::live::ClusterLive;
use crate::reconcile::pass::{Journal, Manifests, Pass, Target};
use crate::reconcile::pipeline;
use crate::reconcile::plan::Plan;
use crate::reconcile::promotion::PromoteError;
use crate::reconcile::status;
use crate::reconcile::upkeep::PassEnd;
use crate::time::now_rfc3339;

impl Runner {
    /// The destination of `app` as a pipeline target, and the identity of the credentials its
    /// client uses.
    pub(super) async fn target(&self, app: &App) -> Result<(Target, u64, String), ResolveError> {
        let cluster = &app.spec.destination.cluster;
        let destination = self.resolver.destination(cluster).await?;
        let kinds = self
            .kinds
            .lock()
            .entry(cluster.clone())
            .or_default()
            .clone();
        let target = Target {
            cluster: app.spec.destination.cluster_segment().to_string(),
            client: destination.client,
            kinds,
            allowlist: destination
                .namespaces
                .map(Allowlist::namespaces)
                .unwrap_or_else(Allowlist::unrestricted),
        };
        Ok((target, destination.credentials, destination.server))
    }

    /// What a pass over App `key` needs: the App, its status, its manifests and its target.
    async fn prepare(&self, key: &str) -> Result<Prepared, OperationError> {
        let app = self
            .app(key)
            .ok_or_else(|| OperationError::NotFound(key.to_string()))?;
        let (previous, manifests, verified) = {
            let apps = self.apps.lock();
            let record = apps.get(key);
            let manifests = record
                .and_then(|r| r.manifests.clone())
                .ok_or_else(|| OperationError::NotRendered(key.to_string()))?;
            let previous = record.map(|r| r.status.clone()).unwrap_or_default();
            (
                previous,
                manifests,
                record.and_then(|r| r.verified.clone()).unwrap_or_default(),
            )
        };
        let previous = previous.read(key);
        // Pinning reads the packed objects back and packs them again: not under the lock every
        // App's passes and API reads share.
        let manifests =
            pinned(manifests, previous.promoted_from.as_ref()).map_err(ReconcileError::from)?;
        let (target, credentials, server) = match self.target(&app).await {
            Ok(found) => found,
            Err(error) => {
                let message = error.to_string();
                self.record(key, status::failed(&previous, &message, Timestamp::now()));
                return Err(OperationError::Destination(error));
            }
        };
        let live = self.upkeep.live(&app.spec.destination.cluster);
        Ok(Prepared {
            app,
            previous,
            manifests,
            target,
            credentials,
            server,
            verified,
            live,
        })
    }

    /// Performs `operation` on App `key`, as its own task (a caller that goes away, such as a
    /// closed HTTP connection, does not cut a pass short); a stopping runner, or the App's
    /// removal, cancels it at its next await.
    pub async fn operate(
        self: &Arc<Self>,
        key: &str,
        operation: Operation,
    ) -> Result<Completed, OperationError> {
        let removed = self
            .apps
            .lock()
            .get_mut(key)
            .map(|record| record.removed())
            .ok_or_else(|| OperationError::NotFound(key.to_string()))?;
        // Only the owner loads the App: every operation on it is the owning replica's.
        if let Some(owner) = self.elsewhere(key) {
            if let Some(store) = &self.store
                && handover::can_hand_over(&operation)
            {
                let done = self.hand_over(store, key, &operation).await;
                // An operator holds no store: the server that handed it the decision records
                // it on the promotion (a sharded replica records its own).
                let verdict = match &operation {
                    Operation::Approve(_) => Some("Approved"),
                    Operation::Reject(_) => Some("Rejected"),
                    _ => None,
                };
                if let (Some(verdict), Ok(Completed::Status(status))) = (verdict, &done)
                    && self.operator_of(key).is_some()
                {
                    self.record_decision(key, status, verdict).await;
                }
                return done;
            }
            return Err(OperationError::Elsewhere {
                app: key.to_string(),
                owner,
            });
        }
        let this = Arc::clone(self);
        let key = key.to_string();
        let mut stopping = self.stopping.subscribe();
        tokio::spawn(async move {
            let work = async {
                match operation {
                    Operation::Plan => this.plan(&key).await.map(Completed::Plan),
                    Operation::Pass(trigger) => this
                        .run_pass(&key, &trigger, false)
                        .await
                        .map(Completed::Status),
                    Operation::Refresh => this.refresh(&key).await.map(Completed::Status),
                    Operation::Poll => this.poll_source(&key).map(Completed::Status),
                    Operation::Approve(hash) => this
                        .approve(&key, hash.as_deref())
                        .await
                        .map(Completed::Status),
                    Operation::Reject(hash) => this
                        .reject(&key, hash.as_deref())
                        .await
                        .map(Completed::Status),
                    Operation::Promote { source, id } => this
                        .promote(&source, &key, &id)
                        .await
                        .map(Completed::Status),
                    Operation::Pin(promoted) => this
                        .pin(&key, promoted.map(|p| *p))
                        .await
                        .map(Completed::Status),
                }
            };
            tokio::select! {
                done = work => done,
                _ = stopping.wait_for(|stopped| *stopped) => Err(OperationError::Stopped),
                _ = removed.cancelled() => Err(OperationError::Removed(key.clone())),
            }
        })
        .await
        .map_err(|e| OperationError::Task(e.to_string()))?
    }

    /// Plans App `key` without deciding or applying (`…/diff`).
    async fn plan(&self, key: &str) -> Result<Plan, OperationError> {
        let p = self.prepare(key).await?;
        pipeline::plan(p.pass(key, None, None))
            .await
            .map_err(|e| p.failed(e))
    }

    /// Runs one pass of App `key` with `trigger` and records the resulting status. Automatic
    /// passes rely on what earlier passes verified unless `verify_all`; manual ones dry-run
    /// every object.
    async fn run_pass(
        &self,
        key: &str,
        trigger: &Trigger,
        verify_all: bool,
    ) -> Result<AppStatus, OperationError> {
        let _guard = self.lock_app(key).await?;
        self.pass_locked(key, trigger, verify_all).await
    }

    /// [`Runner::run_pass`] for a caller that holds App `key`'s lock.
    pub(super) async fn pass_locked(
        &self,
        key: &str,
        trigger: &Trigger,
        verify_all: bool,
    ) -> Result<AppStatus, OperationError> {
        let p = self.prepare_followed(key).await?;
        let known = (!verify_all && matches!(trigger, Trigger::Automatic)).then(|| p.known());
        let now = Timestamp::now();
        let started = std::time::Instant::now();
        let mut progress = |s: &AppStatus| self.record(key, s.clone());
        let journal = Journaled::new(self, key);
        let result = pipeline::reconcile(
            p.pass(key, known, Some(&journal)),
            trigger,
            &self.options,
            now,
            &mut progress,
        )
        .await;
        self.conclude(key, &p, &journal, result, started, now).await
    }

    /// What every pass that ran the pipeline does last: counts it, schedules the next one and
    /// points the drift watches at the inventory ([`Runner::follow_up`]), records takeovers,
    /// and records the status it ended with (on top of the widened inventory, if one was
    /// written ahead).
    async fn conclude(
        &self,
        key: &str,
        p: &Prepared,
        journal: &Journaled<'_>,
        mut result: Result<crate::reconcile::pass::Outcome, ReconcileError>,
        started: std::time::Instant,
        now: Timestamp,
    ) -> Result<AppStatus, OperationError> {
        self.follow_up(key, p, &mut result, started);
        self.takeovers(key, &result).await;
        let previous = journal.previous(&p.previous);
        self.settle(key, &previous, now, result.map(|o| o.status), Some(p))
    }

    /// Records each object a pass took over from another App (`syncPolicy.adopt`): an
    /// `Adopted` Event on the App and an `app.adopt` audit entry (the pipeline logged it).
    async fn takeovers(
        &self,
        key: &str,
        result: &Result<crate::reconcile::pass::Outcome, ReconcileError>,
    ) {
        let Ok(outcome) = result else { return };
        for claim in &outcome.adopted {
            let note = format!("took over {} from App {}", claim.object, claim.owner);
            self.note(key, true, "Adopted", note);
            if let Some(store) = &self.store {
                let target = format!("{key} {}", claim.object);
                let outcome = format!("success: taken from App {}", claim.owner);
                store
                    .record_audit("wardn", "app.adopt", &target, &outcome, &now_rfc3339())
                    .await;
            }
        }
    }

    /// A hard refresh of App `key`: its source is fetched now (a new revision starts another
    /// pass), and an automatic pass dry-runs every object, trusting nothing earlier passes
    /// verified.
    async fn refresh(&self, key: &str) -> Result<AppStatus, OperationError> {
        self.poll_source(key)?;
        self.run_pass(key, &Trigger::Automatic, true).await
    }

    /// Fetches App `key`'s source now (a new revision starts a pass as usual) and answers its
    /// status as it stands.
    fn poll_source(&self, key: &str) -> Result<AppStatus, OperationError> {
        let source_key = self
            .apps
            .lock()
            .get(key)
            .map(|r| r.source_key.clone())
            .ok_or_else(|| OperationError::NotFound(key.to_string()))?;
        self.poller.trigger(&source_key);
        Ok(self.status(key).unwrap_or_default())
    }

    /// [`Runner::prepare`]; an unreachable destination is retried with backoff.
    async fn prepare_followed(&self, key: &str) -> Result<Prepared, OperationError> {
        let prepared = self.prepare(key).await;
        if let (Err(OperationError::Destination(_)), Some(app)) = (&prepared, self.app(key)) {
            let cluster = &app.spec.destination.cluster;
            let unreachable = PassEnd::Unreachable;
            self.upkeep
                .after_pass(key, cluster, None, unreachable, Duration::ZERO);
        }
        prepared
    }

    /// Keeps the pass's agreements for the next pass (moved out of the outcome: nothing after
    /// this reads them), counts the pass, schedules the next one and points the drift watches
    /// at the inventory.
    fn follow_up(
        &self,
        key: &str,
        p: &Prepared,
        result: &mut Result<crate::reconcile::pass::Outcome, ReconcileError>,
        started: std::time::Instant,
    ) {
        if let Ok(outcome) = result
            && let Some(record) = self.apps.lock().get_mut(key)
        {
            record.verified = Some(Arc::new(std::mem::take(&mut outcome.verified)));
        }
        self.upkeep.after_pass(
            key,
            &p.app.spec.destination.cluster,
            Some(WatchClient {
                client: &p.target.client,
                credentials: p.credentials,
            }),
            PassEnd::Ran(&*result),
            started.elapsed(),
        );
    }

    /// Approves App `key`'s Held plan (when `plan_hash` is given it must name it).
    async fn approve(
        &self,
        key: &str,
        plan_hash: Option<&str>,
    ) -> Result<AppStatus, OperationError> {
        let _guard = self.lock_app(key).await?;
        let p = self.prepare_followed(key).await?;
        let now = Timestamp::now();
        let started = std::time::Instant::now();
        let mut progress = |s: &AppStatus| self.record(key, s.clone());
        let journal = Journaled::new(self, key);
        let result = pipeline::approve(
            p.pass(key, None, Some(&journal)),
            plan_hash,
            &self.options,
            now,
            &mut progress,
        )
        .await;
        let held = p.previous.plan_hash.clone().unwrap_or_default();
        match &result {
            Ok(_) => self.note(key, false, "Approved", format!("plan {held} approved")),
            Err(e) => self.note(key, true, "ApprovalRefused", format!("plan {held}: {e}")),
        }
        let approved = result.is_ok();
        let concluded = self.conclude(key, &p, &journal, result, started, now).await;
        if approved {
            self.notify_current(key, Event::Approved);
            self.promotion_decided(key, "Approved").await;
        }
        concluded
    }

    /// Rejects App `key`'s Held plan.
    async fn reject(
        &self,
        key: &str,
        plan_hash: Option<&str>,
    ) -> Result<AppStatus, OperationError> {
        let _guard = self.lock_app(key).await?;
        let previous = self
            .status(key)
            .ok_or_else(|| OperationError::NotRendered(key.to_string()))?;
        let now = Timestamp::now();
        let result = pipeline::reject(&previous, plan_hash, now);
        if let Ok(status) = &result {
            let message = status.message.clone().unwrap_or_default();
            self.note(key, false, "Rejected", message);
        }
        let rejected = result.is_ok();
        let settled = self.settle(key, &previous, now, result, None);
        if rejected {
            self.notify_current(key, Event::Rejected);
            self.promotion_decided(key, "Rejected").await;
        }
        settled
    }

    /// Takes the per-App lock serialising passes, approvals and rejections of App `key`.
    pub(super) async fn lock_app(
        &self,
        key: &str,
    ) -> Result<tokio::sync::OwnedMutexGuard<()>, OperationError> {
        let operation = self
            .apps
            .lock()
            .get_mut(key)
            .map(|record| record.operation());
        match operation {
            Some(operation) => Ok(operation.lock_owned().await),
            None => Err(OperationError::NotFound(key.to_string())),
        }
    }

    /// Records the status a pass ended with (the error's status on failure, naming the revision
    /// of `prepared`'s manifests; an unreachable destination is named with its URL).
    fn settle(
        &self,
        key: &str,
        previous: &AppStatus,
        now: Timestamp,
        result: Result<AppStatus, ReconcileError>,
        prepared: Option<&Prepared>,
    ) -> Result<AppStatus, OperationError> {
        match result {
            Ok(status) => {
                self.record(key, status.clone());
                Ok(status)
            }
            // Fenced off: the new owner writes this App's status from now on.
            Err(e @ ReconcileError::Fenced { .. }) => {
                tracing::warn!(app = %key, error = %e, "pass fenced off");
                self.park(key);
                Err(OperationError::Reconcile(e))
            }
            Err(e) => {
                let status = e.status(previous, prepared.map(|p| p.manifests.as_ref()), now);
                let error = match prepared {
                    Some(p) => p.failed(e),
                    None => OperationError::Reconcile(e),
                };
                let status = match &error {
                    OperationError::Unreachable { .. } => {
                        status::failed(&status, &error.to_string(), now)
                    }
                    _ => status,
                };
                self.record(key, status);
                Err(error)
            }
        }
    }

    /// The scheduler's work: an automatic pass (errors are in the recorded status).
    pub(super) async fn reconcile(self: Arc<Self>, key: String) {
        // Another replica passes it; this one takes it up when it takes the cluster over.
        if self.elsewhere(&key).is_some() {
            self.park(&key);
            return;
        }
        if let Err(e) = self
            .operate(&key, Operation::Pass(Trigger::Automatic))
            .await
        {
            tracing::debug!(app = %key, error = %e, "reconcile pass did not complete");
        }
    }
}

/// The inputs of one pass over an App.
struct Prepared {
    app: App,
    previous: AppStatus,
    manifests: Arc<Manifests>,
    target: Target,
    /// Which credentials `target.client` uses.
    credentials: u64,
    /// The destination's API server URL.
    server: String,
    verified: Arc<Verified>,
    live: ClusterLive,
}

impl Prepared {
    /// `error` as the operation's error, naming the destination and its URL when the cluster
    /// could not be reached at all.
    fn failed(&self, error: ReconcileError) -> OperationError {
        if !error.unreachable() {
            return OperationError::Reconcile(error);
        }
        OperationError::Unreachable {
            cluster: self.app.spec.destination.cluster_segment().to_string(),
            server: self.server.clone(),
            source: Box::new(error),
        }
    }

    fn pass<'p>(
        &'p self,
        key: &'p str,
        known: Option<Known<'p>>,
        journal: Option<&'p dyn Journal>,
    ) -> Pass<'p> {
        Pass {
            app: key,
            spec: &self.app.spec,
            previous: &self.previous,
            target: &self.target,
            manifests: &self.manifests,
            known,
            journal,
        }
    }

    /// What earlier passes verified and the drift watches see, for an automatic pass.
    fn known(&self) -> Known<'_> {
        Known {
            verified: &self.verified,
            live: &self.live,
        }
    }
}

/// The runner's [`Journal`] for one pass of one App: the widened inventory is recorded as
/// the App's status and written to the store (and the App resource's status) before the pass
/// writes anything; a pass that then fails keeps it (see [`Journaled::previous`]).
struct Journaled<'r> {
    runner: &'r Runner,
    key: &'r str,
    /// The status with the widened inventory, once recorded.
    widened: parking_lot::Mutex<Option<AppStatus>>,
}

impl<'r> Journaled<'r> {
    fn new(runner: &'r Runner, key: &'r str) -> Journaled<'r> {
        Journaled {
            runner,
            key,
            widened: parking_lot::Mutex::new(None),
        }
    }

    /// The status a failed pass starts from: the widened one if the pass recorded it (what
    /// it may have applied stays prunable), else `previous`.
    fn previous(&self, previous: &AppStatus) -> AppStatus {
        self.widened
            .lock()
            .take()
            .unwrap_or_else(|| previous.clone())
    }
}

impl Journal for Journaled<'_> {
    fn widen<'a>(&'a self, status: &'a AppStatus) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            *self.widened.lock() = Some(status.clone());
            self.runner
                .record_durably(self.key, status.clone())
                .await
                .map_err(|e| e.to_string())
        })
    }

    fn fence(&self) -> Result<(), String> {
        self.runner.fence_app(self.key)
    }
}

/// Why an operation on an App failed.
#[derive(Debug, thiserror::Error)]
pub enum OperationError {
    /// No such App.
    #[error("no App {0}")]
    NotFound(String),
    /// The App's source has not produced a rendered revision yet.
    #[error("App {0} has no rendered revision yet")]
    NotRendered(String),
    /// The destination cluster cannot be resolved.
    #[error("destination: {0}")]
    Destination(ResolveError),
    /// The pipeline failed.
    #[error(transparent)]
    Reconcile(#[from] ReconcileError),
    /// A promotion was refused.
    #[error(transparent)]
    Promote(#[from] PromoteError),
    /// The store failed (promotion records).
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    /// The current status of an App another replica or operator reconciles could not be read.
    #[error(transparent)]
    Status(super::StatusError),
    /// The destination cluster did not answer.
    #[error("cluster {cluster} ({server}) is unreachable: {source}")]
    Unreachable {
        /// The cluster's name (`local`: the management cluster).
        cluster: String,
        /// Its API server's URL.
        server: String,
        /// What failed.
        source: Box<ReconcileError>,
    },
    /// The task running the operation panicked or was cancelled.
    #[error("operation task failed: {0}")]
    Task(String),
    /// The runner is stopping; the operation was cancelled.
    #[error("wardn is shutting down")]
    Stopped,
    /// Another replica of a sharded fleet owns the App's cluster (or no replica does).
    #[error("App {app} is reconciled by replica {owner}, not this one")]
    Elsewhere {
        /// The App's key.
        app: String,
        /// The owning replica (`none`: no live replica).
        owner: String,
    },
    /// The replica owning the App performed a handed-over decision and it failed, or no
    /// replica performed it in time.
    #[error("App {app}: replica {replica}: {message}")]
    Remote {
        /// The App's key.
        app: String,
        /// The replica that performed it (`none`: nobody claimed it).
        replica: String,
        /// What failed.
        message: String,
    },
    /// The App was removed while the operation ran; it was cancelled.
    #[error("App {0} was removed; the operation was cancelled")]
    Removed(String),
    /// An operator's server did not take the record of a promotion the operator performs.
    #[error("promotion of App {app}: the wardn server did not record it: {reason}")]
    Unrecorded {
        /// The target App's key.
        app: String,
        /// What failed.
        reason: String,
    },
}

impl From<super::StatusError> for OperationError {
    fn from(err: super::StatusError) -> OperationError {
        match err {
            super::StatusError::Store(e) => OperationError::Store(e),
            server => OperationError::Status(server),
        }
    }
}

/// Something to do with an App (see [`Runner::operate`]).
#[derive(Debug, Clone)]
pub enum Operation {
    /// Plan without deciding or applying (`…/diff`).
    Plan,
    /// One reconcile pass with this trigger.
    Pass(Trigger),
    /// A hard refresh: fetch the source now and dry-run every object (`…/refresh`).
    Refresh,
    /// Fetch the source now, as a push webhook asks: a new revision starts a pass as usual
    /// (a push another replica received, for an App this one owns).
    Poll,
    /// Approve the Held plan (checking the hash when given).
    Approve(Option<String>),
    /// Reject the Held plan (checking the hash when given).
    Reject(Option<String>),
    /// Promote the digests App `source` (a key) runs onto this App, as promotion `id`, and
    /// run a manual pass (Held when the App requires approval).
    Promote {
        /// The source App's key.
        source: String,
        /// The promotion record's id.
        id: String,
    },
    /// Pin these images (a rollback to an earlier promotion), or with `None` unpin, and run a
    /// manual pass.
    Pin(Option<Box<PromotedFrom>>),
}

/// What an [`Operation`] produced.
#[derive(Debug)]
pub enum Completed {
    /// The App's new status.
    Status(AppStatus),
    /// The plan.
    Plan(Plan),
}
