//! A resolved source: which revision an App renders and read access to its files, and gix
//! errors worded on one line ([`describe`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use gix::ObjectId;
use gix::bstr::BString;
use gix::objs::tree::EntryMode;

use super::url::SourceKey;
use crate::render::tree::{DirEntry, EntryKind, Tree, TreeError, join, normalize};

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

/// How many directory entries one [`GitTree`] keeps decoded; directories met beyond that are
/// decoded again at each lookup (bounded memory for trees of any size).
const MAX_CACHED_ENTRIES: usize = 200_000;

/// A [`Tree`] reading a commit's files straight from a bare repository's object database (no
/// worktree). Symlinks are followed while they stay inside the tree; submodules are absent.
///
/// Each directory is inflated and decoded once and then looked up by binary search: the Apps
/// of a monorepo share one tree per commit, and a root directory of 10,000 App folders decoded
/// again at every file lookup of every App made a cold start quadratic.
pub struct GitTree {
    inner: Mutex<Inner>,
    root: ObjectId,
    /// Held while the tree is alive, so the mirror does not remove packs it may read.
    _lease: Option<Arc<()>>,
}

/// The repository handle and the directories decoded so far.
struct Inner {
    repo: gix::Repository,
    dirs: HashMap<ObjectId, Arc<Dir>>,
    /// How many entries `dirs` holds.
    cached: usize,
}

/// One decoded directory: its entries sorted by name.
struct Dir {
    entries: Vec<Entry>,
}

/// One directory entry.
struct Entry {
    name: BString,
    mode: EntryMode,
    oid: ObjectId,
}

impl Dir {
    /// The entry named `name`; of several (a malformed tree), the first in the tree's order
    /// (the sort is stable).
    fn find(&self, name: &str) -> Option<&Entry> {
        let at = self
            .entries
            .partition_point(|e| e.name.as_slice() < name.as_bytes());
        self.entries
            .get(at)
            .filter(|e| e.name.as_slice() == name.as_bytes())
    }
}

impl Inner {
    /// The directory `id`, decoded (and cached, within [`MAX_CACHED_ENTRIES`]) on first use.
    fn dir(&mut self, id: ObjectId, path: &str) -> Result<Arc<Dir>, TreeError> {
        if let Some(dir) = self.dirs.get(&id) {
            return Ok(Arc::clone(dir));
        }
        let tree = self.repo.find_tree(id).map_err(|e| odb_error(path, &e))?;
        let decoded = tree.decode().map_err(|e| odb_error(path, &e))?;
        let mut entries: Vec<Entry> = decoded
            .entries
            .iter()
            .map(|e| Entry {
                name: e.filename.to_owned(),
                mode: e.mode,
                oid: e.oid.to_owned(),
            })
            .collect();
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        let dir = Arc::new(Dir { entries });
        if self.cached + dir.entries.len() <= MAX_CACHED_ENTRIES {
            self.cached += dir.entries.len();
            self.dirs.insert(id, Arc::clone(&dir));
        }
        Ok(dir)
    }
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
            inner: Mutex::new(Inner {
                repo,
                dirs: HashMap::new(),
                cached: 0,
            }),
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

    fn with_inner<T>(
        &self,
        path: &str,
        f: impl FnOnce(&mut Inner) -> Result<T, TreeError>,
    ) -> Result<T, TreeError> {
        let mut inner = self.inner.lock().map_err(|_| TreeError::Io {
            path: path.to_string(),
            message: "repository handle poisoned by an earlier panic".to_string(),
        })?;
        f(&mut inner)
    }

    /// Resolves `path`, following symlinks that stay inside the tree: what is there and its
    /// real (symlink-free) path.
    fn lookup(&self, inner: &mut Inner, path: &str) -> Result<Option<(Found, String)>, TreeError> {
        let mut pending: Vec<String> = split(path);
        pending.reverse();
        let mut dir_path: Vec<String> = Vec::new();
        let mut current = self.root;
        let mut links = 0;
        while let Some(name) = pending.pop() {
            let dir = inner.dir(current, path)?;
            let Some(entry) = dir.find(&name) else {
                return Ok(None);
            };
            let mode = entry.mode;
            let oid = entry.oid;
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
                let target = inner
                    .repo
                    .find_object(oid)
                    .map_err(|e| odb_error(path, &e))?;
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
        self.with_inner(path, |inner| {
            Ok(self.lookup(inner, path)?.map(|(found, _)| match found {
                Found::Dir(_) => EntryKind::Dir,
                Found::File(_) => EntryKind::File,
            }))
        })
    }

    fn read_dir(&self, path: &str) -> Result<Vec<DirEntry>, TreeError> {
        self.with_inner(path, |inner| {
            let Some((Found::Dir(id), _)) = self.lookup(inner, path)? else {
                return Err(TreeError::NotFound(path.to_string()));
            };
            let dir = inner.dir(id, path)?;
            let mut entries = Vec::new();
            for entry in &dir.entries {
                let name = entry.name.to_string();
                let kind = if entry.mode.is_tree() {
                    EntryKind::Dir
                } else if entry.mode.is_blob() {
                    EntryKind::File
                } else if entry.mode.is_link() {
                    // Listed only when it resolves inside the tree, like DirTree.
                    match self.lookup(inner, &join(path, &name)) {
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
        self.with_inner(path, |inner| {
            let Some((Found::File(id), _)) = self.lookup(inner, path)? else {
                return Err(TreeError::NotFound(path.to_string()));
            };
            let size = inner
                .repo
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
            let object = inner
                .repo
                .find_object(id)
                .map_err(|e| odb_error(path, &e))?;
            Ok(object.detach().data)
        })
    }

    fn real_path(&self, path: &str) -> Result<Option<String>, TreeError> {
        self.with_inner(path, |inner| {
            Ok(self.lookup(inner, path)?.map(|(_, real)| real))
        })
    }
}
