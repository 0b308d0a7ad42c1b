//! The I/O half of the diff: read the live object and ask the API server what applying the
//! rendered one would produce (`PATCH` apply, `dryRun=All`, field manager `wardn`, force).

use kube::api::{Patch, PatchParams};
use serde_json::Value;

use super::digest::{self, Digest};
use super::{Action, ObjectDiff, compare};
use crate::object::ObjectRef;
use crate::object::kinds::{Resolved, Resolver};
use crate::object::owner::{FIELD_MANAGER, owner_of};

/// The result of one dry-run.
#[derive(Debug, Clone)]
pub struct DryRun {
    /// The diff.
    pub diff: ObjectDiff,
    /// When the object is unchanged: the [`digest::live`] of the live object it agrees with.
    pub agreed: Option<Digest>,
    /// The App the live object's owner annotation names, if it exists and has one.
    pub owner: Option<String>,
}

/// Diffs one rendered object against the cluster. `resolved` is `None` when the cluster does
/// not serve the kind yet (its CRD is part of the same plan): the object is then a create, as
/// is a new object whose namespace does not exist yet (the dry-run answers 404). With
/// `known_absent` (a complete watch of the kind does not contain the object) the live object
/// is not read first.
pub async fn dry_run(
    resolver: &Resolver,
    resolved: Option<&Resolved>,
    id: ObjectRef,
    object: &Value,
    known_absent: bool,
) -> Result<DryRun, kube::Error> {
    let Some(resolved) = resolved else {
        return Ok(DryRun {
            diff: compare(id, None, object),
            agreed: None,
            owner: None,
        });
    };
    let api = resolver.api(resolved, id.namespace.as_deref());
    let live = if known_absent {
        None
    } else {
        api.get_opt(&id.name)
            .await?
            .map(|o| serde_json::to_value(o).map_err(kube::Error::SerdeError))
            .transpose()?
    };
    let params = PatchParams::apply(FIELD_MANAGER).force().dry_run();
    let predicted = match api.patch(&id.name, &params, &Patch::Apply(object)).await {
        Ok(p) => serde_json::to_value(p).map_err(kube::Error::SerdeError)?,
        // A new object in a Namespace the same plan creates: the server cannot dry-run it yet.
        Err(kube::Error::Api(s)) if s.code == 404 && live.is_none() => object.clone(),
        Err(e) => return Err(e),
    };
    let diff = compare(id, live.as_ref(), &predicted);
    let agreed = match (&live, diff.action) {
        (Some(live), Action::Unchanged) => Some(digest::live(live)),
        _ => None,
    };
    let owner = live.as_ref().and_then(owner_of).map(str::to_string);
    Ok(DryRun {
        diff,
        agreed,
        owner,
    })
}
