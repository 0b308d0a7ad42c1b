//! The real-world corpus: kustomization trees of public repositories at pinned commits
//! (`fixtures/real-world/PINS`; only the files kustomize reads are vendored), each rendered by
//! wardn and compared with what `kubectl kustomize` (kustomize v5.5.0) printed for it — byte
//! for byte, or by sha256 for large outputs — or, where kustomize refuses the tree offline
//! (remote bases, a component built on its own, …), refused by wardn too.
//! Re-vendor and re-capture with `scripts/capture-real-world.sh`.
//!
//! Trees that do not match yet are listed with their reason in `KNOWN-GAPS`; the test fails
//! when a tree not listed there stops matching, and when a listed one starts to (so the list
//! stays true).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

use sha2::{Digest, Sha256};
use wardn::render::{DirTree, render};

/// How one tree came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Outcome {
    /// Both rendered the same bytes.
    Identical,
    /// Both refused.
    BothRefuse,
    /// Both rendered, differently (or wardn rendered what kustomize refuses).
    Differ,
    /// Only wardn failed.
    WardnOnlyError,
}

fn outcome(root: &Path, tree: &str, how: &str, what: &str) -> (Outcome, String) {
    let dir = DirTree::new(root).unwrap();
    let result = render(&dir, tree);
    match (how, result) {
        ("error", Err(e)) => (Outcome::BothRefuse, e.to_string()),
        ("error", Ok(_)) => (Outcome::Differ, format!("kustomize refuses: {what}")),
        (_, Err(e)) => (Outcome::WardnOnlyError, e.to_string()),
        ("yaml", Ok(r)) => {
            let expected = root.join("../expected").join(what);
            let expected = fs::read_to_string(&expected).unwrap();
            if r.yaml == expected {
                (Outcome::Identical, String::new())
            } else {
                (Outcome::Differ, "output differs".into())
            }
        }
        ("sha256", Ok(r)) => {
            if hex::encode(Sha256::digest(r.yaml.as_bytes())) == what {
                (Outcome::Identical, String::new())
            } else {
                (Outcome::Differ, "output digest differs".into())
            }
        }
        (other, Ok(_)) => panic!("{tree}: unknown expectation kind {other:?}"),
    }
}

#[test]
fn real_world_trees_match_kustomize() {
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/real-world");
    let gaps: BTreeSet<(String, String)> = fs::read_to_string(base.join("KNOWN-GAPS"))
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let mut parts = l.split_whitespace();
            let repo = parts.next().unwrap_or_default().to_string();
            let tree = parts.next().unwrap_or_default().to_string();
            (repo, tree)
        })
        .collect();
    let mut indexes: Vec<_> = fs::read_dir(&base)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "tsv"))
        .collect();
    indexes.sort();
    assert!(indexes.len() >= 4, "only {} repositories", indexes.len());
    let mut table: BTreeMap<String, BTreeMap<Outcome, usize>> = BTreeMap::new();
    let mut failing = BTreeSet::new();
    let mut report = String::new();
    for index in &indexes {
        let slug = index.file_stem().unwrap().to_string_lossy().into_owned();
        let root = base.join(&slug);
        for line in fs::read_to_string(index).unwrap().lines() {
            let mut cols = line.splitn(3, '\t');
            let (tree, how, what) = (
                cols.next().unwrap(),
                cols.next().unwrap(),
                cols.next().unwrap_or(""),
            );
            let (result, why) = outcome(&root, tree, how, what);
            *table
                .entry(slug.clone())
                .or_default()
                .entry(result)
                .or_default() += 1;
            if matches!(result, Outcome::Differ | Outcome::WardnOnlyError) {
                failing.insert((slug.clone(), tree.to_string()));
                report.push_str(&format!("{slug} {tree}: {result:?}: {why}\n"));
            }
        }
    }
    println!("repository: identical / both refuse / differ / wardn-only errors");
    for (slug, counts) in &table {
        let n = |o| counts.get(&o).copied().unwrap_or(0);
        println!(
            "{slug}: {} / {} / {} / {}",
            n(Outcome::Identical),
            n(Outcome::BothRefuse),
            n(Outcome::Differ),
            n(Outcome::WardnOnlyError)
        );
    }
    print!("{report}");
    let unexpected: Vec<_> = failing.difference(&gaps).collect();
    let fixed: Vec<_> = gaps.difference(&failing).collect();
    assert!(
        unexpected.is_empty() && fixed.is_empty(),
        "trees failing but not in KNOWN-GAPS: {unexpected:?}\nKNOWN-GAPS trees now matching (remove them): {fixed:?}\n{report}"
    );
}
