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

#[path = "support/real_world.rs"]
mod real_world;

use std::collections::BTreeSet;

use real_world::{Outcome, Table};

#[test]
fn real_world_trees_match_kustomize() {
    let gaps = real_world::known_gaps();
    let cases = real_world::cases();
    let repositories: BTreeSet<_> = cases.iter().map(|c| c.slug.clone()).collect();
    assert!(
        repositories.len() >= 5,
        "only {} repositories",
        repositories.len()
    );
    let mut table = Table::new();
    let mut failing = BTreeSet::new();
    let mut report = String::new();
    for case in &cases {
        let (result, why, _) = real_world::outcome(case);
        *table
            .entry(case.slug.clone())
            .or_default()
            .entry(result)
            .or_default() += 1;
        if matches!(result, Outcome::Differ | Outcome::WardnOnlyError) {
            failing.insert((case.slug.clone(), case.tree.clone()));
            report.push_str(&format!("{} {}: {result:?}: {why}\n", case.slug, case.tree));
        }
    }
    real_world::print_table(&table);
    print!("{report}");
    let unexpected: Vec<_> = failing.difference(&gaps).collect();
    let fixed: Vec<_> = gaps.difference(&failing).collect();
    assert!(
        unexpected.is_empty() && fixed.is_empty(),
        "trees failing but not in KNOWN-GAPS: {unexpected:?}\nKNOWN-GAPS trees now matching (remove them): {fixed:?}\n{report}"
    );
}
