//! `Directory` sources: a local directory read in place and watched with `notify`.
//!
//! The revision of a directory is `sha256:<hex>`, a hash of every file's path and content
//! (`.git` excluded), so an unchanged directory keeps its revision across restarts and a
//! change anywhere yields a new one. The watcher coalesces bursts of file events, re-hashes
//! the directory and sends a [`SourceUpdate`] only when the revision changed. A snapshot is
//! pinned to the content its revision was hashed from ([`PinnedDirTree`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::debounce;
use super::pinned_tree::PinnedDirTree;
use super::snapshot::Snapshot;
use super::status::{Reason, SourceStatus, SourceUpdate};
use super::url::{SourceKey, parse_repo_url};
use crate::render::tree::{DirTree, TreeError};

/// Why a directory source failed.
#[derive(Debug, thiserror::Error)]
pub enum DirectoryError {
    /// The directory cannot be read.
    #[error("directory {path}: {source}")]
    Read {
        /// The directory.
        path: PathBuf,
        /// The cause.
        #[source]
        source: TreeError,
    },
    /// The directory path is not usable as a source.
    #[error("directory {path}: {reason}")]
    Invalid {
        /// The directory.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The file watcher could not be started.
    #[error("directory {path}: cannot watch for changes: {source}")]
    Watch {
        /// The directory.
        path: PathBuf,
        /// The cause.
        #[source]
        source: notify::Error,
    },
}

/// The source key of a directory: its canonical `file://` URL.
pub fn directory_key(path: &Path) -> Result<SourceKey, DirectoryError> {
    let tree = DirTree::new(path).map_err(|source| DirectoryError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    key_of_root(path, tree.root())
}

/// The source key of directory `path` whose canonical form is `root`.
fn key_of_root(path: &Path, root: &Path) -> Result<SourceKey, DirectoryError> {
    let text = root.to_str().ok_or_else(|| DirectoryError::Invalid {
        path: path.to_path_buf(),
        reason: "path is not valid UTF-8".to_string(),
    })?;
    parse_repo_url(text)
        .map(|u| u.key)
        .map_err(|e| DirectoryError::Invalid {
            path: path.to_path_buf(),
            reason: e.reason,
        })
}

/// Reads `path` as a snapshot whose revision is the content hash of its files, pinned to
/// that content ([`PinnedDirTree`]): a file changed before the App renders is refused, never
/// rendered under a revision that does not name it.
pub fn snapshot_directory(path: &Path) -> Result<Snapshot, DirectoryError> {
    let (tree, digest) = PinnedDirTree::pin(path).map_err(|source| DirectoryError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(Snapshot {
        source_key: key_of_root(path, tree.root())?,
        revision: format!("sha256:{digest}"),
        tree: Arc::new(tree),
    })
}

/// A running directory watch; dropping it stops watching.
pub struct DirectoryWatch {
    task: JoinHandle<()>,
}

impl Drop for DirectoryWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Watches `path` for App `app`: sends its current snapshot at once, then a new one after
/// each change of content. Must be called inside a tokio runtime.
pub fn watch(
    app: &str,
    path: &Path,
    updates: mpsc::UnboundedSender<SourceUpdate>,
) -> Result<DirectoryWatch, DirectoryError> {
    let key = directory_key(path)?;
    let mut events = debounce::watch(path, true).map_err(|source| DirectoryError::Watch {
        path: path.to_path_buf(),
        source,
    })?;
    let app = app.to_string();
    let path = path.to_path_buf();
    let task = tokio::spawn(async move {
        let mut last: Option<String> = None;
        loop {
            let dir = path.clone();
            let result = tokio::task::spawn_blocking(move || snapshot_directory(&dir)).await;
            let update = match result {
                Ok(Ok(snapshot)) if last.as_deref() != Some(snapshot.revision.as_str()) => {
                    last = Some(snapshot.revision.clone());
                    Some(SourceUpdate {
                        app: app.clone(),
                        status: status(
                            &key,
                            Some(snapshot.revision.clone()),
                            Reason::Fetched,
                            "directory content changed".to_string(),
                        ),
                        snapshot: Some(snapshot),
                    })
                }
                Ok(Ok(_)) => None,
                Ok(Err(e)) => Some(SourceUpdate {
                    app: app.clone(),
                    status: status(&key, last.clone(), Reason::Unreachable, e.to_string()),
                    snapshot: None,
                }),
                Err(e) => Some(SourceUpdate {
                    app: app.clone(),
                    status: status(&key, last.clone(), Reason::FetchFailed, e.to_string()),
                    snapshot: None,
                }),
            };
            if let Some(update) = update
                && updates.send(update).is_err()
            {
                return;
            }
            if !events.next_burst().await {
                return;
            }
        }
    });
    Ok(DirectoryWatch { task })
}

fn status(
    key: &SourceKey,
    revision: Option<String>,
    reason: Reason,
    message: String,
) -> SourceStatus {
    SourceStatus {
        source_key: key.clone(),
        revision,
        reason,
        message,
        failures: u32::from(reason.is_error()),
        next_poll: Duration::ZERO,
    }
}
