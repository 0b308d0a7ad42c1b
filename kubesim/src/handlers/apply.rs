//! Server-side apply (`application/apply-patch+yaml`): create on apply, field ownership and
//! conflicts through k8s-merge, status-subresource semantics, dry runs.

use serde_json::{Value, json};

use super::Req;
use super::body::{check_namespace, check_type, parse_yaml};
use super::read::present;
use super::write::{check_rv, commit_update, insert_new, merge_incoming, prepare_new};
use crate::lifecycle::schema_type;
use crate::status::ApiError;
use crate::util::now_rfc3339;

fn apply_error(req: &Req<'_>, e: k8s_merge::ssa::ApplyError) -> ApiError {
    let info = &req.target.info;
    match &e {
        k8s_merge::ssa::ApplyError::Conflicts(conflicts) => ApiError::apply_conflict(
            &info.group,
            &info.plural,
            req.name(),
            e.to_string(),
            conflicts
                .iter()
                .map(|c| (c.cause_message(), c.field.clone()))
                .collect(),
        ),
        k8s_merge::ssa::ApplyError::Invalid(m) => ApiError::bad_request(m.clone()),
    }
}

/// PATCH with the apply content type.
pub fn apply(req: &Req<'_>) -> Result<(u16, Value), ApiError> {
    let info = req.target.info.clone();
    let manager = req
        .query
        .get("fieldManager")
        .filter(|m| !m.is_empty())
        .ok_or_else(|| {
            ApiError::bad_request("PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch")
        })?
        .to_string();
    let force = req.query.flag("force");
    let sub = req.target.subresource.as_deref();
    if sub == Some("scale") {
        return Err(ApiError::unsupported_media_type(
            &req.content_type,
            &[
                "application/json-patch+json",
                "application/merge-patch+json",
                "application/strategic-merge-patch+json",
            ],
        ));
    }
    let mut applied = parse_yaml(&req.body)
        .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?;
    if !applied.is_object() {
        return Err(ApiError::bad_request(
            "the apply configuration must be an object",
        ));
    }
    for field in ["apiVersion", "kind"] {
        if applied
            .get(field)
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            return Err(ApiError::bad_request(format!(
                "{field} must be set in the apply configuration"
            )));
        }
    }
    check_type(req, &mut applied)?;
    check_namespace(req, &mut applied)?;
    let name = req.name().to_string();
    match applied.pointer("/metadata/name").and_then(Value::as_str) {
        Some(n) if n != name => {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({n}) does not match the name on the URL ({name})"
            )));
        }
        _ => applied["metadata"]["name"] = json!(name),
    }
    let now = now_rfc3339();
    let ty = schema_type(&info);
    let mut store = req.state.store();
    match store.get(&info.store_key(), req.ns(), &name) {
        None => {
            if sub.is_some() {
                return Err(ApiError::not_found(&info.group, &info.plural, &name));
            }
            let mut obj = k8s_merge::ssa::apply(None, &applied, &manager, force, ty, &now)
                .map_err(|e| apply_error(req, e))?;
            prepare_new(&info, &mut obj, &now)?;
            insert_new(req, &mut store, obj, None, &now)
        }
        Some(old) => {
            check_rv(&info, &old, &applied, &name)?;
            let live = present(&info, &old);
            let merged = k8s_merge::ssa::apply_subresource(
                Some(&live),
                &applied,
                &manager,
                sub,
                force,
                ty,
                &now,
            )
            .map_err(|e| apply_error(req, e))?;
            if !merged.get("metadata").is_some_and(Value::is_object) {
                return Err(ApiError::bad_request("the applied object has no metadata"));
            }
            let new = merge_incoming(&info, &old, merged, sub);
            Ok((200, commit_update(req, &mut store, &old, new, None)?))
        }
    }
}
