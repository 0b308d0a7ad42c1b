//! The real-world kustomize corpus (`fixtures/real-world/`): its trees, what `kubectl
//! kustomize` made of each, and how wardn's rendering compares. Shared by
//! tests/render_real_world.rs (which asserts) and benches/render.rs (which prints the table).
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use wardn::render::{DirTree, render};

/// How one tree came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Outcome {
    /// Both rendered the same bytes.
    Identical,
    /// Both refused.
    BothRefuse,
    /// Both rendered, differently (or wardn rendered what kustomize refuses).
    Differ,
    /// Only wardn failed.
    WardnOnlyError,
}

/// One tree of the corpus and kustomize's verdict on it.
#[derive(Debug, Clone)]
pub struct Case {
    /// `owner+name` of the vendored repository.
    pub slug: String,
    /// The vendored copy of the repository.
    pub root: PathBuf,
    /// The kustomization directory, relative to `root`.
    pub tree: String,
    /// `yaml` (stored output), `sha256` (its digest) or `error` (kustomize refuses).
    pub how: String,
    /// The expected-output file, the digest or kustomize's error.
    pub what: String,
}

/// `fixtures/real-world/` of this repository.
pub fn base() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/real-world")
}

/// Every tree of every vendored repository, repositories in name order, trees as listed.
pub fn cases() -> Vec<Case> {
    let base = base();
    let mut indexes: Vec<_> = fs::read_dir(&base)
        .expect("fixtures/real-world")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "tsv"))
        .collect();
    indexes.sort();
    let mut cases = Vec::new();
    for index in &indexes {
        let slug = index
            .file_stem()
            .expect("stem")
            .to_string_lossy()
            .into_owned();
        let root = base.join(&slug);
        for line in fs::read_to_string(index).expect("index").lines() {
            let mut cols = line.splitn(3, '\t');
            let mut col = || cols.next().unwrap_or("").to_string();
            let (tree, how, what) = (col(), col(), col());
            cases.push(Case {
                slug: slug.clone(),
                root: root.clone(),
                tree,
                how,
                what,
            });
        }
    }
    cases
}

/// The trees KNOWN-GAPS lists as not rendering as kustomize does yet: (slug, tree).
pub fn known_gaps() -> std::collections::BTreeSet<(String, String)> {
    fs::read_to_string(base().join("KNOWN-GAPS"))
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let mut parts = l.split_whitespace();
            let repo = parts.next().unwrap_or_default().to_string();
            let tree = parts.next().unwrap_or_default().to_string();
            (repo, tree)
        })
        .collect()
}

/// Renders `case` with wardn (in-process) and compares with kustomize's verdict: the
/// outcome, why when it is not a match, and the size of wardn's output (0 when it refused).
pub fn outcome(case: &Case) -> (Outcome, String, usize) {
    let dir = DirTree::new(&case.root).expect("vendored repository");
    let result = render(&dir, &case.tree);
    let bytes = result.as_ref().map(|r| r.yaml.len()).unwrap_or(0);
    let (outcome, why) = match (case.how.as_str(), result) {
        ("error", Err(e)) => (Outcome::BothRefuse, e.to_string()),
        ("error", Ok(_)) => (Outcome::Differ, format!("kustomize refuses: {}", case.what)),
        (_, Err(e)) => (Outcome::WardnOnlyError, e.to_string()),
        ("yaml", Ok(r)) => {
            let expected = base().join("expected").join(&case.what);
            let expected = fs::read_to_string(&expected).expect("expected output");
            if r.yaml == expected {
                (Outcome::Identical, String::new())
            } else {
                (Outcome::Differ, "output differs".into())
            }
        }
        ("sha256", Ok(r)) => {
            if hex::encode(Sha256::digest(r.yaml.as_bytes())) == case.what {
                (Outcome::Identical, String::new())
            } else {
                (Outcome::Differ, "output digest differs".into())
            }
        }
        (other, Ok(_)) => panic!("{}: unknown expectation kind {other:?}", case.tree),
    };
    (outcome, why, bytes)
}

/// Outcome counts per repository.
pub type Table = BTreeMap<String, BTreeMap<Outcome, usize>>;

/// Prints the table: one line per repository, identical / both refuse / differ / wardn-only.
pub fn print_table(table: &Table) {
    println!("repository: identical / both refuse / differ / wardn-only errors");
    for (slug, counts) in table {
        let n = |o| counts.get(&o).copied().unwrap_or(0);
        println!(
            "{slug}: {} / {} / {} / {}",
            n(Outcome::Identical),
            n(Outcome::BothRefuse),
            n(Outcome::Differ),
            n(Outcome::WardnOnlyError)
        );
    }
}
