//! `patches`, `patchesStrategicMerge` and `patchesJson6902`: strategic merge patches (with
//! `$patch: delete|replace`) and JSON 6902 patches, from files or inline, applied to the
//! objects their target selects (or, for an untargeted strategic merge patch, to the object
//! with the patch's own kind and name). The merge logic is the shared `k8s-merge` crate.

use serde_json::Value;

use super::files::read_local;
use super::kustomization::{Patch, Target};
use super::resource::Res;
use super::selector::Selector;
use super::tree::Tree;
use super::{RenderError, parse};

/// The `patches` field.
pub fn patches(
    tree: &dyn Tree,
    dir: &str,
    file: &str,
    entries: &[Patch],
    acc: &mut Vec<Res>,
) -> Result<(), RenderError> {
    for (i, entry) in entries.iter().enumerate() {
        let (name, text) = patch_text(tree, dir, file, entry, "patches", i)?;
        let docs = parse::documents(&name, text.as_bytes())?;
        let is_json6902 = matches!(docs.as_slice(), [Value::Array(_)]);
        if is_json6902 {
            let target = entry.target.as_ref().ok_or_else(|| {
                RenderError::Invalid(format!(
                    "{file}: patches[{i}]: a JSON 6902 patch must specify a target"
                ))
            })?;
            apply_json6902(&docs[0], target, entry, acc, &name)?;
        } else {
            for doc in docs {
                apply_smp(doc, entry.target.as_ref(), acc, &name)?;
            }
        }
    }
    Ok(())
}

/// The deprecated `patchesStrategicMerge` field (file paths or inline patches).
pub fn strategic_merge_files(
    tree: &dyn Tree,
    dir: &str,
    file: &str,
    entries: &[String],
    acc: &mut Vec<Res>,
) -> Result<(), RenderError> {
    for (i, entry) in entries.iter().enumerate() {
        let inline = entry.contains('\n') || entry.trim_start().starts_with('{');
        let (name, bytes) = if inline {
            (
                format!("{file}: patchesStrategicMerge[{i}]"),
                entry.as_bytes().to_vec(),
            )
        } else {
            (entry.clone(), read_local(tree, dir, entry)?)
        };
        for doc in parse::documents(&name, &bytes)? {
            apply_smp(doc, None, acc, &name)?;
        }
    }
    Ok(())
}

/// The deprecated `patchesJson6902` field.
pub fn json6902(
    tree: &dyn Tree,
    dir: &str,
    file: &str,
    entries: &[Patch],
    acc: &mut [Res],
) -> Result<(), RenderError> {
    for (i, entry) in entries.iter().enumerate() {
        let (name, text) = patch_text(tree, dir, file, entry, "patchesJson6902", i)?;
        let target = entry.target.as_ref().ok_or_else(|| {
            RenderError::Invalid(format!(
                "{file}: patchesJson6902[{i}]: a target is required"
            ))
        })?;
        let ops = parse::document(&name, text.as_bytes())?;
        apply_json6902(&ops, target, entry, acc, &name)?;
    }
    Ok(())
}

/// The patch text of an entry and a name for messages.
fn patch_text(
    tree: &dyn Tree,
    dir: &str,
    file: &str,
    entry: &Patch,
    field: &str,
    i: usize,
) -> Result<(String, String), RenderError> {
    match (&entry.path, &entry.patch) {
        (Some(_), Some(_)) => Err(RenderError::Invalid(format!(
            "{file}: {field}[{i}]: patch and path can't be set at the same time"
        ))),
        (Some(path), None) => {
            let bytes = read_local(tree, dir, path)?;
            Ok((path.clone(), parse::text(path, &bytes)?.to_string()))
        }
        (None, Some(text)) => Ok((format!("{file}: {field}[{i}]"), text.clone())),
        (None, None) => Err(RenderError::Invalid(format!(
            "{file}: {field}[{i}]: must specify one of patch and path"
        ))),
    }
}

fn apply_json6902(
    ops: &Value,
    target: &Target,
    entry: &Patch,
    acc: &mut [Res],
    name: &str,
) -> Result<(), RenderError> {
    for key in entry.options.keys() {
        if key != "allowNameChange" && key != "allowKindChange" {
            return Err(RenderError::Invalid(format!(
                "{name}: unknown patch option '{key}'"
            )));
        }
    }
    // The options govern strategic merge patches only: kustomize lets a JSON 6902 patch
    // rename an object or change its kind.
    let selector = Selector::new(target)?;
    for res in acc.iter_mut().filter(|r| selector.matches(r)) {
        res.has_previous_id = true;
        let ops = replace_missing_keys_as_add(&res.obj, ops);
        res.obj = k8s_merge::json_patch(&res.obj, &ops)
            .map_err(|e| RenderError::Invalid(format!("{name}: applying to {}: {e}", res.id())))?;
    }
    Ok(())
}

fn apply_smp(
    patch: Value,
    target: Option<&Target>,
    acc: &mut Vec<Res>,
    name: &str,
) -> Result<(), RenderError> {
    let Value::Object(_) = patch else {
        return Err(RenderError::Invalid(format!(
            "{name}: a strategic merge patch must be a mapping"
        )));
    };
    let selected: Vec<usize> = match target {
        Some(t) => {
            let selector = Selector::new(t)?;
            (0..acc.len())
                .filter(|&i| selector.matches(&acc[i]))
                .collect()
        }
        None => {
            let probe = Res::new(patch.clone(), super::resource::Origin::File(name.into()));
            let found: Vec<usize> = (0..acc.len())
                .filter(|&i| same_object(&acc[i], &probe))
                .collect();
            if found.len() != 1 {
                return Err(RenderError::Invalid(format!(
                    "{name}: no resource matches strategic merge patch \"{}\"; failed to find unique target for patch",
                    probe.id()
                )));
            }
            found
        }
    };
    let directive = patch
        .get("$patch")
        .and_then(Value::as_str)
        .map(str::to_string);
    let mut deleted = Vec::new();
    for &i in &selected {
        let res = &mut acc[i];
        match directive.as_deref() {
            Some("delete") => deleted.push(i),
            Some("replace") => {
                let mut replaced = patch.clone();
                if let Value::Object(m) = &mut replaced {
                    m.remove("$patch");
                }
                res.obj = replaced;
            }
            _ => {
                let mut p = patch.clone();
                retarget(&mut p, res);
                let ty = k8s_merge::Schema::builtin().kind_type(res.api_version(), res.kind());
                let order = k8s_merge::ListOrder::Kustomize;
                res.obj = k8s_merge::strategic_merge_patch_with_order(&res.obj, &p, ty, order)
                    .map_err(|e| {
                        RenderError::Invalid(format!("{name}: applying to {}: {e}", res.id()))
                    })?;
                drop_empty_values(res);
            }
        }
    }
    for i in deleted.into_iter().rev() {
        acc.remove(i);
    }
    Ok(())
}

/// kustomize (kyaml's merge) drops the fields a source wrote empty (`key:`, not an explicit
/// `null`) from an object a strategic merge patch touches; those still null go.
fn drop_empty_values(res: &mut Res) {
    let Some((source, index)) = res.empty_source.take() else {
        return;
    };
    for ptr in source.empty_values(index).iter().rev() {
        let Some((parent, key)) = ptr.rsplit_once('/') else {
            continue;
        };
        let key = key.replace("~1", "/").replace("~0", "~");
        if let Some(Value::Object(map)) = res.obj.pointer_mut(parent)
            && map.get(&key).is_some_and(Value::is_null)
        {
            map.remove(&key);
        }
    }
}

/// kustomize's JSON 6902 `replace` of a missing key in an existing map adds it (RFC 6902 and
/// the API server refuse it, hence the shared patcher does too): such operations become
/// `add`, judged against the document as the operations before them leave it. The first
/// failing operation stops the rewrite; applying the list reports it.
fn replace_missing_keys_as_add(doc: &Value, ops: &Value) -> Value {
    let Value::Array(list) = ops else {
        return ops.clone();
    };
    let mut current = doc.clone();
    let mut out = Vec::with_capacity(list.len());
    for (i, op) in list.iter().enumerate() {
        let mut op = op.clone();
        let path = op.get("path").and_then(Value::as_str).unwrap_or("");
        let parent = path.rsplit_once('/').map(|(p, _)| p).unwrap_or("");
        let is_replace = op.get("op").and_then(Value::as_str) == Some("replace");
        if is_replace
            && !path.is_empty()
            && current.pointer(path).is_none()
            && current.pointer(parent).is_some_and(Value::is_object)
            && let Value::Object(m) = &mut op
        {
            m.insert("op".into(), Value::String("add".into()));
        }
        match k8s_merge::json_patch(&current, &Value::Array(vec![op.clone()])) {
            Ok(next) => current = next,
            Err(_) => {
                out.push(op);
                out.extend(list[i + 1..].iter().cloned());
                return Value::Array(out);
            }
        }
        out.push(op);
    }
    Value::Array(out)
}

/// Whether `res` has the kind, name (original or current) and namespace of `probe`.
fn same_object(res: &Res, probe: &Res) -> bool {
    res.kind() == probe.kind()
        && (probe.api_version().is_empty() || res.group() == probe.group())
        && (res.orig_name == probe.name() || res.name() == probe.name())
        && (probe.namespace().is_empty()
            || res.orig_ns == probe.namespace()
            || res.namespace() == probe.namespace())
}

/// A targeted patch applies whatever its own metadata says: give it the target's identity.
fn retarget(patch: &mut Value, res: &Res) {
    if let Value::Object(m) = patch {
        m.insert("apiVersion".into(), Value::String(res.api_version().into()));
        m.insert("kind".into(), Value::String(res.kind().into()));
    }
    let meta = super::resource::metadata_mut(patch);
    meta.insert("name".into(), Value::String(res.name().into()));
    if res.namespace().is_empty() {
        meta.remove("namespace");
    } else {
        meta.insert("namespace".into(), Value::String(res.namespace().into()));
    }
}
