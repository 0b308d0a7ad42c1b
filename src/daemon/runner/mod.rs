//! The App runner of `wardn serve`: manages a dynamic set of Apps (from `--apps` files and App
//! custom resources), subscribes each App's source (Git through the poller, directories through
//! a watch), renders every new snapshot through the render cache, and reconciles the App on its
//! destination cluster through the scheduler, one pass per App at a time.
//!
//! Everything the runner keeps about one App is one [`AppRecord`], in one map. By concern:
//! - [`app_set`]: the App set and source subscriptions ([`Runner::upsert`] adds an App or
//!   applies a new version of it; [`Runner::remove`] stops managing it: its source is
//!   unsubscribed and its status dropped, while the objects it applied stay on the cluster, as
//!   Argo CD does for an Application deleted without its finalizer);
//! - [`files`] and [`resources`]: where Apps come from (`--apps DIR`, App custom resources);
//! - [`intake`]: source updates, rendered through the render cache;
//! - [`operations`]: passes, plans, refreshes, approvals and rejections;
//! - [`objects`]: the live health of each object an App manages;
//! - [`promotion`]: promotions (digests read from a source App's Pods, pinned on a target),
//!   rollbacks, unpins, their records and automatic promotions; [`pins`]: the pinned images
//!   applied to an App's rendered manifests;
//! - [`publish`]: statuses to the store, App resources' status and Events.

mod app_set;
mod files;
mod intake;
mod objects;
mod operated;
mod operations;
mod pins;
mod promotion;
mod publish;
mod pushes;
mod report;
mod resources;
mod server_routes;
mod shards;
mod status_cell;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::value::RawValue;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::DropGuard;

use crate::app::{App, AppStatus, Phase};
use crate::clusters::resolve::Resolver;
use crate::diff::known::Verified;
use crate::notify::{Event, Notification, Notifier};
use crate::object::ObjectRef;
use crate::object::kinds::KindCache;
use crate::reconcile::pass::{Manifests, Options};
use crate::reconcile::scheduler::Scheduler;
use crate::reconcile::upkeep::{Scheduling, Upkeep};
use crate::sources::directory::DirectoryWatch;
use crate::sources::poller::Poller;
use crate::sources::render_cache::RenderCache;
use crate::sources::status::SourceUpdate;
use crate::sources::url::SourceKey;
use crate::store::{Store, StoreError};
pub use app_set::{FindError, RunnerError, Upserted};
pub use objects::ObjectHealth;
pub use operated::OperatorShare;
pub use operations::server_requests;
pub use operations::{Completed, Operation, OperationError};
pub use promotion::{AUTO_PROMOTE_ACTOR, PinRequest, Promotion};
use publish::{Change, PublishError, Publisher};
pub use pushes::Pushes;
pub use server_routes::{
    APPS_ROUTE, FinishedPromotion, HEARTBEAT_ROUTE, Heartbeat, MAX_STATUSES_PER_PAGE, NewPromotion,
    PROMOTION_ROUTE, PROMOTIONS_ROUTE, REPORTED_APP_ROUTE, RemovedApp, ReportedApp,
    ReportedAppQuery, ReportedApps, ReportedStatus, STATUS_ROUTE, StatusesQuery, StoredStatus,
    StoredStatuses, is_report_digest, report_digest,
};
pub use shards::ShardEntry;
pub use status_cell::StatusCell;

/// Where an App comes from. When a file and a custom resource define the same
/// `namespace/name`, the custom resource wins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// A file in `--apps DIR`.
    File,
    /// An App custom resource in the management cluster.
    Resource,
    /// An operator's report to this `--role server` process (see [`operated`]).
    Operator,
}

/// Everything the runner keeps about one managed App.
struct AppRecord {
    /// The App's latest version.
    app: App,
    origin: Origin,
    /// The source the App is subscribed to; updates of any other source are stale.
    source_key: SourceKey,
    /// The directory watch of a Directory source (dropping it stops the watch).
    watch: Option<DirectoryWatch>,
    status: StatusCell,
    /// The manifests of the latest rendered revision. Shared with the passes that use them:
    /// cloning the rendered objects for every pass showed up as a tenth of a no-op pass's CPU.
    manifests: Option<Arc<Manifests>>,
    /// The objects earlier passes saw agree with their rendered form (lets automatic passes
    /// skip their dry-runs while the drift watches show them unchanged); `None` before the
    /// first pass.
    verified: Option<Arc<Verified>>,
    /// Serialises the App's passes, approvals and rejections; made by the first of them.
    operation: Option<Arc<tokio::sync::Mutex<()>>>,
    /// Cancels the App's operation in flight when the record is dropped (the App removed);
    /// made by the first operation. A token, not a watch channel: it takes a third of the
    /// memory.
    removed: Option<DropGuard>,
    /// Whether this process follows the App's source, renders and plans it: always unless
    /// sharded, where only the Apps routed to this replica are loaded (see [`shards`]).
    loaded: bool,
    /// The operator that reconciles the App, for an App an operator reported to this
    /// `--role server` process (see [`operated`]); `None`: this process reconciles it.
    operator: Option<Box<str>>,
}

impl AppRecord {
    /// The lock serialising the App's operations, made on first use: a sharded replica holds
    /// the records of the whole fleet and operates on its own share only, so the lock and
    /// cancellation token of every other App (two allocations each, about 2 MiB at 10,000
    /// Apps) were never used.
    fn operation(&mut self) -> Arc<tokio::sync::Mutex<()>> {
        Arc::clone(self.operation.get_or_insert_default())
    }

    /// The token cancelled when the record is dropped, made on first use (see
    /// [`AppRecord::operation`]).
    fn removed(&mut self) -> tokio_util::sync::CancellationToken {
        self.removed
            .get_or_insert_with(|| tokio_util::sync::CancellationToken::new().drop_guard())
            .token()
            .clone()
    }
}

/// Where the runner's notifications go.
struct Notifications {
    notifier: Notifier,
    /// The API's public URL, for approve links.
    public_url: Option<String>,
}

/// The notification a status change calls for: entering Held (or a new plan Held),
/// Degraded or Failed.
fn notable(previous: &AppStatus, status: &AppStatus) -> Option<Event> {
    let entered = |phase: Phase| status.phase == Some(phase) && previous.phase != Some(phase);
    if status.phase == Some(Phase::Held)
        && (entered(Phase::Held) || previous.plan_hash != status.plan_hash)
    {
        return Some(Event::Held);
    }
    if entered(Phase::Degraded) {
        return Some(Event::Degraded);
    }
    entered(Phase::Failed).then_some(Event::Failed)
}

/// Drives a dynamic set of Apps from their sources to their clusters.
pub struct Runner {
    /// The managed Apps by key. Boxed: a record is about 900 bytes, and inline in the map's
    /// half-filled nodes each took twice that, on every replica for every App of the fleet.
    apps: Mutex<BTreeMap<String, Box<AppRecord>>>,
    /// Statuses stored by a previous run, taken by their App when it is added.
    restored: Mutex<HashMap<String, StatusCell>>,
    cache: RenderCache,
    resolver: Resolver,
    scheduler: Scheduler<String>,
    upkeep: Upkeep,
    options: Options,
    poller: Poller,
    /// Resolved kinds per destination cluster, shared by the Apps deploying there.
    kinds: Mutex<HashMap<String, KindCache>>,
    /// How many passes run at once.
    workers: usize,
    tasks: Mutex<Vec<JoinHandle<()>>>,
    stopping: watch::Sender<bool>,
    file_errors: Mutex<Vec<String>>,
    store: Option<Store>,
    publisher: Publisher,
    /// Where notifications go (set once by the daemon; none in tests without it).
    notifications: std::sync::OnceLock<Notifications>,
    /// The `source@revision` each autoPromote App was last promoted from automatically (each
    /// is tried once).
    auto_attempts: Mutex<HashMap<String, String>>,
    /// The fleet membership when this process is one replica of several (`--shards auto`):
    /// only the Apps of the clusters it owns are passed (see [`shards`]).
    sharding: std::sync::OnceLock<Arc<crate::shard::Membership>>,
    /// Apps whose pass or status was dropped while this replica did not own their cluster:
    /// passed again once it does (see [`shards`]).
    parked: Mutex<std::collections::BTreeSet<String>>,
    /// When sharded, the destination clusters whose Apps' statuses this replica holds: those
    /// it owns or loads. The others' statuses are read from the store when asked for (see
    /// [`Runner::current_status`]), so a replica's memory does not grow with the fleet's
    /// statuses.
    held: Mutex<std::collections::BTreeSet<String>>,
    /// An operator's server (see [`report`]): it takes the operator's statuses, and the
    /// statuses of clusters taken over (or of every App, at an unsharded start) are read back
    /// from it, as a replica with a store reads them from the store.
    server: std::sync::OnceLock<crate::server_link::ServerLink>,
    /// What an operator's server took of its reports of Apps (see [`report`]).
    reports: report::ReportCounts,
    /// Moves whenever an App is added, replaced or removed: an operator encodes its report of
    /// Apps again only when it moved or its share of the clusters changed (see [`report`]).
    app_changes: std::sync::atomic::AtomicU64,
}

impl Runner {
    /// An empty runner deploying through `resolver` with the pipeline `options`; Git sources
    /// are polled by `poller`, and directory watches send into its channel. Statuses are
    /// written to `store` on every change (see [`Runner::restore`]). Resyncs, retries and
    /// drift watches follow `scheduling`. Must be called inside a tokio runtime.
    pub fn new(
        resolver: Resolver,
        options: Options,
        poller: Poller,
        store: Option<Store>,
        scheduling: Scheduling,
    ) -> Arc<Runner> {
        let scheduler = Scheduler::new();
        let workers = scheduling.workers.max(1);
        let upkeep = Upkeep::new(
            scheduler.clone(),
            Arc::clone(resolver.throttles()),
            scheduling,
        );
        Arc::new(Runner {
            apps: Mutex::new(BTreeMap::new()),
            restored: Mutex::new(HashMap::new()),
            cache: RenderCache::new(),
            resolver,
            scheduler,
            upkeep,
            options,
            poller,
            kinds: Mutex::new(HashMap::new()),
            workers,
            tasks: Mutex::new(Vec::new()),
            stopping: watch::Sender::new(false),
            file_errors: Mutex::new(Vec::new()),
            publisher: Publisher::start(store.clone()),
            store,
            auto_attempts: Mutex::new(HashMap::new()),
            notifications: std::sync::OnceLock::new(),
            sharding: std::sync::OnceLock::new(),
            parked: Mutex::new(std::collections::BTreeSet::new()),
            held: Mutex::new(std::collections::BTreeSet::new()),
            server: std::sync::OnceLock::new(),
            reports: report::ReportCounts::default(),
            app_changes: std::sync::atomic::AtomicU64::new(0),
        })
    }

    /// Starts the update loop (reading `updates`, the poller's channel) and the workers.
    pub fn start(self: &Arc<Self>, updates: tokio::sync::mpsc::UnboundedReceiver<SourceUpdate>) {
        let this = Arc::clone(self);
        let update_loop = tokio::spawn(async move { this.receive(updates).await });
        let this = Arc::clone(self);
        let workers = tokio::spawn(async move {
            let runner = Arc::clone(&this);
            this.scheduler
                .run(this.workers, move |key| {
                    let runner = Arc::clone(&runner);
                    runner.reconcile(key)
                })
                .await;
        });
        let promotions = tokio::spawn(Arc::clone(self).auto_promote());
        self.tasks.lock().extend([update_loop, workers, promotions]);
    }

    /// Loads the statuses stored by a previous run, so the API answers with them and a Held
    /// plan stays Held (with its plan hash) until approved. Call before adding Apps; returns
    /// how many were loaded. A sharded runner loads nothing here: it reads the statuses of
    /// the clusters it comes to own or load as it follows the fleet (see [`shards`]).
    pub async fn restore(&self) -> Result<usize, StoreError> {
        let Some(store) = self
            .store
            .as_ref()
            .filter(|_| self.sharding.get().is_none())
        else {
            return Ok(0);
        };
        store
            .each_app_status::<Box<RawValue>>(None, |record| {
                let cell = StatusCell::stored(record.status);
                self.restored.lock().insert(record.key, cell);
            })
            .await
    }

    /// Stops like [`Runner::stop`], then waits until every status change is stored.
    pub async fn shutdown(&self) {
        self.stop();
        self.publisher.flush().await;
    }

    /// Stops the workers, the update loop and the source subscriptions, and cancels the
    /// operations in flight at their next await point (as a process exit would).
    pub fn stop(&self) {
        self.stopping.send_replace(true);
        self.scheduler.close();
        for task in self.tasks.lock().drain(..) {
            task.abort();
        }
        let keys: Vec<String> = self.apps.lock().keys().cloned().collect();
        for key in &keys {
            self.poller.unsubscribe(key);
        }
        self.apps.lock().clear();
    }

    /// The Prometheus text of `/metrics`: passes, retries, drift, queue depths, cluster
    /// requests.
    pub fn metrics_text(&self) -> String {
        let mut text = self.upkeep.metrics_text();
        let mut runner = format!(
            "# HELP wardn_status_queue_depth App status changes waiting to be written to the store and App resources.\n\
             # TYPE wardn_status_queue_depth gauge\n\
             wardn_status_queue_depth {}\n",
            self.publisher.depth()
        );
        if self.server.get().is_some() {
            runner.push_str(&format!(
                "# HELP wardn_server_reports_refused Reports of this operator (its Apps, their statuses) its server did not take.\n\
                 # TYPE wardn_server_reports_refused counter\n\
                 wardn_server_reports_refused_total {}\n",
                self.publisher.refused()
            ));
            runner.push_str(&self.reports.metrics_text());
        }
        runner.push_str(&self.shard_metrics());
        // The runner's gauges go before the OpenMetrics end marker, if there is one.
        match text.rfind("# EOF") {
            Some(end) => text.insert_str(end, &runner),
            None => text.push_str(&runner),
        }
        text
    }

    /// The problems of the last `--apps` reload (invalid files, duplicates, sources that
    /// could not be started), for the API.
    pub fn file_errors(&self) -> Vec<String> {
        self.file_errors.lock().clone()
    }

    /// The keys (`namespace/name`) of the managed Apps, sorted.
    pub fn keys(&self) -> Vec<String> {
        self.apps.lock().keys().cloned().collect()
    }

    /// The managed Apps, by `namespace/name` (a snapshot).
    pub fn apps(&self) -> BTreeMap<String, App> {
        self.apps
            .lock()
            .iter()
            .map(|(k, r)| (k.clone(), r.app.clone()))
            .collect()
    }

    /// The latest version of App `key`.
    pub fn app(&self, key: &str) -> Option<App> {
        self.apps.lock().get(key).map(|r| r.app.clone())
    }

    /// Where App `key` comes from.
    pub fn origin(&self, key: &str) -> Option<Origin> {
        self.apps.lock().get(key).map(|r| r.origin)
    }

    /// The status of App `key` (`namespace/name`) as this process holds it: every App's
    /// unless sharded, where it holds only those of the clusters it owns or loads (the others
    /// read as empty here; [`Runner::current_status`] reads them from the store, or an
    /// operator's server).
    pub fn status(&self, key: &str) -> Option<AppStatus> {
        // Cloned under the lock, parsed (if stored text) outside it.
        let cell = self.apps.lock().get(key).map(|r| r.status.clone());
        cell.map(|cell| cell.read(key))
    }

    /// The current status of App `key`, wherever it is held: this process's own (see
    /// [`Runner::status`]), or, for an App of a cluster another replica owns (or an App an
    /// operator reconciles), the status its owner stored: in the store, or, on a sharded
    /// operator, on its server. `None` when no such App is managed.
    pub async fn current_status(&self, key: &str) -> Result<Option<AppStatus>, StatusError> {
        let (known, held, cell) = {
            let apps = self.apps.lock();
            match apps.get(key) {
                Some(record) => {
                    let held = record.operator.is_none()
                        && self.status_held(record.app.spec.destination.cluster_segment());
                    (true, held, record.status.clone())
                }
                // An operator's server knows the Apps of every operator: another's may be the
                // source of a promotion here.
                None if self.store.is_none() && self.server.get().is_some() => {
                    (false, false, StatusCell::default())
                }
                None => return Ok(None),
            }
        };
        if held {
            return Ok(Some(cell.read(key)));
        }
        let stored = match (&self.store, self.server.get()) {
            (Some(store), _) => store
                .app_status::<Box<RawValue>>(key)
                .await?
                .map(|record| record.status),
            // A sharded operator: its server stores the statuses of the other operators' Apps.
            (None, Some(_)) => {
                self.status_from_server(key)
                    .await
                    .map_err(|reason| StatusError::Server {
                        key: key.to_string(),
                        reason,
                    })?
            }
            (None, None) => return Ok(Some(cell.read(key))),
        };
        if !known && stored.is_none() {
            return Ok(None);
        }
        Ok(Some(
            stored.map(StatusCell::stored).unwrap_or_default().read(key),
        ))
    }

    /// The current status of every managed App, by key (see [`Runner::current_status`]), as
    /// text to parse one at a time ([`StatusCell::read`]): the statuses of other replicas'
    /// Apps in one read of the store. Parsed all at once, a fleet's statuses took about 5 KB
    /// each (50 MiB at 10,000 Apps) for every `GET /api/v1/apps`.
    pub async fn current_statuses(&self) -> Result<BTreeMap<String, StatusCell>, StoreError> {
        let mut statuses = BTreeMap::new();
        let mut elsewhere = std::collections::BTreeSet::new();
        {
            let apps = self.apps.lock();
            // Under the Apps lock: a cluster leaves the held set before its statuses are
            // dropped, which takes that lock, so every cluster of this copy has its statuses.
            let held = self.held_clusters();
            for (key, record) in apps.iter() {
                let cluster = record.app.spec.destination.cluster_segment();
                if record.operator.is_none()
                    && held.as_ref().is_none_or(|held| held.contains(cluster))
                {
                    statuses.insert(key.clone(), record.status.clone());
                } else {
                    elsewhere.insert(key.clone());
                }
            }
        }
        if let Some(store) = self.store.as_ref().filter(|_| !elsewhere.is_empty()) {
            store
                .each_app_status::<Box<RawValue>>(None, |record| {
                    if elsewhere.remove(&record.key) {
                        statuses.insert(record.key, StatusCell::stored(record.status));
                    }
                })
                .await?;
        }
        // Apps of other replicas with no stored status yet.
        statuses.extend(
            elsewhere
                .into_iter()
                .map(|key| (key, StatusCell::default())),
        );
        Ok(statuses)
    }

    /// The objects App `key` manages (its current status's inventory).
    pub async fn inventory(&self, key: &str) -> Result<Vec<ObjectRef>, StatusError> {
        Ok(self
            .current_status(key)
            .await?
            .map(|status| status.inventory)
            .unwrap_or_default())
    }

    /// Records `status` for `key` (if the App is still managed), logging a phase change and
    /// publishing any change.
    fn record(&self, key: &str, status: AppStatus) {
        if let Some(change) = self.recorded(key, status) {
            self.publisher.send(change);
        }
    }

    /// Records `status` for `key` like [`Runner::record`], and returns once it is written to
    /// the store (and, for an App resource, its status): the pass that widened its inventory
    /// waits for this before its first write.
    async fn record_durably(&self, key: &str, status: AppStatus) -> Result<(), PublishError> {
        match self.recorded(key, status) {
            Some(change) => self.publisher.send_and_wait(change).await,
            // Unchanged: the status already queued is the one to wait for.
            None => {
                self.publisher.flush().await;
                Ok(())
            }
        }
    }

    /// Takes `status` as App `key`'s status; the change to publish, if it changed.
    fn recorded(&self, key: &str, mut status: AppStatus) -> Option<Change> {
        let mut apps = self.apps.lock();
        let record = apps.get_mut(key)?;
        // An operator reconciles the App: its statuses are the operator's to write.
        if record.operator.is_some() {
            return None;
        }
        // Another replica owns the App: its statuses are that replica's to write.
        if !self.owns_cluster(record.app.spec.destination.cluster_segment()) {
            drop(apps);
            self.park(key);
            return None;
        }
        status.observed_generation = match record.origin {
            Origin::Resource => record.app.metadata.generation,
            Origin::File | Origin::Operator => None,
        };
        let previous = record.status.read(key);
        if previous == status {
            return None;
        }
        if let Some(event) = notable(&previous, &status) {
            self.notify(&record.app, key, event, &status);
        }
        if previous.phase != status.phase {
            tracing::info!(
                app = %key,
                from = ?previous.phase,
                to = ?status.phase,
                message = status.message.as_deref().unwrap_or(""),
                "App phase changed"
            );
        }
        // The change carries the text held, not a second serialisation of the status.
        let text = record.status.write(key, &status)?.to_owned();
        let change = Change::Status {
            key: key.to_string(),
            app: Box::new(record.app.clone()),
            origin: record.origin,
            previous: previous.phase,
            status: text,
            managed: true,
            written: None,
        };
        Some(change)
    }

    /// Sends notifications to `notifier` (and the Apps' `spec.notify`); Held notifications
    /// link to `public_url`'s approve route when it is given. Only the first call counts.
    pub fn set_notifier(&self, notifier: Notifier, public_url: Option<String>) {
        let public_url = public_url.map(|u| u.trim_end_matches('/').to_string());
        let _ = self.notifications.set(Notifications {
            notifier,
            public_url,
        });
    }

    /// Notifies `event` about `app` (key `key`) in `status`, if notifications are set up.
    fn notify(&self, app: &App, key: &str, event: Event, status: &AppStatus) {
        let Some(n) = self.notifications.get() else {
            return;
        };
        let address = format!(
            "{}/{}",
            app.spec.destination.cluster_segment(),
            crate::app::key::app_name(app)
        );
        let mut summary = status.message.clone().unwrap_or_default();
        if let (Event::Held, Some(plan)) = (event, status.plan) {
            summary = format!(
                "{summary} ({} to create, {} to update, {} to prune)",
                plan.creates, plan.updates, plan.prunes
            );
        }
        if let (Event::Promoted, Some(promoted)) = (event, &status.promoted_from) {
            let phase = status.phase.map(|p| format!("{p:?}")).unwrap_or_default();
            summary = format!("{}; now {phase}", promoted.summary());
        }
        let approve_url = match (event, &n.public_url) {
            (Event::Held, Some(base)) => Some(format!("{base}/api/v1/apps/{address}/approve")),
            _ => None,
        };
        let notification = Notification {
            event,
            app: key.to_string(),
            address,
            revision: status.revision.clone(),
            plan_hash: status.plan_hash.clone(),
            summary,
            approve_url,
            at: crate::time::now_rfc3339(),
        };
        n.notifier.send(&app.spec.notify, notification);
    }

    /// Notifies `event` about App `key` in its current status.
    fn notify_current(&self, key: &str, event: Event) {
        let found = self
            .apps
            .lock()
            .get(key)
            .map(|r| (r.app.clone(), r.status.clone()));
        if let Some((app, status)) = found {
            self.notify(&app, key, event, &status.read(key));
        }
    }

    /// Publishes an Event-worthy note about App `key` (App resources only get Events).
    fn note(&self, key: &str, warning: bool, reason: &'static str, note: String) {
        let Some((app, origin)) = self.apps.lock().get(key).map(|r| (r.app.clone(), r.origin))
        else {
            return;
        };
        self.publisher.send(Change::Note {
            app: Box::new(app),
            origin,
            warning,
            reason,
            note,
        });
    }
}

/// Why the current status of an App ([`Runner::current_status`]), or an App another operator
/// reconciles, could not be read.
#[derive(Debug, thiserror::Error)]
pub enum StatusError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// An operator's server did not answer with the status.
    #[error("cannot read App {key}'s status from the wardn server: {reason}")]
    Server {
        /// The App's key.
        key: String,
        /// What failed.
        reason: String,
    },
    /// An operator's server did not answer with the App another operator reports.
    #[error("cannot read App {key} from the wardn server: {reason}")]
    ServerApp {
        /// The App's key.
        key: String,
        /// What failed.
        reason: String,
    },
}
