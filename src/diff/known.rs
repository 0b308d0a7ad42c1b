//! What a pass may take as known without asking the cluster. A dry-run costs two requests per
//! object; on a fleet most passes (resyncs, drift follow-ups, unchanged commits) find nothing
//! to do. An earlier pass that saw an object agree with its rendered form (a dry-run found it
//! unchanged, or wardn's own apply produced it) records the pair of digests in [`Verified`];
//! when a watch of the cluster ([`LiveStates`]) shows the live object with the same desired
//! state and the rendered object is the same, the dry-run would find it unchanged again, and
//! is skipped. A live object the watch knows to be absent skips the read before the dry-run.
//! An agreement is trusted for [`TRUST_FOR`] at most, so every object is still dry-run
//! against the cluster periodically, whatever the watches say.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::digest::Digest;
use crate::object::ObjectRef;

/// An object's live state as a watch of the cluster last reported it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LiveState {
    /// No watch covers it, or the watch is (re)listing or interrupted: ask the cluster.
    Unknown,
    /// The watch's complete view does not contain it.
    Absent,
    /// It exists.
    Present {
        /// Its resourceVersion.
        resource_version: String,
        /// [`super::digest::live`] of it.
        digest: Digest,
    },
}

/// Live states of one destination cluster's objects (implemented by the drift watches).
pub trait LiveStates: Send + Sync {
    /// The state of `object`.
    fn state(&self, object: &ObjectRef) -> LiveState;
}

/// How long an agreement is trusted: after that, the object is dry-run again even if the
/// watches show no change (a safety net for watches that silently miss events).
pub const TRUST_FOR: Duration = Duration::from_secs(3600);

/// The live desired state a rendered object was seen to agree with, and when.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Agreement {
    live: Digest,
    seen: Instant,
}

/// Per rendered object, the live digest of the last time they were seen to agree.
///
/// Keyed by the rendered object's digest ([`super::digest::rendered`]), not by its
/// [`ObjectRef`]: the rendered object is placed, so its digest covers its
/// apiVersion, kind, namespace and name, and names it as well; and an agreement only ever
/// holds for that exact rendered form. A fleet replica keeps one of these per App between
/// passes; keyed by the object's four names it took about 4 KB for a ten-object App (2.8 KB
/// of table and the names' strings), a digest key about 1.3 KB.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Verified {
    agreements: HashMap<Digest, Agreement>,
}

impl Verified {
    /// Records that the rendered object with digest `rendered` agreed with the live object of
    /// digest `live`.
    pub fn record(&mut self, rendered: Digest, live: Digest) {
        let seen = Instant::now();
        self.agreements.insert(rendered, Agreement { live, seen });
    }

    /// Whether the rendered object of digest `rendered` was seen to agree with a live object
    /// of digest `live`, less than [`TRUST_FOR`] ago.
    pub fn agrees(&self, rendered: &Digest, live: &Digest) -> bool {
        self.agrees_at(rendered, live, Instant::now())
    }

    fn agrees_at(&self, rendered: &Digest, live: &Digest, now: Instant) -> bool {
        self.agreements
            .get(rendered)
            .is_some_and(|a| a.live == *live && now.saturating_duration_since(a.seen) < TRUST_FOR)
    }

    /// Copies the agreement of the rendered object of digest `rendered` from `earlier` (with
    /// its age), if it has one.
    pub fn carry(&mut self, earlier: &Verified, rendered: &Digest) {
        if let Some(a) = earlier.agreements.get(rendered) {
            self.agreements.insert(*rendered, *a);
        }
    }

    /// How many objects have an agreement.
    pub fn len(&self) -> usize {
        self.agreements.len()
    }

    /// Whether no object has an agreement.
    pub fn is_empty(&self) -> bool {
        self.agreements.is_empty()
    }
}

/// What a pass may rely on: the agreements of earlier passes and the cluster's live states.
#[derive(Clone, Copy)]
pub struct Known<'a> {
    /// Agreements recorded by earlier passes of the App.
    pub verified: &'a Verified,
    /// The destination cluster's live states.
    pub live: &'a dyn LiveStates,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agreement_needs_both_digests() {
        let mut v = Verified::default();
        v.record([1; 32], [2; 32]);
        assert!(v.agrees(&[1; 32], &[2; 32]));
        assert!(!v.agrees(&[9; 32], &[2; 32]), "rendered changed");
        assert!(!v.agrees(&[1; 32], &[9; 32]), "live changed");
        let later = Instant::now() + TRUST_FOR;
        assert!(
            !v.agrees_at(&[1; 32], &[2; 32], later),
            "an old agreement is checked again"
        );
        let mut next = Verified::default();
        next.carry(&v, &[1; 32]);
        next.carry(&v, &[9; 32]);
        assert_eq!(next, v);
        assert_eq!(next.len(), 1);
    }

    /// The key names the object: two objects differing only in a name (or namespace, kind,
    /// apiVersion) have different rendered digests, so one's agreement never answers for
    /// the other.
    #[test]
    fn objects_differing_only_in_identity_do_not_share_an_agreement() {
        let cm = |api_version: &str, kind: &str, namespace: Option<&str>, name: &str| {
            let mut metadata = serde_json::json!({"name": name});
            if let Some(namespace) = namespace {
                metadata["namespace"] = namespace.into();
            }
            super::super::digest::rendered(&serde_json::json!({
                "apiVersion": api_version, "kind": kind, "metadata": metadata,
                "data": {"k": "v"},
            }))
        };
        let a = cm("v1", "ConfigMap", Some("n"), "a");
        let others = [
            cm("v1", "ConfigMap", Some("n"), "b"),
            cm("v1", "ConfigMap", Some("m"), "a"),
            cm("v1", "ConfigMap", None, "a"),
            cm("v1", "Secret", Some("n"), "a"),
            cm("v2", "ConfigMap", Some("n"), "a"),
        ];
        let mut v = Verified::default();
        v.record(a, [2; 32]);
        assert!(v.agrees(&a, &[2; 32]));
        for other in others {
            assert_ne!(other, a);
            assert!(!v.agrees(&other, &[2; 32]));
        }
    }
}
