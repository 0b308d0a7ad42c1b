//! Balanced shares: which replica each destination cluster should go to, with no replica
//! holding more than its fair share. Plain rendezvous hashing ([`rendezvous`](super::rendezvous))
//! spreads clusters at random, so with few clusters per replica the shares are uneven (100
//! clusters over four replicas gave 36, 25, 23 and 16). Here every (replica, cluster) pair
//! keeps its rendezvous weight, and the pairs are taken by weight, highest first: a cluster
//! goes to the first replica in that order that still has room. Room is the fair share:
//! `n / m` clusters each, and one more for the first `n mod m` replicas to reach it, so the
//! shares differ by at most one. The answer depends only on the two sets (not on the order
//! they are given in), so every replica that sees the same replicas and clusters computes the
//! same assignment; a replica joining or leaving moves a bounded number of clusters (the
//! tests measure it), not only its own share as plain rendezvous does.
//!
//! This is the assignment replicas *want*; who may write is decided by claims
//! ([`membership`](super::membership)), because replicas may see different cluster sets.

use std::collections::{BTreeMap, BTreeSet};

use super::rendezvous::weight;

/// The balanced assignment of `clusters` to `replicas`: cluster → replica, every cluster
/// assigned (none when there is no replica), no replica holding more than `ceil(n / m)` nor
/// fewer than `floor(n / m)` of the `n` clusters over `m` replicas. Duplicates in either
/// input count once.
pub fn assign<'a, R, C>(replicas: R, clusters: C) -> BTreeMap<String, String>
where
    R: IntoIterator<Item = &'a str>,
    C: IntoIterator<Item = &'a str>,
{
    let replicas: BTreeSet<&str> = replicas.into_iter().collect();
    let clusters: BTreeSet<&str> = clusters.into_iter().collect();
    let mut assigned = BTreeMap::new();
    if replicas.is_empty() || clusters.is_empty() {
        return assigned;
    }
    // Highest weight first; equal weights (practically never) by replica, then cluster.
    let mut pairs: Vec<(u64, &str, &str)> = clusters
        .iter()
        .flat_map(|c| replicas.iter().map(move |r| (weight(r, c), *r, *c)))
        .collect();
    pairs.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)).then(a.2.cmp(b.2)));
    let floor = clusters.len() / replicas.len();
    let mut extra = clusters.len() % replicas.len();
    let mut load: BTreeMap<&str, usize> = replicas.iter().map(|r| (*r, 0)).collect();
    for (_, replica, cluster) in pairs {
        if assigned.len() == clusters.len() {
            break;
        }
        if assigned.contains_key(cluster) {
            continue;
        }
        let Some(held) = load.get_mut(replica) else {
            continue;
        };
        let room = *held < floor || (*held == floor && extra > 0);
        if !room {
            continue;
        }
        if *held == floor {
            extra -= 1;
        }
        *held += 1;
        assigned.insert(cluster.to_string(), replica.to_string());
    }
    assigned
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_rng::Rng;

    fn names(prefix: &str, n: usize) -> Vec<String> {
        (0..n).map(|i| format!("{prefix}-{i}")).collect()
    }

    fn strs(names: &[String]) -> impl Iterator<Item = &str> {
        names.iter().map(String::as_str)
    }

    fn loads(assignment: &BTreeMap<String, String>) -> BTreeMap<&str, usize> {
        let mut loads = BTreeMap::new();
        for replica in assignment.values() {
            *loads.entry(replica.as_str()).or_default() += 1;
        }
        loads
    }

    /// Checks `assignment` covers every cluster with shares differing by at most one, each
    /// within `[floor, ceil]` of `n / m`; returns the assignment.
    fn check_balanced(
        replicas: &[String],
        clusters: &[String],
        what: &str,
    ) -> BTreeMap<String, String> {
        let assignment = assign(strs(replicas), strs(clusters));
        assert_eq!(
            assignment.len(),
            clusters.len(),
            "{what}: every cluster assigned"
        );
        let (n, m) = (clusters.len(), replicas.len());
        let loads = loads(&assignment);
        for replica in replicas {
            let held = loads.get(replica.as_str()).copied().unwrap_or(0);
            assert!(
                held >= n / m && held <= n.div_ceil(m),
                "{what}: {replica} holds {held} of {n} over {m}"
            );
        }
        assignment
    }

    #[test]
    fn nothing_to_assign_or_no_one_to_assign_to_gives_nothing() {
        assert!(assign(std::iter::empty(), ["a"]).is_empty());
        assert!(assign(["r"], std::iter::empty()).is_empty());
        let one = assign(["r"], ["a", "b", "a"]);
        assert_eq!(one.len(), 2);
        assert!(one.values().all(|r| r == "r"));
    }

    #[test]
    fn shares_are_balanced_for_many_sizes() {
        for m in 1..=12 {
            for n in [0, 1, 2, 3, 5, 7, 10, 11, 40, 99, 100, 101, 257] {
                let replicas = names(&format!("wardn{m}"), m);
                check_balanced(&replicas, &names("cluster", n), &format!("{n} over {m}"));
            }
        }
        // The benchmark's fleet, uneven under plain rendezvous (36, 25, 23, 16): 25 each.
        let replicas = names("wardn", 4);
        let clusters = names("cluster", 100);
        let assignment = assign(strs(&replicas), strs(&clusters));
        let loads = loads(&assignment);
        assert!(loads.values().all(|held| *held == 25), "{loads:?}");
    }

    #[test]
    fn the_assignment_depends_only_on_the_sets() {
        let replicas = names("wardn", 5);
        let clusters = names("cluster", 60);
        let first = assign(strs(&replicas), strs(&clusters));
        let mut shuffled_r = replicas.clone();
        shuffled_r.reverse();
        let mut shuffled_c = clusters.clone();
        shuffled_c.rotate_left(17);
        shuffled_c.push(clusters[3].clone());
        assert_eq!(first, assign(strs(&shuffled_r), strs(&shuffled_c)));
        assert_eq!(first, assign(strs(&replicas), strs(&clusters)));
    }

    /// Moves when one replica joins `before`: how many clusters change replica.
    fn moved(before: &[String], after: &[String], clusters: &[String]) -> usize {
        let old = assign(strs(before), strs(clusters));
        changed(&old, after, clusters)
    }

    /// Clusters of `old` that move when the replicas become `after`.
    fn changed(old: &BTreeMap<String, String>, after: &[String], clusters: &[String]) -> usize {
        let new = assign(strs(after), strs(clusters));
        clusters.iter().filter(|c| old[*c] != new[*c]).count()
    }

    /// A replica joining or leaving moves a bounded number of clusters: its own share (about
    /// n/m) plus at most as many again in knock-on moves, and a few for rounding.
    #[test]
    fn a_joining_or_leaving_replica_moves_a_bounded_number_of_clusters() {
        let mut worst = 0.0f64;
        for n in [10, 40, 100, 300] {
            let clusters = names("cluster", n);
            for m in 1..=8 {
                let before = names(&format!("fleet{m}"), m);
                let mut after = before.clone();
                after.push(format!("fleet{m}-joined"));
                let joined = moved(&before, &after, &clusters);
                let left = moved(&after, &before, &clusters);
                assert_eq!(joined, left, "joining and leaving are symmetric");
                let bound = 2 * n / (m + 1) + 3;
                assert!(
                    joined <= bound,
                    "{n} over {m}+1: {joined} moved, bound {bound}"
                );
                worst = worst.max(joined as f64 / (n as f64 / (m + 1) as f64));
            }
        }
        println!("worst moves on a join: {worst:.2} × the joiner's share");
    }

    /// Property over 1,000 random fleets: balanced, complete, order-independent, and a join
    /// moves at most twice the joiner's share plus rounding.
    #[test]
    fn a_thousand_random_fleets_are_balanced_and_move_little() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for round in 0..1000 {
            let m = 1 + rng.below(9);
            let n = rng.below(120);
            let replicas: Vec<String> =
                (0..m).map(|_| format!("r{}", rng.below(1 << 20))).collect();
            let clusters: Vec<String> =
                (0..n).map(|_| format!("c{}", rng.below(1 << 20))).collect();
            let replicas: Vec<String> = replicas
                .into_iter()
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect();
            let clusters: Vec<String> = clusters
                .into_iter()
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect();
            let balanced = check_balanced(&replicas, &clusters, &format!("round {round}"));
            let mut reversed = replicas.clone();
            reversed.reverse();
            assert_eq!(
                balanced,
                assign(strs(&reversed), strs(&clusters)),
                "round {round}"
            );
            let mut after = replicas.clone();
            after.push(format!("joiner-{round}"));
            let joined = changed(&balanced, &after, &clusters);
            let bound = 2 * clusters.len() / after.len() + 3;
            assert!(
                joined <= bound,
                "round {round}: {joined} moved, bound {bound}"
            );
        }
    }
}
