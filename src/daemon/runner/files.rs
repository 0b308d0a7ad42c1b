//! Apps from files: the `--apps DIR` directory, reloaded whenever a file in it changes.

use std::path::Path;
use std::sync::Arc;

use super::{Origin, Runner};
use crate::app::files::{AppsDir, AppsDirError};
use crate::sources::debounce;

impl Runner {
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
                    *this.file_errors.lock() = vec![e.to_string()];
                }
            }
        });
        self.tasks.lock().push(task);
        Ok(())
    }

    /// Applies one reload of the `--apps` directory to the App set.
    async fn reload_apps_dir(&self, loaded: &mut AppsDir, dir: &Path) -> Result<(), AppsDirError> {
        let reload = loaded.reload(dir)?;
        let mut errors: Vec<String> = reload.errors.iter().map(ToString::to_string).collect();
        for (namespace, name) in &reload.removals {
            self.remove(&format!("{namespace}/{name}"), Origin::File);
        }
        for app in reload.into_upserts() {
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
        *self.file_errors.lock() = errors;
        Ok(())
    }
}
