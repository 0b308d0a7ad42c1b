//! Why a pass failed ([`ReconcileError`]), each error naming its object, and the class of a
//! failure ([`ErrorClass`]) that the API maps to a status code and metrics count passes by.

use jiff::Timestamp;

use super::pass::{Manifests, Outcome};
use super::status;
use crate::app::AppStatus;
use crate::app::window::WindowError;
use crate::apply::ApplyError;
use crate::clusters::allowlist::{Forbidden, PlaceError};
use crate::object::ObjectRef;
use crate::render::UnpackError;

/// Why a pass failed.
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    /// The sync policy has an invalid window.
    #[error(transparent)]
    Window(#[from] WindowError),
    /// A rendered object has no identity or an unknown kind.
    #[error(transparent)]
    Place(#[from] PlaceError),
    /// The allowlist refused objects; nothing was sent to the cluster.
    #[error(transparent)]
    Forbidden(#[from] Forbidden),
    /// The rendered objects kept for the pass could not be read back; nothing was sent.
    #[error(transparent)]
    Manifests(#[from] UnpackError),
    /// Approve or reject was asked while no plan is Held.
    #[error("409 Conflict: no plan is Held")]
    NothingHeld,
    /// The approval named another plan than the Held one.
    #[error("409 Conflict: plan {given} is not the Held plan {held}")]
    WrongPlan {
        /// The hash in the request.
        given: String,
        /// The Held plan's hash.
        held: String,
    },
    /// Since it was Held, the plan changed (revision, digest or live state); the new plan is
    /// Held instead (see `outcome`).
    #[error("409 Conflict: the Held plan {held} is no longer current; plan {} is Held instead", outcome.plan.plan_hash)]
    PlanChanged {
        /// The hash that was approved.
        held: String,
        /// The pass that Held the fresh plan.
        outcome: Box<Outcome>,
    },
    /// The Held plan is older than the approval lifetime; it is Held afresh (see `outcome`).
    #[error("409 Conflict: the Held plan {held} expired; plan {} is Held afresh", outcome.plan.plan_hash)]
    ApprovalExpired {
        /// The expired plan's hash.
        held: String,
        /// The pass that Held the fresh plan.
        outcome: Box<Outcome>,
    },
    /// A request about one object failed: the discovery of its kind, its dry-run, or the
    /// read before pruning it.
    #[error("{object} {step} failed: {}", crate::kube_error::describe(error))]
    Object {
        /// The object, e.g. `ConfigMap staging/x (v1)`.
        object: String,
        /// What was asked: `kind lookup`, `dry-run` or `prune lookup`.
        step: &'static str,
        /// The client error (not a `source`: its text is already in the message).
        error: kube::Error,
    },
    /// Discovery could not tell where a kind is served.
    #[error("discovery of {kind} failed: {}", crate::kube_error::describe(error))]
    Discovery {
        /// The kind, e.g. `Gadget (ex.com/v1)`.
        kind: String,
        /// The client error.
        error: kube::Error,
    },
    /// Apply, prune or the health wait failed.
    #[error(transparent)]
    Apply(#[from] ApplyError),
    /// The widened inventory could not be made durable; nothing was applied.
    #[error(
        "cannot record the inventory of {app} ahead of applying (nothing was applied): {error}"
    )]
    Journal {
        /// The App's `namespace/name`.
        app: String,
        /// Why the journal refused.
        error: String,
    },
    /// This replica may no longer write to the destination (it lost its Lease or the
    /// cluster); the pass stopped before its next write.
    #[error("pass of {app} stopped: {reason}")]
    Fenced {
        /// The App's `namespace/name`.
        app: String,
        /// Why (the fence's words).
        reason: String,
    },
}

/// The kinds of [`ReconcileError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// The App's spec or rendered objects are invalid.
    Invalid,
    /// The namespace allowlist refused objects; nothing was sent.
    Forbidden,
    /// An approval or rejection does not match the Held plan.
    Conflict,
    /// The cluster refused or failed a request.
    Cluster,
}

impl ErrorClass {
    /// The class as a lowercase word, for metrics and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorClass::Invalid => "invalid",
            ErrorClass::Forbidden => "forbidden",
            ErrorClass::Conflict => "conflict",
            ErrorClass::Cluster => "cluster",
        }
    }
}

impl ReconcileError {
    /// Wraps a client error of `step` about `object` (for `map_err`).
    pub fn about(
        object: &ObjectRef,
        step: &'static str,
    ) -> impl Fn(kube::Error) -> ReconcileError + use<> {
        let object = object.to_string();
        move |error| ReconcileError::Object {
            object: object.clone(),
            step,
            error,
        }
    }

    /// Whether the cluster could not be reached at all (no answer from its API server).
    pub fn unreachable(&self) -> bool {
        match self {
            ReconcileError::Object { error, .. }
            | ReconcileError::Discovery { error, .. }
            | ReconcileError::Apply(ApplyError::Kube { error, .. }) => {
                crate::kube_error::is_unreachable(error)
            }
            _ => false,
        }
    }

    /// What kind of failure this is: the caller's input, the allowlist, a Held-plan
    /// conflict, or the cluster. (the server answers each with its HTTP status; metrics
    /// count passes by it.)
    pub fn class(&self) -> ErrorClass {
        match self {
            ReconcileError::Window(_) | ReconcileError::Place(_) | ReconcileError::Manifests(_) => {
                ErrorClass::Invalid
            }
            ReconcileError::Forbidden(_) => ErrorClass::Forbidden,
            ReconcileError::NothingHeld
            | ReconcileError::WrongPlan { .. }
            | ReconcileError::PlanChanged { .. }
            | ReconcileError::ApprovalExpired { .. }
            | ReconcileError::Fenced { .. } => ErrorClass::Conflict,
            ReconcileError::Object { .. }
            | ReconcileError::Discovery { .. }
            | ReconcileError::Apply(_)
            | ReconcileError::Journal { .. } => ErrorClass::Cluster,
        }
    }

    /// The status to record after this error: the fresh Held status for a changed or expired
    /// plan, the unchanged status for a refused approval, Failed otherwise (naming the revision
    /// of `attempted`, the manifests the failed pass deployed, when it had them).
    pub fn status(
        &self,
        previous: &AppStatus,
        attempted: Option<&Manifests>,
        now: Timestamp,
    ) -> AppStatus {
        match (self, attempted) {
            (
                ReconcileError::PlanChanged { outcome, .. }
                | ReconcileError::ApprovalExpired { outcome, .. },
                _,
            ) => outcome.status.clone(),
            (
                ReconcileError::NothingHeld
                | ReconcileError::WrongPlan { .. }
                | ReconcileError::Fenced { .. },
                _,
            ) => previous.clone(),
            (e, Some(m)) => {
                status::failed_at(previous, &m.revision, Some(&m.digest), &e.to_string(), now)
            }
            (e, None) => status::failed(previous, &e.to_string(), now),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::Phase;
    use crate::render::PackedObjects;

    #[test]
    fn cluster_errors_name_the_object_and_read_like_kubectl() {
        let id = ObjectRef {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            namespace: Some("staging".into()),
            name: "x".into(),
        };
        let forbidden = || {
            kube::Error::Api(Box::new(kube::core::Status {
                code: 403,
                reason: "Forbidden".into(),
                message: "configmaps \"x\" is forbidden: User \"u\" cannot patch resource \"configmaps\" in API group \"\" in the namespace \"staging\"".into(),
                ..Default::default()
            }))
        };
        let e = ReconcileError::about(&id, "dry-run")(forbidden());
        assert_eq!(
            e.to_string(),
            "ConfigMap staging/x (v1) dry-run failed: configmaps \"x\" is forbidden: User \"u\" cannot patch resource \"configmaps\" in API group \"\" in the namespace \"staging\""
        );
        assert_eq!(e.class(), ErrorClass::Cluster);
        let e = ReconcileError::Apply(ApplyError::about(&id)(forbidden()));
        assert!(
            e.to_string()
                .starts_with("ConfigMap staging/x (v1): configmaps"),
            "{e}"
        );
        assert!(!e.to_string().contains("Status {"), "{e}");
    }

    #[test]
    fn a_failed_pass_names_the_revision_it_failed_on_and_keeps_the_synced_one() {
        let synced = AppStatus {
            phase: Some(Phase::Synced),
            revision: Some("r1".into()),
            rendered_digest: Some("d1".into()),
            synced_revision: Some("r1".into()),
            synced_digest: Some("d1".into()),
            inventory: vec![ObjectRef {
                api_version: "v1".into(),
                kind: "ConfigMap".into(),
                namespace: Some("staging".into()),
                name: "x".into(),
            }],
            ..Default::default()
        };
        let attempted = Manifests {
            revision: "r2".into(),
            digest: "d2".into(),
            objects: PackedObjects::pack(&[]),
        };
        let e = ReconcileError::Journal {
            app: "team/shop".into(),
            error: "disk full".into(),
        };
        let now = Timestamp::now();
        let failed = e.status(&synced, Some(&attempted), now);
        assert_eq!(failed.phase, Some(Phase::Failed));
        assert_eq!(
            (
                failed.revision.as_deref(),
                failed.rendered_digest.as_deref()
            ),
            (Some("r2"), Some("d2"))
        );
        assert_eq!(failed.synced_revision.as_deref(), Some("r1"));
        assert_eq!(failed.inventory, synced.inventory);
        let unprepared = e.status(&synced, None, now);
        assert_eq!(unprepared.revision.as_deref(), Some("r1"));
        assert_eq!(
            ReconcileError::NothingHeld.status(&synced, Some(&attempted), now),
            synced,
            "a refused approval changes nothing"
        );
    }
}
