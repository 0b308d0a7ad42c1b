//! A resolved source: which revision an App renders and read access to its files, and gix
//! errors worded on one line ([`describe`]).

use std::sync::{Arc, Mutex};

use gix::ObjectId;

use super::url::SourceKey;
use crate::render::tree::{DirEntry, EntryKind, Tree, TreeError, normalize};

/// One resolved state of a source, handed to the renderer.
#[derive(Clone)]
pub struct Snapshot {
    /// The repository (or directory) this snapshot comes from.
    pub source_key: SourceKey,
    /// The revision: a commit id for Git, a content hash of the files for a directory.
    pub revision: String,
    /// The files at that revision.
    pub tree: Arc<dyn Tree>,
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot")
            .field("source_key", &self.source_key)
            .field("revision", &self.revision)
            .finish_non_exhaustive()
    }
}

/// How many symlinks one lookup may follow before it is refused as a loop.
const MAX_SYMLINKS: usize = 16;

/// A [`Tree`] reading a commit's files straight from a bare repository's object database (no
/// worktree). Symlinks are followed while they stay inside the tree; submodules are absent.
pub struct GitTree {
    repo: Mutex<gix::Repository>,
    root: ObjectId,
    /// Held while the tree is alive, so the mirror does not remove packs it may read.
    _lease: Option<Arc<()>>,
}

/// What a path resolves to inside a Git tree.
enum Found {
    Dir(ObjectId),
    File(ObjectId),
}

impl GitTree {
    /// A tree over the Git tree object `root` of `repo`.
    pub fn new(repo: gix::Repository, root: ObjectId) -> Self {
        Self {
            repo: Mutex::new(repo),
            root,
            _lease: None,
        }
    }

    /// The same tree holding `lease` until it is dropped (the mirror defers removing packs
    /// while leases are out).
    pub fn with_lease(mut self, lease: Arc<()>) -> Self {
        self._lease = Some(lease);
        self
    }

    fn with_repo<T>(
        &self,
        path: &str,
        f: impl FnOnce(&gix::Repository) -> Result<T, TreeError>,
    ) -> Result<T, TreeError> {
        let repo = self.repo.lock().map_err(|_| TreeError::Io {
            path: path.to_string(),
            message: "repository handle poisoned by an earlier panic".to_string(),
        })?;
        f(&repo)
    }

    /// Resolves `path`, following symlinks that stay inside the tree: what is there and its
    /// real (symlink-free) path.
    fn lookup(
        &self,
        repo: &gix::Repository,
        path: &str,
    ) -> Result<Option<(Found, String)>, TreeError> {
        let mut pending: Vec<String> = split(path);
        pending.reverse();
        let mut dir_path: Vec<String> = Vec::new();
        let mut current = self.root;
        let mut links = 0;
        while let Some(name) = pending.pop() {
            let tree = repo.find_tree(current).map_err(|e| odb_error(path, &e))?;
            let decoded = tree.decode().map_err(|e| odb_error(path, &e))?;
            let Some(entry) = decoded.entries.iter().find(|e| e.filename == name.as_str()) else {
                return Ok(None);
            };
            let mode = entry.mode;
            let oid = entry.oid.to_owned();
            if mode.is_tree() {
                dir_path.push(name);
                current = oid;
            } else if mode.is_link() {
                links += 1;
                if links > MAX_SYMLINKS {
                    return Err(TreeError::Forbidden {
                        path: path.to_string(),
                        reason: "too many levels of symbolic links".to_string(),
                    });
                }
                let target = repo.find_object(oid).map_err(|e| odb_error(path, &e))?;
                let target = String::from_utf8_lossy(&target.data).into_owned();
                let resolved =
                    normalize(&dir_path.join("/"), &target).map_err(|_| TreeError::Forbidden {
                        path: path.to_string(),
                        reason: "symlink resolves outside the source tree".to_string(),
                    })?;
                for part in split(&resolved).into_iter().rev() {
                    pending.push(part);
                }
                dir_path.clear();
                current = self.root;
            } else if mode.is_blob() {
                if pending.is_empty() {
                    dir_path.push(name);
                    return Ok(Some((Found::File(oid), dir_path.join("/"))));
                }
                return Ok(None);
            } else {
                // A submodule (commit entry): its files are not part of this repository.
                return Ok(None);
            }
        }
        Ok(Some((Found::Dir(current), dir_path.join("/"))))
    }
}

fn split(path: &str) -> Vec<String> {
    path.split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .map(str::to_string)
        .collect()
}

/// Maps an object-database failure to a tree error that says what probably happened.
fn odb_error(path: &str, error: &gix::Error) -> TreeError {
    TreeError::Io {
        path: path.to_string(),
        message: format!(
            "cannot read from the repository mirror (corrupted or missing object?): {}",
            describe(error)
        ),
    }
}

/// A gix error with all its causes, on one line.
pub fn describe(error: &gix::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for e in error.iter_errors() {
        let text = e.to_string();
        if !parts.iter().any(|p| p == &text) {
            parts.push(text);
        }
    }
    if parts.is_empty() {
        error.to_string()
    } else {
        parts.join(": ")
    }
}

impl Tree for GitTree {
    fn kind(&self, path: &str) -> Result<Option<EntryKind>, TreeError> {
        self.with_repo(path, |repo| {
            Ok(self.lookup(repo, path)?.map(|(found, _)| match found {
                Found::Dir(_) => EntryKind::Dir,
                Found::File(_) => EntryKind::File,
            }))
        })
    }

    fn read_dir(&self, path: &str) -> Result<Vec<DirEntry>, TreeError> {
        self.with_repo(path, |repo| {
            let Some((Found::Dir(id), _)) = self.lookup(repo, path)? else {
                return Err(TreeError::NotFound(path.to_string()));
            };
            let tree = repo.find_tree(id).map_err(|e| odb_error(path, &e))?;
            let decoded = tree.decode().map_err(|e| odb_error(path, &e))?;
            let mut entries = Vec::new();
            for entry in &decoded.entries {
                let name = entry.filename.to_string();
                let kind = if entry.mode.is_tree() {
                    EntryKind::Dir
                } else if entry.mode.is_blob() {
                    EntryKind::File
                } else if entry.mode.is_link() {
                    // Listed only when it resolves inside the tree, like DirTree.
                    let child = if path.is_empty() {
                        name.clone()
                    } else {
                        format!("{path}/{name}")
                    };
                    match self.lookup(repo, &child) {
                        Ok(Some((Found::Dir(_), _))) => EntryKind::Dir,
                        Ok(Some((Found::File(_), _))) => EntryKind::File,
                        _ => continue,
                    }
                } else {
                    continue;
                };
                entries.push(DirEntry { name, kind });
            }
            entries.sort_by(|a, b| a.name.cmp(&b.name));
            Ok(entries)
        })
    }

    fn read_file(&self, path: &str, limit: u64) -> Result<Vec<u8>, TreeError> {
        self.with_repo(path, |repo| {
            let Some((Found::File(id), _)) = self.lookup(repo, path)? else {
                return Err(TreeError::NotFound(path.to_string()));
            };
            let size = repo
                .find_header(id)
                .map_err(|e| odb_error(path, &e))?
                .size();
            if size > limit {
                return Err(TreeError::TooLarge {
                    path: path.to_string(),
                    size,
                    limit,
                });
            }
            let object = repo.find_object(id).map_err(|e| odb_error(path, &e))?;
            Ok(object.detach().data)
        })
    }

    fn real_path(&self, path: &str) -> Result<Option<String>, TreeError> {
        self.with_repo(path, |repo| {
            Ok(self.lookup(repo, path)?.map(|(_, real)| real))
        })
    }
}
