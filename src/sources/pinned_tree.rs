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
//! A directory written to while it is walked (a checkout, or a tool writing files and then
//! the `kustomization.yaml` naming them) could leave the walk with a listing from before the
//! writes and files from after them: a state the directory was never in. So the walk is
//! checked against the disk once it ends (every listing again, every file's [`FileStamp`]) and
//! walked again until the two agree.
//!
//! The walk visits each real directory once: a symlink is recorded as a link to its target
//! (hashed as such) and never followed by the walk, so a symlink loop cannot make it endless.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::render::tree::{DirEntry, DirTree, EntryKind, FileStamp, Tree, TreeError, join};

/// Files over this size are pinned (and hashed) by their size only.
const MAX_HASHED_BYTES: u64 = 64 * 1024 * 1024;

/// How many walks a directory that keeps changing under them gets before it is refused (its
/// watcher reads it again on its next change).
const WALKS: u32 = 5;

/// How long, times the walks so far, a walk that met a change waits for the writes to end.
const SETTLE: Duration = Duration::from_millis(20);

/// What a file's content was when the tree was pinned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pin {
    /// The sha256 of its bytes.
    Sha256([u8; 32]),
    /// Its size, for a file over [`MAX_HASHED_BYTES`].
    Size(u64),
}

/// One entry of a recorded directory listing.
#[derive(Debug, PartialEq, Eq)]
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
    /// The listing of each real directory (`""` is the root), sorted by name; in path order,
    /// so that a change is named by the outermost directory it shows in.
    dirs: BTreeMap<String, Vec<Entry>>,
    /// The content of each real file.
    files: HashMap<String, Pin>,
    /// Each real file's stamp, taken before its content was read.
    stamps: HashMap<String, FileStamp>,
}

impl PinnedDirTree {
    /// Walks the directory `root` (`.git` excluded) and returns it pinned, with the hex
    /// sha256 of every file's path and content: the revision of a Directory source.
    ///
    /// A directory without symlinks hashes as `path \0 hex(sha256(content)) \n` for each
    /// file in path order; a symlink adds `path \0 ->target \n` in its place, its target
    /// being hashed where it really is.
    ///
    /// A walk the disk no longer agrees with when it ends is walked again, up to [`WALKS`]
    /// times; then the directory is refused as [`TreeError::Changed`], naming a path that
    /// changed. Blocks the calling thread meanwhile.
    pub fn pin(root: &Path) -> Result<(Self, String), TreeError> {
        let disk = DirTree::new(root)?;
        let mut walks = 1;
        loop {
            let changed = match Self::walk_once(&disk) {
                Ok((tree, revision)) => match tree.first_change()? {
                    None => return Ok((tree, revision)),
                    Some(path) => path,
                },
                // Something listed was gone when the walk came to read it.
                Err(TreeError::Changed { path } | TreeError::NotFound(path)) => path,
                Err(e) => return Err(e),
            };
            if walks == WALKS {
                return Err(TreeError::Changed { path: changed });
            }
            tracing::debug!(root = %disk.root().display(), path = %changed, walks, "directory changed while it was read; reading it again");
            std::thread::sleep(SETTLE * walks);
            walks += 1;
        }
    }

    /// One walk of `disk`, with the revision it hashes to.
    fn walk_once(disk: &DirTree) -> Result<(Self, String), TreeError> {
        let mut tree = Self {
            disk: disk.clone(),
            dirs: BTreeMap::new(),
            files: HashMap::new(),
            stamps: HashMap::new(),
        };
        let mut hasher = Sha256::new();
        tree.walk("", &mut hasher)?;
        Ok((tree, hex::encode(hasher.finalize())))
    }

    /// The canonical root directory.
    pub fn root(&self) -> &Path {
        self.disk.root()
    }

    /// The entries of the real directory `dir` as a walk records them: `.git` and whatever
    /// resolves into it left out, each with its real path.
    fn list(&self, dir: &str) -> Result<Vec<Entry>, TreeError> {
        let mut entries = Vec::new();
        for listed in self.disk.read_dir(dir)? {
            if dir.is_empty() && listed.name == ".git" {
                continue;
            }
            let path = join(dir, &listed.name);
            let real = self
                .disk
                .real_path(&path)?
                .ok_or(TreeError::Changed { path })?;
            if real == ".git" || real.starts_with(".git/") {
                continue;
            }
            entries.push(Entry {
                name: listed.name,
                kind: listed.kind,
                real,
            });
        }
        Ok(entries)
    }

    /// The first path on which the disk no longer agrees with this walk (a directory listed
    /// otherwise, a symlink leading elsewhere, a file with another stamp), if any.
    fn first_change(&self) -> Result<Option<String>, TreeError> {
        for (dir, recorded) in &self.dirs {
            match self.list(dir) {
                Ok(listed) if listed == *recorded => {}
                Ok(_) | Err(TreeError::NotFound(_)) => return Ok(Some(dir.clone())),
                Err(TreeError::Changed { path }) => return Ok(Some(path)),
                Err(e) => return Err(e),
            }
        }
        for (path, stamp) in &self.stamps {
            if self.disk.stamp(path)? != Some(*stamp) {
                return Ok(Some(path.clone()));
            }
        }
        Ok(None)
    }

    /// Records the real directory `dir` and everything really under it.
    fn walk(&mut self, dir: &str, hasher: &mut Sha256) -> Result<(), TreeError> {
        let entries = self.list(dir)?;
        for entry in &entries {
            let path = join(dir, &entry.name);
            let real = &entry.real;
            if *real != path {
                hasher.update(format!("{path}\0->{real}\n").as_bytes());
            } else if entry.kind == EntryKind::Dir {
                self.walk(&path, hasher)?;
            } else {
                let stamp = self
                    .disk
                    .stamp(&path)?
                    .ok_or_else(|| TreeError::Changed { path: path.clone() })?;
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
                self.stamps.insert(path, stamp);
            }
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
    fn a_walk_knows_what_changed_on_disk_after_it() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "base/cm.yaml", "v: 1\n");
        write(
            dir.path(),
            "kustomization.yaml",
            "resources: [base/cm.yaml]\n",
        );
        let disk = DirTree::new(dir.path()).unwrap();
        let changed = |change: &dyn Fn()| {
            let (tree, _) = PinnedDirTree::walk_once(&disk).unwrap();
            assert_eq!(tree.first_change().unwrap(), None);
            change();
            tree.first_change().unwrap()
        };
        let named = |path: &str| Some(path.to_string());
        // A file added, a file rewritten (of the same size), a file renamed over, a
        // directory removed, a symlink put where a file was.
        assert_eq!(
            changed(&|| write(dir.path(), "base/new.yaml", "n: 1\n")),
            named("base")
        );
        assert_eq!(
            changed(&|| write(dir.path(), "base/cm.yaml", "v: 2\n")),
            named("base/cm.yaml")
        );
        assert_eq!(
            changed(&|| {
                write(dir.path(), "staged", "resources: [base/cm.yaml]\n");
                std::fs::rename(
                    dir.path().join("staged"),
                    dir.path().join("kustomization.yaml"),
                )
                .unwrap();
            }),
            named("kustomization.yaml")
        );
        assert_eq!(
            changed(&|| std::fs::remove_dir_all(dir.path().join("base")).unwrap()),
            named("")
        );
        assert_eq!(
            changed(&|| {
                std::fs::remove_file(dir.path().join("kustomization.yaml")).unwrap();
                std::os::unix::fs::symlink("other", dir.path().join("kustomization.yaml")).unwrap();
                write(dir.path(), "other", "resources: []\n");
            }),
            named("")
        );
    }

    /// The walk, a thousand times, beside a writer that adds a generation of files and then
    /// renames into place a `kustomization.yaml` naming them (as a checkout does), then removes
    /// the generation before: every pinned tree is one state the directory was in (its
    /// kustomization names only files it has), never a listing from before a generation with
    /// a kustomization from after it.
    #[test]
    fn a_thousand_walks_beside_a_writer_each_pin_one_state_of_the_directory() {
        use std::sync::atomic::{AtomicBool, Ordering};
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        let generation =
            |g: usize| -> Vec<String> { (0..5).map(|i| format!("g{g}-{i}.yaml")).collect() };
        let kustomization = |g: usize| {
            let list = generation(g)
                .iter()
                .map(|n| format!("- {n}\n"))
                .collect::<String>();
            format!("resources:\n{list}")
        };
        let publish = |g: usize| {
            for name in generation(g) {
                write(&root, &name, &format!("name: {name}\n"));
            }
            write(&root, ".staged", &kustomization(g));
            std::fs::rename(root.join(".staged"), root.join("kustomization.yaml")).unwrap();
            if g > 0 {
                for name in generation(g - 1) {
                    std::fs::remove_file(root.join(name)).unwrap();
                }
            }
        };
        publish(0);
        /// Stops the writer when the walks end, also by a failed assertion.
        struct Stop<'a>(&'a AtomicBool);
        impl Drop for Stop<'_> {
            fn drop(&mut self) {
                self.0.store(true, Ordering::Relaxed);
            }
        }
        let stop = AtomicBool::new(false);
        let (pinned, refused) = std::thread::scope(|scope| {
            scope.spawn(|| {
                let mut g = 1;
                while !stop.load(Ordering::Relaxed) {
                    publish(g);
                    g += 1;
                    std::thread::sleep(Duration::from_millis(2));
                }
            });
            let _stop = Stop(&stop);
            let (mut pinned, mut refused) = (0, 0);
            for walk in 0..1000 {
                let tree = match PinnedDirTree::pin(&root) {
                    Ok((tree, _)) => tree,
                    Err(TreeError::Changed { .. }) => {
                        refused += 1;
                        continue;
                    }
                    Err(e) => panic!("walk {walk}: {e}"),
                };
                pinned += 1;
                // The generation the pinned kustomization names (the disk has moved on since).
                let listed = listed_names(&tree, "");
                let named = listed
                    .iter()
                    .filter_map(|n| n.strip_prefix('g')?.split_once('-')?.0.parse().ok())
                    .find(|&g| {
                        tree.files.get("kustomization.yaml")
                            == Some(&Pin::Sha256(Sha256::digest(kustomization(g)).into()))
                    });
                let Some(g) = named else {
                    panic!(
                        "walk {walk}: the pinned kustomization names no generation listed beside it: {listed:?}"
                    );
                };
                for name in generation(g) {
                    assert!(
                        listed.contains(&name),
                        "walk {walk}: generation {g} lacks {name}: {listed:?}"
                    );
                }
            }
            (pinned, refused)
        });
        assert!(pinned > 500, "{pinned} walks pinned, {refused} refused");
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
