//! Promotions on the runner: read the digests a source App's workloads run, pin them on a
//! target App (kept in its status, hence in the store, until the next promotion or an
//! unpin), and run the target's manual pass: Held when it requires approval, applied
//! otherwise. Every pass of a pinned App renders with the pins applied (`pins`).
//! [`Runner::promote_recorded`] keeps a record of each promotion and rollback in the store
//! and audits it; [`Runner::auto_promote`] promotes into the Apps that ask for it
//! (`spec.promotion.autoPromote`) once their upstream's soak time is met.

use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;

use super::operations::{Completed, Operation, OperationError};
use super::pins::{pinned, pins};
use super::status_cell::StatusCell;
use super::{FindError, Runner, StatusError};
use crate::app::promotion::{PinnedImage, PromotedFrom};
use crate::app::{App, AppStatus, Phase};
use crate::apply::health;
use crate::notify::Event;
use crate::object::ObjectRef;
use crate::object::kinds::Resolver;
use crate::reconcile::decide::Trigger;
use crate::reconcile::error::ReconcileError;
use crate::reconcile::pass::Manifests;
use crate::reconcile::promotion::{self, PromoteError};
use crate::render::pin_images;
use crate::store::promotions::PromotionRecord;
use crate::time::now_rfc3339;

/// A promotion record with the images it pinned.
pub type Promotion = PromotionRecord<Vec<PinnedImage>>;

/// How often [`Runner::auto_promote`] looks for Apps to promote.
pub(super) const AUTO_PROMOTE_EVERY: Duration = Duration::from_secs(1);

/// How long after a refused automatic promotion the same source revision is tried again
/// (a rollout may have been finishing).
const AUTO_PROMOTE_RETRY: Duration = Duration::from_secs(30);

/// The actor of automatic promotions in records and the audit log.
pub const AUTO_PROMOTE_ACTOR: &str = "wardn/autoPromote";

/// What a recorded promotion pins.
#[derive(Debug, Clone)]
pub enum PinRequest {
    /// What App `source` (a key) runs now.
    Promote {
        /// The source App's key.
        source: String,
    },
    /// The images of an earlier promotion (a rollback).
    Rollback(PromotedFrom),
}

/// `digest=…` words for the audit log.
fn pinned_words(images: &[PinnedImage]) -> String {
    images
        .iter()
        .map(PinnedImage::pinned)
        .collect::<Vec<_>>()
        .join(",")
}

/// The error of a promotion `record` its operator's server did not take, for its reason.
fn unrecorded(record: &Promotion) -> impl FnOnce(String) -> OperationError + '_ {
    |reason| OperationError::Unrecorded {
        app: record.target_key.clone(),
        reason,
    }
}

/// `CLUSTER/NAME` of `app` as the API addresses it (see [`Runner::address`]).
fn address_of(app: &App) -> String {
    format!(
        "{}/{}",
        app.spec.destination.cluster_segment(),
        crate::app::key::app_name(app)
    )
}

impl Runner {
    /// `CLUSTER/NAME` of App `key` as the API addresses it (`CLUSTER/NAME:TARGET` for one
    /// target of an App with `spec.targets`); audit entries about the App name it.
    pub fn address(&self, key: &str) -> String {
        self.app(key)
            .map(|app| address_of(&app))
            .unwrap_or_else(|| key.to_string())
    }

    /// Runs `request` on App `target` for `actor` and records it: a promotion record in the
    /// store (inserted first, its id in the target's `status.promotedFrom`, then finished
    /// with the target's phase or the refusal) and an audit entry (`app.promote` or
    /// `app.rollback`) with the digests. Returns the record and the target's status.
    pub async fn promote_recorded(
        self: &Arc<Self>,
        actor: &str,
        target: &str,
        request: PinRequest,
    ) -> Result<(Promotion, AppStatus), OperationError> {
        let (action, source, revision, images) = match &request {
            PinRequest::Promote { source } => (
                "app.promote",
                // An operator's source may be another operator's App, known to the server.
                match self.promotion_source(source).await {
                    Ok((app, _)) => address_of(&app),
                    Err(_) => source.clone(),
                },
                String::new(),
                Vec::new(),
            ),
            PinRequest::Rollback(earlier) => (
                "app.rollback",
                format!("{}/{}", earlier.cluster, earlier.app),
                earlier.revision.clone(),
                earlier.images.clone(),
            ),
        };
        let mut record = Promotion {
            id: 0,
            target_key: target.to_string(),
            target: self.address(target),
            source,
            revision,
            images,
            actor: actor.to_string(),
            created_at: now_rfc3339(),
            plan_hash: String::new(),
            outcome: "pending".into(),
        };
        record.id = self.insert_promotion(&record).await?;
        let id = record.id.to_string();
        let operation = match request {
            PinRequest::Promote { source } => Operation::Promote {
                source,
                id: id.clone(),
            },
            PinRequest::Rollback(earlier) => Operation::Pin(Some(Box::new(PromotedFrom {
                promotion: Some(id.clone()),
                ..earlier
            }))),
        };
        let status = self
            .operate(target, operation)
            .await
            .and_then(|done| match done {
                Completed::Status(status) => Ok(status),
                Completed::Plan(_) => {
                    Err(OperationError::Task("a promotion answered a plan".into()))
                }
            });
        match &status {
            Ok(status) => {
                if let Some(promoted) = &status.promoted_from {
                    record.revision = promoted.revision.clone();
                    record.images = promoted.images.clone();
                }
                record.plan_hash = status.plan_hash.clone().unwrap_or_default();
                record.outcome = status
                    .phase
                    .map(|p| format!("{p:?}"))
                    .unwrap_or_else(|| "unknown".into());
            }
            Err(e) => {
                // Pinned, but the pass after it failed: the pins stay, as after a Git change
                // whose pass failed, and the next pass retries them.
                let pinned = self
                    .status(target)
                    .and_then(|s| s.promoted_from)
                    .filter(|p| p.promotion.as_deref() == Some(id.as_str()));
                record.outcome = match pinned {
                    Some(promoted) => {
                        record.revision = promoted.revision;
                        record.images = promoted.images;
                        format!("pinned; pass failed: {e}")
                    }
                    None => format!("refused: {e}"),
                };
            }
        }
        let audit = format!(
            "{} id={} from={} revision={} images={}",
            if status.is_ok() { "success" } else { "refused" },
            record.id,
            record.source,
            record.revision,
            pinned_words(&record.images),
        );
        let audit = match &status {
            Ok(_) => format!("{audit} outcome={}", record.outcome),
            Err(e) => format!("{audit}: {e}"),
        };
        self.finish_promotion(&record, action, &audit).await?;
        let status = status?;
        self.notify_current(target, Event::Promoted);
        Ok((record, status))
    }

    /// Stores the pending promotion `record` where this process keeps promotion records: its
    /// store, or (an operator, performing an automatic promotion) its server's, so that every
    /// promotion of a split install is in one history. Its id; 0 with neither (tests).
    async fn insert_promotion(&self, record: &Promotion) -> Result<i64, OperationError> {
        if let Some(store) = &self.store {
            return Ok(store.insert_promotion(record).await?);
        }
        self.promotion_to_server(record)
            .await
            .map(|id| id.unwrap_or(0))
            .map_err(unrecorded(record))
    }

    /// Finishes promotion `record` where [`Runner::insert_promotion`] stored it and writes
    /// its audit entry (`action`, outcome text `audit`).
    async fn finish_promotion(
        &self,
        record: &Promotion,
        action: &str,
        audit: &str,
    ) -> Result<(), OperationError> {
        if let Some(store) = &self.store {
            let finished = store.finish_promotion(record).await;
            store
                .record_audit(&record.actor, action, &record.target, audit, &now_rfc3339())
                .await;
            return Ok(finished?);
        }
        self.finished_promotion_to_server(record, audit)
            .await
            .map_err(unrecorded(record))
    }

    /// Records on App `key`'s promotion record (when its Held plan is the promotion's) that
    /// the plan was `verdict` (`Approved`, `Rejected`), with the phase it ended in.
    pub(super) async fn promotion_decided(&self, key: &str, verdict: &str) {
        if let Some(status) = self.status(key) {
            self.record_decision(key, &status, verdict).await;
        }
    }

    /// Records on the promotion record of App `key`'s decided plan, when it was a
    /// promotion's, that it was `verdict`, with the phase `status` (the App's after the
    /// decision) ended in: in the store of this process, which decided it, or of the server
    /// that handed the decision to an operator (which holds no store).
    pub(super) async fn record_decision(&self, key: &str, status: &AppStatus, verdict: &str) {
        let Some(store) = &self.store else { return };
        let id = status
            .promoted_from
            .as_ref()
            .and_then(|p| p.promotion.as_deref())
            .and_then(|id| id.parse::<i64>().ok());
        let Some(id) = id else { return };
        let phase = status.phase.map(|p| format!("{p:?}")).unwrap_or_default();
        if let Err(e) = store
            .decide_promotion(id, &format!("{verdict}: {phase}"))
            .await
        {
            tracing::warn!(app = %key, id, error = %e, "cannot record the promotion's approval");
        }
    }

    /// Promotes what App `source` runs onto App `target` as promotion `id`: refuses a source
    /// the target does not take promotions from (`spec.promotion.from`), one that is not
    /// Synced and Healthy or not for the target's soak time (`requireHealthyFor`), reads the
    /// digests of its workloads' Pods, and pins them on `target` ([`Runner::pin`]).
    pub(super) async fn promote(
        &self,
        source: &str,
        target: &str,
        id: &str,
    ) -> Result<AppStatus, OperationError> {
        let missing = |key: &str| OperationError::NotFound(key.to_string());
        let policy = self
            .app(target)
            .ok_or_else(|| missing(target))?
            .spec
            .promotion
            .unwrap_or_default();
        let (app, manifests) = self.promotion_source(source).await?;
        let (cluster, name) = (
            app.spec.destination.cluster_segment().to_string(),
            crate::app::key::app_name(&app),
        );
        if !policy.accepts(&cluster, &name) {
            return Err(PromoteError::NotUpstream {
                target: self.address(target),
                from: policy.from.unwrap_or_default(),
            }
            .into());
        }
        let status = self
            .current_status(source)
            .await?
            .ok_or_else(|| missing(source))?;
        promotion::check_source(source, &status)?;
        let soak = policy.soak().map_err(PromoteError::from)?;
        promotion::check_soak(source, &status, soak, Timestamp::now())?;
        let (destination, _, _) = self
            .target(&app)
            .await
            .map_err(OperationError::Destination)?;
        let objects = match manifests {
            Some(manifests) => pinned(manifests, status.promoted_from.as_ref())
                .and_then(|m| m.objects.unpack())
                .map_err(ReconcileError::from)?,
            // Not rendered here (in a sharded fleet, another replica loads the source): its
            // workloads as its cluster runs them, found through its inventory (a Synced source
            // runs what it renders, pins included).
            None => {
                let workloads: Vec<ObjectRef> = status
                    .inventory
                    .iter()
                    .filter(|o| promotion::WORKLOAD_KINDS.contains(&o.kind.as_str()))
                    .cloned()
                    .collect();
                let mut resolver =
                    Resolver::shared(destination.client.clone(), destination.kinds.clone());
                health::live(&mut resolver, &workloads)
                    .await
                    .map_err(ReconcileError::from)?
            }
        };
        let workloads = promotion::workloads(&objects, &app.spec.destination.namespace);
        let images = promotion::running_images(&destination.client, source, workloads).await?;
        let promoted = PromotedFrom {
            app: name,
            cluster,
            revision: status
                .synced_revision
                .or(status.revision)
                .unwrap_or_default(),
            images,
            promotion: Some(id.to_string()),
        };
        self.pin(target, Some(promoted)).await
    }

    /// App `source` of a promotion, with its rendered manifests when this process renders it:
    /// a managed App, else (on an operator) the App as the operator reconciling it reported it
    /// to their server, whose statuses the server holds too ([`Runner::current_status`]).
    async fn promotion_source(
        &self,
        source: &str,
    ) -> Result<(App, Option<Arc<Manifests>>), OperationError> {
        let managed = self
            .apps
            .lock()
            .get(source)
            .map(|record| (record.app.clone(), record.manifests.clone()));
        if let Some(managed) = managed {
            return Ok(managed);
        }
        match self.app_from_server(source).await {
            Ok(Some(app)) => Ok((app, None)),
            Ok(None) => Err(OperationError::NotFound(source.to_string())),
            Err(reason) => Err(StatusError::ServerApp {
                key: source.to_string(),
                reason,
            }
            .into()),
        }
    }

    /// Pins `promoted`'s images on App `key` (refused when its render has none of them), or
    /// with `None` removes the pins, then runs a manual pass with them.
    pub(super) async fn pin(
        &self,
        key: &str,
        promoted: Option<PromotedFrom>,
    ) -> Result<AppStatus, OperationError> {
        let _guard = self.lock_app(key).await?;
        let (status, manifests) = {
            let apps = self.apps.lock();
            let record = apps
                .get(key)
                .ok_or_else(|| OperationError::NotFound(key.to_string()))?;
            (record.status.clone(), record.manifests.clone())
        };
        let mut status = status.read(key);
        if let Some(promoted) = &promoted {
            let manifests =
                manifests.ok_or_else(|| OperationError::NotRendered(key.to_string()))?;
            let mut objects = manifests.objects.unpack().map_err(ReconcileError::from)?;
            if pin_images(&mut objects, &pins(promoted)) == 0 {
                return Err(PromoteError::NotRendered {
                    target: key.to_string(),
                    repositories: promoted
                        .images
                        .iter()
                        .map(|i| i.repository.clone())
                        .collect(),
                }
                .into());
            }
        }
        status.promoted_from = promoted;
        self.record(key, status);
        let trigger = Trigger::Manual {
            override_windows: false,
        };
        self.pass_locked(key, &trigger, false).await
    }

    /// The Apps with `spec.promotion.autoPromote` whose upstream runs, Synced and Healthy for
    /// the soak time, a revision they were not promoted from yet: `(target, source, attempt)`.
    /// Each source revision is tried once per target, again [`AUTO_PROMOTE_RETRY`] after a
    /// refusal (each refusal is in the history). Only targets of the clusters this process
    /// owns are considered: in a sharded fleet each target is promoted by its owner alone,
    /// whichever replica's cluster its source deploys to.
    async fn due_promotions(&self, now: Timestamp) -> Vec<(String, String, String)> {
        let candidates: Vec<(String, crate::app::promotion::PromotionPolicy, StatusCell)> = {
            let apps = self.apps.lock();
            // Scanned every second under the Apps lock: the policy (a field) is looked at
            // before ownership (a fleet lookup), which most Apps of a large fleet fail.
            apps.iter()
                .filter_map(|(key, r)| {
                    let policy = r.app.spec.promotion.as_ref().filter(|p| p.auto_promote)?;
                    (r.operator.is_none()
                        && self.owns_cluster(r.app.spec.destination.cluster_segment()))
                    .then(|| (key.clone(), policy.clone(), r.status.clone()))
                })
                .collect()
        };
        let mut due = Vec::new();
        for (target, policy, target_status) in candidates {
            let target_status = target_status.read(&target);
            let Ok(Some((cluster, name))) = policy.upstream() else {
                continue;
            };
            let source = match self.find(cluster, name, None) {
                Ok(source) => source,
                // On an operator, the upstream may be among another operator's Apps.
                Err(FindError::NotFound) => match self.find_on_server(cluster, name).await {
                    Ok(Some(source)) => source,
                    Ok(None) => continue,
                    Err(e) => {
                        tracing::warn!(app = %target, error = %e, "cannot look the upstream up on the wardn server; automatic promotion waits");
                        continue;
                    }
                },
                Err(FindError::Ambiguous(_)) => continue,
            };
            let status = match self.current_status(&source).await {
                Ok(Some(status)) => status,
                Ok(None) => continue,
                Err(e) => {
                    tracing::warn!(app = %target, source = %source, error = %e, "cannot read the upstream's status; automatic promotion waits");
                    continue;
                }
            };
            let Some(revision) = status.synced_revision.clone() else {
                continue;
            };
            let source_cluster = self.address(&source);
            let promoted = target_status.promoted_from.as_ref().is_some_and(|p| {
                p.revision == revision && format!("{}/{}", p.cluster, p.app) == source_cluster
            });
            let attempt = format!("{source}@{revision}");
            let ready = promotion::check_source(&source, &status).is_ok()
                && policy
                    .soak()
                    .is_ok_and(|soak| promotion::check_soak(&source, &status, soak, now).is_ok());
            if promoted || !ready || target_status.phase == Some(Phase::Progressing) {
                continue;
            }
            let mut attempted = self.auto_attempts.lock();
            if attempted.get(&target) == Some(&attempt) {
                continue;
            }
            attempted.insert(target.clone(), attempt.clone());
            due.push((target, source, attempt));
        }
        due
    }

    /// Every [`AUTO_PROMOTE_EVERY`], promotes into the Apps that ask for it
    /// ([`Runner::due_promotions`]), recorded and audited as [`AUTO_PROMOTE_ACTOR`].
    pub(super) async fn auto_promote(self: Arc<Self>) {
        let mut stopping = self.stopping.subscribe();
        loop {
            tokio::select! {
                _ = tokio::time::sleep(AUTO_PROMOTE_EVERY) => {}
                _ = stopping.wait_for(|stopped| *stopped) => return,
            }
            for (target, source, attempt) in self.due_promotions(Timestamp::now()).await {
                let this = Arc::clone(&self);
                tokio::spawn(async move {
                    let request = PinRequest::Promote { source };
                    match this
                        .promote_recorded(AUTO_PROMOTE_ACTOR, &target, request)
                        .await
                    {
                        Ok((record, _)) => tracing::info!(
                            app = %target, id = record.id, outcome = %record.outcome,
                            "promoted automatically"
                        ),
                        Err(e) => {
                            tracing::warn!(app = %target, error = %e, "automatic promotion refused");
                            tokio::time::sleep(AUTO_PROMOTE_RETRY).await;
                            let mut attempted = this.auto_attempts.lock();
                            if attempted.get(&target) == Some(&attempt) {
                                attempted.remove(&target);
                            }
                        }
                    }
                });
            }
        }
    }
}
