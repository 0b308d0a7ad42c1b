//! What a render depends on: a [`Tree`] wrapper that records every input (see
//! [`super::Rendered::inputs`]), and [`inputs_unchanged`], which re-checks recorded inputs
//! against another tree. Both live here because this module owns the key format:
//! `path?` (existence probe: sha256 of `file`, `dir` or `none`), `dir/` (listing: sha256 of
//! one `name` or `name/` line per entry), `path@` (sha256 of the symlink-free path, `\0` when
//! absent) and `path` (sha256 of the file's bytes).

use std::collections::BTreeMap;

use parking_lot::Mutex;
use sha2::{Digest, Sha256};

use super::parse::MAX_FILE_BYTES;
use super::tree::{DirEntry, EntryKind, Tree, TreeError};

/// Records file reads, directory listings and existence probes made through it.
pub struct Recorder<'a> {
    tree: &'a dyn Tree,
    seen: Mutex<BTreeMap<String, String>>,
}

impl<'a> Recorder<'a> {
    /// Wraps `tree`.
    pub fn new(tree: &'a dyn Tree) -> Self {
        Self {
            tree,
            seen: Mutex::new(BTreeMap::new()),
        }
    }

    /// The recorded inputs.
    pub fn into_inputs(self) -> BTreeMap<String, String> {
        self.seen.into_inner()
    }

    fn record(&self, key: String, bytes: &[u8]) {
        let mut seen = self.seen.lock();
        seen.insert(key, digest(bytes));
    }
}

fn digest(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// The word recorded for an existence probe.
fn kind_word(kind: Option<EntryKind>) -> &'static str {
    match kind {
        Some(EntryKind::File) => "file",
        Some(EntryKind::Dir) => "dir",
        None => "none",
    }
}

/// The text recorded for a real-path lookup (`\0` for nothing there, which no path contains).
fn real_path_word(real: Option<&str>) -> String {
    real.unwrap_or("\0").to_string()
}

/// The text recorded for a directory listing: one `name` or `name/` line per entry.
fn listing(entries: &[DirEntry]) -> String {
    entries
        .iter()
        .map(|e| {
            let slash = if e.kind == EntryKind::Dir { "/" } else { "" };
            format!("{}{slash}\n", e.name)
        })
        .collect()
}

/// Whether every recorded input (from [`super::Rendered::inputs`]) hashes the same in `tree`,
/// i.e. rendering the same path of `tree` would read exactly what the recorded render read.
/// Any read error counts as a change, so a caller renders again and reports it.
pub fn inputs_unchanged(tree: &dyn Tree, inputs: &BTreeMap<String, String>) -> bool {
    inputs
        .iter()
        .all(|(key, want)| current_digest(tree, key).is_some_and(|got| &got == want))
}

/// The digest `key` has in `tree` now, in the recorder's format; `None` on a read error.
fn current_digest(tree: &dyn Tree, key: &str) -> Option<String> {
    let bytes = if let Some(path) = key.strip_suffix('@') {
        real_path_word(tree.real_path(path).ok()?.as_deref()).into_bytes()
    } else if let Some(path) = key.strip_suffix('?') {
        kind_word(tree.kind(path).ok()?).as_bytes().to_vec()
    } else if let Some(path) = key.strip_suffix('/') {
        listing(&tree.read_dir(path).ok()?).into_bytes()
    } else {
        tree.read_file(key, MAX_FILE_BYTES).ok()?
    };
    Some(digest(&bytes))
}

impl Tree for Recorder<'_> {
    fn kind(&self, path: &str) -> Result<Option<EntryKind>, TreeError> {
        let kind = self.tree.kind(path)?;
        self.record(format!("{path}?"), kind_word(kind).as_bytes());
        Ok(kind)
    }

    fn read_dir(&self, path: &str) -> Result<Vec<DirEntry>, TreeError> {
        let entries = self.tree.read_dir(path)?;
        self.record(format!("{path}/"), listing(&entries).as_bytes());
        Ok(entries)
    }

    fn read_file(&self, path: &str, limit: u64) -> Result<Vec<u8>, TreeError> {
        let bytes = self.tree.read_file(path, limit)?;
        self.record(path.to_string(), &bytes);
        Ok(bytes)
    }

    fn real_path(&self, path: &str) -> Result<Option<String>, TreeError> {
        let real = self.tree.real_path(path)?;
        self.record(
            format!("{path}@"),
            real_path_word(real.as_deref()).as_bytes(),
        );
        Ok(real)
    }
}
