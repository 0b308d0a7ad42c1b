//! Intake of source updates: each new snapshot of an App's source is rendered through the
//! render cache and, when the App still uses that source, becomes its manifests and enqueues a
//! pass (a revision that does not render is the App's Failed status, naming that revision);
//! the source's health goes into the App's status.

use std::sync::Arc;

use jiff::Timestamp;
use tokio::sync::mpsc::UnboundedReceiver;

use super::Runner;
use crate::reconcile::pass::Manifests;
use crate::reconcile::status;
use crate::sources::spec::Source;
use crate::sources::status::{SourceStatus, SourceUpdate};

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
            let dir = match source.validate() {
                Ok(Source::Git(git)) => git.path,
                _ => String::new(),
            };
            let source_key = snapshot.source_key.clone();
            let revision = snapshot.revision.clone();
            let this = Arc::clone(&self);
            let key = update.app.clone();
            let rendered = tokio::task::spawn_blocking(move || {
                this.cache
                    .render(&key, &snapshot.source_key, snapshot.tree.as_ref(), &dir)
            })
            .await;
            let message = match rendered {
                Ok(Ok(cached)) => {
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
                Ok(Err(e)) => format!("render failed: {e}"),
                Err(e) => format!("render task failed: {e}"),
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
