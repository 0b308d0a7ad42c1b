//! Fuzzes the whole renderer on a small in-memory tree: the input is split on NUL bytes into
//! `kustomization.yaml`, `a.yaml` (a resource), `patch.yaml` and `base/kustomization.yaml`,
//! so kustomization parsing, resource loading, generators, transformers and patch
//! application (strategic merge and JSON 6902) all see arbitrary bytes. Any panic is a bug.
//!
//! Run: `RUSTC_BOOTSTRAP=1 cargo fuzz run render_tree fuzz/corpus/render_tree`
//!
//! `make test` compiles this file into `tests/fuzz_corpus.rs` too (hence `cfg(test)`), which
//! replays the seed corpus through [`check`].
#![cfg_attr(not(test), no_main)]

use std::collections::BTreeMap;

use wardn::render::render;
use wardn::render::tree::{DirEntry, EntryKind, Tree, TreeError};

/// Files by path; directories are implied by the paths.
struct MemTree(BTreeMap<String, Vec<u8>>);

impl Tree for MemTree {
    fn kind(&self, path: &str) -> Result<Option<EntryKind>, TreeError> {
        if self.0.contains_key(path) {
            return Ok(Some(EntryKind::File));
        }
        let prefix = if path.is_empty() {
            String::new()
        } else {
            format!("{path}/")
        };
        Ok(self
            .0
            .keys()
            .any(|k| k.starts_with(&prefix))
            .then_some(EntryKind::Dir))
    }

    fn read_dir(&self, path: &str) -> Result<Vec<DirEntry>, TreeError> {
        let prefix = if path.is_empty() {
            String::new()
        } else {
            format!("{path}/")
        };
        let mut entries: Vec<DirEntry> = Vec::new();
        for key in self.0.keys().filter_map(|k| k.strip_prefix(&prefix)) {
            let (name, kind) = match key.split_once('/') {
                Some((dir, _)) => (dir, EntryKind::Dir),
                None => (key, EntryKind::File),
            };
            if !entries.iter().any(|e| e.name == name) {
                entries.push(DirEntry {
                    name: name.to_string(),
                    kind,
                });
            }
        }
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(entries)
    }

    fn read_file(&self, path: &str, limit: u64) -> Result<Vec<u8>, TreeError> {
        let bytes = self
            .0
            .get(path)
            .ok_or_else(|| TreeError::NotFound(path.to_string()))?;
        if bytes.len() as u64 > limit {
            return Err(TreeError::TooLarge {
                path: path.to_string(),
                size: bytes.len() as u64,
                limit,
            });
        }
        Ok(bytes.clone())
    }

    /// No symlinks here: every path that exists is where it is.
    fn real_path(&self, path: &str) -> Result<Option<String>, TreeError> {
        Ok(self.kind(path)?.map(|_| path.to_string()))
    }
}

/// The property fuzzed: rendering the tree cut from `data` never panics.
pub fn check(data: &[u8]) {
    let names = [
        "kustomization.yaml",
        "a.yaml",
        "patch.yaml",
        "base/kustomization.yaml",
    ];
    let files = names
        .iter()
        .zip(data.split(|&b| b == 0))
        .map(|(name, bytes)| (name.to_string(), bytes.to_vec()))
        .collect();
    let _ = render(&MemTree(files), "");
}

#[cfg(not(test))]
libfuzzer_sys::fuzz_target!(|data: &[u8]| check(data));
