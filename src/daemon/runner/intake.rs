//! Intake of source updates: each new snapshot of an App's source is rendered through the
//! render cache and, when the App still uses that source, becomes its manifests and enqueues a
//! pass (a revision that does not render is the App's Failed status, naming that revision);
//! the source's health goes into the App's status. A Directory snapshot whose files changed
//! while it waited or rendered is taken afresh, so the App renders what is on disk under the
//! revision that names it.

use std::sync::Arc;

use jiff::Timestamp;
use tokio::sync::mpsc::UnboundedReceiver;

use super::Runner;
use crate::reconcile::pass::Manifests;
use crate::reconcile::status;
use crate::render::RenderError;
use crate::sources::directory::snapshot_directory;
use crate::sources::render_cache::{CachedRender, RenderCache};
use crate::sources::snapshot::Snapshot;
use crate::sources::spec::Source;
use crate::sources::status::{SourceStatus, SourceUpdate};

/// How many times one update's Directory snapshot is taken afresh when its files keep
/// changing while it renders, before the change is reported as the App's failure.
const FRESH_SNAPSHOTS: usize = 3;

impl Runner {
    /// Reads source updates until the channel closes.
    pub(super) async fn receive(self: Arc<Self>, mut updates: UnboundedReceiver<SourceUpdate>) {
        while let Some(update) = updates.recv().await {
            // Updates of a source the App no longer uses (or of a removed App) are stale.
            let current = self
                .apps
                .lock()
                .get(&update.app)
                .filter(|r| r.loaded && r.source_key == update.status.source_key)
                .map(|r| r.app.spec.source.clone());
            let Some(source) = current else {
                continue;
            };
            self.record_source(&update.app, &update.status);
            let Some(snapshot) = update.snapshot else {
                continue;
            };
            let source_key = snapshot.source_key.clone();
            let taken = snapshot.revision.clone();
            let this = Arc::clone(&self);
            let key = update.app.clone();
            let rendered = tokio::task::spawn_blocking(move || {
                render_snapshot(&this.cache, &key, snapshot, source.validate().ok())
            })
            .await;
            let (revision, message) = match rendered {
                Ok((revision, Ok(cached))) => {
                    let mut apps = self.apps.lock();
                    if let Some(record) = apps
                        .get_mut(&update.app)
                        .filter(|r| r.source_key == source_key)
                    {
                        record.manifests = Some(Arc::new(Manifests {
                            revision,
                            digest: cached.rendered.digest.clone(),
                            objects: cached.rendered.objects.clone(),
                        }));
                        drop(apps);
                        self.scheduler.enqueue(update.app);
                    }
                    continue;
                }
                Ok((revision, Err(e))) => (revision, format!("render failed: {e}")),
                Err(e) => (taken, format!("render task failed: {e}")),
            };
            let previous = self.status(&update.app).unwrap_or_default();
            let failed = status::failed_at(&previous, &revision, None, &message, Timestamp::now());
            self.record(&update.app, failed);
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
                Timestamp::now(),
            ))
        } else {
            status::source_recovered(&previous, Timestamp::now())
        };
        if let Some(next) = next {
            self.record(key, next);
        }
    }
}

/// Renders `snapshot` of App `key`'s `source` through the render cache; returns the
/// revision rendered with the result. A Directory whose files changed since the snapshot
/// was taken is snapshotted afresh (up to [`FRESH_SNAPSHOTS`] times) and that rendered
/// instead: the watcher's own next snapshot may carry the revision it already sent.
fn render_snapshot(
    cache: &RenderCache,
    key: &str,
    mut snapshot: Snapshot,
    source: Option<Source>,
) -> (String, Result<CachedRender, RenderError>) {
    let dir = match &source {
        Some(Source::Git(git)) => git.path.as_str(),
        _ => "",
    };
    let mut fresh = 0;
    loop {
        let result = cache.render(key, &snapshot.source_key, snapshot.tree.as_ref(), dir);
        if let (Err(e), Some(Source::Directory(path))) = (&result, &source)
            && e.source_changed()
            && fresh < FRESH_SNAPSHOTS
            && let Ok(retaken) = snapshot_directory(path)
        {
            tracing::info!(app = %key, revision = %retaken.revision, "directory changed while rendering; rendering it afresh");
            snapshot = retaken;
            fresh += 1;
            continue;
        }
        return (snapshot.revision, result);
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn write(root: &Path, name: &str, text: &str) {
        std::fs::write(root.join(name), text).unwrap();
    }

    fn config_map(value: u32) -> String {
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  v: \"{value}\"\n")
    }

    #[test]
    fn a_directory_changed_before_it_renders_is_rendered_afresh_under_its_new_revision() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "kustomization.yaml", "resources: [cm.yaml]\n");
        write(dir.path(), "cm.yaml", &config_map(1));
        let taken = snapshot_directory(dir.path()).unwrap();
        write(dir.path(), "cm.yaml", &config_map(2));
        let now = snapshot_directory(dir.path()).unwrap();
        assert_ne!(now.revision, taken.revision);

        let source = Some(Source::Directory(dir.path().to_path_buf()));
        let (revision, result) =
            render_snapshot(&RenderCache::new(), "ns/app", taken.clone(), source);
        assert_eq!(revision, now.revision);
        let expected = RenderCache::new()
            .render("ns/app", &now.source_key, now.tree.as_ref(), "")
            .unwrap();
        assert_eq!(result.unwrap().rendered.digest, expected.rendered.digest);

        // Without a directory to take afresh, the change is the failure, under the old revision.
        let (revision, result) =
            render_snapshot(&RenderCache::new(), "ns/app", taken.clone(), None);
        assert_eq!(revision, taken.revision);
        let err = result.unwrap_err();
        assert!(err.source_changed(), "{err}");
        assert!(
            err.to_string().contains("cm.yaml: changed on disk"),
            "{err}"
        );
    }
}
