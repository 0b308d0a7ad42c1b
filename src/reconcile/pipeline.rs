//! The per-App pipeline, a short composition of the stages: place and check the allowlist
//! (before any write), diff (dry-run) into a Plan, decide, then apply, prune and wait for
//! health. Approval re-plans and applies only if the plan hash is unchanged.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Duration;

use futures_util::future::BoxFuture;
use futures_util::{StreamExt, TryStreamExt, stream};
use jiff::Timestamp;
use kube::Client;
use serde_json::Value;

use super::decide::{Decision, Trigger, decide};
use super::plan::{Plan, Prune};
use super::status;
use crate::app::window::{WindowError, parse_all};
use crate::app::{AppSpec, AppStatus, HealthState, Phase};
use crate::apply::inventory::orphans;
use crate::apply::prune::{PruneReport, prune};
use crate::apply::{ApplyError, guard, health, stage};
use crate::clusters::allowlist::{self, Allowlist, Forbidden, PlaceError};
use crate::diff::digest::{self, Digest};
use crate::diff::dryrun::dry_run;
use crate::diff::known::{Known, LiveState, Verified};
use crate::diff::{Action, ObjectDiff};
use crate::object::ObjectRef;
use crate::object::kinds::{KindCache, Resolver};
use crate::object::owner::{Claim, prunable, stamp};
use crate::object::scope::{self, RefusedCrds, RenderedCrd};

/// How many dry-runs are in flight at once.
const DIFF_CONCURRENCY: usize = 8;

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
    /// The rendered objects.
    pub objects: Vec<Value>,
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
    /// conflict, or the cluster. (`crate::server` answers each with its HTTP status; metrics
    /// count passes by it.)
    pub fn class(&self) -> ErrorClass {
        match self {
            ReconcileError::Window(_) | ReconcileError::Place(_) => ErrorClass::Invalid,
            ReconcileError::Forbidden(_) => ErrorClass::Forbidden,
            ReconcileError::NothingHeld
            | ReconcileError::WrongPlan { .. }
            | ReconcileError::PlanChanged { .. }
            | ReconcileError::ApprovalExpired { .. } => ErrorClass::Conflict,
            ReconcileError::Object { .. }
            | ReconcileError::Discovery { .. }
            | ReconcileError::Apply(_)
            | ReconcileError::Journal { .. } => ErrorClass::Cluster,
        }
    }

    /// The status to record after this error: the fresh Held status for a changed or expired
    /// plan, the unchanged status for a refused approval, Failed otherwise.
    pub fn status(&self, previous: &AppStatus, now: Timestamp) -> AppStatus {
        match self {
            ReconcileError::PlanChanged { outcome, .. }
            | ReconcileError::ApprovalExpired { outcome, .. } => outcome.status.clone(),
            ReconcileError::NothingHeld | ReconcileError::WrongPlan { .. } => previous.clone(),
            e => status::failed(previous, &e.to_string(), now),
        }
    }
}

/// A plan with what is needed to execute it.
struct Planned {
    plan: Plan,
    placed: Vec<(ObjectRef, Value)>,
    /// [`digest::rendered`] of each placed object.
    digests: HashMap<ObjectRef, Digest>,
    /// The objects seen to agree with their rendered form while planning.
    verified: Verified,
    /// Inventory entries kept although not rendered (prune is off).
    kept: Vec<ObjectRef>,
    /// Rendered objects owned by another App, left untouched (not in the plan).
    shared: Vec<Claim>,
    /// Rendered objects owned by another App that the plan takes over (`syncPolicy.adopt`).
    adopted: Vec<Claim>,
    guard: Option<String>,
    /// The App's `namespace/name`.
    owner: String,
}

/// Places the objects and checks the allowlist, before any write. The scope of every kind is
/// what the destination cluster's discovery says (read-only requests, cached per cluster); a
/// rendered CRD only decides the scope of a kind the cluster does not serve yet, and is refused
/// in a built-in group or against the scope the cluster serves. A kind whose scope cannot be
/// established is refused. What is refused whatever discovery says (a namespace outside the
/// allowlist, a built-in cluster-scoped kind under a restricted one) is refused before any
/// request.
async fn place_and_check(
    spec: &AppSpec,
    target: &Target,
    resolver: &mut Resolver,
    objects: &[Value],
) -> Result<Vec<(ObjectRef, Value)>, ReconcileError> {
    let destination = &spec.destination.namespace;
    let check = |placed: &[(ObjectRef, Value)]| {
        allowlist::check(&target.allowlist, &target.cluster, destination, placed)
    };
    check(&allowlist::place(objects, destination, certain_scope)?)?;
    let crds = scope::rendered_crds(objects);
    refuse_crds(resolver, &crds).await?;
    let served = served_scopes(resolver, objects).await?;
    let placed = allowlist::place(objects, destination, |av, kind| {
        match served.get(&(av.to_string(), kind.to_string())) {
            Some(Some(namespaced)) => Some(*namespaced),
            _ => scope::crd_scope(av, kind, &crds),
        }
    })?;
    check(&placed)?;
    Ok(placed)
}

/// The scope to check the allowlist with before any request: the built-in table's, and
/// namespaced for other kinds. Whatever their real scope, the objects this refuses are refused
/// (a disallowed namespace is refused for a namespaced object, and a cluster-scoped one is
/// refused by any list that refuses namespaces).
fn certain_scope(api_version: &str, kind: &str) -> Option<bool> {
    Some(scope::builtin_scope(crate::object::group_of(api_version), kind).unwrap_or(true))
}

/// Refuses rendered CRDs in built-in groups, without a valid scope, or redeclaring a kind the
/// cluster serves with another scope (asked through discovery).
async fn refuse_crds(resolver: &mut Resolver, crds: &[RenderedCrd]) -> Result<(), ReconcileError> {
    let mut refusals = Vec::new();
    for crd in crds {
        let served = if scope::is_reserved_group(&crd.group) {
            None
        } else {
            resolver
                .served_scope(&crd.group, &crd.kind)
                .await
                .map_err(|error| ReconcileError::Discovery {
                    kind: format!("{} ({})", crd.kind, crd.group),
                    error,
                })?
        };
        if let Err(refusal) = scope::check_crd(crd, served) {
            refusals.push(refusal);
        }
    }
    if refusals.is_empty() {
        Ok(())
    } else {
        Err(PlaceError::from(RefusedCrds { refusals }).into())
    }
}

/// The scope the cluster serves each `(apiVersion, kind)` of `objects` with; `None` for kinds
/// it does not serve (yet).
async fn served_scopes(
    resolver: &mut Resolver,
    objects: &[Value],
) -> Result<BTreeMap<(String, String), Option<bool>>, ReconcileError> {
    let mut served = BTreeMap::new();
    for o in objects {
        let (Some(av), Some(kind)) = (
            o.get("apiVersion").and_then(Value::as_str),
            o.get("kind").and_then(Value::as_str),
        ) else {
            continue;
        };
        let key = (av.to_string(), kind.to_string());
        if served.contains_key(&key) {
            continue;
        }
        let resolved =
            resolver
                .resolve(av, kind)
                .await
                .map_err(|error| ReconcileError::Discovery {
                    kind: format!("{kind} ({av})"),
                    error,
                })?;
        served.insert(key, resolved.map(|r| r.namespaced));
    }
    Ok(served)
}

/// Splits the inventory entries no longer rendered into those prune may consider and those
/// today's allowlist puts out of its reach (kept in the inventory, reported, never touched).
/// With prune off, nothing is out of scope: nothing would be deleted anyway.
fn split_out_of_scope(
    allowlist: &Allowlist,
    prune: bool,
    gone: Vec<ObjectRef>,
) -> (Vec<ObjectRef>, Vec<ObjectRef>) {
    if !prune {
        return (gone, Vec::new());
    }
    gone.into_iter().partition(|id| allowlist.allows_prune(id))
}

/// Builds the plan: dry-run diffs of every rendered object (except those `known` shows to
/// agree already), and prunes from the inventory.
async fn make_plan(pass: Pass<'_>) -> Result<(Planned, Resolver), ReconcileError> {
    let Pass {
        app,
        spec,
        previous,
        target,
        manifests,
        known,
        journal: _,
    } = pass;
    parse_all(&spec.sync_policy.sync_windows)?;
    let mut resolver = Resolver::shared(target.client.clone(), target.kinds.clone());
    let mut placed = place_and_check(spec, target, &mut resolver, &manifests.objects).await?;
    for (_, object) in &mut placed {
        stamp(object, app);
    }
    let digests: HashMap<ObjectRef, Digest> = placed
        .iter()
        .map(|(id, object)| (id.clone(), digest::rendered(object)))
        .collect();
    let mut verified = Verified::default();
    let mut diffs: Vec<Option<ObjectDiff>> = Vec::with_capacity(placed.len());
    let mut to_check = Vec::new();
    for (id, object) in &placed {
        let state = known.map_or(LiveState::Unknown, |k| k.live.state(id));
        if let (
            Some(k),
            LiveState::Present {
                resource_version,
                digest,
            },
        ) = (known, &state)
            && k.verified.agrees(id, &digests[id], digest)
        {
            verified.carry(k.verified, id);
            diffs.push(Some(ObjectDiff::unchanged(
                id.clone(),
                resource_version.clone(),
            )));
            continue;
        }
        let resolved = resolver
            .resolve(&id.api_version, &id.kind)
            .await
            .map_err(ReconcileError::about(id, "kind lookup"))?;
        to_check.push((
            diffs.len(),
            id,
            object,
            resolved,
            state == LiveState::Absent,
        ));
        diffs.push(None);
    }
    // The futures are built before the stream runs (not by a closure inside it), which keeps
    // the pass's future `Send`.
    let checks: Vec<_> = to_check
        .into_iter()
        .map(|(slot, id, object, resolved, absent)| {
            let resolver = &resolver;
            async move {
                let run = dry_run(resolver, resolved.as_ref(), id.clone(), object, absent)
                    .await
                    .map_err(ReconcileError::about(id, "dry-run"))?;
                Ok::<_, ReconcileError>((slot, run))
            }
        })
        .collect();
    let checked = stream::iter(checks)
        .buffered(DIFF_CONCURRENCY)
        .try_collect::<Vec<_>>()
        .await?;
    let mut claims = Vec::new();
    for (slot, run) in checked {
        if let Some(owner) = run.owner.filter(|owner| owner != app) {
            claims.push(Claim {
                object: run.diff.object.clone(),
                owner,
            });
        }
        if let Some(live) = run.agreed {
            let id = &run.diff.object;
            verified.record(id.clone(), digests[id], live);
        }
        diffs[slot] = Some(run.diff);
    }
    let mut diffs: Vec<ObjectDiff> = diffs.into_iter().flatten().collect();
    let (shared, adopted) = if spec.sync_policy.adopt {
        (Vec::new(), claims)
    } else {
        diffs.retain(|d| !claims.iter().any(|c| c.object == d.object));
        (claims, Vec::new())
    };
    let current: BTreeSet<ObjectRef> = placed.iter().map(|(id, _)| id.clone()).collect();
    let gone = orphans(&previous.inventory, &current);
    let (gone, out_of_scope) = split_out_of_scope(&target.allowlist, spec.sync_policy.prune, gone);
    let mut prunes = Vec::new();
    let mut kept = out_of_scope.clone();
    if spec.sync_policy.prune {
        for id in gone {
            let lookup_failed = ReconcileError::about(&id, "prune lookup");
            let Some(r) = resolver
                .resolve(&id.api_version, &id.kind)
                .await
                .map_err(&lookup_failed)?
            else {
                continue;
            };
            let Some(live) = resolver
                .api(&r, id.namespace.as_deref())
                .get_opt(&id.name)
                .await
                .map_err(&lookup_failed)?
            else {
                continue;
            };
            let live = serde_json::to_value(live)
                .map_err(|e| lookup_failed(kube::Error::SerdeError(e)))?;
            if prunable(&live, app) {
                let rv = live
                    .pointer("/metadata/resourceVersion")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                prunes.push(Prune {
                    object: id,
                    live_resource_version: rv,
                });
            }
        }
    } else {
        kept.extend(gone);
    }
    let prune_ids: Vec<ObjectRef> = prunes.iter().map(|p| p.object.clone()).collect();
    let guard = guard::check(previous.inventory.len(), &prune_ids);
    let plan = Plan::new(
        app,
        &target.cluster,
        manifests.revision.clone(),
        manifests.digest.clone(),
        diffs,
        prunes,
    )
    .with_out_of_scope(out_of_scope);
    Ok((
        Planned {
            plan,
            placed,
            digests,
            verified,
            kept,
            shared,
            adopted,
            guard,
            owner: app.to_string(),
        },
        resolver,
    ))
}

/// Computes the plan without deciding or applying (for `…/diff` and `wardn diff`).
pub async fn plan(pass: Pass<'_>) -> Result<Plan, ReconcileError> {
    Ok(make_plan(pass).await?.0.plan)
}

/// One reconcile pass: plan, decide, and apply when the decision says so. `progress` receives
/// the Progressing status once the objects are applied, before the health wait.
pub async fn reconcile(
    pass: Pass<'_>,
    trigger: &Trigger,
    options: &Options,
    now: Timestamp,
    progress: &mut (dyn FnMut(&AppStatus) + Send),
) -> Result<Outcome, ReconcileError> {
    let Pass { spec, previous, .. } = pass;
    // Approval only goes through `approve`, which verifies the plan hash; here it would skip
    // that check, so it counts as a plain manual sync.
    let trigger = match trigger {
        Trigger::Approved => &Trigger::Manual {
            override_windows: false,
        },
        t => t,
    };
    let (planned, resolver) = make_plan(pass).await?;
    let windows = parse_all(&spec.sync_policy.sync_windows)?;
    let decision = decide(
        &planned.plan,
        &spec.sync_policy,
        previous,
        &windows,
        trigger,
        planned.guard.as_deref(),
        now,
    );
    let shared = planned.shared.clone();
    let (phase, message) = match decision {
        Decision::Apply => {
            let mut outcome = execute(pass, planned, resolver, options, progress).await?;
            status::mark_shared(&mut outcome.status, &shared, Timestamp::now());
            return Ok(outcome);
        }
        Decision::Synced => (Phase::Synced, String::new()),
        Decision::Held(m) => (Phase::Held, m),
        Decision::Waiting(m) => (Phase::Waiting, m),
        Decision::OutOfSync(m) => (Phase::OutOfSync, m),
    };
    let mut status = status::planned(previous, &planned.plan, phase, &message, now);
    status::mark_shared(&mut status, &shared, now);
    Ok(Outcome {
        status,
        plan: planned.plan,
        pruned: None,
        verified: planned.verified,
        adopted: Vec::new(),
    })
}

/// Approves the Held plan: re-plans, and applies only if the fresh plan has the Held hash
/// (and `plan_hash`, when given, names it). A changed or expired plan is Held afresh and the
/// approval refused (409).
pub async fn approve(
    pass: Pass<'_>,
    plan_hash: Option<&str>,
    options: &Options,
    now: Timestamp,
    progress: &mut (dyn FnMut(&AppStatus) + Send),
) -> Result<Outcome, ReconcileError> {
    let Pass { previous, .. } = pass;
    let held = held_plan(previous, plan_hash)?;
    let (planned, resolver) = make_plan(pass).await?;
    let shared = planned.shared.clone();
    if planned.plan.is_noop() {
        // The cluster already matches (e.g. someone applied the change): nothing to approve.
        let mut status = status::planned(previous, &planned.plan, Phase::Synced, "", now);
        status::mark_shared(&mut status, &shared, now);
        return Ok(Outcome {
            status,
            plan: planned.plan,
            pruned: None,
            verified: planned.verified,
            adopted: Vec::new(),
        });
    }
    let expired = options.approval_ttl.is_some_and(|ttl| {
        let held_at = previous
            .held_at
            .as_deref()
            .and_then(|t| t.parse::<Timestamp>().ok());
        held_at
            .is_some_and(|t| Duration::try_from(now.duration_since(t)).is_ok_and(|age| age > ttl))
    });
    if expired || planned.plan.plan_hash != held {
        let why = if expired {
            "approval expired"
        } else {
            "the plan changed since it was Held"
        };
        let message = format!("{why}; plan {} waits for approval", planned.plan.plan_hash);
        let mut fresh = previous.clone();
        fresh.held_at = None;
        fresh.phase = None;
        let mut status = status::planned(&fresh, &planned.plan, Phase::Held, &message, now);
        status::mark_shared(&mut status, &shared, now);
        let outcome = Box::new(Outcome {
            status,
            plan: planned.plan,
            pruned: None,
            verified: planned.verified,
            adopted: Vec::new(),
        });
        return Err(if expired {
            ReconcileError::ApprovalExpired { held, outcome }
        } else {
            ReconcileError::PlanChanged { held, outcome }
        });
    }
    let mut outcome = execute(pass, planned, resolver, options, progress).await?;
    status::mark_shared(&mut outcome.status, &shared, Timestamp::now());
    Ok(outcome)
}

/// The hash of the Held plan, which `plan_hash` (when given) must name.
fn held_plan(previous: &AppStatus, plan_hash: Option<&str>) -> Result<String, ReconcileError> {
    let held = match (&previous.phase, &previous.plan_hash) {
        (Some(Phase::Held), Some(h)) => h.clone(),
        _ => return Err(ReconcileError::NothingHeld),
    };
    match plan_hash.filter(|given| *given != held) {
        Some(given) => Err(ReconcileError::WrongPlan {
            given: given.to_string(),
            held,
        }),
        None => Ok(held),
    }
}

/// Applies a plan: the widened inventory made durable (see [`Journal`]), staged apply of
/// creates and updates, prune, then the health wait.
async fn execute(
    pass: Pass<'_>,
    planned: Planned,
    mut resolver: Resolver,
    options: &Options,
    progress: &mut (dyn FnMut(&AppStatus) + Send),
) -> Result<Outcome, ReconcileError> {
    let Planned {
        plan,
        placed,
        digests,
        mut verified,
        kept,
        shared,
        adopted,
        owner,
        ..
    } = planned;
    let touched: BTreeSet<&ObjectRef> = plan
        .objects
        .iter()
        .filter(|d| d.action != Action::Unchanged)
        .map(|d| &d.object)
        .collect();
    let to_apply: Vec<(ObjectRef, Value)> = placed
        .iter()
        .filter(|(id, _)| touched.contains(id))
        .cloned()
        .collect();
    let previous = pass.previous;
    if let (Some(journal), Some(widened)) = (pass.journal, widened(previous, &to_apply)) {
        journal
            .widen(&widened)
            .await
            .map_err(|error| ReconcileError::Journal {
                app: owner.clone(),
                error,
            })?;
    }
    let applied = stage::apply_staged(&mut resolver, &to_apply, options.crd_timeout).await?;
    // wardn's own apply produced these live states from exactly these rendered objects.
    for (id, live) in &applied {
        if let Some(rendered) = digests.get(id) {
            verified.record(id.clone(), *rendered, digest::live(live));
        }
    }
    let applied: HashMap<ObjectRef, Value> = applied.into_iter().collect();
    let prune_ids: Vec<ObjectRef> = plan.prunes.iter().map(|p| p.object.clone()).collect();
    let report = prune(&mut resolver, &prune_ids, &owner).await?;
    for claim in &adopted {
        tracing::warn!(app = %owner, object = %claim.object, from = %claim.owner,
            "adopted an object owned by another App (syncPolicy.adopt)");
    }
    // Objects another App owns and this one left untouched are not this App's.
    let placed: Vec<(ObjectRef, Value)> = placed
        .into_iter()
        .filter(|(id, _)| !shared.iter().any(|c| &c.object == id))
        .collect();
    let mut inventory: Vec<ObjectRef> = placed
        .iter()
        .map(|(id, _)| id.clone())
        .chain(kept)
        .collect();
    inventory.sort();
    inventory.dedup();
    progress(&status::applied(
        previous,
        &plan,
        inventory.clone(),
        HealthState::Progressing,
        "waiting for health",
        Timestamp::now(),
    ));
    let ids: Vec<ObjectRef> = placed.into_iter().map(|(id, _)| id).collect();
    let h = health::wait(
        &mut resolver,
        &ids,
        &applied,
        options.health_timeout,
        options.poll,
    )
    .await?;
    let mut status = status::applied(
        previous,
        &plan,
        inventory,
        h.state,
        &h.message,
        Timestamp::now(),
    );
    status::mark_adopted(&mut status, &adopted, Timestamp::now());
    Ok(Outcome {
        status,
        plan,
        pruned: Some(report),
        verified,
        adopted,
    })
}

/// The previous status with its inventory widened by the objects about to be applied (their
/// rendered apiVersion replacing a stored one), or `None` when the inventory already lists
/// them all. The widened status names no synced revision: once the pass writes, the cluster
/// is no longer known to match the last synced one, so a later render of that revision (a
/// revert) is applied, not taken for drift.
fn widened(previous: &AppStatus, to_apply: &[(ObjectRef, Value)]) -> Option<AppStatus> {
    let mut inventory: BTreeSet<ObjectRef> = previous.inventory.iter().cloned().collect();
    let before = inventory.len();
    for (id, _) in to_apply {
        inventory.replace(id.clone());
    }
    if inventory.len() == before {
        return None;
    }
    let mut status = previous.clone();
    status.inventory = inventory.into_iter().collect();
    status.synced_revision = None;
    status.synced_digest = None;
    Some(status)
}

/// Rejects the Held plan (which `plan_hash`, when given, must name): the App goes OutOfSync
/// with the rejection in its message.
pub fn reject(
    previous: &AppStatus,
    plan_hash: Option<&str>,
    now: Timestamp,
) -> Result<AppStatus, ReconcileError> {
    let held = held_plan(previous, plan_hash)?;
    let mut s = previous.clone();
    s.held_at = None;
    status::set_phase(
        &mut s,
        Phase::OutOfSync,
        &format!("plan {held} rejected"),
        now,
    );
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn reject_discards_only_a_held_plan() {
        let now = Timestamp::now();
        let held = AppStatus {
            phase: Some(Phase::Held),
            plan_hash: Some("abc".into()),
            held_at: Some("2026-01-01T00:00:00Z".into()),
            ..Default::default()
        };
        let stale = reject(&held, Some("stale"), now).unwrap_err();
        assert!(
            matches!(stale, ReconcileError::WrongPlan { .. }),
            "a rejection names the Held plan: {stale}"
        );
        assert_eq!(
            reject(&held, Some("abc"), now).unwrap(),
            reject(&held, None, now).unwrap()
        );
        let s = reject(&held, None, now).unwrap();
        assert_eq!(s.phase, Some(Phase::OutOfSync));
        assert_eq!(s.message.as_deref(), Some("plan abc rejected"));
        assert_eq!(s.held_at, None);
        let synced = AppStatus {
            phase: Some(Phase::Synced),
            ..held
        };
        let e = reject(&synced, None, now).unwrap_err();
        assert_eq!(e.class(), ErrorClass::Conflict);
        assert_eq!(
            e.status(&synced, now),
            synced,
            "a refused request changes nothing"
        );
    }
}
