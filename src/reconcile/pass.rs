//! The inputs and results of one pass over an App: where it deploys ([`Target`]), what
//! ([`Manifests`]), with which limits ([`Options`]), from which previous status ([`Pass`]),
//! where the widened inventory is made durable ([`Journal`]), and what it produced
//! ([`Outcome`]). The stages (place, plan, execute) and the pipeline share these types.

use std::collections::HashMap;
use std::time::Duration;

use futures_util::future::BoxFuture;
use kube::Client;
use serde_json::Value;

use super::plan::Plan;
use crate::app::{AppSpec, AppStatus};
use crate::apply::prune::PruneReport;
use crate::clusters::allowlist::Allowlist;
use crate::diff::digest::Digest;
use crate::diff::known::{Known, Verified};
use crate::object::ObjectRef;
use crate::object::kinds::KindCache;
use crate::object::owner::Claim;
use crate::render::PackedObjects;

/// Where an App deploys: a client for its destination cluster and that cluster's allowlist
/// (the registry provides both; the management cluster is unrestricted).
#[derive(Clone)]
pub struct Target {
    /// The cluster's name, for messages (`local` for the management cluster).
    pub cluster: String,
    /// An authenticated client for the cluster.
    pub client: Client,
    /// The namespaces the App may deploy to.
    pub allowlist: Allowlist,
    /// The cluster's resolved kinds, shared by the passes of all Apps deploying there.
    pub kinds: KindCache,
}

/// The rendered manifests of one revision.
#[derive(Debug, Clone, PartialEq)]
pub struct Manifests {
    /// The source revision (e.g. a commit id).
    pub revision: String,
    /// sha256 of the rendered YAML.
    pub digest: String,
    /// The rendered objects, packed between passes (each pass unpacks them).
    pub objects: PackedObjects,
}

/// Timeouts and limits of a pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// How long to wait for applied objects to become healthy before Degraded.
    pub health_timeout: Duration,
    /// How long to wait for a CRD to become Established.
    pub crd_timeout: Duration,
    /// The interval between health checks.
    pub poll: Duration,
    /// How long a Held plan may be approved; `None`: forever.
    pub approval_ttl: Option<Duration>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            health_timeout: Duration::from_secs(300),
            crd_timeout: Duration::from_secs(60),
            poll: Duration::from_secs(2),
            approval_ttl: Some(Duration::from_secs(24 * 3600)),
        }
    }
}

/// The inputs of one pass: the App, its previous status, its destination and the rendered
/// manifests of the revision to reconcile.
#[derive(Clone, Copy)]
pub struct Pass<'a> {
    /// The App's `namespace/name`, stamped on every applied object (prune only deletes
    /// objects stamped with it).
    pub app: &'a str,
    /// The App's spec.
    pub spec: &'a AppSpec,
    /// The App's status before this pass (inventory, Held plan).
    pub previous: &'a AppStatus,
    /// The destination cluster.
    pub target: &'a Target,
    /// What to deploy.
    pub manifests: &'a Manifests,
    /// What may be taken as known without a dry-run (automatic passes); `None`: dry-run every
    /// object (manual syncs, approvals, `…/diff`).
    pub known: Option<Known<'a>>,
    /// Where the pass makes its widened inventory durable before its first write (the
    /// daemon's store); `None`: nowhere (tests, benchmarks, plans).
    pub journal: Option<&'a dyn Journal>,
}

/// Keeps an App's inventory durable ahead of its writes, so that a pass that fails or is
/// killed midway orphans nothing: before the first apply, the pass hands the journal its
/// previous status with the inventory widened to the union of the previous inventory and
/// every object it will apply; it narrows to the rendered set only in the status of a pass
/// that succeeded.
pub trait Journal: Sync {
    /// Persists `status` (the previous status with the widened inventory) and returns once
    /// it is durable; an error stops the pass before anything is written to the cluster.
    fn widen<'a>(&'a self, status: &'a AppStatus) -> BoxFuture<'a, Result<(), String>>;

    /// Whether this process may still write to the destination: a replica of a sharded fleet
    /// refuses (with the reason) once it no longer holds its Lease or owns the cluster. Asked
    /// before the inventory is widened, before the apply and before the prune. Unsharded:
    /// always.
    fn fence(&self) -> Result<(), String> {
        Ok(())
    }
}

/// The result of a pass: the new status, the plan it acted on, and what prune did.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The App status to record.
    pub status: AppStatus,
    /// The plan (diffs for `…/diff`).
    pub plan: Plan,
    /// What prune deleted or skipped, when the plan was applied.
    pub pruned: Option<PruneReport>,
    /// The objects seen to agree with their rendered form in this pass (for the next ones).
    pub verified: Verified,
    /// The objects this pass took over from another App (`syncPolicy.adopt`), each with the
    /// App that owned it.
    pub adopted: Vec<Claim>,
}

/// A plan with what is needed to execute it.
pub(super) struct Planned {
    pub(super) plan: Plan,
    pub(super) placed: Vec<(ObjectRef, Value)>,
    /// [`digest::rendered`] of each placed object.
    pub(super) digests: HashMap<ObjectRef, Digest>,
    /// The objects seen to agree with their rendered form while planning.
    pub(super) verified: Verified,
    /// Inventory entries kept although not rendered (prune is off).
    pub(super) kept: Vec<ObjectRef>,
    /// Rendered objects owned by another App, left untouched (not in the plan).
    pub(super) shared: Vec<Claim>,
    /// Rendered objects owned by another App that the plan takes over (`syncPolicy.adopt`).
    pub(super) adopted: Vec<Claim>,
    pub(super) guard: Option<String>,
    /// The App's `namespace/name`.
    pub(super) owner: String,
}

impl Planned {
    /// The App's inventory once its plan is carried out: every placed object but those another
    /// App owns and this one leaves untouched, and the entries kept although not rendered. A
    /// no-op plan's too, so an App whose status was lost (a new store, a restarted operator)
    /// lists again the objects it manages and later prunes them.
    pub(super) fn inventory(&self) -> Vec<ObjectRef> {
        let mut inventory: Vec<ObjectRef> = self
            .placed
            .iter()
            .map(|(id, _)| id)
            .filter(|id| !self.shared.iter().any(|c| &c.object == *id))
            .cloned()
            .chain(self.kept.iter().cloned())
            .collect();
        inventory.sort();
        inventory.dedup();
        inventory
    }
}
