//! The per-App pipeline, a short composition of the stages: place and check the allowlist
//! (before any write), diff (dry-run) into a Plan, decide, then apply, prune and wait for
//! health. Approval re-plans and applies only if the plan hash is unchanged.

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use futures_util::{StreamExt, TryStreamExt, stream};
use jiff::Timestamp;
use serde_json::Value;

use super::decide::{Decision, Trigger, decide};
use super::error::ReconcileError;
use super::execute::execute;
use super::pass::{Options, Outcome, Pass, Planned};
use super::place::{place_and_check, split_out_of_scope};
use super::plan::{Plan, Prune};
use super::status;
use crate::app::window::parse_all;
use crate::app::{AppStatus, Phase};
use crate::apply::guard;
use crate::apply::inventory::orphans;
use crate::diff::ObjectDiff;
use crate::diff::digest::{self, Digest};
use crate::diff::dryrun::dry_run;
use crate::diff::known::{LiveState, Verified};
use crate::object::ObjectRef;
use crate::object::kinds::Resolver;
use crate::object::owner::{Claim, prunable, stamp};

/// How many dry-runs are in flight at once.
const DIFF_CONCURRENCY: usize = 8;

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
    let objects = manifests.objects.unpack()?;
    let mut placed = place_and_check(spec, target, &mut resolver, &objects).await?;
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
            && k.verified.agrees(&digests[id], digest)
        {
            verified.carry(k.verified, &digests[id]);
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
            verified.record(digests[&run.diff.object], live);
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
    .with_out_of_scope(out_of_scope)
    .with_promotion(previous.promoted_from.clone());
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
        Decision::Held(m) => (Phase::Held, held_message(&planned.plan, m)),
        Decision::Waiting(m) => (Phase::Waiting, m),
        Decision::OutOfSync(m) => (Phase::OutOfSync, m),
    };
    let mut status = status::planned(previous, &planned.plan, phase, &message, now);
    if phase == Phase::Synced {
        // A no-op: what the cluster holds is what this App manages.
        status.inventory = planned.inventory();
    }
    status::mark_shared(&mut status, &shared, now);
    Ok(Outcome {
        status,
        plan: planned.plan,
        pruned: None,
        verified: planned.verified,
        adopted: Vec::new(),
    })
}

/// The message of a Held plan: `reason`, after the promotion the plan carries (its
/// headline and pinned images), if any.
fn held_message(plan: &Plan, reason: String) -> String {
    match &plan.promotion {
        Some(promotion) => format!("{}: {reason}", promotion.summary()),
        None => reason,
    }
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
        status.inventory = planned.inventory();
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
        let message = held_message(&planned.plan, message);
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
    use crate::reconcile::error::ErrorClass;

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
            e.status(&synced, None, now),
            synced,
            "a refused request changes nothing"
        );
    }
}
