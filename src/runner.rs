//! The App runner of `wardn serve --apps`: subscribes each App's source (Git through the
//! poller, directories through a watch), renders every new snapshot through the render cache,
//! and reconciles the App on its destination cluster through the scheduler, keeping each
//! App's status in memory.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use chrono::Utc;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::task::JoinHandle;

use crate::app::{App, AppStatus};
use crate::clusters::resolve::Resolver;
use crate::reconcile::allowlist::Allowlist;
use crate::reconcile::decide::Trigger;
use crate::reconcile::pipeline::{self, Manifests, Options, Pass, ReconcileError, Target};
use crate::reconcile::plan::Plan;
use crate::reconcile::scheduler::Scheduler;
use crate::reconcile::status;
use crate::reconcile::upkeep::{PassEnd, Scheduling, Upkeep};
use crate::sources::credentials::Credentials;
use crate::sources::directory::{self, DirectoryError, DirectoryWatch};
use crate::sources::git::GitError;
use crate::sources::poller::Poller;
use crate::sources::render_cache::RenderCache;
use crate::sources::spec::{Source, SpecError};
use crate::sources::status::SourceUpdate;

/// How many Apps are reconciled at once.
const WORKERS: usize = 4;

/// Why the runner could not start an App's source.
#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    /// The App's `spec.source` is invalid.
    #[error("App {app}: {source}")]
    Spec {
        /// The App's `namespace/name`.
        app: String,
        /// The reason.
        source: SpecError,
    },
    /// The App's directory cannot be watched.
    #[error("App {app}: {source}")]
    Directory {
        /// The App's `namespace/name`.
        app: String,
        /// The reason.
        source: DirectoryError,
    },
    /// The App's Git repository cannot be mirrored.
    #[error("App {app}: {source}")]
    Git {
        /// The App's `namespace/name`.
        app: String,
        /// The reason.
        source: GitError,
    },
}

/// One App's runtime state: its status and the manifests of its latest rendered revision.
#[derive(Default)]
struct Entry {
    status: AppStatus,
    manifests: Option<Manifests>,
}

/// Drives a fixed set of Apps from their sources to their clusters.
pub struct Runner {
    apps: BTreeMap<String, App>,
    entries: Mutex<HashMap<String, Entry>>,
    cache: RenderCache,
    resolver: Resolver,
    scheduler: Scheduler<String>,
    upkeep: Upkeep,
    options: Options,
    locks: HashMap<String, tokio::sync::Mutex<()>>,
    watches: Mutex<Vec<DirectoryWatch>>,
    tasks: Mutex<Vec<JoinHandle<()>>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The key of an App: `namespace/name`, as stamped on the objects it applies.
pub fn app_key(app: &App) -> String {
    format!(
        "{}/{}",
        app.metadata.namespace.as_deref().unwrap_or("default"),
        app.metadata.name.as_deref().unwrap_or_default()
    )
}

impl Runner {
    /// A runner for `apps`, deploying through `resolver` with the pipeline `options`;
    /// resyncs, retries and drift watches follow `scheduling`.
    pub fn new(
        apps: Vec<App>,
        resolver: Resolver,
        options: Options,
        scheduling: Scheduling,
    ) -> Arc<Runner> {
        let apps: BTreeMap<String, App> = apps.into_iter().map(|a| (app_key(&a), a)).collect();
        let scheduler = Scheduler::new();
        let upkeep = Upkeep::new(
            scheduler.clone(),
            Arc::clone(resolver.throttles()),
            scheduling,
        );
        Arc::new(Runner {
            locks: apps
                .keys()
                .map(|k| (k.clone(), tokio::sync::Mutex::new(())))
                .collect(),
            apps,
            entries: Mutex::new(HashMap::new()),
            cache: RenderCache::new(),
            resolver,
            scheduler,
            upkeep,
            options,
            watches: Mutex::new(Vec::new()),
            tasks: Mutex::new(Vec::new()),
        })
    }

    /// Subscribes every App's source and starts the update loop and the workers. `updates`
    /// is the poller's channel (directory watches send into it too).
    pub async fn start(
        self: &Arc<Self>,
        poller: &Poller,
        updates: UnboundedReceiver<SourceUpdate>,
    ) -> Result<(), RunnerError> {
        for (key, app) in &self.apps {
            let source = app
                .spec
                .source
                .validate()
                .map_err(|source| RunnerError::Spec {
                    app: key.clone(),
                    source,
                })?;
            match source {
                Source::Git(git) => poller
                    .subscribe(key, &git, Credentials::Anonymous)
                    .await
                    .map_err(|source| RunnerError::Git {
                        app: key.clone(),
                        source,
                    })?,
                Source::Directory(path) => {
                    let watch =
                        directory::watch(key, &path, poller.sender()).map_err(|source| {
                            RunnerError::Directory {
                                app: key.clone(),
                                source,
                            }
                        })?;
                    lock(&self.watches).push(watch);
                }
            }
        }
        let this = Arc::clone(self);
        let update_loop = tokio::spawn(async move { this.receive(updates).await });
        let this = Arc::clone(self);
        let workers = tokio::spawn(async move {
            let runner = Arc::clone(&this);
            this.scheduler
                .run(WORKERS, move |key| {
                    let runner = Arc::clone(&runner);
                    runner.reconcile(key)
                })
                .await;
        });
        lock(&self.tasks).extend([update_loop, workers]);
        Ok(())
    }

    /// Stops the workers, the update loop and the directory watches.
    pub fn stop(&self) {
        self.scheduler.close();
        for task in lock(&self.tasks).drain(..) {
            task.abort();
        }
        lock(&self.watches).clear();
    }

    /// The Apps, by `namespace/name`.
    pub fn apps(&self) -> &BTreeMap<String, App> {
        &self.apps
    }

    /// The Prometheus text of `/metrics`: passes, retries, drift, queue depth, cluster requests.
    pub fn metrics_text(&self) -> String {
        self.upkeep.metrics_text()
    }

    /// The in-memory status of App `key` (`namespace/name`).
    pub fn status(&self, key: &str) -> Option<AppStatus> {
        lock(&self.entries).get(key).map(|e| e.status.clone())
    }

    async fn receive(self: Arc<Self>, mut updates: UnboundedReceiver<SourceUpdate>) {
        while let Some(update) = updates.recv().await {
            let Some(app) = self.apps.get(&update.app) else {
                continue;
            };
            let Some(snapshot) = update.snapshot else {
                if update.status.reason.is_error() {
                    tracing::warn!(app = %update.app, message = %update.status.message, "source failed");
                }
                continue;
            };
            let dir = match app.spec.source.validate() {
                Ok(Source::Git(git)) => git.path,
                _ => String::new(),
            };
            let this = Arc::clone(&self);
            let key = update.app.clone();
            let rendered = tokio::task::spawn_blocking(move || {
                this.cache
                    .render(&key, &snapshot.source_key, snapshot.tree.as_ref(), &dir)
                    .map(|r| (r, snapshot.revision))
            })
            .await;
            let message = match rendered {
                Ok(Ok((cached, revision))) => {
                    lock(&self.entries)
                        .entry(update.app.clone())
                        .or_default()
                        .manifests = Some(Manifests {
                        revision,
                        digest: cached.rendered.digest.clone(),
                        objects: cached.rendered.objects.clone(),
                    });
                    self.scheduler.enqueue(update.app);
                    continue;
                }
                Ok(Err(e)) => format!("render failed: {e}"),
                Err(e) => format!("render task failed: {e}"),
            };
            let previous = self.status(&update.app).unwrap_or_default();
            self.record(&update.app, status::failed(&previous, &message, Utc::now()));
        }
    }

    /// Stores `status` for `key`, logging a phase change.
    fn record(&self, key: &str, status: AppStatus) {
        let mut entries = lock(&self.entries);
        let entry = entries.entry(key.to_string()).or_default();
        if entry.status.phase != status.phase {
            tracing::info!(
                app = %key,
                from = ?entry.status.phase,
                to = ?status.phase,
                message = status.message.as_deref().unwrap_or(""),
                "App phase changed"
            );
        }
        entry.status = status;
    }

    /// The destination of `app` as a pipeline target.
    async fn target(&self, app: &App) -> Result<Target, String> {
        let cluster = &app.spec.destination.cluster;
        let destination = self
            .resolver
            .destination(cluster)
            .await
            .map_err(|e| e.to_string())?;
        Ok(Target {
            cluster: app.spec.destination.cluster_segment().to_string(),
            client: destination.client,
            allowlist: destination
                .namespaces
                .map(Allowlist::namespaces)
                .unwrap_or_else(Allowlist::unrestricted),
        })
    }

    /// Finds the App deployed to cluster segment `cluster` (`local`: the management cluster)
    /// under `name`; returns its key.
    pub fn find(&self, cluster: &str, name: &str) -> Option<&str> {
        self.apps
            .iter()
            .find(|(_, a)| {
                a.spec.destination.cluster_segment() == cluster
                    && a.metadata.name.as_deref() == Some(name)
            })
            .map(|(k, _)| k.as_str())
    }

    /// What a pass over App `key` needs: the App, its status, its manifests and its target.
    async fn prepare(&self, key: &str) -> Result<Prepared<'_>, OperationError> {
        let app = self
            .apps
            .get(key)
            .ok_or_else(|| OperationError::NotFound(key.to_string()))?;
        let (previous, manifests) = {
            let entries = lock(&self.entries);
            let entry = entries.get(key);
            let manifests = entry
                .and_then(|e| e.manifests.clone())
                .ok_or_else(|| OperationError::NotRendered(key.to_string()))?;
            (
                entry.map(|e| e.status.clone()).unwrap_or_default(),
                manifests,
            )
        };
        let target = match self.target(app).await {
            Ok(target) => target,
            Err(message) => {
                self.record(key, status::failed(&previous, &message, Utc::now()));
                return Err(OperationError::Destination(message));
            }
        };
        Ok(Prepared {
            app,
            previous,
            manifests,
            target,
        })
    }

    /// The per-App lock serialising passes, approvals and rejections.
    fn app_lock(&self, key: &str) -> Option<&tokio::sync::Mutex<()>> {
        self.locks.get(key)
    }

    /// Performs `operation` on App `key`. The pipeline's futures are not `Send` (their
    /// stream closures borrow across awaits), so the operation runs on a blocking thread
    /// that drives it on this runtime.
    pub async fn operate(
        self: &Arc<Self>,
        key: &str,
        operation: Operation,
    ) -> Result<Completed, OperationError> {
        let this = Arc::clone(self);
        let key = key.to_string();
        let handle = tokio::runtime::Handle::current();
        tokio::task::spawn_blocking(move || {
            handle.block_on(async {
                match operation {
                    Operation::Plan => this.plan(&key).await.map(Completed::Plan),
                    Operation::Pass(trigger) => {
                        this.run_pass(&key, &trigger).await.map(Completed::Status)
                    }
                    Operation::Approve(hash) => this
                        .approve(&key, hash.as_deref())
                        .await
                        .map(Completed::Status),
                    Operation::Reject => this.reject(&key).await.map(Completed::Status),
                }
            })
        })
        .await
        .map_err(|e| OperationError::Task(e.to_string()))?
    }

    /// Plans App `key` without deciding or applying (`…/diff`).
    async fn plan(&self, key: &str) -> Result<Plan, OperationError> {
        let p = self.prepare(key).await?;
        Ok(pipeline::plan(p.pass(key)).await?)
    }

    /// Runs one pass of App `key` with `trigger` and records the resulting status.
    async fn run_pass(&self, key: &str, trigger: &Trigger) -> Result<AppStatus, OperationError> {
        let _guard = self.lock_app(key).await?;
        let p = self.prepare_followed(key).await?;
        let now = Utc::now();
        let started = std::time::Instant::now();
        let mut progress = |s: &AppStatus| self.record(key, s.clone());
        let result =
            pipeline::reconcile(p.pass(key), trigger, &self.options, now, &mut progress).await;
        self.follow_up(key, &p, &result, started);
        self.settle(key, &p.previous, now, result.map(|o| o.status))
    }

    /// [`Runner::prepare`]; an unreachable destination is retried with backoff.
    async fn prepare_followed(&self, key: &str) -> Result<Prepared<'_>, OperationError> {
        let prepared = self.prepare(key).await;
        if let (Err(OperationError::Destination(_)), Some(app)) = (&prepared, self.apps.get(key)) {
            let cluster = &app.spec.destination.cluster;
            let unreachable = PassEnd::Unreachable;
            self.upkeep
                .after_pass(key, cluster, None, unreachable, Duration::ZERO);
        }
        prepared
    }

    /// Counts a pass, schedules the next one and points the drift watches at the inventory.
    fn follow_up(
        &self,
        key: &str,
        p: &Prepared<'_>,
        result: &Result<pipeline::Outcome, ReconcileError>,
        started: std::time::Instant,
    ) {
        self.upkeep.after_pass(
            key,
            &p.app.spec.destination.cluster,
            Some(&p.target.client),
            PassEnd::Ran(result),
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
        let now = Utc::now();
        let started = std::time::Instant::now();
        let mut progress = |s: &AppStatus| self.record(key, s.clone());
        let result =
            pipeline::approve(p.pass(key), plan_hash, &self.options, now, &mut progress).await;
        self.follow_up(key, &p, &result, started);
        self.settle(key, &p.previous, now, result.map(|o| o.status))
    }

    /// Rejects App `key`'s Held plan.
    async fn reject(&self, key: &str) -> Result<AppStatus, OperationError> {
        let _guard = self.lock_app(key).await?;
        let previous = self
            .status(key)
            .ok_or_else(|| OperationError::NotRendered(key.to_string()))?;
        let now = Utc::now();
        let result = pipeline::reject(&previous, now);
        self.settle(key, &previous, now, result)
    }

    async fn lock_app(&self, key: &str) -> Result<tokio::sync::MutexGuard<'_, ()>, OperationError> {
        match self.app_lock(key) {
            Some(lock) => Ok(lock.lock().await),
            None => Err(OperationError::NotFound(key.to_string())),
        }
    }

    /// Records the status a pass ended with (the error's status on failure).
    fn settle(
        &self,
        key: &str,
        previous: &AppStatus,
        now: chrono::DateTime<Utc>,
        result: Result<AppStatus, ReconcileError>,
    ) -> Result<AppStatus, OperationError> {
        match result {
            Ok(status) => {
                self.record(key, status.clone());
                Ok(status)
            }
            Err(e) => {
                self.record(key, e.status(previous, now));
                Err(OperationError::Reconcile(e))
            }
        }
    }

    /// The scheduler's work: an automatic pass (errors are in the recorded status).
    async fn reconcile(self: Arc<Self>, key: String) {
        if let Err(e) = self
            .operate(&key, Operation::Pass(Trigger::Automatic))
            .await
        {
            tracing::debug!(app = %key, error = %e, "reconcile pass did not complete");
        }
    }
}

/// The inputs of one pass over an App.
struct Prepared<'a> {
    app: &'a App,
    previous: AppStatus,
    manifests: Manifests,
    target: Target,
}

impl Prepared<'_> {
    fn pass<'p>(&'p self, key: &'p str) -> Pass<'p> {
        Pass {
            app: key,
            spec: &self.app.spec,
            previous: &self.previous,
            target: &self.target,
            manifests: &self.manifests,
        }
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
    Destination(String),
    /// The pipeline failed.
    #[error(transparent)]
    Reconcile(#[from] ReconcileError),
    /// The task running the operation panicked or was cancelled.
    #[error("operation task failed: {0}")]
    Task(String),
}

/// Something to do with an App (see [`Runner::operate`]).
#[derive(Debug, Clone)]
pub enum Operation {
    /// Plan without deciding or applying (`…/diff`).
    Plan,
    /// One reconcile pass with this trigger.
    Pass(Trigger),
    /// Approve the Held plan (checking the hash when given).
    Approve(Option<String>),
    /// Reject the Held plan.
    Reject,
}

/// What an [`Operation`] produced.
#[derive(Debug)]
pub enum Completed {
    /// The App's new status.
    Status(AppStatus),
    /// The plan.
    Plan(Plan),
}
