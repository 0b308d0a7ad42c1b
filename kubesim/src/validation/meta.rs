//! ObjectMeta rules (`apimachinery/pkg/api/validation/objectmeta.go`): names per kind,
//! label and annotation keys and values, owner references, finalizers, and no new
//! finalizers on an object being deleted.

use serde_json::Value;

use super::field::{Errors, forbidden, go_string_list, invalid_str, required, too_long};
use crate::names;
use crate::resources::ResourceInfo;

/// Annotations may hold at most 256 KiB of keys and values together.
const ANNOTATIONS_LIMIT: usize = 256 * 1024;

/// The name rule of a kind (`NameIsDNSSubdomain` unless the kind says otherwise).
fn name_rule(info: &ResourceInfo) -> fn(&str) -> Vec<String> {
    match (info.group.as_str(), info.kind.as_str()) {
        ("", "Namespace") => names::dns1123_label,
        ("", "Service") => names::dns1035_label,
        ("rbac.authorization.k8s.io", _) => names::path_segment_name,
        _ => names::dns1123_subdomain,
    }
}

/// Label keys and values at `path` (`ValidateLabels`: every error names the map).
pub fn labels(map: Option<&Value>, path: &str, errs: &mut Errors) {
    let Some(map) = map.and_then(Value::as_object) else {
        return;
    };
    let mut keys: Vec<&String> = map.keys().collect();
    keys.sort();
    for k in keys {
        for m in names::qualified_name(k) {
            errs.push(invalid_str(path, k, &m));
        }
        let v = map[k].as_str().unwrap_or_default();
        for m in names::label_value(v) {
            errs.push(invalid_str(path, v, &m));
        }
    }
}

/// Annotation keys (case-insensitive qualified names) and their total size.
pub fn annotations(map: Option<&Value>, path: &str, errs: &mut Errors) {
    let Some(map) = map.and_then(Value::as_object) else {
        return;
    };
    let mut keys: Vec<&String> = map.keys().collect();
    keys.sort();
    let mut size = 0;
    for k in keys {
        for m in names::qualified_name(&k.to_lowercase()) {
            errs.push(invalid_str(path, k, &m));
        }
        size += k.len() + map[k].as_str().map_or(0, str::len);
    }
    if size > ANNOTATIONS_LIMIT {
        errs.push(too_long(path, ANNOTATIONS_LIMIT));
    }
}

fn owner_references(refs: Option<&Value>, errs: &mut Errors) {
    let Some(refs) = refs.and_then(Value::as_array) else {
        return;
    };
    let path = "metadata.ownerReferences";
    let mut controller: Option<String> = None;
    for r in refs {
        let field = |f: &str| r.get(f).and_then(Value::as_str).unwrap_or_default();
        let version = field("apiVersion").rsplit('/').next().unwrap_or_default();
        if version.is_empty() {
            errs.push(invalid_str(
                &format!("{path}.apiVersion"),
                field("apiVersion"),
                "version must not be empty",
            ));
        }
        for f in ["kind", "name", "uid"] {
            if field(f).is_empty() {
                errs.push(invalid_str(&format!("{path}.{f}"), "", "must not be empty"));
            }
        }
        if r.get("controller").and_then(Value::as_bool) == Some(true) {
            let this = format!("{}/{}", field("kind"), field("name"));
            match &controller {
                Some(first) => errs.push(invalid_str(
                    path,
                    "",
                    &format!(
                        "Only one reference can have Controller set to true. Found \"true\" in references for {first} and {this}"
                    ),
                )),
                None => controller = Some(this),
            }
        }
    }
}

fn finalizers(list: Option<&Value>, errs: &mut Errors) {
    let Some(list) = list.and_then(Value::as_array) else {
        return;
    };
    let path = "metadata.finalizers";
    for f in list.iter().filter_map(Value::as_str) {
        for m in names::qualified_name(f) {
            errs.push(invalid_str(path, f, &m));
        }
    }
    let has = |name: &str| list.iter().any(|f| f == name);
    if has("orphan") && has("foregroundDeletion") {
        errs.push(super::field::invalid(
            path,
            go_string_list(Some(&Value::Array(list.clone()))),
            "finalizer orphan and foregroundDeletion cannot be both set",
        ));
    }
}

/// The metadata of a new object (after name generation).
pub fn create(info: &ResourceInfo, obj: &Value, errs: &mut Errors) {
    let meta = obj.get("metadata");
    let get = |f: &str| meta.and_then(|m| m.get(f)).and_then(Value::as_str);
    let rule = name_rule(info);
    if let Some(generate) = get("generateName").filter(|g| !g.is_empty()) {
        for m in rule(&names::mask_trailing_dash(generate)) {
            errs.push(invalid_str("metadata.generateName", generate, &m));
        }
    }
    match get("name").filter(|n| !n.is_empty()) {
        None => errs.push(required(
            "metadata.name",
            "name or generateName is required",
        )),
        Some(name) => {
            for m in rule(name) {
                errs.push(invalid_str("metadata.name", name, &m));
            }
        }
    }
    common(obj, errs);
}

/// The metadata rules shared by create and update: labels, annotations, owner references,
/// finalizers.
pub fn common(obj: &Value, errs: &mut Errors) {
    let meta = obj.get("metadata");
    let part = |f: &str| meta.and_then(|m| m.get(f));
    labels(part("labels"), "metadata.labels", errs);
    annotations(part("annotations"), "metadata.annotations", errs);
    owner_references(part("ownerReferences"), errs);
    finalizers(part("finalizers"), errs);
}

/// The metadata of an update: the common rules, and no finalizer may be added to an
/// object that is being deleted.
pub fn update(old: &Value, new: &Value, errs: &mut Errors) {
    if old.pointer("/metadata/deletionTimestamp").is_some() {
        let list = |v: &Value| -> Vec<String> {
            v.pointer("/metadata/finalizers")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|f| f.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default()
        };
        let before = list(old);
        let mut extra: Vec<String> = list(new)
            .into_iter()
            .filter(|f| !before.contains(f))
            .collect();
        extra.sort();
        extra.dedup();
        if !extra.is_empty() {
            let shown = go_string_list(Some(&serde_json::json!(extra)));
            errs.push(forbidden(
                "metadata.finalizers",
                &format!(
                    "no new finalizers can be added if the object is being deleted, found new finalizers {shown}"
                ),
            ));
        }
    }
    common(new, errs);
}
