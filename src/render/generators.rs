//! `configMapGenerator` and `secretGenerator`: objects made from literals, files and env
//! files, with `generatorOptions`, and `behavior: create|merge|replace` against objects
//! already accumulated. Name hashes are added later, at the top level.

use std::collections::BTreeMap;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map, Value};

use super::files::read_local;
use super::kustomization::{Generator, GeneratorOptions, Kustomization};
use super::resource::{Origin, Res, child_map, ensure_map};
use super::tree::Tree;
use super::{RenderError, parse};

/// Runs both generators of `kust` (in `dir`, declared in `file`) against `acc`.
pub fn run(
    tree: &dyn Tree,
    dir: &str,
    file: &str,
    kust: &Kustomization,
    acc: &mut Vec<Res>,
) -> Result<(), RenderError> {
    let global = kust.generator_options.clone().unwrap_or_default();
    for (generators, kind) in [
        (&kust.config_map_generator, "ConfigMap"),
        (&kust.secret_generator, "Secret"),
    ] {
        for generator in generators {
            run_one(tree, dir, file, generator, kind, &global, acc)?;
        }
    }
    Ok(())
}

/// Runs one generator of `kind` (`ConfigMap` or `Secret`; a kustomization field's entry or
/// a `ConfigMapGenerator`/`SecretGenerator` plugin config) against `acc`.
pub fn run_one(
    tree: &dyn Tree,
    dir: &str,
    file: &str,
    generator: &Generator,
    kind: &'static str,
    global: &GeneratorOptions,
    acc: &mut Vec<Res>,
) -> Result<(), RenderError> {
    let res = generate(tree, dir, file, generator, kind, global)
        .map_err(|e| e.context(format!("{file}: {kind} generator '{}'", generator.name)))?;
    add(
        acc,
        res,
        generator.behavior.as_deref().unwrap_or("create"),
        file,
    )
}

fn generate(
    tree: &dyn Tree,
    dir: &str,
    file: &str,
    g: &Generator,
    kind: &'static str,
    global: &GeneratorOptions,
) -> Result<Res, RenderError> {
    if g.name.is_empty() {
        return Err(RenderError::Invalid("a generator needs a name".into()));
    }
    let mut pairs: Vec<(String, Vec<u8>)> = Vec::new();
    for env in g.envs.iter().chain(&g.env) {
        let bytes = read_local(tree, dir, env)?;
        let text = parse::text(env, &bytes)?;
        for line in text.lines() {
            let line = line.trim_start();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (key, value) = line.split_once('=').unwrap_or((line, ""));
            pairs.push((key.to_string(), value.as_bytes().to_vec()));
        }
    }
    for literal in &g.literals {
        let (key, value) = literal
            .split_once('=')
            .filter(|(k, _)| !k.is_empty())
            .ok_or_else(|| {
                RenderError::Invalid(format!(
                    "invalid literal source {literal}, expected key=value"
                ))
            })?;
        pairs.push((key.to_string(), remove_quotes(value).as_bytes().to_vec()));
    }
    for source in &g.files {
        let (key, path) = match source.split_once('=') {
            Some((k, p)) if !k.is_empty() && !p.is_empty() => (k.to_string(), p),
            Some(_) => {
                return Err(RenderError::Invalid(format!(
                    "key or file path is missing in file source '{source}'"
                )));
            }
            None => (
                source.rsplit('/').next().unwrap_or(source).to_string(),
                source.as_str(),
            ),
        };
        pairs.push((key, read_local(tree, dir, path)?));
    }

    let mut data = Map::new();
    let mut binary = Map::new();
    let mut seen = BTreeMap::new();
    for (key, value) in pairs {
        if seen.insert(key.clone(), ()).is_some() {
            return Err(RenderError::Invalid(format!(
                "{} {} illegally repeats the key `{key}`",
                kind.to_lowercase(),
                g.name
            )));
        }
        if kind == "Secret" {
            data.insert(key, Value::String(encode_base64(&value)));
        } else {
            match String::from_utf8(value) {
                Ok(s) => {
                    data.insert(key, Value::String(s));
                }
                Err(e) => {
                    binary.insert(key, Value::String(encode_base64(e.as_bytes())));
                }
            }
        }
    }

    let options = merged_options(global, g.options.as_ref());
    let mut obj = Map::new();
    obj.insert("apiVersion".into(), Value::String("v1".into()));
    obj.insert("kind".into(), Value::String(kind.into()));
    let mut meta = Map::new();
    meta.insert("name".into(), Value::String(g.name.clone()));
    if let Some(ns) = g.namespace.as_deref().filter(|ns| !ns.is_empty()) {
        meta.insert("namespace".into(), Value::String(ns.into()));
    }
    if !options.labels.is_empty() {
        meta.insert("labels".into(), string_map(&options.labels));
    }
    if !options.annotations.is_empty() {
        meta.insert("annotations".into(), string_map(&options.annotations));
    }
    obj.insert("metadata".into(), Value::Object(meta));
    // kustomize writes an empty Secret's `data: {}` (and hashes it), but no empty ConfigMap
    // data.
    if !data.is_empty() || kind == "Secret" {
        obj.insert("data".into(), Value::Object(data));
    }
    if !binary.is_empty() {
        obj.insert("binaryData".into(), Value::Object(binary));
    }
    if kind == "Secret" {
        let ty = g.kind.clone().unwrap_or_else(|| "Opaque".into());
        obj.insert("type".into(), Value::String(ty));
    }
    if options.immutable == Some(true) {
        obj.insert("immutable".into(), Value::Bool(true));
    }
    let origin = Origin::Generator {
        file: file.to_string(),
        kind: if kind == "Secret" {
            "SecretGenerator"
        } else {
            "ConfigMapGenerator"
        },
    };
    let mut res = Res::new(Value::Object(obj), origin);
    res.needs_hash = options.disable_name_suffix_hash != Some(true);
    Ok(res)
}

fn string_map(m: &BTreeMap<String, String>) -> Value {
    Value::Object(
        m.iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect(),
    )
}

/// Global options overlaid with a generator's own.
fn merged_options(global: &GeneratorOptions, own: Option<&GeneratorOptions>) -> GeneratorOptions {
    let mut out = global.clone();
    if let Some(own) = own {
        out.labels.extend(own.labels.clone());
        out.annotations.extend(own.annotations.clone());
        // kustomize ORs the flags: a generator cannot undo the global setting.
        let or = |a: Option<bool>, b: Option<bool>| match (a, b) {
            (None, None) => None,
            _ => Some(a.unwrap_or(false) || b.unwrap_or(false)),
        };
        out.disable_name_suffix_hash =
            or(out.disable_name_suffix_hash, own.disable_name_suffix_hash);
        out.immutable = or(out.immutable, own.immutable);
    }
    out
}

/// kyaml's `encodeBase64`: standard base64 in lines of 70 characters, each ending with a
/// newline once the encoding reaches 70 characters.
fn encode_base64(bytes: &[u8]) -> String {
    const LINE: usize = 70;
    let encoded = STANDARD.encode(bytes);
    if encoded.len() < LINE {
        return encoded;
    }
    let mut out = String::with_capacity(encoded.len() + encoded.len() / LINE + 1);
    for chunk in encoded.as_bytes().chunks(LINE) {
        out.push_str(&String::from_utf8_lossy(chunk));
        out.push('\n');
    }
    out
}

/// kustomize's `removeQuotes` for literal values.
fn remove_quotes(s: &str) -> &str {
    let b = s.as_bytes();
    if b.len() >= 2 && b[0] == b[b.len() - 1] && (b[0] == b'"' || b[0] == b'\'') {
        &s[1..s.len() - 1]
    } else {
        s
    }
}

/// Adds a generated object according to its behavior.
fn add(acc: &mut Vec<Res>, new: Res, behavior: &str, file: &str) -> Result<(), RenderError> {
    let existing = acc.iter().position(|r| {
        r.kind() == new.kind()
            && (r.orig_name == new.orig_name || r.name() == new.orig_name)
            && (new.orig_ns.is_empty() || r.namespace() == new.orig_ns || r.orig_ns == new.orig_ns)
    });
    // Any behavior besides merge and replace (`create`, `add`, a typo) is kustomize's
    // create (unknown ones are its unspecified behavior, which creates).
    match (behavior, existing) {
        ("merge", Some(i)) => merge_into(&mut acc[i], new),
        ("merge" | "replace", None) => {
            return Err(RenderError::Invalid(format!(
                "{file}: id {}/{} does not exist; cannot merge or replace",
                new.kind(),
                new.orig_name
            )));
        }
        (_, None) => acc.push(new),
        (b, Some(_)) if b != "replace" => {
            return Err(RenderError::Invalid(format!(
                "{file}: cannot add {} '{}': an object with that id already exists (use behavior: merge or replace)",
                new.kind(),
                new.orig_name
            )));
        }
        (_, Some(i)) => {
            // The new object takes the old one's name, namespace, and labels and
            // annotations (its own win), as kustomize's CopyMergeMetaDataFieldsFrom.
            let old = &mut acc[i];
            let name = old.name().to_string();
            let ns = old.namespace().to_string();
            let kept: Vec<(&str, Map<String, Value>)> = ["labels", "annotations"]
                .into_iter()
                .filter_map(|f| Some((f, old.obj.get("metadata")?.get(f)?.as_object()?.clone())))
                .collect();
            old.obj = new.obj;
            old.set_name(&name);
            if !ns.is_empty() {
                old.set_namespace(&ns);
            }
            for (field, entries) in kept {
                let meta = child_map(&mut old.obj, "metadata");
                let target = ensure_map(meta.entry(field).or_insert(Value::Null));
                for (k, v) in entries {
                    target.entry(k).or_insert(v);
                }
            }
            old.needs_hash = new.needs_hash;
        }
    }
    Ok(())
}

fn merge_into(old: &mut Res, new: Res) {
    for field in ["data", "binaryData"] {
        if let Some(Value::Object(entries)) = new.obj.get(field) {
            let target = child_map(&mut old.obj, field);
            for (k, v) in entries {
                target.insert(k.clone(), v.clone());
            }
        }
    }
    for field in ["labels", "annotations"] {
        if let Some(Value::Object(entries)) = new.obj.get("metadata").and_then(|m| m.get(field)) {
            let meta = child_map(&mut old.obj, "metadata");
            let target = ensure_map(meta.entry(field).or_insert(Value::Null));
            for (k, v) in entries {
                target.insert(k.clone(), v.clone());
            }
        }
    }
    if let Some(imm) = new.obj.get("immutable") {
        ensure_map(&mut old.obj).insert("immutable".into(), imm.clone());
    }
}
