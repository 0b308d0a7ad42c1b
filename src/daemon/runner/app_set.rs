//! The App set: adding, updating and removing Apps, with their source subscriptions (Git
//! through the poller, directories through a watch), and finding an App by its destination.

use std::sync::Arc;

use jiff::Timestamp;
use tokio::sync::watch;

use super::publish::Change;
use super::{AppRecord, Origin, Runner};
use crate::app::App;
use crate::app::key::app_key;
use crate::app::routing::{self, RoutingError};
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
    /// The App's `spec.destination.cluster` template does not resolve.
    #[error("App {app}: {source}")]
    Routing {
        /// The App's `namespace/name`.
        app: String,
        /// The reason.
        source: RoutingError,
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
    /// Adds App `app` from `origin`, or applies its new version: a changed `spec.source` is
    /// re-subscribed (the new source's first snapshot triggers a pass), any other spec change
    /// enqueues a pass. On error the previous version (if any) keeps running.
    pub async fn upsert(&self, mut app: App, origin: Origin) -> Result<Upserted, RunnerError> {
        let key = app_key(&app);
        routing::resolve(&mut app).map_err(|source| RunnerError::Routing {
            app: key.clone(),
            source,
        })?;
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
                    }
                }
                Err(e)
            }
        }
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
            AppRecord {
                app,
                origin,
                source_key,
                watch: None,
                status,
                manifests: None,
                verified: Arc::default(),
                operation: Arc::default(),
                removed: watch::Sender::new(false),
                loaded: false,
            },
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
        if self.origin(&key).is_some() {
            let note = format!("invalid spec (the previous version keeps running): {message}");
            self.note(&key, true, "InvalidSpec", note);
            return;
        }
        let previous = app.status.clone().unwrap_or_default();
        let mut failed = status::failed(&previous, message, Timestamp::now());
        failed.observed_generation = app.metadata.generation;
        if failed != previous {
            self.publisher.send(Change::Status {
                key,
                app: Box::new(app.clone()),
                origin: Origin::Resource,
                previous: previous.phase,
                status: Box::new(failed),
                managed: false,
                written: None,
            });
        }
    }

    /// Stops managing App `key` if it came from `origin`: its source is unsubscribed and its
    /// status dropped; the objects it applied stay on the cluster. Returns whether it was
    /// managed.
    pub fn remove(&self, key: &str, origin: Origin) -> bool {
        let removed = {
            let mut apps = self.apps.lock();
            if apps.get(key).is_none_or(|r| r.origin != origin) {
                return false;
            }
            let removed = apps.remove(key);
            self.publisher.send(Change::Removed {
                key: key.to_string(),
            });
            removed
        };
        self.poller.unsubscribe(key);
        self.upkeep.forget(key);
        if let Some(record) = &removed {
            // A pass in flight stops at its next await instead of applying for an App that
            // is no longer managed.
            record.removed.send_replace(true);
        }
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
    /// `None`: any cluster) under `name`, in App namespace `namespace` when given; returns its
    /// key. Several Apps of that name (in several namespaces, or on several clusters when no
    /// cluster is given) are [`FindError::Ambiguous`].
    pub fn find(
        &self,
        cluster: Option<&str>,
        name: &str,
        namespace: Option<&str>,
    ) -> Result<String, FindError> {
        let keys: Vec<String> = self
            .apps
            .lock()
            .iter()
            .filter(|(_, r)| {
                cluster.is_none_or(|c| r.app.spec.destination.cluster_segment() == c)
                    && r.app.metadata.name.as_deref() == Some(name)
                    && namespace.is_none_or(|ns| r.app.metadata.namespace.as_deref() == Some(ns))
            })
            .map(|(k, _)| k.clone())
            .collect();
        match keys.as_slice() {
            [] => Err(FindError::NotFound),
            [key] => Ok(key.clone()),
            _ => Err(FindError::Ambiguous(keys)),
        }
    }
}
