//! delete and deletecollection: finalizers and deletionTimestamp, namespace termination,
//! garbage collection of owned objects, preconditions and dry runs.

use std::sync::Arc;

use serde_json::{Value, json};

use super::Req;
use super::body::parse_json;
use super::read::{matches, present, selectors};
use crate::hooks;
use crate::resources::ResourceInfo;
use crate::state::State;
use crate::status::ApiError;
use crate::store::{EventType, Store, ns_name};
use crate::util::now_rfc3339;

/// DeleteOptions from the body and query.
struct Options {
    dry_run: bool,
    orphan: bool,
    precondition_uid: Option<String>,
    precondition_rv: Option<String>,
}

fn options(req: &Req<'_>) -> Result<Options, ApiError> {
    let body = if req.body.iter().all(u8::is_ascii_whitespace) {
        Value::Null
    } else {
        parse_json(&req.body).map_err(|e| {
            ApiError::bad_request(format!("the DeleteOptions body is not valid JSON: {e}"))
        })?
    };
    let policy = req
        .query
        .get("propagationPolicy")
        .map(String::from)
        .or_else(|| {
            body.get("propagationPolicy")
                .and_then(Value::as_str)
                .map(String::from)
        });
    if let Some(p) = &policy
        && !matches!(p.as_str(), "Orphan" | "Background" | "Foreground")
    {
        return Err(ApiError::bad_request(format!(
            "propagationPolicy: Unsupported value: {p:?}: supported values: \"Foreground\", \"Background\", \"Orphan\""
        )));
    }
    let body_dry = body
        .get("dryRun")
        .and_then(Value::as_array)
        .is_some_and(|a| a.iter().any(|v| v == "All"));
    let orphan = policy.as_deref() == Some("Orphan")
        || body.get("orphanDependents").and_then(Value::as_bool) == Some(true);
    let pre = |k: &str| {
        body.pointer(&format!("/preconditions/{k}"))
            .and_then(Value::as_str)
            .map(String::from)
    };
    Ok(Options {
        dry_run: req.query.dry_run() || body_dry,
        orphan,
        precondition_uid: pre("uid"),
        precondition_rv: pre("resourceVersion"),
    })
}

fn has_finalizers(obj: &Value) -> bool {
    obj.pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty())
}

fn mark_deleting(obj: &Value) -> Value {
    let mut o = obj.clone();
    if o.pointer("/metadata/deletionTimestamp").is_none() {
        o["metadata"]["deletionTimestamp"] = json!(now_rfc3339());
        o["metadata"]["deletionGracePeriodSeconds"] = json!(0);
    }
    o
}

/// Deletes an object now (no finalizer check): removes it, garbage-collects what it owns
/// (unless `orphan`), and finishes a terminating namespace that became empty.
pub fn remove_now(
    state: &State,
    store: &mut Store,
    info: &ResourceInfo,
    ns: &str,
    name: &str,
    orphan: bool,
) -> Option<Arc<Value>> {
    let removed = store.remove(&info.store_key(), ns, name)?;
    let uid = removed
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !orphan && !uid.is_empty() {
        collect_owned(state, store, uid);
    }
    hooks::after_change(state, store, info);
    if !ns.is_empty() {
        reap_namespace(store, ns);
    }
    Some(removed)
}

/// Deletes (or marks, when they have finalizers) every object owned by `uid`.
fn collect_owned(state: &State, store: &mut Store, uid: &str) {
    let owned: Vec<(String, Arc<Value>)> = store
        .all()
        .into_iter()
        .filter(|(_, o)| {
            o.pointer("/metadata/ownerReferences")
                .and_then(Value::as_array)
                .is_some_and(|refs| {
                    refs.iter()
                        .any(|r| r.get("uid").and_then(Value::as_str) == Some(uid))
                })
        })
        .collect();
    let registry = state.registry();
    for (key, obj) in owned {
        let Some(info) = registry
            .all()
            .iter()
            .find(|r| r.store_key() == key)
            .cloned()
        else {
            continue;
        };
        let (ns, name) = ns_name(&obj);
        if has_finalizers(&obj) {
            store.put(&key, mark_deleting(&obj), EventType::Modified);
        } else {
            remove_now(state, store, &info, &ns, &name, false);
        }
    }
}

/// Removes a terminating namespace once nothing is left in it.
fn reap_namespace(store: &mut Store, ns: &str) {
    let terminating = store
        .get("/namespaces", "", ns)
        .is_some_and(|n| n.pointer("/metadata/deletionTimestamp").is_some());
    if terminating && store.in_namespace(ns).is_empty() {
        store.remove("/namespaces", "", ns);
    }
}

/// Starts terminating a namespace: marks it, deletes its contents, removes it when empty.
fn delete_namespace(state: &State, store: &mut Store, ns_obj: &Value, name: &str) -> Value {
    let mut marked = mark_deleting(ns_obj);
    marked["status"] = json!({"phase": "Terminating"});
    let marked = store.put("/namespaces", marked, EventType::Modified);
    let registry = state.registry();
    for (key, obj) in store.in_namespace(name) {
        let Some(info) = registry
            .all()
            .iter()
            .find(|r| r.store_key() == key)
            .cloned()
        else {
            store.remove(&key, name, &ns_name(&obj).1);
            continue;
        };
        let (_, obj_name) = ns_name(&obj);
        if has_finalizers(&obj) {
            store.put(&key, mark_deleting(&obj), EventType::Modified);
        } else {
            remove_now(state, store, &info, name, &obj_name, false);
        }
    }
    reap_namespace(store, name);
    (*marked).clone()
}

/// What DELETE answers for an object removed at once: the object itself for the kinds whose
/// registry sets `ReturnDeletedObject` (Pods, Services), else a Success Status naming it
/// (`details`: name, group, the plural as `kind`, uid), as the generic registry answers.
fn deleted_answer(info: &ResourceInfo, obj: &Value) -> Value {
    if info.group.is_empty() && matches!(info.kind.as_str(), "Pod" | "Service") {
        return present(info, obj);
    }
    let meta = |f: &str| obj.pointer(&format!("/metadata/{f}")).cloned();
    let mut details = json!({"name": meta("name"), "kind": info.plural, "uid": meta("uid")});
    if !info.group.is_empty() {
        details["group"] = json!(info.group);
    }
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": details,
    })
}

/// DELETE of one object.
pub fn delete(req: &Req<'_>) -> Result<(u16, Value), ApiError> {
    let info = req.target.info.clone();
    if req.target.subresource.is_some() {
        return Err(ApiError::method_not_allowed());
    }
    let opts = options(req)?;
    let name = req.name().to_string();
    let mut store = req.state.store();
    let obj = store
        .get(&info.store_key(), req.ns(), &name)
        .ok_or_else(|| ApiError::not_found(&info.group, &info.plural, &name))?;
    let meta = |f: &str| {
        obj.pointer(&format!("/metadata/{f}"))
            .and_then(Value::as_str)
            .map(String::from)
    };
    if let Some(uid) = &opts.precondition_uid
        && Some(uid) != meta("uid").as_ref()
    {
        return Err(ApiError {
            message: format!(
                "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                meta("uid").unwrap_or_default()
            ),
            ..ApiError::conflict(&info.group, &info.plural, &name)
        });
    }
    if let Some(rv) = &opts.precondition_rv
        && Some(rv) != meta("resourceVersion").as_ref()
    {
        return Err(ApiError::conflict(&info.group, &info.plural, &name));
    }
    let is_namespace = info.group.is_empty() && info.kind == "Namespace";
    if opts.dry_run {
        return Ok(if has_finalizers(&obj) || is_namespace {
            (200, present(&info, &mark_deleting(&obj)))
        } else {
            (200, deleted_answer(&info, &obj))
        });
    }
    if is_namespace {
        return Ok((
            200,
            present(&info, &delete_namespace(req.state, &mut store, &obj, &name)),
        ));
    }
    if has_finalizers(&obj) {
        if obj.pointer("/metadata/deletionTimestamp").is_some() {
            return Ok((200, present(&info, &obj)));
        }
        let stored = store.put(&info.store_key(), mark_deleting(&obj), EventType::Modified);
        return Ok((200, present(&info, &stored)));
    }
    let removed =
        remove_now(req.state, &mut store, &info, req.ns(), &name, opts.orphan).unwrap_or(obj);
    Ok((200, deleted_answer(&info, &removed)))
}

/// DELETE of a collection (with selectors): deletes each match, returns them as a list.
pub fn delete_collection(req: &Req<'_>) -> Result<(u16, Value), ApiError> {
    let info = req.target.info.clone();
    let opts = options(req)?;
    let (labels, fields) = selectors(req)?;
    let mut store = req.state.store();
    let targets: Vec<Arc<Value>> = store
        .list(&info.store_key(), req.target.namespace.as_deref())
        .filter(|o| matches(&labels, fields.as_ref(), o))
        .cloned()
        .collect();
    let mut items = Vec::new();
    for obj in targets {
        let (ns, name) = ns_name(&obj);
        if opts.dry_run {
            items.push(present(&info, &obj));
        } else if has_finalizers(&obj) {
            let stored = store.put(&info.store_key(), mark_deleting(&obj), EventType::Modified);
            items.push(present(&info, &stored));
        } else if let Some(removed) =
            remove_now(req.state, &mut store, &info, &ns, &name, opts.orphan)
        {
            items.push(present(&info, &removed));
        }
    }
    let rv = store.current_rv();
    Ok((
        200,
        json!({
            "kind": format!("{}List", info.kind),
            "apiVersion": info.api_version(),
            "metadata": {"resourceVersion": rv.to_string()},
            "items": items,
        }),
    ))
}
