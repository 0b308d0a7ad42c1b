//! Staged server-side apply: objects go out stage by stage (see [`super::order`]), CRDs first;
//! before the next stage, every applied CRD must be Established so its custom resources can be
//! served.

use std::time::Duration;

use futures_util::{StreamExt, TryStreamExt, stream};
use kube::api::{Patch, PatchParams};
use serde_json::Value;

use super::ApplyError;
use super::order::{Stage, sort_for_apply, stage};
use crate::object::ObjectRef;
use crate::object::kinds::Resolver;
use crate::object::owner::FIELD_MANAGER;

/// How many applies of one stage are in flight at once.
const CONCURRENCY: usize = 8;

/// Applies `objects` (identity, rendered object) in stage order with field manager `wardn`,
/// waiting up to `crd_timeout` for CRDs to be Established; returns each applied object as the
/// server answered the apply (its live state right after it).
pub async fn apply_staged(
    resolver: &mut Resolver,
    objects: &[(ObjectRef, Value)],
    crd_timeout: Duration,
) -> Result<Vec<(ObjectRef, Value)>, ApplyError> {
    let mut ordered: Vec<&(ObjectRef, Value)> = objects.iter().collect();
    sort_for_apply(&mut ordered, |(id, _)| id);
    let mut applied = Vec::with_capacity(ordered.len());
    let mut start = 0;
    while start < ordered.len() {
        let current = stage(&ordered[start].0);
        let end = ordered[start..]
            .iter()
            .position(|(id, _)| stage(id) != current)
            .map_or(ordered.len(), |n| start + n);
        let batch = &ordered[start..end];
        let mut jobs = Vec::with_capacity(batch.len());
        for (id, object) in batch {
            let resolved = resolver
                .resolve(&id.api_version, &id.kind)
                .await
                .map_err(ApplyError::about(id))?
                .ok_or_else(|| ApplyError::UnknownKind {
                    object: id.to_string(),
                })?;
            jobs.push((resolver.api(&resolved, id.namespace.as_deref()), id, object));
        }
        let params = PatchParams::apply(FIELD_MANAGER).force();
        // Futures built up front (see the pipeline's dry-runs): the apply stays `Send`.
        let applies: Vec<_> = jobs
            .into_iter()
            .map(|(api, id, object)| {
                let params = &params;
                async move {
                    let kube_err = ApplyError::about(id);
                    let live = api
                        .patch(&id.name, params, &Patch::Apply(object))
                        .await
                        .map_err(&kube_err)?;
                    let live = serde_json::to_value(live)
                        .map_err(|e| kube_err(kube::Error::SerdeError(e)))?;
                    Ok::<_, ApplyError>((id.clone(), live))
                }
            })
            .collect();
        let answers = stream::iter(applies)
            .buffer_unordered(CONCURRENCY)
            .try_collect::<Vec<_>>()
            .await?;
        applied.extend(answers);
        if current == Stage::Crds {
            for (id, _) in batch {
                wait_established(resolver, id, crd_timeout).await?;
            }
        }
        start = end;
    }
    Ok(applied)
}

/// Waits until the CRD `id` has the condition `Established=True`.
async fn wait_established(
    resolver: &mut Resolver,
    id: &ObjectRef,
    timeout: Duration,
) -> Result<(), ApplyError> {
    let kube_err = ApplyError::about(id);
    let resolved = resolver
        .resolve(&id.api_version, &id.kind)
        .await
        .map_err(&kube_err)?
        .ok_or_else(|| ApplyError::UnknownKind {
            object: id.to_string(),
        })?;
    let api = resolver.api(&resolved, None);
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if let Some(crd) = api.get_opt(&id.name).await.map_err(&kube_err)? {
            let established = crd
                .data
                .pointer("/status/conditions")
                .and_then(Value::as_array)
                .is_some_and(|cs| {
                    cs.iter().any(|c| {
                        c.get("type").and_then(Value::as_str) == Some("Established")
                            && c.get("status").and_then(Value::as_str) == Some("True")
                    })
                });
            if established {
                return Ok(());
            }
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(ApplyError::CrdNotEstablished {
                name: id.name.clone(),
                timeout,
            });
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
