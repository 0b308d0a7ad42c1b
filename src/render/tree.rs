//! Read-only access to the files of a source snapshot.
//!
//! The renderer never touches the file system directly: it reads through [`Tree`], so the same
//! code renders a local directory ([`DirTree`]) and a Git commit read straight from a bare
//! mirror's object database (no worktree). Paths are relative, `/`-separated and normalised
//! (no `.`, `..` or leading `/`); [`normalize`] produces them and refuses anything that would
//! leave the tree.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

/// What a path in a tree is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
}

/// One entry of a directory listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntry {
    /// The entry's name within its directory.
    pub name: String,
    /// Whether it is a file or a directory (symlinks are resolved, see [`DirTree`]).
    pub kind: EntryKind,
}

/// Why a tree could not answer.
#[derive(Debug, thiserror::Error)]
pub enum TreeError {
    /// The path does not exist in the tree.
    #[error("{0}: no such file or directory")]
    NotFound(String),
    /// The path names something the renderer may not read (outside the tree, or a symlink
    /// leading outside it).
    #[error("{path}: {reason}")]
    Forbidden {
        /// The offending path as given.
        path: String,
        /// Why it is refused.
        reason: String,
    },
    /// The path is neither a regular file nor a directory (a FIFO, socket or device).
    #[error("{path}: not a regular file or directory (FIFOs, sockets and devices are never read)")]
    Special {
        /// The offending path.
        path: String,
    },
    /// The file is larger than the caller's limit.
    #[error("{path}: file is {size} bytes, over the limit of {limit} bytes")]
    TooLarge {
        /// The file.
        path: String,
        /// Its size.
        size: u64,
        /// The limit in force.
        limit: u64,
    },
    /// The file changed on disk after the snapshot it belongs to was taken (a Directory
    /// source): its content is no longer the content the snapshot's revision names.
    #[error(
        "{path}: changed on disk since this revision was read; the next revision has the new content"
    )]
    Changed {
        /// The file.
        path: String,
    },
    /// An I/O or object-database error.
    #[error("{path}: {message}")]
    Io {
        /// The file.
        path: String,
        /// What went wrong.
        message: String,
    },
}

/// Read-only access to a snapshot of files: a local directory or a Git tree at one commit.
pub trait Tree: Send + Sync {
    /// The kind of the entry at `path`, or `None` when nothing is there.
    fn kind(&self, path: &str) -> Result<Option<EntryKind>, TreeError>;
    /// The entries of the directory at `path` (`""` is the root), sorted by name.
    fn read_dir(&self, path: &str) -> Result<Vec<DirEntry>, TreeError>;
    /// The bytes of the file at `path`; files over `limit` bytes are refused.
    fn read_file(&self, path: &str, limit: u64) -> Result<Vec<u8>, TreeError>;
    /// Where `path` really is: the tree path left once every symlink along it is followed
    /// (`None` when nothing is there). The renderer's load restrictor compares these, so a
    /// symlink cannot smuggle a file from outside a kustomization's root into it.
    fn real_path(&self, path: &str) -> Result<Option<String>, TreeError>;
}

/// Normalises `path` relative to the directory `base` (both tree paths): resolves `.` and
/// `..`, and refuses a result that would climb above the tree root.
pub fn normalize(base: &str, path: &str) -> Result<String, TreeError> {
    let mut parts: Vec<&str> = if path.starts_with('/') {
        Vec::new()
    } else {
        base.split('/').filter(|p| !p.is_empty()).collect()
    };
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    return Err(TreeError::Forbidden {
                        path: join(base, path),
                        reason: "path leaves the source tree".to_string(),
                    });
                }
            }
            other => parts.push(other),
        }
    }
    Ok(parts.join("/"))
}

/// `base/path` for tree paths (`path` alone at the root), without normalising.
pub fn join(base: &str, path: &str) -> String {
    if base.is_empty() {
        path.to_string()
    } else {
        format!("{base}/{path}")
    }
}

/// What identifies one version of a file on disk: its inode, size and modification and
/// change times. Two equal stamps are the same content but for a rewrite of equal size within
/// one tick of the file system's clock, which a digest check must still catch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStamp {
    device: u64,
    inode: u64,
    size: u64,
    modified: (i64, i64),
    changed: (i64, i64),
}

impl FileStamp {
    /// The stamp of the file `meta` describes.
    pub fn of(meta: &std::fs::Metadata) -> FileStamp {
        use std::os::unix::fs::MetadataExt;
        FileStamp {
            device: meta.dev(),
            inode: meta.ino(),
            size: meta.size(),
            modified: (meta.mtime(), meta.mtime_nsec()),
            changed: (meta.ctime(), meta.ctime_nsec()),
        }
    }
}

/// A [`Tree`] over a local directory. Symlinks are followed only while their target stays
/// inside the root; anything resolving outside is [`TreeError::Forbidden`].
#[derive(Debug, Clone)]
pub struct DirTree {
    root: PathBuf,
}

impl DirTree {
    /// Opens `root` as a tree. The root itself is canonicalised once, here.
    pub fn new(root: impl AsRef<Path>) -> Result<Self, TreeError> {
        let given = root.as_ref();
        let root = given
            .canonicalize()
            .map_err(|e| io_error(&given.display().to_string(), &e))?;
        Ok(Self { root })
    }

    /// The canonical root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The stamp of the file at `path` (`None` when nothing is there): what a rewrite, a
    /// rename over it or a truncation changes, so a reader can tell that a file it read is
    /// still the file on disk without reading it again.
    pub fn stamp(&self, path: &str) -> Result<Option<FileStamp>, TreeError> {
        let Some(real) = self.resolve(path)? else {
            return Ok(None);
        };
        match std::fs::metadata(&real) {
            Ok(meta) => Ok(Some(FileStamp::of(&meta))),
            // Removed since it was resolved.
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io_error(path, &e)),
        }
    }

    /// Resolves a tree path to a real path inside the root, following symlinks.
    fn resolve(&self, path: &str) -> Result<Option<PathBuf>, TreeError> {
        let joined = self.root.join(path);
        match joined.canonicalize() {
            Ok(real) if real.starts_with(&self.root) => Ok(Some(real)),
            Ok(_) => Err(TreeError::Forbidden {
                path: path.to_string(),
                reason: "symlink resolves outside the source tree".to_string(),
            }),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io_error(path, &e)),
        }
    }
}

impl Tree for DirTree {
    fn kind(&self, path: &str) -> Result<Option<EntryKind>, TreeError> {
        let Some(real) = self.resolve(path)? else {
            return Ok(None);
        };
        match std::fs::metadata(&real) {
            Ok(meta) => entry_kind(path, &meta).map(Some),
            // Removed since it was resolved.
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io_error(path, &e)),
        }
    }

    fn read_dir(&self, path: &str) -> Result<Vec<DirEntry>, TreeError> {
        let real = self
            .resolve(path)?
            .ok_or_else(|| TreeError::NotFound(path.to_string()))?;
        let mut entries = Vec::new();
        for entry in std::fs::read_dir(&real).map_err(|e| io_error(path, &e))? {
            let entry = entry.map_err(|e| io_error(path, &e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let child = join(path, &name);
            // Entries whose symlinks leave the tree are skipped in listings (reading them
            // directly is refused by `resolve`); FIFOs, sockets and devices are refused.
            match self.kind(&child) {
                Ok(Some(kind)) => entries.push(DirEntry { name, kind }),
                Err(special @ TreeError::Special { .. }) => return Err(special),
                Ok(None) | Err(_) => {}
            }
        }
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(entries)
    }

    fn read_file(&self, path: &str, limit: u64) -> Result<Vec<u8>, TreeError> {
        let real = self
            .resolve(path)?
            .ok_or_else(|| TreeError::NotFound(path.to_string()))?;
        let meta = std::fs::metadata(&real).map_err(|e| read_error(path, &e))?;
        if entry_kind(path, &meta)? != EntryKind::File {
            return Err(io_error(path, &std::io::Error::other("is a directory")));
        }
        let size = meta.len();
        if size > limit {
            return Err(TreeError::TooLarge {
                path: path.to_string(),
                size,
                limit,
            });
        }
        std::fs::read(&real).map_err(|e| read_error(path, &e))
    }

    fn real_path(&self, path: &str) -> Result<Option<String>, TreeError> {
        Ok(self.resolve(path)?.map(|real| {
            real.strip_prefix(&self.root)
                .map(|rel| rel.to_string_lossy().into_owned())
                .unwrap_or_default()
        }))
    }
}

/// A directory or a regular file; anything else (a FIFO, a socket, a device) is refused, since
/// reading it could block forever or read without end.
fn entry_kind(path: &str, meta: &std::fs::Metadata) -> Result<EntryKind, TreeError> {
    if meta.is_dir() {
        Ok(EntryKind::Dir)
    } else if meta.is_file() {
        Ok(EntryKind::File)
    } else {
        Err(TreeError::Special {
            path: path.to_string(),
        })
    }
}

/// The names `tree` lists in the directory `dir`, in order (for tests of trees).
#[cfg(test)]
pub(crate) fn listed_names(tree: &dyn Tree, dir: &str) -> Vec<String> {
    match tree.read_dir(dir) {
        Ok(entries) => entries.into_iter().map(|e| e.name).collect(),
        Err(e) => panic!("listing {dir}: {e}"),
    }
}

/// A failed read of the file at `path`: [`TreeError::NotFound`] when it was removed since it
/// was resolved, an I/O error otherwise.
fn read_error(path: &str, error: &std::io::Error) -> TreeError {
    if error.kind() == ErrorKind::NotFound {
        TreeError::NotFound(path.to_string())
    } else {
        io_error(path, error)
    }
}

fn io_error(path: &str, error: &std::io::Error) -> TreeError {
    TreeError::Io {
        path: path.to_string(),
        message: error.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_resolves_dots_and_refuses_escape() {
        assert_eq!(normalize("a/b", "../c/./d.yaml").unwrap(), "a/c/d.yaml");
        assert_eq!(normalize("", "x.yaml").unwrap(), "x.yaml");
        assert!(matches!(
            normalize("a", "../../etc/passwd"),
            Err(TreeError::Forbidden { .. })
        ));
    }

    #[test]
    fn fifos_sockets_and_devices_are_refused_never_read() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.yaml"), "a: 1\n").unwrap();
        let fifo = dir.path().join("b.yaml");
        let c_path = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid, NUL-terminated path; mkfifo only creates the node.
        assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
        std::os::unix::fs::symlink("/dev/zero", dir.path().join("zero.yaml")).unwrap();
        let tree = DirTree::new(dir.path()).unwrap();
        // Reading the FIFO would block forever.
        let err = tree.read_file("b.yaml", 1 << 20).unwrap_err();
        assert!(matches!(err, TreeError::Special { .. }), "{err}");
        assert!(
            err.to_string().starts_with("b.yaml: not a regular file"),
            "{err}"
        );
        // A device (here through a symlink, which leaves the tree) is never read either.
        let err = tree.read_file("zero.yaml", 1 << 20).unwrap_err();
        assert!(matches!(err, TreeError::Forbidden { .. }), "{err}");
        let err = tree.read_dir("").unwrap_err();
        assert!(
            err.to_string().contains("b.yaml"),
            "a listing names it: {err}"
        );
    }

    #[test]
    fn dir_tree_reads_lists_and_refuses_symlinks_out() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "s").unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/a.yaml"), "a: 1\n").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), dir.path().join("leak")).unwrap();
        std::os::unix::fs::symlink("sub/a.yaml", dir.path().join("inside")).unwrap();

        let tree = DirTree::new(dir.path()).unwrap();
        assert_eq!(tree.read_file("sub/a.yaml", 100).unwrap(), b"a: 1\n");
        assert_eq!(tree.read_file("inside", 100).unwrap(), b"a: 1\n");
        assert!(matches!(
            tree.read_file("leak", 100),
            Err(TreeError::Forbidden { .. })
        ));
        assert!(matches!(
            tree.read_file("sub/a.yaml", 2),
            Err(TreeError::TooLarge { .. })
        ));
        assert!(matches!(
            tree.read_file("nope", 100),
            Err(TreeError::NotFound(_))
        ));
        assert_eq!(listed_names(&tree, ""), ["inside", "sub"]);
        assert_eq!(tree.kind("sub").unwrap(), Some(EntryKind::Dir));
        assert_eq!(tree.real_path("inside").unwrap().unwrap(), "sub/a.yaml");
        assert_eq!(tree.real_path("sub").unwrap().unwrap(), "sub");
        assert_eq!(tree.real_path("").unwrap().unwrap(), "");
        assert_eq!(tree.real_path("nope").unwrap(), None);
        assert!(matches!(
            tree.real_path("leak"),
            Err(TreeError::Forbidden { .. })
        ));
    }
}
