//! `replacements`: copy a field of one object into fields of others. Field paths are
//! `.`-separated; `[key=value]` selects a list element, `[a.b/c]` quotes a key, a number
//! indexes a list and `*` matches every element. Options: `delimiter` and `index` (source
//! and target) and `create` (target).

use serde::Deserialize;
use serde_json::{Map, Value};

use super::files::read_local;
use super::kustomization::Target;
use super::resource::Res;
use super::selector::Selector;
use super::tree::Tree;
use super::{RenderError, parse};

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Replacement {
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    source: Option<Source>,
    #[serde(default)]
    targets: Vec<TargetSpec>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Source {
    #[serde(default)]
    group: Option<String>,
    #[serde(default)]
    version: Option<String>,
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    field_path: Option<String>,
    #[serde(default)]
    options: Options,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Options {
    #[serde(default)]
    delimiter: String,
    #[serde(default)]
    index: i64,
    #[serde(default)]
    create: bool,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct TargetSpec {
    select: Target,
    #[serde(default)]
    reject: Vec<Target>,
    #[serde(default)]
    field_paths: Vec<String>,
    #[serde(default)]
    options: Options,
}

/// Runs the `replacements` of one kustomization.
pub fn run(
    tree: &dyn Tree,
    dir: &str,
    file: &str,
    entries: &[Value],
    acc: &mut [Res],
) -> Result<(), RenderError> {
    for (i, entry) in entries.iter().enumerate() {
        let parsed: Replacement =
            serde_json::from_value(entry.clone()).map_err(|e| RenderError::Kustomization {
                file: file.to_string(),
                message: format!("replacements[{i}]: {e}"),
            })?;
        match (&parsed.path, &parsed.source) {
            (Some(path), None) => {
                let bytes = read_local(tree, dir, path)?;
                for doc in parse::documents(path, &bytes)? {
                    let list = match doc {
                        Value::Array(items) => items,
                        other => vec![other],
                    };
                    for item in list {
                        let r: Replacement = serde_json::from_value(item).map_err(|e| {
                            RenderError::Invalid(format!("{path}: invalid replacement: {e}"))
                        })?;
                        apply(&r, acc)?;
                    }
                }
            }
            (None, Some(_)) => apply(&parsed, acc)?,
            _ => {
                return Err(RenderError::Kustomization {
                    file: file.to_string(),
                    message: format!("replacements[{i}]: needs exactly one of path and source"),
                });
            }
        }
    }
    Ok(())
}

fn apply(r: &Replacement, acc: &mut [Res]) -> Result<(), RenderError> {
    let Some(source) = &r.source else {
        return Err(RenderError::Invalid("a replacement needs a source".into()));
    };
    let target = Target {
        group: source.group.clone(),
        version: source.version.clone(),
        kind: source.kind.clone(),
        name: source.name.clone(),
        namespace: source.namespace.clone(),
        ..Target::default()
    };
    let selector = Selector::new(&target)?;
    let found: Vec<&Res> = acc.iter().filter(|r| selector.matches(r)).collect();
    let res = match found.as_slice() {
        [one] => *one,
        [] => {
            return Err(RenderError::Invalid(format!(
                "nothing selected by {}:{}",
                source.kind.as_deref().unwrap_or(""),
                source.name.as_deref().unwrap_or("")
            )));
        }
        _ => {
            return Err(RenderError::Invalid(format!(
                "multiple matches for selector {}:{}",
                source.kind.as_deref().unwrap_or(""),
                source.name.as_deref().unwrap_or("")
            )));
        }
    };
    let path = source.field_path.as_deref().unwrap_or("metadata.name");
    let segments = split_path(path);
    let mut value = lookup(&res.obj, &segments).cloned().ok_or_else(|| {
        RenderError::Invalid(format!(
            "fieldPath `{path}` is missing for replacement source {}",
            res.id()
        ))
    })?;
    if !source.options.delimiter.is_empty() {
        let text = scalar_text(&value);
        let parts: Vec<&str> = text.split(source.options.delimiter.as_str()).collect();
        let idx = usize::try_from(source.options.index)
            .ok()
            .filter(|&i| i < parts.len())
            .ok_or_else(|| {
                RenderError::Invalid(format!(
                    "options.index {} is out of bounds for value {text}",
                    source.options.index
                ))
            })?;
        value = Value::String(parts[idx].to_string());
    }

    for t in &r.targets {
        let select = Selector::new(&t.select)?;
        let rejects = t
            .reject
            .iter()
            .map(Selector::new)
            .collect::<Result<Vec<_>, _>>()?;
        for res in acc.iter_mut() {
            if !select.matches(res) || rejects.iter().any(|s| s.matches(res)) {
                continue;
            }
            for fp in &t.field_paths {
                let segments = split_path(fp);
                let slots = find_mut(&mut res.obj, &segments, t.options.create);
                if slots == 0 {
                    return Err(RenderError::Invalid(format!(
                        "unable to find field \"{fp}\" in replacement target"
                    )));
                }
                set_all(&mut res.obj, &segments, &value, &t.options);
            }
        }
    }
    Ok(())
}

fn scalar_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Splits a field path on `.` outside brackets.
fn split_path(path: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut depth = 0;
    for c in path.chars() {
        match c {
            '[' => {
                depth += 1;
                cur.push(c);
            }
            ']' => {
                depth -= 1;
                cur.push(c);
            }
            '.' if depth == 0 => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out
}

/// How a segment selects from a node.
enum Step<'a> {
    Key(&'a str),
    Match(&'a str, &'a str),
    Index(usize),
    All,
}

fn step(segment: &str) -> Step<'_> {
    if segment == "*" {
        return Step::All;
    }
    if let Some(inner) = segment.strip_prefix('[').and_then(|s| s.strip_suffix(']')) {
        return match inner.split_once('=') {
            Some((k, v)) => Step::Match(k, v),
            None => Step::Key(inner),
        };
    }
    match segment.parse::<usize>() {
        Ok(i) => Step::Index(i),
        Err(_) => Step::Key(segment),
    }
}

fn lookup<'a>(node: &'a Value, segments: &[String]) -> Option<&'a Value> {
    let Some((first, rest)) = segments.split_first() else {
        return Some(node);
    };
    let child = match (step(first), node) {
        (Step::Key(k), Value::Object(m)) => m.get(k)?,
        (Step::Match(k, v), Value::Array(items)) => items
            .iter()
            .find(|i| i.get(k).map(scalar_text).as_deref() == Some(v))?,
        (Step::Index(i), Value::Array(items)) => items.get(i)?,
        (Step::Key(k), Value::Array(items)) => items.get(k.parse::<usize>().ok()?)?,
        _ => return None,
    };
    lookup(child, rest)
}

/// Counts the slots `segments` reaches (creating maps on the way when `create`).
fn find_mut(node: &mut Value, segments: &[String], create: bool) -> usize {
    let Some((first, rest)) = segments.split_first() else {
        return 1;
    };
    match (step(first), node) {
        (Step::Key(k), Value::Object(m)) => match m.get_mut(k) {
            Some(child) => find_mut(child, rest, create),
            None if create => {
                let child = m.entry(k.to_string()).or_insert_with(|| {
                    if rest.is_empty() {
                        Value::Null
                    } else {
                        Value::Object(Map::new())
                    }
                });
                find_mut(child, rest, create)
            }
            None => 0,
        },
        (Step::Match(k, v), Value::Array(items)) => items
            .iter_mut()
            .filter(|i| i.get(k).map(scalar_text).as_deref() == Some(v))
            .map(|i| find_mut(i, rest, create))
            .sum(),
        (Step::All, Value::Array(items)) => {
            items.iter_mut().map(|i| find_mut(i, rest, create)).sum()
        }
        (Step::Index(i), Value::Array(items)) => {
            items.get_mut(i).map_or(0, |c| find_mut(c, rest, create))
        }
        _ => 0,
    }
}

fn set_all(node: &mut Value, segments: &[String], value: &Value, options: &Options) {
    let Some((first, rest)) = segments.split_first() else {
        *node = replaced(node, value, options);
        return;
    };
    match (step(first), node) {
        (Step::Key(k), Value::Object(m)) => {
            if let Some(child) = m.get_mut(k) {
                set_all(child, rest, value, options);
            }
        }
        (Step::Match(k, v), Value::Array(items)) => {
            for i in items
                .iter_mut()
                .filter(|i| i.get(k).map(scalar_text).as_deref() == Some(v))
            {
                set_all(i, rest, value, options);
            }
        }
        (Step::All, Value::Array(items)) => {
            for i in items {
                set_all(i, rest, value, options);
            }
        }
        (Step::Index(i), Value::Array(items)) => {
            if let Some(c) = items.get_mut(i) {
                set_all(c, rest, value, options);
            }
        }
        _ => {}
    }
}

/// The new value of a target slot (delimited targets replace one part).
fn replaced(current: &Value, value: &Value, options: &Options) -> Value {
    if options.delimiter.is_empty() {
        // A scalar copied into an existing string keeps the target's (string) type.
        return match (current, value) {
            (Value::String(_), Value::Number(_) | Value::Bool(_)) => {
                Value::String(scalar_text(value))
            }
            _ => value.clone(),
        };
    }
    let text = scalar_text(current);
    let mut parts: Vec<String> = text
        .split(options.delimiter.as_str())
        .map(str::to_string)
        .collect();
    let new = scalar_text(value);
    match usize::try_from(options.index) {
        Ok(i) if i < parts.len() => parts[i] = new,
        Ok(_) => parts.push(new),
        Err(_) => parts.insert(0, new),
    }
    Value::String(parts.join(&options.delimiter))
}
