//! PATCH: JSON patch, JSON merge patch, strategic merge patch (built-in kinds only, 415 for
//! custom resources like the real server), and server-side apply, all through k8s-merge.

use serde_json::Value;

use super::Req;
use super::body::{check_type, parse_json};
use super::read::{present, scale_of};
use super::write::{commit_update, merge_incoming, with_replicas};
use crate::resources::ResourceInfo;
use crate::status::ApiError;

const JSON_PATCH: &str = "application/json-patch+json";
const MERGE_PATCH: &str = "application/merge-patch+json";
const STRATEGIC: &str = "application/strategic-merge-patch+json";
const APPLY: &str = "application/apply-patch+yaml";

fn accepted(info: &ResourceInfo) -> Vec<&'static str> {
    if info.is_builtin() {
        vec![JSON_PATCH, MERGE_PATCH, STRATEGIC, APPLY]
    } else {
        vec![JSON_PATCH, MERGE_PATCH, APPLY]
    }
}

/// PATCH of an object, its status or its scale.
pub fn patch(req: &Req<'_>) -> Result<(u16, Value), ApiError> {
    let info = req.target.info.clone();
    let ct = req.content_type.as_str();
    if !accepted(&info).contains(&ct) {
        return Err(ApiError::unsupported_media_type(ct, &accepted(&info)));
    }
    if ct == APPLY {
        return super::apply::apply(req);
    }
    let patch = parse_json(&req.body)
        .map_err(|e| ApiError::bad_request(format!("the patch body is not valid JSON: {e}")))?;
    let name = req.name().to_string();
    let sub = req.target.subresource.as_deref();
    let manager = req.field_manager();
    let mut store = req.state.store();
    let old = store
        .get(&info.store_key(), req.ns(), &name)
        .ok_or_else(|| ApiError::not_found(&info.group, &info.plural, &name))?;
    let base = if sub == Some("scale") {
        scale_of(&info, &old)
    } else {
        present(&info, &old)
    };
    let patched = match ct {
        JSON_PATCH => k8s_merge::json_patch(&base, &patch).map_err(|e| {
            ApiError::invalid(&info.group, &info.kind, &name, "patch", &e.to_string())
        })?,
        MERGE_PATCH => k8s_merge::json_merge_patch(&base, &patch),
        _ => {
            let ty = if sub == Some("scale") {
                k8s_merge::Schema::builtin().kind_type("autoscaling/v1", "Scale")
            } else {
                crate::lifecycle::schema_type(&info)
            };
            // The API server's list order (patch items interleaved with the live ones), as
            // `kubectl patch --local` shows; the renderer uses kustomize's order instead.
            k8s_merge::strategic_merge_patch_with_order(
                &base,
                &patch,
                ty,
                k8s_merge::ListOrder::Server,
            )
            .map_err(|e| ApiError::bad_request(e.to_string()))?
        }
    };
    if !patched.is_object() {
        return Err(ApiError::bad_request(
            "the patched object is not a JSON object",
        ));
    }
    if sub == Some("scale") {
        let replicas = patched
            .pointer("/spec/replicas")
            .and_then(Value::as_i64)
            .ok_or_else(|| {
                ApiError::invalid(
                    "autoscaling",
                    "Scale",
                    &name,
                    "spec.replicas",
                    "Required value",
                )
            })?;
        let new = with_replicas(&info, &old, &name, replicas)?;
        let out = commit_update(req, &mut store, &old, new, Some(&manager))?;
        return Ok((200, scale_of(&info, &out)));
    }
    let mut patched = patched;
    check_type(req, &mut patched)?;
    let rv = patched
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str);
    if rv.is_some_and(|rv| {
        Some(rv)
            != old
                .pointer("/metadata/resourceVersion")
                .and_then(Value::as_str)
    }) {
        return Err(ApiError::conflict(&info.group, &info.plural, &name));
    }
    let new = merge_incoming(&info, &old, patched, sub);
    let out = commit_update(req, &mut store, &old, new, Some(&manager))?;
    Ok((200, out))
}
