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

/// How a deletion treats the objects the deleted one owns (`propagationPolicy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Propagation {
    /// Dependents are deleted after the owner is gone (the default).
    Background,
    /// The owner waits, with the `foregroundDeletion` finalizer, until its dependents are gone.
    Foreground,
    /// Dependents are kept, their ownerReferences to the owner removed (`orphan` finalizer).
    Orphan,
}

/// DeleteOptions from the body and query.
struct Options {
    dry_run: bool,
    propagation: Propagation,
    grace_period: Option<i64>,
    precondition_uid: Option<String>,
    precondition_rv: Option<String>,
}

/// The finalizer a Foreground deletion holds the owner with.
const FOREGROUND: &str = "foregroundDeletion";
/// The finalizer an Orphan deletion holds the owner with.
const ORPHAN: &str = "orphan";

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
    let orphan_dependents = body.get("orphanDependents").and_then(Value::as_bool) == Some(true);
    let propagation = match policy.as_deref() {
        Some("Orphan") => Propagation::Orphan,
        Some("Foreground") => Propagation::Foreground,
        Some(_) => Propagation::Background,
        None if orphan_dependents => Propagation::Orphan,
        None => Propagation::Background,
    };
    let grace_period = match req.query.get("gracePeriodSeconds") {
        Some(g) => Some(g.parse::<i64>().map_err(|_| {
            ApiError::bad_request(format!(
                "gracePeriodSeconds: invalid value {g:?}: must be an integer"
            ))
        })?),
        None => body.get("gracePeriodSeconds").and_then(Value::as_i64),
    };
    let pre = |k: &str| {
        body.pointer(&format!("/preconditions/{k}"))
            .and_then(Value::as_str)
            .map(String::from)
    };
    Ok(Options {
        dry_run: req.query.dry_run() || body_dry,
        propagation,
        grace_period,
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
    if !uid.is_empty() {
        if orphan {
            orphan_dependents(store, uid);
        } else {
            collect_owned(state, store, uid);
        }
    }
    hooks::after_change(state, store, info);
    release_owners(state, store, &removed);
    if !ns.is_empty() {
        reap_namespace(store, ns);
    }
    Some(removed)
}

fn owner_uids(obj: &Value) -> Vec<String> {
    obj.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|r| r.get("uid").and_then(Value::as_str).map(String::from))
        .collect()
}

/// The objects that name `uid` among their owners.
fn dependents(store: &Store, uid: &str) -> Vec<(String, Arc<Value>)> {
    store
        .all()
        .into_iter()
        .filter(|(_, o)| owner_uids(o).iter().any(|u| u == uid))
        .collect()
}

/// Removes the ownerReferences to `uid` from its dependents, as the garbage collector does
/// for an Orphan deletion.
fn orphan_dependents(store: &mut Store, uid: &str) {
    for (key, obj) in dependents(store, uid) {
        let mut kept = (*obj).clone();
        if let Some(refs) = kept
            .pointer_mut("/metadata/ownerReferences")
            .and_then(Value::as_array_mut)
        {
            refs.retain(|r| r.get("uid").and_then(Value::as_str) != Some(uid));
            if refs.is_empty()
                && let Some(meta) = kept["metadata"].as_object_mut()
            {
                meta.remove("ownerReferences");
            }
        }
        store.put(&key, kept, EventType::Modified);
    }
}

/// The stored object whose uid is `uid`, with its store key.
fn by_uid(store: &Store, uid: &str) -> Option<(String, Arc<Value>)> {
    store
        .all()
        .into_iter()
        .find(|(_, o)| o.pointer("/metadata/uid").and_then(Value::as_str) == Some(uid))
}

/// After `removed` is gone: an owner waiting in Foreground deletion whose last dependent it
/// was loses its `foregroundDeletion` finalizer (and goes, when no finalizer is left).
fn release_owners(state: &State, store: &mut Store, removed: &Value) {
    for uid in owner_uids(removed) {
        if let Some((key, owner)) = by_uid(store, &uid) {
            release_foreground(state, store, &key, &owner);
        }
    }
}

/// Drops the `foregroundDeletion` finalizer of a deleting owner without dependents left.
fn release_foreground(state: &State, store: &mut Store, key: &str, owner: &Value) {
    let uid = owner
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !has_finalizer(owner, FOREGROUND) || !dependents(store, uid).is_empty() {
        return;
    }
    drop_finalizer(state, store, key, owner, FOREGROUND, false);
}

fn has_finalizer(obj: &Value, name: &str) -> bool {
    obj.pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .is_some_and(|f| f.iter().any(|v| v == name))
}

/// Removes one finalizer of a deleting object, removing the object when it was the last.
fn drop_finalizer(
    state: &State,
    store: &mut Store,
    key: &str,
    obj: &Value,
    finalizer: &str,
    orphan: bool,
) {
    let mut next = obj.clone();
    if let Some(list) = next
        .pointer_mut("/metadata/finalizers")
        .and_then(Value::as_array_mut)
    {
        list.retain(|f| f != finalizer);
    }
    let registry = state.registry();
    let info = registry
        .all()
        .iter()
        .find(|r| r.store_key() == key)
        .cloned();
    if has_finalizers(&next) {
        store.put(key, next, EventType::Modified);
        return;
    }
    if let Some(m) = next["metadata"].as_object_mut() {
        m.remove("finalizers");
    }
    let stored = store.put(key, next, EventType::Modified);
    match info {
        Some(info) => {
            let (ns, name) = ns_name(&stored);
            remove_now(state, store, &info, &ns, &name, orphan);
        }
        None => {
            let (ns, name) = ns_name(&stored);
            store.remove(key, &ns, &name);
        }
    }
}

/// Deletes an object with Foreground or Orphan propagation: it is marked deleting with the
/// policy's finalizer (the answer, as the API server answers), then the garbage collector's
/// work is done at once: dependents deleted (Foreground) or orphaned (Orphan), and the
/// finalizer dropped when nothing holds the object any more.
fn delete_with_finalizer(
    state: &State,
    store: &mut Store,
    info: &ResourceInfo,
    obj: &Value,
    propagation: Propagation,
) -> Value {
    let finalizer = if propagation == Propagation::Foreground {
        FOREGROUND
    } else {
        ORPHAN
    };
    let key = info.store_key();
    let mut marked = mark_deleting(obj);
    if !has_finalizer(&marked, finalizer) {
        let meta = &mut marked["metadata"];
        if !meta.get("finalizers").is_some_and(Value::is_array) {
            meta["finalizers"] = json!([]);
        }
        if let Some(list) = meta["finalizers"].as_array_mut() {
            list.push(json!(finalizer));
        }
    }
    let stored = store.put(&key, marked, EventType::Modified);
    let answer = present(info, &stored);
    let uid = stored
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    if propagation == Propagation::Foreground {
        collect_owned(state, store, &uid);
        if let Some((key, current)) = by_uid(store, &uid) {
            release_foreground(state, store, &key, &current);
        }
    } else {
        orphan_dependents(store, &uid);
        if let Some((key, current)) = by_uid(store, &uid) {
            drop_finalizer(state, store, &key, &current, ORPHAN, true);
        }
    }
    answer
}

/// The grace period of a Pod's deletion, as the Pod strategy decides it: the request's, else
/// the Pod's `terminationGracePeriodSeconds` (30 by default); 0 for a Pod not bound to a node
/// or already finished, which the kubelet no longer runs.
fn pod_grace(info: &ResourceInfo, obj: &Value, requested: Option<i64>) -> i64 {
    if !(info.group.is_empty() && info.kind == "Pod") {
        return 0;
    }
    let unbound = obj
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty);
    let finished = matches!(
        obj.pointer("/status/phase").and_then(Value::as_str),
        Some("Succeeded" | "Failed")
    );
    if unbound || finished {
        return 0;
    }
    requested
        .or_else(|| {
            obj.pointer("/spec/terminationGracePeriodSeconds")
                .and_then(Value::as_i64)
        })
        .unwrap_or(30)
        .max(0)
}

/// Starts a Pod's graceful deletion: `deletionTimestamp` is now plus the grace period, and
/// the simulated kubelet removes the Pod once its containers have stopped.
fn mark_terminating(obj: &Value, grace: i64) -> Value {
    let mut o = obj.clone();
    let at = chrono::Utc::now() + chrono::Duration::seconds(grace);
    o["metadata"]["deletionTimestamp"] =
        json!(at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true));
    o["metadata"]["deletionGracePeriodSeconds"] = json!(grace);
    o
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
    let grace = if req.state.config.simulate {
        pod_grace(&info, &obj, opts.grace_period)
    } else {
        0
    };
    let held = opts.propagation != Propagation::Background;
    if opts.dry_run {
        return Ok(if grace > 0 {
            (200, present(&info, &mark_terminating(&obj, grace)))
        } else if has_finalizers(&obj) || is_namespace || held {
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
    if obj.pointer("/metadata/deletionTimestamp").is_some() {
        return Ok((200, present(&info, &obj)));
    }
    if held {
        let answer = delete_with_finalizer(req.state, &mut store, &info, &obj, opts.propagation);
        return Ok((200, answer));
    }
    if grace > 0 {
        let stored = store.put(
            &info.store_key(),
            mark_terminating(&obj, grace),
            EventType::Modified,
        );
        return Ok((200, present(&info, &stored)));
    }
    if has_finalizers(&obj) {
        let stored = store.put(&info.store_key(), mark_deleting(&obj), EventType::Modified);
        return Ok((200, present(&info, &stored)));
    }
    let removed = remove_now(req.state, &mut store, &info, req.ns(), &name, false).unwrap_or(obj);
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
        } else if let Some(removed) = remove_now(
            req.state,
            &mut store,
            &info,
            &ns,
            &name,
            opts.propagation == Propagation::Orphan,
        ) {
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
