//! Executing a plan: the widened inventory made durable first, then the staged apply of
//! creates and updates, prune, and the health wait.

use std::collections::{BTreeSet, HashMap};

use jiff::Timestamp;
use serde_json::Value;

use super::error::ReconcileError;
use super::pass::{Options, Outcome, Pass, Planned};
use super::status;
use crate::app::{AppStatus, HealthState};
use crate::apply::prune::prune;
use crate::apply::{health, stage};
use crate::diff::Action;
use crate::diff::digest;
use crate::object::ObjectRef;
use crate::object::kinds::Resolver;

/// Applies a plan: the widened inventory made durable (see [`Journal`]), staged apply of
/// creates and updates, prune, then the health wait.
pub(super) async fn execute(
    pass: Pass<'_>,
    planned: Planned,
    mut resolver: Resolver,
    options: &Options,
    progress: &mut (dyn FnMut(&AppStatus) + Send),
) -> Result<Outcome, ReconcileError> {
    let inventory = planned.inventory();
    let Planned {
        plan,
        placed,
        digests,
        mut verified,
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
    fence(&pass, &owner)?;
    if let (Some(journal), Some(widened)) = (pass.journal, widened(previous, &to_apply)) {
        journal
            .widen(&widened)
            .await
            .map_err(|error| ReconcileError::Journal {
                app: owner.clone(),
                error,
            })?;
    }
    fence(&pass, &owner)?;
    let applied = stage::apply_staged(&mut resolver, &to_apply, options.crd_timeout).await?;
    // wardn's own apply produced these live states from exactly these rendered objects.
    for (id, live) in &applied {
        if let Some(rendered) = digests.get(id) {
            verified.record(*rendered, digest::live(live));
        }
    }
    let applied: HashMap<ObjectRef, Value> = applied.into_iter().collect();
    let prune_ids: Vec<ObjectRef> = plan.prunes.iter().map(|p| p.object.clone()).collect();
    if !prune_ids.is_empty() {
        fence(&pass, &owner)?;
    }
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

/// Stops the pass of App `owner` when its journal says this process may no longer write.
fn fence(pass: &Pass<'_>, owner: &str) -> Result<(), ReconcileError> {
    match pass.journal.map(|journal| journal.fence()) {
        Some(Err(reason)) => Err(ReconcileError::Fenced {
            app: owner.to_string(),
            reason,
        }),
        _ => Ok(()),
    }
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
