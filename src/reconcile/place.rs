//! Placement: where each rendered object lands (the destination namespace for namespaced
//! kinds) and whether the cluster's namespace allowlist lets it, checked before any write. The
//! scope of a kind is what the destination cluster's discovery says.

use std::collections::BTreeMap;

use serde_json::Value;

use super::error::ReconcileError;
use super::pass::Target;
use crate::app::AppSpec;
use crate::clusters::allowlist::{self, Allowlist, PlaceError};
use crate::object::ObjectRef;
use crate::object::kinds::Resolver;
use crate::object::scope::{self, RefusedCrds, RenderedCrd};

/// Places the objects and checks the allowlist, before any write. The scope of every kind is
/// what the destination cluster's discovery says (read-only requests, cached per cluster); a
/// rendered CRD only decides the scope of a kind the cluster does not serve yet, and is refused
/// in a built-in group or against the scope the cluster serves. A kind whose scope cannot be
/// established is refused. What is refused whatever discovery says (a namespace outside the
/// allowlist, a built-in cluster-scoped kind under a restricted one) is refused before any
/// request.
pub(super) async fn place_and_check(
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
pub(super) fn split_out_of_scope(
    allowlist: &Allowlist,
    prune: bool,
    gone: Vec<ObjectRef>,
) -> (Vec<ObjectRef>, Vec<ObjectRef>) {
    if !prune {
        return (gone, Vec::new());
    }
    gone.into_iter().partition(|id| allowlist.allows_prune(id))
}
