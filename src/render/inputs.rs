//! What a render depends on: a [`Tree`] wrapper that records every input (see
//! [`super::Rendered::inputs`]), and [`InputsFingerprint`], which keeps them compactly and
//! re-checks them against another tree. Both live here because this module owns the key format:
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

/// Recorded inputs ([`super::Rendered::inputs`]) as a long-running process keeps them: the
/// keys, and one sha256 over every key with its digest. A render reads a dozen or more inputs,
/// and the map of hex digests took about 4 KiB per App of a replica's memory; this takes the
/// keys' length and 32 bytes. Whether a tree still gives every input the same digest is
/// decided as surely: any change to an input changes the combined digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputsFingerprint {
    /// The keys in order, each followed by `\0`, which no path contains.
    keys: Box<str>,
    /// sha256 over each key, `\0`, its digest and `\0`, in key order.
    combined: [u8; 32],
}

impl InputsFingerprint {
    /// The fingerprint of recorded `inputs`.
    pub fn of(inputs: &BTreeMap<String, String>) -> InputsFingerprint {
        let mut keys = String::with_capacity(inputs.keys().map(|key| key.len() + 1).sum());
        let mut combined = Sha256::new();
        for (key, digest) in inputs {
            keys.push_str(key);
            keys.push('\0');
            fold(&mut combined, key, digest);
        }
        InputsFingerprint {
            keys: keys.into_boxed_str(),
            combined: combined.finalize().into(),
        }
    }

    /// Whether every recorded input hashes the same in `tree`, i.e. rendering the same path
    /// of `tree` would read exactly what the recorded render read. Any read error counts as
    /// a change, so a caller renders again and reports it.
    pub fn unchanged(&self, tree: &dyn Tree) -> bool {
        let mut combined = Sha256::new();
        for key in self.keys.split_terminator('\0') {
            let Some(digest) = current_digest(tree, key) else {
                return false;
            };
            fold(&mut combined, key, &digest);
        }
        <[u8; 32]>::from(combined.finalize()) == self.combined
    }
}

/// Adds one recorded input to a combined digest.
fn fold(combined: &mut Sha256, key: &str, digest: &str) {
    combined.update(key.as_bytes());
    combined.update([0u8]);
    combined.update(digest.as_bytes());
    combined.update([0u8]);
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

#[cfg(test)]
mod tests {
    use std::fs;
    use std::path::Path;

    use super::*;
    use crate::render::{DirTree, render};
    use crate::test_rng::Rng;

    fn write(root: &Path, path: &str, text: &str) {
        let path = root.join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }

    fn cm(name: &str, value: u64) -> String {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  v: \"{value}\"\n"
        )
    }

    /// A base, an overlay of it with a resource of its own, and files no render reads.
    fn overlay_tree(root: &Path) {
        write(root, "base/kustomization.yaml", "resources:\n- cm.yaml\n");
        write(root, "base/cm.yaml", &cm("base", 0));
        write(
            root,
            "overlay/kustomization.yaml",
            "resources:\n- ../base\n- extra.yaml\nnamePrefix: o-\n",
        );
        write(root, "overlay/extra.yaml", &cm("extra", 0));
        write(root, "elsewhere/notes.txt", "0");
    }

    #[test]
    fn a_thousand_edits_leave_the_fingerprint_unchanged_exactly_when_a_render_reads_the_same() {
        // The renderer is the reference: rendering again records the same inputs exactly when
        // nothing it depends on changed. Edits rewrite read files (sometimes with the same
        // bytes), files no render reads, and add or remove a second kustomization file (a
        // probed path: the render then fails, which must count as a change too).
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        overlay_tree(root);
        let tree = DirTree::new(root).unwrap();
        let mut recorded = render(&tree, "overlay").unwrap().inputs;
        let mut fingerprint = InputsFingerprint::of(&recorded);
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        let mut next = |n: u64| rng.below(n);
        let (mut same, mut changed) = (0, 0);
        for round in 0..1000 {
            match next(5) {
                0 => write(root, "base/cm.yaml", &cm("base", next(3))),
                1 => write(root, "overlay/extra.yaml", &cm("extra", next(3))),
                2 => write(root, "elsewhere/notes.txt", &next(3).to_string()),
                3 => {
                    let second = root.join("overlay/kustomization.yml");
                    if second.exists() {
                        fs::remove_file(second).unwrap();
                    } else {
                        write(root, "overlay/kustomization.yml", "resources: []\n");
                    }
                }
                _ => {}
            }
            let again = render(&tree, "overlay");
            let expected = again.as_ref().is_ok_and(|r| r.inputs == recorded);
            assert_eq!(fingerprint.unchanged(&tree), expected, "round {round}");
            if expected {
                same += 1;
            } else {
                changed += 1;
            }
            if let Ok(again) = again {
                recorded = again.inputs;
                fingerprint = InputsFingerprint::of(&recorded);
            }
        }
        assert!(
            same > 100 && changed > 100,
            "{same} unchanged, {changed} changed"
        );
    }

    #[test]
    fn every_recorded_input_counts() {
        // A fingerprint recorded with any one input's digest different does not match the
        // tree: no key is left out of the combined digest, whatever its kind.
        let tmp = tempfile::tempdir().unwrap();
        overlay_tree(tmp.path());
        let tree = DirTree::new(tmp.path()).unwrap();
        let inputs = render(&tree, "overlay").unwrap().inputs;
        assert!(InputsFingerprint::of(&inputs).unchanged(&tree));
        for suffix in ["?", "@", ".yaml"] {
            assert!(
                inputs.keys().any(|key| key.ends_with(suffix)),
                "the overlay records a `{suffix}` input: {inputs:?}"
            );
        }
        for key in inputs.keys() {
            let mut altered = inputs.clone();
            altered.insert(key.clone(), digest(b"something else"));
            assert!(
                !InputsFingerprint::of(&altered).unchanged(&tree),
                "{key} is not checked"
            );
        }
        let mut extra = inputs.clone();
        extra.insert("overlay/missing.yaml".into(), digest(b""));
        assert!(
            !InputsFingerprint::of(&extra).unchanged(&tree),
            "an input that cannot be read counts as changed"
        );
    }
}
