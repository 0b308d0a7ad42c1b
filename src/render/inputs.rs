//! A [`Tree`] wrapper that records everything a render depends on (see
//! [`super::Rendered::inputs`]).

use std::collections::BTreeMap;
use std::sync::Mutex;

use sha2::{Digest, Sha256};

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
        self.seen.into_inner().unwrap_or_else(|e| e.into_inner())
    }

    fn record(&self, key: String, bytes: &[u8]) {
        let digest = hex::encode(Sha256::digest(bytes));
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        seen.insert(key, digest);
    }
}

impl Tree for Recorder<'_> {
    fn kind(&self, path: &str) -> Result<Option<EntryKind>, TreeError> {
        let kind = self.tree.kind(path)?;
        let word = match kind {
            Some(EntryKind::File) => "file",
            Some(EntryKind::Dir) => "dir",
            None => "none",
        };
        self.record(format!("{path}?"), word.as_bytes());
        Ok(kind)
    }

    fn read_dir(&self, path: &str) -> Result<Vec<DirEntry>, TreeError> {
        let entries = self.tree.read_dir(path)?;
        let listing: String = entries
            .iter()
            .map(|e| {
                let kind = if e.kind == EntryKind::Dir { "/" } else { "" };
                format!("{}{kind}\n", e.name)
            })
            .collect();
        self.record(format!("{path}/"), listing.as_bytes());
        Ok(entries)
    }

    fn read_file(&self, path: &str, limit: u64) -> Result<Vec<u8>, TreeError> {
        let bytes = self.tree.read_file(path, limit)?;
        self.record(path.to_string(), &bytes);
        Ok(bytes)
    }
}
