//! A local directory pinned to the content its revision was computed from.
//!
//! A Directory source's revision is a hash of its files, but the files stay on disk and are
//! read again when the App renders, maybe after an editor or a `git checkout` changed them. A
//! [`PinnedDirTree`] records the directory's listings and each file's digest in the same walk
//! that computes the revision; it then answers every lookup from that record and checks each
//! file it reads against its recorded digest. A file changed since is refused
//! ([`TreeError::Changed`]): the pass fails under the old revision and the watcher's next
//! snapshot renders the new content under its own revision, so a revision never names content
//! it does not have.
//!
//! The walk visits each real directory once: a symlink is recorded as a link to its target
//! (hashed as such) and never followed by the walk, so a symlink loop cannot make it endless.

use std::collections::HashMap;
use std::path::Path;

use sha2::{Digest, Sha256};

use crate::render::tree::{DirEntry, DirTree, EntryKind, Tree, TreeError, join};

/// Files over this size are pinned (and hashed) by their size only.
const MAX_HASHED_BYTES: u64 = 64 * 1024 * 1024;

/// What a file's content was when the tree was pinned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pin {
    /// The sha256 of its bytes.
    Sha256([u8; 32]),
    /// Its size, for a file over [`MAX_HASHED_BYTES`].
    Size(u64),
}

/// One entry of a recorded directory listing.
#[derive(Debug)]
struct Entry {
    name: String,
    kind: EntryKind,
    /// The tree path the entry really is (its own path unless it is a symlink).
    real: String,
}

/// A [`Tree`] over a local directory as it was when [`PinnedDirTree::pin`] walked it.
#[derive(Debug)]
pub struct PinnedDirTree {
    disk: DirTree,
    /// The listing of each real directory (`""` is the root), sorted by name.
    dirs: HashMap<String, Vec<Entry>>,
    /// The content of each real file.
    files: HashMap<String, Pin>,
}

impl PinnedDirTree {
    /// Walks the directory `root` (`.git` excluded) and returns it pinned, with the hex
    /// sha256 of every file's path and content: the revision of a Directory source.
    ///
    /// A directory without symlinks hashes as `path \0 hex(sha256(content)) \n` for each
    /// file in path order; a symlink adds `path \0 ->target \n` in its place, its target
    /// being hashed where it really is.
    pub fn pin(root: &Path) -> Result<(Self, String), TreeError> {
        let mut tree = Self {
            disk: DirTree::new(root)?,
            dirs: HashMap::new(),
            files: HashMap::new(),
        };
        let mut hasher = Sha256::new();
        tree.walk("", &mut hasher)?;
        Ok((tree, hex::encode(hasher.finalize())))
    }

    /// The canonical root directory.
    pub fn root(&self) -> &Path {
        self.disk.root()
    }

    /// Records the real directory `dir` and everything really under it.
    fn walk(&mut self, dir: &str, hasher: &mut Sha256) -> Result<(), TreeError> {
        let mut entries = Vec::new();
        for listed in self.disk.read_dir(dir)? {
            if dir.is_empty() && listed.name == ".git" {
                continue;
            }
            let path = join(dir, &listed.name);
            let real = self
                .disk
                .real_path(&path)?
                .ok_or_else(|| TreeError::Changed { path: path.clone() })?;
            if real == ".git" || real.starts_with(".git/") {
                continue;
            }
            if real != path {
                hasher.update(format!("{path}\0->{real}\n").as_bytes());
            } else if listed.kind == EntryKind::Dir {
                self.walk(&path, hasher)?;
            } else {
                let pin = match self.disk.read_file(&path, MAX_HASHED_BYTES) {
                    Ok(bytes) => Pin::Sha256(Sha256::digest(&bytes).into()),
                    Err(TreeError::TooLarge { size, .. }) => Pin::Size(size),
                    Err(e) => return Err(e),
                };
                let content = match pin {
                    Pin::Sha256(digest) => hex::encode(digest),
                    Pin::Size(size) => format!("size:{size}"),
                };
                hasher.update(format!("{path}\0{content}\n").as_bytes());
                self.files.insert(path.clone(), pin);
            }
            entries.push(Entry {
                name: listed.name,
                kind: listed.kind,
                real,
            });
        }
        self.dirs.insert(dir.to_string(), entries);
        Ok(())
    }

    /// The recorded listing of the real directory `dir` (empty for one the walk left out).
    fn listing(&self, dir: &str) -> &[Entry] {
        self.dirs.get(dir).map_or(&[], Vec::as_slice)
    }

    /// The recorded entry at `path`: its kind and real path, or `None` when the pinned tree
    /// has nothing there. A name the walk did not list is asked of the disk only to keep its
    /// refusal (a symlink leading out of the tree stays [`TreeError::Forbidden`]).
    fn lookup(&self, path: &str) -> Result<Option<(EntryKind, &str)>, TreeError> {
        let mut found = (EntryKind::Dir, "");
        for name in path.split('/').filter(|part| !part.is_empty()) {
            let (EntryKind::Dir, dir) = found else {
                return Ok(None);
            };
            let listing = self.listing(dir);
            match listing.binary_search_by(|entry| entry.name.as_str().cmp(name)) {
                Ok(at) => found = (listing[at].kind, listing[at].real.as_str()),
                Err(_) => {
                    return match self.disk.kind(path) {
                        Err(forbidden @ TreeError::Forbidden { .. }) => Err(forbidden),
                        _ => Ok(None),
                    };
                }
            }
        }
        Ok(Some(found))
    }
}

impl Tree for PinnedDirTree {
    fn kind(&self, path: &str) -> Result<Option<EntryKind>, TreeError> {
        Ok(self.lookup(path)?.map(|(kind, _)| kind))
    }

    fn read_dir(&self, path: &str) -> Result<Vec<DirEntry>, TreeError> {
        match self.lookup(path)? {
            Some((EntryKind::Dir, real)) => Ok(self
                .listing(real)
                .iter()
                .map(|entry| DirEntry {
                    name: entry.name.clone(),
                    kind: entry.kind,
                })
                .collect()),
            Some((EntryKind::File, _)) => Err(TreeError::Io {
                path: path.to_string(),
                message: "not a directory".to_string(),
            }),
            None => Err(TreeError::NotFound(path.to_string())),
        }
    }

    fn read_file(&self, path: &str, limit: u64) -> Result<Vec<u8>, TreeError> {
        let real = match self.lookup(path)? {
            Some((EntryKind::File, real)) => real,
            Some((EntryKind::Dir, _)) => {
                return Err(TreeError::Io {
                    path: path.to_string(),
                    message: "is a directory".to_string(),
                });
            }
            None => return Err(TreeError::NotFound(path.to_string())),
        };
        let changed = || TreeError::Changed {
            path: path.to_string(),
        };
        let pin = self.files.get(real).ok_or_else(changed)?;
        let bytes = match self.disk.read_file(real, limit) {
            Err(TreeError::NotFound(_)) => return Err(changed()),
            other => other?,
        };
        let same = match pin {
            Pin::Sha256(digest) => <[u8; 32]>::from(Sha256::digest(&bytes)) == *digest,
            Pin::Size(size) => bytes.len() as u64 == *size,
        };
        if same { Ok(bytes) } else { Err(changed()) }
    }

    fn real_path(&self, path: &str) -> Result<Option<String>, TreeError> {
        Ok(self.lookup(path)?.map(|(_, real)| real.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::tree::listed_names;

    fn write(root: &Path, path: &str, text: &str) {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn answers_from_the_walk_and_refuses_files_changed_since() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            "base/kustomization.yaml",
            "resources: [cm.yaml]\n",
        );
        write(dir.path(), "base/cm.yaml", "v: 1\n");
        write(dir.path(), "other.yaml", "o: 1\n");
        let (tree, revision) = PinnedDirTree::pin(dir.path()).unwrap();

        assert_eq!(tree.read_file("base/cm.yaml", 100).unwrap(), b"v: 1\n");
        // Edited, removed and added after the walk.
        write(dir.path(), "base/cm.yaml", "v: 2\n");
        std::fs::remove_file(dir.path().join("other.yaml")).unwrap();
        write(dir.path(), "base/new.yaml", "n: 1\n");
        write(dir.path(), "new/x.yaml", "x: 1\n");

        let err = tree.read_file("base/cm.yaml", 100).unwrap_err();
        assert!(matches!(err, TreeError::Changed { .. }), "{err}");
        assert!(
            err.to_string().starts_with("base/cm.yaml: changed"),
            "{err}"
        );
        let err = tree.read_file("other.yaml", 100).unwrap_err();
        assert!(matches!(err, TreeError::Changed { .. }), "{err}");
        assert_eq!(tree.kind("other.yaml").unwrap(), Some(EntryKind::File));
        assert_eq!(tree.kind("base/new.yaml").unwrap(), None);
        assert_eq!(tree.kind("new").unwrap(), None);
        assert!(matches!(
            tree.read_file("base/new.yaml", 100),
            Err(TreeError::NotFound(_))
        ));
        assert_eq!(
            listed_names(&tree, "base"),
            ["cm.yaml", "kustomization.yaml"]
        );
        // Restoring the content makes the pinned tree readable again, under its revision.
        write(dir.path(), "base/cm.yaml", "v: 1\n");
        assert_eq!(tree.read_file("base/cm.yaml", 100).unwrap(), b"v: 1\n");
        let (_, now) = PinnedDirTree::pin(dir.path()).unwrap();
        assert_ne!(now, revision, "the directory did change");
    }

    #[test]
    fn a_directory_without_symlinks_keeps_the_revision_of_earlier_releases() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "sub/a.yaml", "a: 1\n");
        write(dir.path(), "b.yaml", "b: 1\n");
        let (_, revision) = PinnedDirTree::pin(dir.path()).unwrap();
        let mut expected = Sha256::new();
        for (path, text) in [("b.yaml", "b: 1\n"), ("sub/a.yaml", "a: 1\n")] {
            expected.update(format!(
                "{path}\0{}\n",
                hex::encode(Sha256::digest(text.as_bytes()))
            ));
        }
        assert_eq!(revision, hex::encode(expected.finalize()));
    }

    #[test]
    fn symlinks_resolve_through_the_record_and_loops_end() {
        let outside = tempfile::tempdir().unwrap();
        write(outside.path(), "secret", "s");
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "sub/a.yaml", "a: 1\n");
        let link = |target: &Path, name: &str| {
            std::os::unix::fs::symlink(target, dir.path().join(name)).unwrap();
        };
        link(Path::new("sub/a.yaml"), "inside");
        link(Path::new("sub"), "alias");
        link(&outside.path().join("secret"), "leak");
        // Two loops: a walk following them would visit 2^n paths.
        link(Path::new("."), "sub/up");
        link(Path::new(".."), "sub/back");

        let (tree, _) = PinnedDirTree::pin(dir.path()).unwrap();
        assert_eq!(tree.read_file("inside", 100).unwrap(), b"a: 1\n");
        assert_eq!(tree.read_file("alias/a.yaml", 100).unwrap(), b"a: 1\n");
        assert_eq!(
            tree.read_file("sub/back/sub/up/a.yaml", 100).unwrap(),
            b"a: 1\n"
        );
        assert_eq!(
            tree.real_path("alias/a.yaml").unwrap().unwrap(),
            "sub/a.yaml"
        );
        assert_eq!(tree.real_path("").unwrap().unwrap(), "");
        assert!(matches!(
            tree.read_file("leak", 100),
            Err(TreeError::Forbidden { .. })
        ));
        assert!(matches!(
            tree.kind("leak"),
            Err(TreeError::Forbidden { .. })
        ));
        assert_eq!(tree.kind("inside/x").unwrap(), None);
        assert_eq!(listed_names(&tree, ""), ["alias", "inside", "sub"]);
    }
}
