//! Rendezvous (highest-random-weight) hashing: which live replica owns a destination cluster.
//! Every replica computes the same answer from the same set of live replicas, with no
//! coordination: each (replica, cluster) pair gets a weight from a stable hash, and the
//! replica with the highest weight owns the cluster. When a replica joins, it takes exactly the
//! clusters where it now weighs most (about 1/N of them, from every other replica); when one
//! leaves, only its clusters move, each to the replica that weighed second. Nothing else moves.

use sha2::{Digest, Sha256};

/// The weight of `cluster` on `replica`: the first 8 bytes of SHA-256 over both names (with a
/// separator no name contains), the same on every platform and in every release.
pub fn weight(replica: &str, cluster: &str) -> u64 {
    let mut hasher = Sha256::new();
    hasher.update(replica.as_bytes());
    hasher.update([0u8]);
    hasher.update(cluster.as_bytes());
    let digest = hasher.finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_be_bytes(first)
}

/// The replica among `replicas` that owns `cluster`; `None` when there is no replica. Ties
/// (equal weights) go to the lexically smaller replica id, so the answer never depends on the
/// order `replicas` are given in.
pub fn owner<'r, I>(replicas: I, cluster: &str) -> Option<&'r str>
where
    I: IntoIterator<Item = &'r str>,
{
    replicas
        .into_iter()
        .map(|replica| {
            (
                weight(replica, cluster),
                std::cmp::Reverse(replica),
                replica,
            )
        })
        .max()
        .map(|(_, _, replica)| replica)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn names(prefix: &str, n: usize) -> Vec<String> {
        (0..n).map(|i| format!("{prefix}-{i}")).collect()
    }

    fn assign<'a>(replicas: &'a [String], clusters: &'a [String]) -> BTreeMap<&'a str, &'a str> {
        clusters
            .iter()
            .map(|c| {
                let owner = owner(replicas.iter().map(String::as_str), c).unwrap();
                (c.as_str(), owner)
            })
            .collect()
    }

    #[test]
    fn no_replica_owns_nothing_and_one_replica_owns_everything() {
        assert_eq!(owner(std::iter::empty(), "staging"), None);
        assert_eq!(owner(["only"], "staging"), Some("only"));
        assert_eq!(owner(["only"], ""), Some("only"));
    }

    #[test]
    fn the_owner_does_not_depend_on_the_order_replicas_are_listed_in() {
        let replicas = names("wardn", 7);
        let mut reversed = replicas.clone();
        reversed.reverse();
        for cluster in names("cluster", 200) {
            assert_eq!(
                owner(replicas.iter().map(String::as_str), &cluster),
                owner(reversed.iter().map(String::as_str), &cluster),
                "{cluster}"
            );
        }
    }

    #[test]
    fn weights_are_stable_across_releases() {
        // Pinned: a change here would move every cluster in every running fleet on upgrade.
        assert_eq!(weight("wardn-0", "staging"), weight("wardn-0", "staging"));
        assert_ne!(weight("wardn-0", "staging"), weight("wardn-1", "staging"));
        // "a" + "bc" and "ab" + "c" are different pairs.
        assert_ne!(weight("a", "bc"), weight("ab", "c"));
        assert_eq!(
            format!("{:016x}", weight("wardn-0", "staging")),
            hex::encode(&Sha256::digest(b"wardn-0\0staging")[..8])
        );
    }

    /// The property, over many fleet sizes: adding one replica to N moves only clusters that
    /// go to the new replica, and about 1/(N+1) of them; removing one moves only that
    /// replica's clusters. The spread is even within a loose bound.
    #[test]
    fn adding_or_removing_one_replica_moves_only_its_share() {
        let clusters = names("cluster", 600);
        for n in 1..=9 {
            let before = names(&format!("fleet{n}"), n);
            let mut after = before.clone();
            after.push(format!("fleet{n}-joined"));
            let old = assign(&before, &clusters);
            let new = assign(&after, &clusters);
            let mut moved = 0;
            for cluster in &clusters {
                let (o, w) = (old[cluster.as_str()], new[cluster.as_str()]);
                if o != w {
                    assert_eq!(
                        w, after[n],
                        "{cluster} moved from {o} to {w}, not to the joiner"
                    );
                    moved += 1;
                }
            }
            let expected = clusters.len() / (n + 1);
            assert!(
                moved > expected / 2 && moved < expected * 3 / 2,
                "{n}+1 replicas: {moved} of {} moved, expected about {expected}",
                clusters.len()
            );
            // Leaving: the reverse of joining, for every replica in turn.
            for gone in 0..after.len() {
                let mut left = after.clone();
                let removed = left.remove(gone);
                if left.is_empty() {
                    continue;
                }
                let shrunk = assign(&left, &clusters);
                for cluster in &clusters {
                    let (o, w) = (new[cluster.as_str()], shrunk[cluster.as_str()]);
                    if o != w {
                        assert_eq!(o, removed, "{cluster} moved off {o}, which stayed");
                    }
                }
            }
            // Spread: no replica holds more than twice its fair share.
            let mut load: BTreeMap<&str, usize> = BTreeMap::new();
            for owner in new.values() {
                *load.entry(owner).or_default() += 1;
            }
            let fair = clusters.len() / (n + 1);
            for (replica, count) in load {
                assert!(count < fair * 2, "{replica} holds {count}, fair is {fair}");
            }
        }
    }
}
