//! Claims: the destination clusters a replica has taken, published in an annotation on its
//! own Lease ([`CLAIMS_ANNOTATION`]) at every renewal, as compact text
//! `cluster=<claim time, unix seconds>` joined by commas (`east-0=1764650000,west-3=1764650012`;
//! empty: no claims). A claim's time is set once, when the replica takes the cluster, and kept
//! while it holds it; it orders competing claims ([`Claim`]). The text is read from other
//! replicas' Leases, so it is parsed strictly: anything else is [`ClaimsError`], never a panic.

use std::collections::{BTreeMap, BTreeSet};

/// The annotation on a shard Lease listing the clusters its replica claims.
pub const CLAIMS_ANNOTATION: &str = "cd.wardn.space/claims";

/// The annotation on a shard Lease listing the destination clusters of its replica's Apps
/// (comma-joined), so that every replica divides the same clusters even while the replicas'
/// Apps differ.
pub const CLUSTERS_ANNOTATION: &str = "cd.wardn.space/clusters";

/// The largest claims text a replica publishes or reads (64 KiB: about 800 clusters of 63
/// characters; a Lease's annotations may hold 256 KiB in all).
pub const MAX_CLAIMS_BYTES: usize = 64 * 1024;

/// Cluster → claim time (unix seconds), as one Lease publishes them.
pub type Claims = BTreeMap<String, i64>;

/// Why a claims or clusters annotation was refused; each names its annotation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClaimsError {
    /// Longer than [`MAX_CLAIMS_BYTES`].
    #[error("annotation {annotation}: {bytes} bytes, more than the {MAX_CLAIMS_BYTES} allowed")]
    TooLong {
        /// [`CLAIMS_ANNOTATION`] or [`CLUSTERS_ANNOTATION`].
        annotation: &'static str,
        /// The text's length.
        bytes: usize,
    },
    /// One entry is not `cluster=<seconds>` (claims) or not a DNS label (clusters).
    #[error("annotation {annotation}: entry {index} ({entry:?}): {reason}")]
    Entry {
        /// [`CLAIMS_ANNOTATION`] or [`CLUSTERS_ANNOTATION`].
        annotation: &'static str,
        /// The entry's position (from 0).
        index: usize,
        /// The entry (cut to 80 characters).
        entry: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A cluster claimed twice in one annotation.
    #[error("annotation {CLAIMS_ANNOTATION}: cluster {0} is claimed twice")]
    Duplicate(String),
}

/// The error of `annotation`'s entry number `index`, `entry`, for `reason`.
fn bad_entry(
    annotation: &'static str,
    index: usize,
    entry: &str,
    reason: &'static str,
) -> ClaimsError {
    ClaimsError::Entry {
        annotation,
        index,
        entry: entry.chars().take(80).collect(),
        reason,
    }
}

/// Refuses `annotation`'s `text` when it is longer than [`MAX_CLAIMS_BYTES`].
fn within_bound(annotation: &'static str, text: &str) -> Result<(), ClaimsError> {
    if text.len() > MAX_CLAIMS_BYTES {
        return Err(ClaimsError::TooLong {
            annotation,
            bytes: text.len(),
        });
    }
    Ok(())
}

/// Prints `claims` as the annotation's text (clusters in order).
pub fn print(claims: &Claims) -> String {
    let entries: Vec<String> = claims
        .iter()
        .map(|(cluster, since)| format!("{cluster}={since}"))
        .collect();
    entries.join(",")
}

/// Parses the annotation's text: every entry `cluster=<seconds>`, the cluster a DNS label
/// (the form of every cluster name), the seconds a non-negative integer, no cluster twice.
/// Times are taken as written, even in the future: they only order claims, and every replica
/// must order the same published values the same way (clamping them to a local clock would
/// not).
pub fn parse(text: &str) -> Result<Claims, ClaimsError> {
    within_bound(CLAIMS_ANNOTATION, text)?;
    let mut claims = Claims::new();
    if text.is_empty() {
        return Ok(claims);
    }
    for (index, entry) in text.split(',').enumerate() {
        let bad = |reason| bad_entry(CLAIMS_ANNOTATION, index, entry, reason);
        let (cluster, since) = entry
            .split_once('=')
            .ok_or_else(|| bad("not cluster=<unix seconds>"))?;
        if !crate::object::is_dns_label(cluster) {
            return Err(bad("the cluster is not a DNS label"));
        }
        if since.is_empty() || !since.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad("the claim time is not unix seconds"));
        }
        let since: i64 = since
            .parse()
            .map_err(|_| bad("the claim time is out of range"))?;
        if claims.insert(cluster.to_string(), since).is_some() {
            return Err(ClaimsError::Duplicate(cluster.to_string()));
        }
    }
    Ok(claims)
}

/// Prints a set of clusters as the [`CLUSTERS_ANNOTATION`]'s text; `None` when it would be
/// longer than [`MAX_CLAIMS_BYTES`] (then not published).
pub fn print_clusters(clusters: &BTreeSet<String>) -> Option<String> {
    let text = clusters
        .iter()
        .map(String::as_str)
        .collect::<Vec<&str>>()
        .join(",");
    (text.len() <= MAX_CLAIMS_BYTES).then_some(text)
}

/// Parses the [`CLUSTERS_ANNOTATION`]'s text: DNS labels joined by commas (empty: none), at
/// most [`MAX_CLAIMS_BYTES`]; duplicates count once.
pub fn parse_clusters(text: &str) -> Result<BTreeSet<String>, ClaimsError> {
    within_bound(CLUSTERS_ANNOTATION, text)?;
    if text.is_empty() {
        return Ok(BTreeSet::new());
    }
    text.split(',')
        .enumerate()
        .map(|(index, cluster)| {
            if crate::object::is_dns_label(cluster) {
                Ok(cluster.to_string())
            } else {
                Err(bad_entry(
                    CLUSTERS_ANNOTATION,
                    index,
                    cluster,
                    "not a DNS label",
                ))
            }
        })
        .collect()
}

/// One replica's claim on a cluster, ordered by claim time, then replica id: of two claims on
/// one cluster the smaller wins. Every replica compares the same published values, so all
/// agree on the winner.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Claim<'a> {
    /// The claim time (unix seconds; [`i64::MIN`] for a replica of an earlier release, which
    /// publishes no claims and writes to its rendezvous share).
    pub since: i64,
    /// The claiming replica.
    pub replica: &'a str,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claims_print_and_parse_back() {
        let mut claims = Claims::new();
        assert_eq!(print(&claims), "");
        assert_eq!(parse("").unwrap(), claims);
        claims.insert("west-3".into(), 1_764_650_012);
        claims.insert("east-0".into(), 1_764_650_000);
        claims.insert("local".into(), 0);
        let text = print(&claims);
        assert_eq!(text, "east-0=1764650000,local=0,west-3=1764650012");
        assert_eq!(parse(&text).unwrap(), claims);
        // Many clusters of the longest names fit and round-trip.
        let big: Claims = (0..800)
            .map(|i| {
                (
                    format!("{:a<63}", format!("c{i}-")),
                    i64::from(i) + 1_764_650_000,
                )
            })
            .map(|(mut c, t)| {
                c.truncate(63);
                (c, t)
            })
            .collect();
        let text = print(&big);
        assert!(text.len() <= MAX_CLAIMS_BYTES, "{}", text.len());
        assert_eq!(parse(&text).unwrap(), big);
    }

    #[test]
    fn hostile_annotations_are_refused_with_the_reason() {
        for (text, reason) in [
            ("east-0", "not cluster="),
            ("east-0=", "not unix seconds"),
            ("east-0=12a", "not unix seconds"),
            ("east-0=-5", "not unix seconds"),
            ("east-0=+5", "not unix seconds"),
            ("east-0=99999999999999999999", "out of range"),
            ("=12", "not a DNS label"),
            ("East-0=12", "not a DNS label"),
            ("east_0=12", "not a DNS label"),
            ("-east=12", "not a DNS label"),
            ("east-0=1,,west=2", "not cluster="),
            ("east-0=1,", "not cluster="),
            ("east-0=1=2", "not unix seconds"),
            ("east-0 =1", "not a DNS label"),
            ("{\"east-0\":1}", "not cluster="),
            ("{\"east-0\"=1}", "not a DNS label"),
            ("\u{0}=1", "not a DNS label"),
        ] {
            let err = parse(text).unwrap_err().to_string();
            assert!(
                err.contains(CLAIMS_ANNOTATION) && err.contains(reason),
                "{text:?}: {err}"
            );
        }
        let err = parse("east-0=1,west=2,east-0=3").unwrap_err();
        assert_eq!(err, ClaimsError::Duplicate("east-0".into()));
        let long = format!("{}=1", "a".repeat(64));
        assert!(parse(&long).unwrap_err().to_string().contains("DNS label"));
        let huge = "a=1,".repeat(MAX_CLAIMS_BYTES / 4 + 1);
        assert!(matches!(
            parse(&huge),
            Err(ClaimsError::TooLong {
                annotation: CLAIMS_ANNOTATION,
                ..
            })
        ));
        // Garbage of every byte never panics.
        let garbage: String = (0u8..=255).map(char::from).cycle().take(5000).collect();
        parse(&garbage).unwrap_err();
    }

    #[test]
    fn cluster_sets_print_and_parse_back_and_garbage_is_refused() {
        let set: BTreeSet<String> = ["east-0", "local", "west-1"].map(String::from).into();
        let text = print_clusters(&set).unwrap();
        assert_eq!(text, "east-0,local,west-1");
        assert_eq!(parse_clusters(&text).unwrap(), set);
        assert_eq!(parse_clusters("").unwrap(), BTreeSet::new());
        assert_eq!(parse_clusters("a,a").unwrap().len(), 1);
        for bad in ["a,,b", "a,", "A", "a=1", "a b"] {
            let err = parse_clusters(bad).unwrap_err().to_string();
            assert!(
                err.contains(CLUSTERS_ANNOTATION) && err.contains("DNS label"),
                "{bad}: {err}"
            );
        }
        let huge: BTreeSet<String> = (0..2000).map(|i| format!("{i:0>63}")).collect();
        assert_eq!(print_clusters(&huge), None);
        let text = huge.iter().cloned().collect::<Vec<_>>().join(",");
        assert_eq!(
            parse_clusters(&text).unwrap_err(),
            ClaimsError::TooLong {
                annotation: CLUSTERS_ANNOTATION,
                bytes: text.len()
            }
        );
    }

    #[test]
    fn claim_times_in_the_future_are_kept_and_order_claims() {
        let far = i64::MAX;
        let claims = parse(&format!("east-0={far}")).unwrap();
        assert_eq!(claims["east-0"], far);
        let early = Claim {
            since: 10,
            replica: "z",
        };
        let late = Claim {
            since: far,
            replica: "a",
        };
        let tie = Claim {
            since: 10,
            replica: "a",
        };
        let legacy = Claim {
            since: i64::MIN,
            replica: "zz",
        };
        assert!(early < late && tie < early && legacy < tie);
        let mut all = [late, early, legacy, tie];
        all.sort();
        assert_eq!(all, [legacy, tie, early, late]);
    }
}
