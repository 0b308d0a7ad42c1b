//! The App runner of `wardn serve`: manages a dynamic set of Apps (from `--apps` files and App
//! custom resources), subscribes each App's source (Git through the poller, directories through
//! a watch), renders every new snapshot through the render cache, and reconciles the App on its
//! destination cluster through the scheduler, one pass per App at a time.
//!
//! [`Runner::upsert`] adds an App or applies a new version of it (a changed source is
//! re-subscribed; any spec change enqueues a pass); [`Runner::remove`] stops managing it: its
//! source is unsubscribed and its status dropped, while the objects it applied stay on the
//! cluster (as Argo CD does for an Application deleted without its finalizer).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use chrono::Utc;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::app::files::{AppsDir, AppsDirError};
use crate::app::key::app_key;
use crate::app::{App, AppStatus};
use crate::clusters::allowlist::Allowlist;
use crate::clusters::resolve::Resolver;
use crate::diff::known::{Known, Verified};
use crate::object::ObjectRef;
use crate::object::kinds::KindCache;
use crate::reconcile::decide::Trigger;
use crate::reconcile::drift::WatchClient;
use crate::reconcile::live::ClusterLive;
use crate::reconcile::pipeline::{self, Manifests, Options, Pass, ReconcileError, Target};
use crate::reconcile::plan::Plan;
use crate::reconcile::scheduler::Scheduler;
use crate::reconcile::status;
use crate::reconcile::upkeep::{PassEnd, Scheduling, Upkeep};
use crate::sources::credentials::Credentials;
use crate::sources::debounce;
use crate::sources::directory::{self, DirectoryError, DirectoryWatch};
use crate::sources::git::GitError;
use crate::sources::poller::Poller;
use crate::sources::render_cache::RenderCache;
use crate::sources::spec::{Source, SpecError};
use crate::sources::status::{SourceStatus, SourceUpdate};
use crate::sources::url::SourceKey;
use crate::store::{Store, StoreError};

mod publish;
mod resources;

use publish::{Change, Publisher};

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

/// Where an App comes from. When a file and a custom resource define the same
/// `namespace/name`, the custom resource wins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// A file in `--apps DIR`.
    File,
    /// An App custom resource in the management cluster.
    Resource,
}

/// What [`Runner::upsert`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Upserted {
    /// A new App is now managed.
    Added,
    /// The App's source changed: it was re-subscribed (a pass follows the first snapshot).
    Resubscribed,
    /// The App's spec changed (same source): a pass was enqueued.
    Changed,
    /// Nothing relevant changed (e.g. only metadata or status).
    Unchanged,
    /// Ignored: a custom resource already defines this App and files may not replace it.
    Shadowed,
}

/// One managed App: its latest version, origin and source subscription.
struct Managed {
    app: App,
    origin: Origin,
    source_key: SourceKey,
    /// The directory watch of a Directory source (dropping it stops the watch).
    _watch: Option<DirectoryWatch>,
}

/// One App's runtime state: its status and the manifests of its latest rendered revision.
#[derive(Default)]
struct Entry {
    status: AppStatus,
    /// Shared with the passes that use it: cloning the rendered objects for every pass
    /// showed up as a tenth of a no-op pass's CPU.
    manifests: Option<Arc<Manifests>>,
    /// The objects earlier passes saw agree with their rendered form (lets automatic passes
    /// skip their dry-runs while the drift watches show them unchanged).
    verified: Arc<Verified>,
}

/// Drives a dynamic set of Apps from their sources to their clusters.
pub struct Runner {
    apps: Mutex<BTreeMap<String, Managed>>,
    entries: Mutex<HashMap<String, Entry>>,
    cache: RenderCache,
    resolver: Resolver,
    scheduler: Scheduler<String>,
    upkeep: Upkeep,
    options: Options,
    poller: Poller,
    slots: Mutex<HashMap<String, Arc<Slot>>>,
    /// Resolved kinds per destination cluster, shared by the Apps deploying there.
    kinds: Mutex<HashMap<String, KindCache>>,
    /// How many passes run at once.
    workers: usize,
    tasks: Mutex<Vec<JoinHandle<()>>>,
    stopping: watch::Sender<bool>,
    file_errors: Mutex<Vec<String>>,
    store: Option<Store>,
    publisher: Publisher,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The key of the updates `source` produces (see [`SourceUpdate`]).
fn source_key(app: &str, source: &Source) -> Result<SourceKey, RunnerError> {
    match source {
        Source::Git(git) => Ok(git.url.key.clone()),
        Source::Directory(path) => {
            directory::directory_key(path).map_err(|source| RunnerError::Directory {
                app: app.to_string(),
                source,
            })
        }
    }
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
            entries: Mutex::new(HashMap::new()),
            cache: RenderCache::new(),
            resolver,
            scheduler,
            upkeep,
            options,
            poller,
            slots: Mutex::new(HashMap::new()),
            kinds: Mutex::new(HashMap::new()),
            workers,
            tasks: Mutex::new(Vec::new()),
            stopping: watch::Sender::new(false),
            file_errors: Mutex::new(Vec::new()),
            publisher: Publisher::start(store.clone()),
            store,
        })
    }

    /// Starts the update loop (reading `updates`, the poller's channel) and the workers.
    pub fn start(self: &Arc<Self>, updates: UnboundedReceiver<SourceUpdate>) {
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
        lock(&self.tasks).extend([update_loop, workers]);
    }

    /// Loads the statuses stored by a previous run, so the API answers with them and a Held
    /// plan stays Held (with its plan hash) until approved. Call before adding Apps; returns
    /// how many were loaded.
    pub async fn restore(&self) -> Result<usize, StoreError> {
        let Some(store) = &self.store else {
            return Ok(0);
        };
        let records = store.app_statuses().await?;
        let count = records.len();
        let mut entries = lock(&self.entries);
        for record in records {
            entries.entry(record.key).or_default().status = record.status;
        }
        Ok(count)
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
        for task in lock(&self.tasks).drain(..) {
            task.abort();
        }
        let keys: Vec<String> = lock(&self.apps).keys().cloned().collect();
        for key in &keys {
            self.poller.unsubscribe(key);
        }
        lock(&self.apps).clear();
    }

    /// Adds App `app` from `origin`, or applies its new version: a changed `spec.source` is
    /// re-subscribed (the new source's first snapshot triggers a pass), any other spec change
    /// enqueues a pass. On error the previous version (if any) keeps running.
    pub async fn upsert(&self, app: App, origin: Origin) -> Result<Upserted, RunnerError> {
        let key = app_key(&app);
        let source = app
            .spec
            .source
            .validate()
            .map_err(|source| RunnerError::Spec {
                app: key.clone(),
                source,
            })?;
        {
            let mut apps = lock(&self.apps);
            if let Some(current) = apps.get_mut(&key) {
                if current.origin == Origin::Resource && origin == Origin::File {
                    tracing::warn!(app = %key, "an App resource and an --apps file define this App; the resource wins");
                    return Ok(Upserted::Shadowed);
                }
                if current.origin != origin {
                    tracing::warn!(app = %key, "an App resource replaces the --apps file of the same App");
                }
                if current.app.spec.source == app.spec.source {
                    let changed = current.app.spec != app.spec;
                    current.app = app;
                    current.origin = origin;
                    drop(apps);
                    if !changed {
                        return Ok(Upserted::Unchanged);
                    }
                    if lock(&self.entries)
                        .get(&key)
                        .is_some_and(|e| e.manifests.is_some())
                    {
                        self.scheduler.enqueue(key);
                    }
                    return Ok(Upserted::Changed);
                }
            }
        }
        // Managed before subscribing, so the source's first update is not taken as stale; the
        // previous version (and its watch) is kept until the new source runs.
        let source_key = source_key(&key, &source)?;
        let previous = lock(&self.apps).insert(
            key.clone(),
            Managed {
                app,
                origin,
                source_key,
                _watch: None,
            },
        );
        // Manifests of another source must not be applied under the new spec.
        if let Some(entry) = lock(&self.entries).get_mut(&key) {
            entry.manifests = None;
        }
        match self.subscribe(&key, source).await {
            Ok(watch) => {
                if let Some(managed) = lock(&self.apps).get_mut(&key) {
                    managed._watch = watch;
                }
            }
            Err(e) => {
                let mut apps = lock(&self.apps);
                match previous {
                    Some(previous) => apps.insert(key, previous),
                    None => apps.remove(&key),
                };
                return Err(e);
            }
        }
        lock(&self.slots).entry(key).or_default();
        Ok(match previous {
            Some(_) => Upserted::Resubscribed,
            None => Upserted::Added,
        })
    }

    /// The Prometheus text of `/metrics`: passes, retries, drift, queue depth, cluster requests.
    pub fn metrics_text(&self) -> String {
        self.upkeep.metrics_text()
    }

    /// Subscribes App `key` to `source`: Git through the poller (replacing any previous
    /// subscription), a directory through a new watch (returned).
    async fn subscribe(
        &self,
        key: &str,
        source: Source,
    ) -> Result<Option<DirectoryWatch>, RunnerError> {
        match source {
            Source::Git(git) => {
                self.poller
                    .subscribe(key, &git, Credentials::Anonymous)
                    .await
                    .map_err(|source| RunnerError::Git {
                        app: key.to_string(),
                        source,
                    })?;
                Ok(None)
            }
            Source::Directory(path) => {
                let watch =
                    directory::watch(key, &path, self.poller.sender()).map_err(|source| {
                        RunnerError::Directory {
                            app: key.to_string(),
                            source,
                        }
                    })?;
                // A Git subscription of the previous version ends here.
                self.poller.unsubscribe(key);
                Ok(Some(watch))
            }
        }
    }

    /// Reconciles the Apps of `dir` (`--apps`) and keeps following it: a file added, changed
    /// or deleted upserts or removes its Apps; an invalid file is logged and listed by
    /// [`Runner::file_errors`], and the Apps it defined keep running unchanged. Fails only
    /// when `dir` cannot be read or watched.
    pub async fn watch_apps_dir(self: &Arc<Self>, dir: &Path) -> Result<(), AppsDirError> {
        let mut events = debounce::watch(dir, false).map_err(|source| AppsDirError::Watch {
            path: dir.to_path_buf(),
            source,
        })?;
        let mut loaded = AppsDir::default();
        self.reload_apps_dir(&mut loaded, dir).await?;
        let this = Arc::clone(self);
        let dir = dir.to_path_buf();
        let task = tokio::spawn(async move {
            while events.next_burst().await {
                if let Err(e) = this.reload_apps_dir(&mut loaded, &dir).await {
                    tracing::warn!(error = %e, "cannot read the --apps directory");
                    *lock(&this.file_errors) = vec![e.to_string()];
                }
            }
        });
        lock(&self.tasks).push(task);
        Ok(())
    }

    /// Applies one reload of the `--apps` directory to the App set.
    async fn reload_apps_dir(&self, loaded: &mut AppsDir, dir: &Path) -> Result<(), AppsDirError> {
        let reload = loaded.reload(dir)?;
        let mut errors: Vec<String> = reload.errors.iter().map(ToString::to_string).collect();
        for (namespace, name) in &reload.removals {
            self.remove(&format!("{namespace}/{name}"), Origin::File);
        }
        for app in reload.upserts {
            let namespace = app.metadata.namespace.clone().unwrap_or_default();
            let name = app.metadata.name.clone().unwrap_or_default();
            if let Err(e) = self.upsert(app, Origin::File).await {
                loaded.forget(&namespace, &name);
                errors.push(e.to_string());
            }
        }
        for error in &errors {
            tracing::warn!(%error, "invalid App in --apps; its previous version (if any) keeps running");
        }
        *lock(&self.file_errors) = errors;
        Ok(())
    }

    /// Reconciles the App resources of the management cluster reached by `client`, in
    /// `namespaces` (all when empty), and writes their status subresource and Events from now
    /// on. Resources win over `--apps` files defining the same App.
    pub fn watch_resources(self: &Arc<Self>, client: kube::Client, namespaces: Vec<String>) {
        self.publisher.send(Change::Resources(client.clone()));
        let task = tokio::spawn(resources::follow(Arc::clone(self), client, namespaces));
        lock(&self.tasks).push(task);
    }

    /// Reports an App resource that cannot be started: a managed App keeps its previous
    /// version running (a Warning Event says why); an unmanaged one gets a Failed status.
    fn report_invalid(&self, app: &App, message: &str) {
        let key = app_key(app);
        if self.origin(&key).is_some() {
            let note = format!("invalid spec (the previous version keeps running): {message}");
            self.note(&key, true, "InvalidSpec", note);
            return;
        }
        let previous = app.status.clone().unwrap_or_default();
        let mut failed = status::failed(&previous, message, Utc::now());
        failed.observed_generation = app.metadata.generation;
        if failed != previous {
            self.publisher.send(Change::Status {
                key,
                app: Box::new(app.clone()),
                origin: Origin::Resource,
                previous: previous.phase,
                status: Box::new(failed),
                managed: false,
            });
        }
    }

    /// The problems of the last `--apps` reload (invalid files, duplicates, sources that
    /// could not be started), for the API.
    pub fn file_errors(&self) -> Vec<String> {
        lock(&self.file_errors).clone()
    }

    /// Stops managing App `key` if it came from `origin`: its source is unsubscribed and its
    /// status dropped; the objects it applied stay on the cluster. Returns whether it was
    /// managed.
    pub fn remove(&self, key: &str, origin: Origin) -> bool {
        let removed = {
            let mut apps = lock(&self.apps);
            if apps.get(key).is_none_or(|m| m.origin != origin) {
                return false;
            }
            let removed = apps.remove(key);
            lock(&self.entries).remove(key);
            self.publisher.send(Change::Removed {
                key: key.to_string(),
            });
            removed
        };
        self.poller.unsubscribe(key);
        self.upkeep.forget(key);
        if let Some(slot) = lock(&self.slots).remove(key) {
            // A pass in flight stops at its next await instead of applying for an App that
            // is no longer managed.
            slot.removed.send_replace(true);
        }
        drop(removed);
        tracing::info!(app = %key, "App no longer managed; its objects stay on the cluster");
        true
    }

    /// Asks for a reconcile pass of App `key` (coalesced with pending ones); no-op for an
    /// App without a rendered revision yet.
    pub fn enqueue(&self, key: &str) {
        let rendered = lock(&self.entries)
            .get(key)
            .is_some_and(|e| e.manifests.is_some());
        if rendered {
            self.scheduler.enqueue(key.to_string());
        }
    }

    /// The keys (`namespace/name`) of the managed Apps, sorted.
    pub fn keys(&self) -> Vec<String> {
        lock(&self.apps).keys().cloned().collect()
    }

    /// The managed Apps, by `namespace/name` (a snapshot).
    pub fn apps(&self) -> BTreeMap<String, App> {
        lock(&self.apps)
            .iter()
            .map(|(k, m)| (k.clone(), m.app.clone()))
            .collect()
    }

    /// The latest version of App `key`.
    pub fn app(&self, key: &str) -> Option<App> {
        lock(&self.apps).get(key).map(|m| m.app.clone())
    }

    /// Where App `key` comes from.
    pub fn origin(&self, key: &str) -> Option<Origin> {
        lock(&self.apps).get(key).map(|m| m.origin)
    }

    /// The status of App `key` (`namespace/name`).
    pub fn status(&self, key: &str) -> Option<AppStatus> {
        lock(&self.entries).get(key).map(|e| e.status.clone())
    }

    /// The objects App `key` manages (its status inventory).
    pub fn inventory(&self, key: &str) -> Vec<ObjectRef> {
        lock(&self.entries)
            .get(key)
            .map(|e| e.status.inventory.clone())
            .unwrap_or_default()
    }

    async fn receive(self: Arc<Self>, mut updates: UnboundedReceiver<SourceUpdate>) {
        while let Some(update) = updates.recv().await {
            // Updates of a source the App no longer uses (or of a removed App) are stale.
            let current = lock(&self.apps)
                .get(&update.app)
                .filter(|m| m.source_key == update.status.source_key)
                .map(|m| m.app.spec.source.clone());
            let Some(source) = current else {
                continue;
            };
            self.record_source(&update.app, &update.status);
            let Some(snapshot) = update.snapshot else {
                continue;
            };
            let dir = match source.validate() {
                Ok(Source::Git(git)) => git.path,
                _ => String::new(),
            };
            let source_key = snapshot.source_key.clone();
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
                    let apps = lock(&self.apps);
                    if apps
                        .get(&update.app)
                        .is_some_and(|m| m.source_key == source_key)
                    {
                        lock(&self.entries)
                            .entry(update.app.clone())
                            .or_default()
                            .manifests = Some(Arc::new(Manifests {
                            revision,
                            digest: cached.rendered.digest.clone(),
                            objects: cached.rendered.objects.clone(),
                        }));
                        drop(apps);
                        self.scheduler.enqueue(update.app);
                    }
                    continue;
                }
                Ok(Err(e)) => format!("render failed: {e}"),
                Err(e) => format!("render task failed: {e}"),
            };
            let previous = self.status(&update.app).unwrap_or_default();
            self.record(&update.app, status::failed(&previous, &message, Utc::now()));
        }
    }

    /// Records the health of App `key`'s source in its status (`SourceReady`, and the message
    /// while it fails).
    fn record_source(&self, key: &str, source: &SourceStatus) {
        let previous = self.status(key).unwrap_or_default();
        let next = if source.reason.is_error() {
            tracing::warn!(app = %key, message = %source.message, "source failed");
            let reason = format!("{:?}", source.reason);
            Some(status::source_failed(
                &previous,
                &reason,
                &source.message,
                Utc::now(),
            ))
        } else {
            status::source_recovered(&previous, Utc::now())
        };
        if let Some(next) = next {
            self.record(key, next);
        }
    }

    /// Records `status` for `key` (if the App is still managed), logging a phase change and
    /// publishing any change.
    fn record(&self, key: &str, mut status: AppStatus) {
        let apps = lock(&self.apps);
        let Some(managed) = apps.get(key) else {
            return;
        };
        status.observed_generation = match managed.origin {
            Origin::Resource => managed.app.metadata.generation,
            Origin::File => None,
        };
        let mut entries = lock(&self.entries);
        let entry = entries.entry(key.to_string()).or_default();
        if entry.status == status {
            return;
        }
        self.publisher.send(Change::Status {
            key: key.to_string(),
            app: Box::new(managed.app.clone()),
            origin: managed.origin,
            previous: entry.status.phase,
            status: Box::new(status.clone()),
            managed: true,
        });
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

    /// Publishes an Event-worthy note about App `key` (App resources only get Events).
    fn note(&self, key: &str, warning: bool, reason: &'static str, note: String) {
        let Some((app, origin)) = lock(&self.apps).get(key).map(|m| (m.app.clone(), m.origin))
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

    /// The destination of `app` as a pipeline target, and the identity of the credentials its
    /// client uses.
    async fn target(&self, app: &App) -> Result<(Target, u64), String> {
        let cluster = &app.spec.destination.cluster;
        let destination = self
            .resolver
            .destination(cluster)
            .await
            .map_err(|e| e.to_string())?;
        let kinds = lock(&self.kinds)
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
        Ok((target, destination.credentials))
    }

    /// Finds the App deployed to cluster segment `cluster` (`local`: the management cluster)
    /// under `name`, in App namespace `namespace` when given; returns its key. Without a
    /// namespace, Apps of the same name in several namespaces are [`FindError::Ambiguous`].
    pub fn find(
        &self,
        cluster: &str,
        name: &str,
        namespace: Option<&str>,
    ) -> Result<String, FindError> {
        let keys: Vec<String> = lock(&self.apps)
            .iter()
            .filter(|(_, m)| {
                m.app.spec.destination.cluster_segment() == cluster
                    && m.app.metadata.name.as_deref() == Some(name)
                    && namespace.is_none_or(|ns| m.app.metadata.namespace.as_deref() == Some(ns))
            })
            .map(|(k, _)| k.clone())
            .collect();
        match keys.as_slice() {
            [] => Err(FindError::NotFound),
            [key] => Ok(key.clone()),
            _ => Err(FindError::Ambiguous(keys)),
        }
    }

    /// What a pass over App `key` needs: the App, its status, its manifests and its target.
    async fn prepare(&self, key: &str) -> Result<Prepared, OperationError> {
        let app = self
            .app(key)
            .ok_or_else(|| OperationError::NotFound(key.to_string()))?;
        let (previous, manifests, verified) = {
            let entries = lock(&self.entries);
            let entry = entries.get(key);
            let manifests = entry
                .and_then(|e| e.manifests.clone())
                .ok_or_else(|| OperationError::NotRendered(key.to_string()))?;
            (
                entry.map(|e| e.status.clone()).unwrap_or_default(),
                manifests,
                entry.map(|e| Arc::clone(&e.verified)).unwrap_or_default(),
            )
        };
        let (target, credentials) = match self.target(&app).await {
            Ok(found) => found,
            Err(message) => {
                self.record(key, status::failed(&previous, &message, Utc::now()));
                return Err(OperationError::Destination(message));
            }
        };
        let live = self.upkeep.live(&app.spec.destination.cluster);
        Ok(Prepared {
            app,
            previous,
            manifests,
            target,
            credentials,
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
        let mut removed = lock(&self.slots)
            .get(key)
            .map(|slot| slot.removed.subscribe())
            .ok_or_else(|| OperationError::NotFound(key.to_string()))?;
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
                    Operation::Approve(hash) => this
                        .approve(&key, hash.as_deref())
                        .await
                        .map(Completed::Status),
                    Operation::Reject => this.reject(&key).await.map(Completed::Status),
                }
            };
            tokio::select! {
                done = work => done,
                _ = stopping.wait_for(|stopped| *stopped) => Err(OperationError::Stopped),
                _ = removed.wait_for(|gone| *gone) => Err(OperationError::Removed(key.clone())),
            }
        })
        .await
        .map_err(|e| OperationError::Task(e.to_string()))?
    }

    /// Plans App `key` without deciding or applying (`…/diff`).
    async fn plan(&self, key: &str) -> Result<Plan, OperationError> {
        let p = self.prepare(key).await?;
        Ok(pipeline::plan(p.pass(key, None)).await?)
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
        let p = self.prepare_followed(key).await?;
        let known = (!verify_all && matches!(trigger, Trigger::Automatic)).then(|| p.known());
        let now = Utc::now();
        let started = std::time::Instant::now();
        let mut progress = |s: &AppStatus| self.record(key, s.clone());
        let result = pipeline::reconcile(
            p.pass(key, known),
            trigger,
            &self.options,
            now,
            &mut progress,
        )
        .await;
        self.follow_up(key, &p, &result, started);
        self.settle(key, &p.previous, now, result.map(|o| o.status))
    }

    /// A hard refresh of App `key`: its source is fetched now (a new revision starts another
    /// pass), and an automatic pass dry-runs every object, trusting nothing earlier passes
    /// verified.
    async fn refresh(&self, key: &str) -> Result<AppStatus, OperationError> {
        if let Some(source_key) = lock(&self.apps).get(key).map(|m| m.source_key.clone()) {
            self.poller.trigger(&source_key);
        }
        self.run_pass(key, &Trigger::Automatic, true).await
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

    /// Counts a pass, schedules the next one and points the drift watches at the inventory.
    fn follow_up(
        &self,
        key: &str,
        p: &Prepared,
        result: &Result<pipeline::Outcome, ReconcileError>,
        started: std::time::Instant,
    ) {
        if let Ok(outcome) = result
            && let Some(entry) = lock(&self.entries).get_mut(key)
        {
            entry.verified = Arc::new(outcome.verified.clone());
        }
        self.upkeep.after_pass(
            key,
            &p.app.spec.destination.cluster,
            Some(WatchClient {
                client: &p.target.client,
                credentials: p.credentials,
            }),
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
        let result = pipeline::approve(
            p.pass(key, None),
            plan_hash,
            &self.options,
            now,
            &mut progress,
        )
        .await;
        self.follow_up(key, &p, &result, started);
        let held = p.previous.plan_hash.clone().unwrap_or_default();
        match &result {
            Ok(_) => self.note(key, false, "Approved", format!("plan {held} approved")),
            Err(e) => self.note(key, true, "ApprovalRefused", format!("plan {held}: {e}")),
        }
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
        if let Ok(status) = &result {
            let message = status.message.clone().unwrap_or_default();
            self.note(key, false, "Rejected", message);
        }
        self.settle(key, &previous, now, result)
    }

    /// Takes the per-App lock serialising passes, approvals and rejections of App `key`.
    async fn lock_app(
        &self,
        key: &str,
    ) -> Result<tokio::sync::OwnedMutexGuard<()>, OperationError> {
        let slot = lock(&self.slots).get(key).cloned();
        match slot {
            Some(slot) => Ok(Arc::clone(&slot.lock).lock_owned().await),
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

/// Per managed App: the lock serialising its operations, and the signal that it was removed
/// (which cancels an operation in flight).
#[derive(Default)]
struct Slot {
    lock: Arc<tokio::sync::Mutex<()>>,
    removed: watch::Sender<bool>,
}

/// The inputs of one pass over an App.
struct Prepared {
    app: App,
    previous: AppStatus,
    manifests: Arc<Manifests>,
    target: Target,
    /// Which credentials `target.client` uses.
    credentials: u64,
    verified: Arc<Verified>,
    live: ClusterLive,
}

impl Prepared {
    fn pass<'p>(&'p self, key: &'p str, known: Option<Known<'p>>) -> Pass<'p> {
        Pass {
            app: key,
            spec: &self.app.spec,
            previous: &self.previous,
            target: &self.target,
            manifests: &self.manifests,
            known,
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

/// Why [`Runner::find`] found no single App.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FindError {
    /// No App matches.
    NotFound,
    /// Several Apps match: their keys (`namespace/name`).
    Ambiguous(Vec<String>),
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
    /// The runner is stopping; the operation was cancelled.
    #[error("wardn is shutting down")]
    Stopped,
    /// The App was removed while the operation ran; it was cancelled.
    #[error("App {0} was removed; the operation was cancelled")]
    Removed(String),
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
