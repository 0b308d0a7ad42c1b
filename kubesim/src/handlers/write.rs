//! create and update (PUT), and the commit path shared with patch and apply: metadata
//! bookkeeping, status-subresource semantics, generation, finalizers, dry runs.

use std::sync::Arc;

use serde_json::{Value, json};

use super::Req;
use super::body::{check_namespace, check_type, parse_object};
use super::read::{present, scale_of};
use crate::resources::ResourceInfo;
use crate::status::ApiError;
use crate::store::{EventType, Store};
use crate::util::{name_suffix, new_uid, now_rfc3339};
use crate::{hooks, lifecycle};

/// The `metadata` fields the server owns and a client cannot change on update.
const SERVER_META: &[&str] = &[
    "uid",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
    "selfLink",
];

fn meta_str<'a>(obj: &'a Value, field: &str) -> Option<&'a str> {
    obj.get("metadata")?.get(field)?.as_str()
}

/// Built-in kinds whose registry strategies maintain metadata.generation.
const GENERATION_KINDS: &[&str] = &[
    "Deployment",
    "StatefulSet",
    "DaemonSet",
    "ReplicaSet",
    "ReplicationController",
    "Job",
    "CronJob",
    "Ingress",
    "NetworkPolicy",
    "HorizontalPodAutoscaler",
    "PodDisruptionBudget",
    "CustomResourceDefinition",
];

/// Whether the object tracks metadata.generation (custom resources and the kinds above).
fn tracks_generation(info: &ResourceInfo) -> bool {
    !info.is_builtin() || GENERATION_KINDS.contains(&info.kind.as_str())
}

/// Everything but metadata and status: what bumps generation when it changes.
fn spec_part(obj: &Value) -> Value {
    let mut v = obj.clone();
    if let Some(m) = v.as_object_mut() {
        m.remove("metadata");
        m.remove("status");
    }
    v
}

/// The namespace must exist and not be terminating (NamespaceLifecycle admission:
/// `configmaps "x" is forbidden: unable to create new content in namespace ns because it
/// is being terminated`).
fn check_namespace_open(
    store: &Store,
    info: &ResourceInfo,
    ns: &str,
    name: &str,
) -> Result<(), ApiError> {
    if !info.namespaced {
        return Ok(());
    }
    let namespace = store
        .get("/namespaces", "", ns)
        .ok_or_else(|| ApiError::not_found("", "namespaces", ns))?;
    if namespace.pointer("/metadata/deletionTimestamp").is_some() {
        let resource = crate::status::qualified(&info.group, &info.plural);
        let subject = if name.is_empty() {
            resource
        } else {
            format!("{resource} \"{name}\"")
        };
        return Err(ApiError::forbidden(
            format!(
                "{subject} is forbidden: unable to create new content in namespace {ns} because it is being terminated"
            ),
            &info.group,
            &info.plural,
            name,
        ));
    }
    Ok(())
}

/// Requires a name (or generateName) and resets the server-owned metadata of a new object.
pub fn prepare_new(info: &ResourceInfo, obj: &mut Value, now: &str) -> Result<(), ApiError> {
    if meta_str(obj, "name").is_none_or(str::is_empty) && meta_str(obj, "generateName").is_none() {
        return Err(ApiError::invalid(
            &info.group,
            &info.kind,
            "",
            "metadata.name",
            "Required value: name or generateName is required",
        ));
    }
    let meta = &mut obj["metadata"];
    if let Some(m) = meta.as_object_mut() {
        for f in SERVER_META.iter().chain(&["resourceVersion"]) {
            m.remove(*f);
        }
    }
    meta["uid"] = json!(new_uid());
    meta["creationTimestamp"] = json!(now);
    if tracks_generation(info) {
        obj["metadata"]["generation"] = json!(1);
    }
    if info.is_builtin() {
        crate::defaults::prepare_for_create(&info.api_version(), &info.kind, obj);
    } else if info.status
        && let Some(m) = obj.as_object_mut()
    {
        m.remove("status");
    }
    Ok(())
}

/// Stores a prepared new object: namespace open, name generated or free, kind hooks,
/// defaults, managedFields (`manager` None when apply already recorded them), dry run.
pub fn insert_new(
    req: &Req<'_>,
    store: &mut Store,
    mut obj: Value,
    manager: Option<&str>,
    now: &str,
) -> Result<(u16, Value), ApiError> {
    let info = req.target.info.clone();
    check_namespace_open(
        store,
        &info,
        req.ns(),
        meta_str(&obj, "name").unwrap_or_default(),
    )?;
    let key = info.store_key();
    if meta_str(&obj, "name").is_none_or(str::is_empty)
        && let Some(prefix) = meta_str(&obj, "generateName").map(String::from)
    {
        let name = loop {
            let candidate = format!("{prefix}{}", name_suffix());
            if store.get(&key, req.ns(), &candidate).is_none() {
                break candidate;
            }
        };
        obj["metadata"]["name"] = json!(name);
    }
    let name = meta_str(&obj, "name").unwrap_or_default().to_string();
    if store.get(&key, req.ns(), &name).is_some() {
        return Err(ApiError::already_exists(&info.group, &info.plural, &name));
    }
    hooks::on_create(req.state, &info, &mut obj);
    lifecycle::admit_new(&info, &mut obj, &req.state.ip_seq, &req.state.port_seq);
    let obj = lifecycle::finish(&info, None, obj, manager, None, now);
    let obj = crate::versions::storage_form(&info, obj);
    crate::validation::check(&info, None, &obj)?;
    if req.query.dry_run() {
        return Ok((201, present(&info, &obj)));
    }
    let stored = store.put(&key, obj, EventType::Added);
    hooks::after_create(req.state, store, &info, &stored);
    hooks::after_change(req.state, store, &info);
    Ok((201, present(&info, &stored)))
}

/// POST: creates an object (or answers an access review).
pub fn create(req: &Req<'_>) -> Result<(u16, Value), ApiError> {
    let info = req.target.info.clone();
    let mut obj = parse_object(req)?;
    check_type(req, &mut obj)?;
    if info.create_only {
        return super::review::create(req, obj);
    }
    check_namespace(req, &mut obj)?;
    let now = now_rfc3339();
    prepare_new(&info, &mut obj, &now)?;
    let manager = req.field_manager();
    let mut store = req.state.store();
    insert_new(req, &mut store, obj, Some(&manager), &now)
}

/// Applies the rules of the main resource or a subresource to an incoming full object:
/// status-only writes, server-owned metadata kept, generation bumped on spec change.
pub fn merge_incoming(
    info: &ResourceInfo,
    old: &Value,
    mut new: Value,
    sub: Option<&str>,
) -> Value {
    if sub == Some("status") {
        let mut out = old.clone();
        match new.get_mut("status").map(Value::take) {
            Some(status) => out["status"] = status,
            None => {
                if let Some(m) = out.as_object_mut() {
                    m.remove("status");
                }
            }
        }
        if let Some(mf) = new.pointer("/metadata/managedFields") {
            out["metadata"]["managedFields"] = mf.clone();
        }
        return out;
    }
    if info.status {
        match old.get("status") {
            Some(status) => new["status"] = status.clone(),
            None => {
                if let Some(m) = new.as_object_mut() {
                    m.remove("status");
                }
            }
        }
    }
    for f in SERVER_META {
        match old["metadata"].get(*f) {
            Some(v) => new["metadata"][*f] = v.clone(),
            None => {
                if let Some(m) = new["metadata"].as_object_mut() {
                    m.remove(*f);
                }
            }
        }
    }
    new["metadata"]["name"] = old["metadata"]["name"].clone();
    if old["metadata"].get("namespace").is_some() {
        new["metadata"]["namespace"] = old["metadata"]["namespace"].clone();
    }
    if spec_part(old) != spec_part(&new) || deployment_annotations_changed(info, old, &new) {
        if let Some(g) = old.pointer("/metadata/generation").and_then(Value::as_i64) {
            new["metadata"]["generation"] = json!(g + 1);
        } else if tracks_generation(info) {
            new["metadata"]["generation"] = json!(1);
        }
    }
    new
}

/// The Deployment strategy also bumps generation when annotations change (they are copied
/// to the ReplicaSets); an empty and an absent map are the same.
fn deployment_annotations_changed(info: &ResourceInfo, old: &Value, new: &Value) -> bool {
    if !(info.is_builtin() && info.group == "apps" && info.kind == "Deployment") {
        return false;
    }
    let annotations = |v: &Value| {
        v.pointer("/metadata/annotations")
            .filter(|a| a.as_object().is_some_and(|m| !m.is_empty()))
            .cloned()
    };
    annotations(old) != annotations(new)
}

fn same_ignoring_bookkeeping(a: &Value, b: &Value) -> bool {
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(m) = v["metadata"].as_object_mut() {
            m.remove("resourceVersion");
            if let Some(Value::Array(entries)) = m.get_mut("managedFields") {
                for e in entries {
                    if let Some(e) = e.as_object_mut() {
                        e.remove("time");
                    }
                }
            }
        }
        v
    };
    strip(a) == strip(b)
}

/// Stores an updated object (after kind hooks, defaults and managedFields; `manager` None
/// when apply already recorded them), deleting it instead when it is being deleted and its
/// last finalizer is gone; a no-op write changes nothing. Returns the object as served.
pub fn commit_update(
    req: &Req<'_>,
    store: &mut Store,
    old: &Arc<Value>,
    mut new: Value,
    manager: Option<&str>,
) -> Result<Value, ApiError> {
    let info = req.target.info.clone();
    let now = now_rfc3339();
    let sub = req.target.subresource.as_deref();
    new["apiVersion"] = json!(info.api_version());
    new["kind"] = json!(info.kind);
    if sub.is_none() {
        hooks::on_update(&info, old, &mut new);
    }
    let new = lifecycle::finish(&info, Some(old), new, manager, sub, &now);
    let new = crate::versions::storage_form(&info, new);
    if matches!(sub, None | Some("scale")) {
        crate::validation::check(&info, Some(old), &new)?;
    }
    if same_ignoring_bookkeeping(old, &new) {
        return Ok(present(&info, old));
    }
    if req.query.dry_run() {
        return Ok(present(&info, &new));
    }
    let key = info.store_key();
    let finalizers_gone = new
        .pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty);
    if new.pointer("/metadata/deletionTimestamp").is_some() && finalizers_gone {
        let last = store.put(&key, new, EventType::Modified);
        let removed =
            super::delete::remove_now(req.state, store, &info, req.ns(), req.name(), false);
        return Ok(present(&info, &removed.unwrap_or(last)));
    }
    let stored = store.put(&key, new, EventType::Modified);
    hooks::after_change(req.state, store, &info);
    Ok(present(&info, &stored))
}

/// 409 Conflict when the incoming object names a resourceVersion other than the stored one.
pub fn check_rv(info: &ResourceInfo, old: &Value, new: &Value, name: &str) -> Result<(), ApiError> {
    match meta_str(new, "resourceVersion") {
        Some(rv) if !rv.is_empty() && Some(rv) != meta_str(old, "resourceVersion") => {
            Err(ApiError::conflict(&info.group, &info.plural, name))
        }
        _ => Ok(()),
    }
}

/// PUT of an object, its status, or its scale.
pub fn update(req: &Req<'_>) -> Result<(u16, Value), ApiError> {
    let info = req.target.info.clone();
    let mut obj = parse_object(req)?;
    let sub = req.target.subresource.as_deref();
    let name = req.name().to_string();
    if sub == Some("scale") {
        return update_scale(req, obj);
    }
    check_type(req, &mut obj)?;
    check_namespace(req, &mut obj)?;
    match meta_str(&obj, "name") {
        Some(n) if n != name => {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({n}) does not match the name on the URL ({name})"
            )));
        }
        Some(_) => {}
        None => obj["metadata"]["name"] = json!(name),
    }
    let manager = req.field_manager();
    let mut store = req.state.store();
    let old = store
        .get(&info.store_key(), req.ns(), &name)
        .ok_or_else(|| ApiError::not_found(&info.group, &info.plural, &name))?;
    check_rv(&info, &old, &obj, &name)?;
    let new = merge_incoming(&info, &old, obj, sub);
    let out = commit_update(req, &mut store, &old, new, Some(&manager))?;
    Ok((200, out))
}

/// PUT of the scale subresource: sets the replicas at the resource's spec path.
fn update_scale(req: &Req<'_>, scale: Value) -> Result<(u16, Value), ApiError> {
    let info = req.target.info.clone();
    let replicas = scale
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .ok_or_else(|| {
            ApiError::invalid(
                "autoscaling",
                "Scale",
                req.name(),
                "spec.replicas",
                "Required value",
            )
        })?;
    let mut store = req.state.store();
    let old = store
        .get(&info.store_key(), req.ns(), req.name())
        .ok_or_else(|| ApiError::not_found(&info.group, &info.plural, req.name()))?;
    check_rv(&info, &old, &scale, req.name())?;
    let new = with_replicas(&info, &old, req.name(), replicas)?;
    let manager = req.field_manager();
    let out = commit_update(req, &mut store, &old, new, Some(&manager))?;
    Ok((200, scale_of(&info, &out)))
}

/// The object with its spec replicas set (generation bumped), for scale writes; negative
/// replicas are refused as the Scale's own validation refuses them.
pub fn with_replicas(
    info: &ResourceInfo,
    old: &Value,
    name: &str,
    replicas: i64,
) -> Result<Value, ApiError> {
    if replicas < 0 {
        return Err(ApiError::invalid(
            "autoscaling",
            "Scale",
            name,
            "spec.replicas",
            &format!("Invalid value: {replicas}: must be greater than or equal to 0"),
        ));
    }
    let path = info
        .scale
        .as_ref()
        .map(|s| s.spec_replicas.clone())
        .unwrap_or_else(|| ".spec.replicas".into());
    let mut new = old.clone();
    let mut cur = &mut new;
    let parts: Vec<&str> = path.trim_start_matches('.').split('.').collect();
    for (i, p) in parts.iter().enumerate() {
        if !cur.is_object() {
            *cur = json!({});
        }
        if i + 1 == parts.len() {
            cur[*p] = json!(replicas);
        } else {
            if !cur.get(*p).is_some_and(Value::is_object) {
                cur[*p] = json!({});
            }
            cur = &mut cur[*p];
        }
    }
    Ok(merge_incoming(info, old, new, None))
}
