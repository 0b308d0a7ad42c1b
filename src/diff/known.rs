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

/// A rendered object and the live desired state it was seen to agree with, and when.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Agreement {
    rendered: Digest,
    live: Digest,
    seen: Instant,
}

/// Per object, the rendered and live digests of the last time they were seen to agree.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Verified {
    agreements: HashMap<ObjectRef, Agreement>,
}

impl Verified {
    /// Records that the rendered object with digest `rendered` agreed with the live object of
    /// digest `live`.
    pub fn record(&mut self, object: ObjectRef, rendered: Digest, live: Digest) {
        let seen = Instant::now();
        self.agreements.insert(
            object,
            Agreement {
                rendered,
                live,
                seen,
            },
        );
    }

    /// Whether `object`, rendered as `rendered`, was seen to agree with a live object of
    /// digest `live`, less than [`TRUST_FOR`] ago.
    pub fn agrees(&self, object: &ObjectRef, rendered: &Digest, live: &Digest) -> bool {
        self.agrees_at(object, rendered, live, Instant::now())
    }

    fn agrees_at(
        &self,
        object: &ObjectRef,
        rendered: &Digest,
        live: &Digest,
        now: Instant,
    ) -> bool {
        self.agreements.get(object).is_some_and(|a| {
            a.rendered == *rendered
                && a.live == *live
                && now.saturating_duration_since(a.seen) < TRUST_FOR
        })
    }

    /// Copies `object`'s agreement from `earlier` (with its age), if it has one.
    pub fn carry(&mut self, earlier: &Verified, object: &ObjectRef) {
        if let Some(a) = earlier.agreements.get(object) {
            self.agreements.insert(object.clone(), *a);
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

    fn cm(name: &str) -> ObjectRef {
        ObjectRef {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            namespace: Some("n".into()),
            name: name.into(),
        }
    }

    #[test]
    fn agreement_needs_both_digests() {
        let mut v = Verified::default();
        v.record(cm("a"), [1; 32], [2; 32]);
        assert!(v.agrees(&cm("a"), &[1; 32], &[2; 32]));
        assert!(!v.agrees(&cm("a"), &[9; 32], &[2; 32]), "rendered changed");
        assert!(!v.agrees(&cm("a"), &[1; 32], &[9; 32]), "live changed");
        assert!(!v.agrees(&cm("b"), &[1; 32], &[2; 32]), "another object");
        let later = Instant::now() + TRUST_FOR;
        assert!(
            !v.agrees_at(&cm("a"), &[1; 32], &[2; 32], later),
            "an old agreement is checked again"
        );
        let mut next = Verified::default();
        next.carry(&v, &cm("a"));
        next.carry(&v, &cm("b"));
        assert_eq!(next, v);
        assert_eq!(next.len(), 1);
    }
}
