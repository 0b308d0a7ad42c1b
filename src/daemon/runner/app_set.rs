//! The App set: adding, updating and removing Apps, with their source subscriptions (Git
//! through the poller, directories through a watch), and finding an App by its destination.

use std::sync::Arc;

use jiff::Timestamp;

use super::publish::Change;
use super::status_cell::StatusCell;
use super::{AppRecord, Origin, Runner};
use crate::app::App;
use crate::app::key::{app_key, base_key, split_name};
use crate::app::targets::{self, TargetError};
use crate::reconcile::status;
use crate::sources::credentials::Credentials;
use crate::sources::directory::{self, DirectoryError, DirectoryWatch};
use crate::sources::git::GitError;
use crate::sources::spec::{Source, SpecError};
use crate::sources::url::SourceKey;

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
    /// The App's `spec.destination.cluster` template does not resolve, or its
    /// `spec.targets` are invalid.
    #[error("App {app}: {source}")]
    Routing {
        /// The App's `namespace/name`.
        app: String,
        /// The reason.
        source: TargetError,
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

/// Why [`Runner::find`] found no single App.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FindError {
    /// No App matches.
    NotFound,
    /// Several Apps match: their keys (`namespace/name`).
    Ambiguous(Vec<String>),
}

/// The key of the updates `source` produces (see [`crate::sources::status::SourceUpdate`]).
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

/// The parts of a record that name its App's version and source, kept to restore them when a
/// new source cannot be started.
struct Version {
    app: App,
    origin: Origin,
    source_key: SourceKey,
    watch: Option<DirectoryWatch>,
    manifests: Option<Arc<crate::reconcile::pass::Manifests>>,
    loaded: bool,
}

impl Runner {
    /// Adds App `app` from `origin`, or applies its new version: an App with `spec.targets`
    /// is expanded into one App per target ([`targets::expand`]; targets it no longer has
    /// stop being managed), and each is upserted on its own. What happened to the first one
    /// that changed is answered. On error the previous versions (if any) keep running.
    pub async fn upsert(&self, app: App, origin: Origin) -> Result<Upserted, RunnerError> {
        let base = app_key(&app);
        let expanded = targets::expand(&app).map_err(|source| RunnerError::Routing {
            app: base.clone(),
            source,
        })?;
        let keys: Vec<String> = expanded.iter().map(app_key).collect();
        let resource_defined = self
            .keys_of(&base)
            .iter()
            .any(|key| self.origin(key) == Some(Origin::Resource));
        if origin == Origin::File && resource_defined {
            tracing::warn!(app = %base, "an App resource and an --apps file define this App; the resource wins");
            return Ok(Upserted::Shadowed);
        }
        let mut upserted = Upserted::Unchanged;
        for app in expanded {
            let one = self.upsert_one(app, origin).await?;
            if upserted == Upserted::Unchanged {
                upserted = one;
            }
        }
        // A file never replaces a resource (answered above), so whatever else is managed
        // under this App is a target (or the untargeted App) its new version no longer has.
        for stale in self.keys_of(&base) {
            if !keys.contains(&stale) {
                self.remove_key(&stale, None);
            }
        }
        Ok(upserted)
    }

    /// The keys of App `base` (`namespace/name`) managed now: itself, or its targets'.
    pub fn keys_of(&self, base: &str) -> Vec<String> {
        self.apps
            .lock()
            .keys()
            .filter(|key| base_key(key) == base)
            .cloned()
            .collect()
    }

    /// [`Runner::upsert`] of one expanded App.
    async fn upsert_one(&self, app: App, origin: Origin) -> Result<Upserted, RunnerError> {
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
            let mut apps = self.apps.lock();
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
                    self.app_changed();
                    current.origin = origin;
                    let rendered = current.manifests.is_some();
                    drop(apps);
                    if !changed {
                        return Ok(Upserted::Unchanged);
                    }
                    if rendered {
                        self.scheduler.enqueue(key);
                    }
                    return Ok(Upserted::Changed);
                }
            }
        }
        // Managed before subscribing, so the source's first update is not taken as stale; the
        // previous version (and its watch) is kept until the new source runs. Manifests of
        // another source must not be applied under the new spec.
        let source_key = source_key(&key, &source)?;
        let routed = self.routes_here(app.spec.destination.cluster_segment());
        let previous = self.switch_source(&key, app, origin, source_key);
        let upserted = match previous {
            Some(_) => Upserted::Resubscribed,
            None => Upserted::Added,
        };
        if !routed {
            // Another replica loads it; this one keeps its spec and status for the API.
            self.unload(&key);
            return Ok(upserted);
        }
        // Loaded before subscribing: the source's first update may arrive meanwhile.
        if let Some(record) = self.apps.lock().get_mut(&key) {
            record.loaded = true;
        }
        match self.subscribe(&key, source).await {
            Ok(watch) => {
                if let Some(record) = self.apps.lock().get_mut(&key) {
                    record.watch = watch;
                }
                Ok(upserted)
            }
            Err(e) => {
                let mut apps = self.apps.lock();
                match previous {
                    Some(previous) => {
                        if let Some(record) = apps.get_mut(&key) {
                            self.app_changed();
                            record.app = previous.app;
                            record.origin = previous.origin;
                            record.source_key = previous.source_key;
                            record.watch = previous.watch;
                            record.manifests = previous.manifests;
                            record.loaded = previous.loaded;
                        }
                    }
                    None => {
                        apps.remove(&key);
                        self.app_changed();
                    }
                }
                Err(e)
            }
        }
    }

    /// Notes that an App was added, replaced or removed (what an operator's report follows).
    fn app_changed(&self) {
        self.app_changes
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// Points App `key`'s record at a new version and source (creating the record, with any
    /// status a previous run stored, for a new App); returns the version it replaced.
    fn switch_source(
        &self,
        key: &str,
        app: App,
        origin: Origin,
        source_key: SourceKey,
    ) -> Option<Version> {
        let mut apps = self.apps.lock();
        self.app_changed();
        if let Some(record) = apps.get_mut(key) {
            let previous = Version {
                app: std::mem::replace(&mut record.app, app),
                origin: std::mem::replace(&mut record.origin, origin),
                source_key: std::mem::replace(&mut record.source_key, source_key),
                watch: record.watch.take(),
                manifests: record.manifests.take(),
                loaded: record.loaded,
            };
            return Some(previous);
        }
        let status = self.restored.lock().remove(key).unwrap_or_default();
        apps.insert(
            key.to_string(),
            Box::new(AppRecord {
                app,
                origin,
                source_key,
                watch: None,
                status,
                manifests: None,
                verified: None,
                operation: None,
                removed: None,
                loaded: false,
                operator: None,
            }),
        );
        None
    }

    /// Subscribes App `key` to `source`: Git through the poller (replacing any previous
    /// subscription), a directory through a new watch (returned).
    pub(super) async fn subscribe(
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

    /// Reports an App resource that cannot be started: a managed App keeps its previous
    /// version running (a Warning Event says why); an unmanaged one gets a Failed status.
    pub(super) fn report_invalid(&self, app: &App, message: &str) {
        let key = app_key(app);
        if let Some(managed) = self.keys_of(&key).first() {
            let note = format!("invalid spec (the previous version keeps running): {message}");
            self.note(managed, true, "InvalidSpec", note);
            return;
        }
        let previous = app.status.as_deref().cloned().unwrap_or_default();
        let mut failed = status::failed(&previous, message, Timestamp::now());
        failed.observed_generation = app.metadata.generation;
        if failed == previous {
            return;
        }
        if let Some(text) = StatusCell::text_of(&key, &failed) {
            self.publisher.send(Change::Status {
                key,
                app: Box::new(app.clone()),
                origin: Origin::Resource,
                previous: previous.phase,
                status: text,
                managed: false,
                written: None,
            });
        }
    }

    /// Stops managing App `key` if it came from `origin` — an App's key (`namespace/name`)
    /// stops all its targets, a target's key that target alone: its source is unsubscribed
    /// and its status dropped; the objects it applied stay on the cluster. Returns whether
    /// it was managed.
    pub fn remove(&self, key: &str, origin: Origin) -> bool {
        let keys = if base_key(key) == key {
            self.keys_of(key)
        } else {
            vec![key.to_string()]
        };
        let mut removed = false;
        for key in keys {
            removed |= self.remove_key(&key, Some(origin));
        }
        removed
    }

    /// Stops managing the App (or target) of exactly `key`, if it came from `origin` (any
    /// origin when `None`).
    fn remove_key(&self, key: &str, origin: Option<Origin>) -> bool {
        let removed = {
            let mut apps = self.apps.lock();
            if apps
                .get(key)
                .is_none_or(|r| origin.is_some_and(|o| r.origin != o))
            {
                return false;
            }
            let removed = apps.remove(key);
            self.app_changed();
            self.publisher.send(Change::Removed {
                key: key.to_string(),
            });
            removed
        };
        self.poller.unsubscribe(key);
        self.upkeep.forget(key);
        // Dropping the record cancels a pass in flight: it stops at its next await instead of
        // applying for an App that is no longer managed.
        drop(removed);
        tracing::info!(app = %key, "App no longer managed; its objects stay on the cluster");
        true
    }

    /// Asks for a reconcile pass of App `key` (coalesced with pending ones); no-op for an
    /// App without a rendered revision yet.
    pub fn enqueue(&self, key: &str) {
        let rendered = self
            .apps
            .lock()
            .get(key)
            .is_some_and(|r| r.manifests.is_some());
        if rendered {
            self.scheduler.enqueue(key.to_string());
        }
    }

    /// Finds the App deployed to cluster segment `cluster` (`local`: the management cluster;
    /// `None`: any cluster) under `name` — `name:target` names one target of an App with
    /// targets —, in App namespace `namespace` when given; returns its key. Several Apps of
    /// that name (in several namespaces, on several clusters when no cluster is given, or
    /// several targets when none is named and none of them is primary) are
    /// [`FindError::Ambiguous`].
    pub fn find(
        &self,
        cluster: Option<&str>,
        name: &str,
        namespace: Option<&str>,
    ) -> Result<String, FindError> {
        let (name, target) = split_name(name);
        let found: Vec<(String, bool)> = self
            .apps
            .lock()
            .iter()
            .filter(|(_, r)| {
                let destination = &r.app.spec.destination;
                cluster.is_none_or(|c| destination.cluster_segment() == c)
                    && r.app.metadata.name.as_deref() == Some(name)
                    && namespace.is_none_or(|ns| r.app.metadata.namespace.as_deref() == Some(ns))
                    && target.is_none_or(|t| destination.target.as_deref() == Some(t))
            })
            .map(|(k, r)| (k.clone(), r.app.spec.destination.primary))
            .collect();
        // The primary target answers for its App, when the name finds that App alone.
        let one_app = found
            .windows(2)
            .all(|pair| base_key(&pair[0].0) == base_key(&pair[1].0));
        let primaries: Vec<&String> = found
            .iter()
            .filter(|(_, primary)| *primary && one_app)
            .map(|(k, _)| k)
            .collect();
        match (found.as_slice(), primaries.as_slice()) {
            ([], _) => Err(FindError::NotFound),
            ([(key, _)], _) => Ok(key.clone()),
            (_, [primary]) => Ok((*primary).clone()),
            _ => Err(FindError::Ambiguous(
                found.into_iter().map(|(k, _)| k).collect(),
            )),
        }
    }
}
