//! Prune: delete objects of the previous inventory that are no longer rendered, in reverse
//! apply order, and only objects that carry wardn's server-side apply entry.

use kube::api::DeleteParams;

use super::ApplyError;
use super::order::sort_for_prune;
use crate::object::ObjectRef;
use crate::object::kinds::Resolver;
use crate::object::owner::prunable;

/// What prune did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PruneReport {
    /// Objects deleted.
    pub deleted: Vec<ObjectRef>,
    /// Objects left alone, with the reason (already gone, no longer managed by wardn).
    pub skipped: Vec<(ObjectRef, String)>,
}

/// Deletes `candidates` (which must come from the inventory of the App `owner`) in reverse
/// apply order, skipping any object [`prunable`] refuses.
pub async fn prune(
    resolver: &mut Resolver,
    candidates: &[ObjectRef],
    owner: &str,
) -> Result<PruneReport, ApplyError> {
    let mut ordered = candidates.to_vec();
    sort_for_prune(&mut ordered);
    let mut report = PruneReport::default();
    for id in ordered {
        let kube_err = ApplyError::about(&id);
        let Some(resolved) = resolver
            .resolve(&id.api_version, &id.kind)
            .await
            .map_err(&kube_err)?
        else {
            report.skipped.push((id, "kind no longer served".into()));
            continue;
        };
        let api = resolver.api(&resolved, id.namespace.as_deref());
        let Some(live) = api.get_opt(&id.name).await.map_err(&kube_err)? else {
            report.skipped.push((id, "already gone".into()));
            continue;
        };
        let live = serde_json::to_value(live).map_err(|e| kube_err(kube::Error::SerdeError(e)))?;
        if !prunable(&live, owner) {
            report.skipped.push((
                id,
                format!("not applied by wardn for {owner} (field manager or owner annotation)"),
            ));
            continue;
        }
        match api.delete(&id.name, &DeleteParams::background()).await {
            Ok(_) => report.deleted.push(id),
            Err(kube::Error::Api(s)) if s.code == 404 => {
                report.skipped.push((id, "already gone".into()))
            }
            Err(e) => return Err(kube_err(e)),
        }
    }
    Ok(report)
}
