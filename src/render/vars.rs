//! `vars:` (kustomize's deprecated reflection): a var names an object (`objref`) and a field
//! of it (`fieldref.fieldpath`, default `metadata.name`); `$(NAME)` in the var-reference
//! fields (kustomize's defaults: container `command`, `args`, `env[].value` and
//! `volumeMounts[].mountPath` of workloads, Ingress hosts and TLS secret names, Service
//! ports, `metadata/labels`, plus configured ones) is replaced by the field's final value.
//!
//! As in kustomize, a var is bound to its object when its kustomization is built (matching the
//! object's current or original name), and substituted once at the top, after name
//! references were fixed. `$$` escapes a `$`; an unknown `$(X)` stays as written.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;

use super::RenderError;
use super::labels::{self, FieldSpec};
use super::resource::{Res, is_cluster_scoped_kind, split_api_version};

/// One `vars` entry.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Var {
    /// The name used in `$(NAME)`.
    pub name: String,
    /// The object the value comes from.
    pub objref: ObjRef,
    /// The field of it (default `metadata.name`).
    #[serde(default)]
    pub fieldref: Option<FieldRef>,
}

/// `vars[].objref`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ObjRef {
    /// `group/version` (or `version`).
    #[serde(default)]
    pub api_version: Option<String>,
    /// Group, when not given in `apiVersion`.
    #[serde(default)]
    pub group: Option<String>,
    /// Version, when not given in `apiVersion`.
    #[serde(default)]
    pub version: Option<String>,
    /// Kind.
    #[serde(default)]
    pub kind: String,
    /// Name (current or original).
    #[serde(default)]
    pub name: String,
    /// Namespace (empty: any, for namespaced kinds).
    #[serde(default)]
    pub namespace: Option<String>,
}

/// `vars[].fieldref`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FieldRef {
    /// Dotted path, `[n]` indexing a list (`fieldPath` too: Go's JSON decoding ignores case).
    #[serde(default, alias = "fieldPath")]
    pub fieldpath: String,
}

impl ObjRef {
    /// Group and version, from `apiVersion` when given there.
    fn group_version(&self) -> (&str, &str) {
        match self.api_version.as_deref() {
            Some(av) if !av.is_empty() => split_api_version(av),
            _ => (
                self.group.as_deref().unwrap_or(""),
                self.version.as_deref().unwrap_or(""),
            ),
        }
    }

    /// Whether `res` is the object, by its current or original identity (kustomize's
    /// `GetMatchingResourcesByAnyId`).
    fn matches(&self, res: &Res) -> bool {
        let (group, version) = self.group_version();
        if res.kind() != self.kind || res.group() != group || res.version() != version {
            return false;
        }
        let ns = self.namespace.as_deref().unwrap_or("");
        let check_ns = !ns.is_empty() || is_cluster_scoped_kind(&self.kind);
        let ns_ok = |candidate: &str| !check_ns || candidate == ns;
        (res.name() == self.name && ns_ok(res.namespace()))
            || (res.orig_name == self.name && ns_ok(&res.orig_ns))
    }
}

/// Binds the `vars` of one kustomization to their objects in `acc` and adds them to the vars
/// accumulated so far (`all`), refusing duplicates and ambiguous references as kustomize does.
pub fn bind(vars: &[Var], acc: &mut [Res], all: &mut Vec<Var>) -> Result<(), RenderError> {
    for var in vars {
        let matched: Vec<usize> = (0..acc.len())
            .filter(|&i| var.objref.matches(&acc[i]))
            .collect();
        if matched.len() > 1 {
            return Err(RenderError::Invalid(format!(
                "found {} resId matches for var {} (unable to disambiguate)",
                matched.len(),
                var.name
            )));
        }
        if let Some(&i) = matched.first() {
            acc[i].ref_vars.push(var.name.clone());
        }
    }
    merge(all, vars.to_vec())
}

/// Adds `incoming` to `all`; a name already there is an error, as in kustomize.
pub fn merge(all: &mut Vec<Var>, incoming: Vec<Var>) -> Result<(), RenderError> {
    for var in incoming {
        if all.iter().any(|v| v.name == var.name) {
            return Err(RenderError::Invalid(format!(
                "var '{}' already encountered",
                var.name
            )));
        }
        all.push(var);
    }
    Ok(())
}

/// kustomize's default var-reference field specs.
fn default_specs() -> Vec<FieldSpec> {
    let spec = |kind: &'static str, path: String| FieldSpec {
        group: None,
        version: None,
        kind: Some(Cow::Borrowed(kind)),
        path: Cow::Owned(path),
        create: false,
    };
    let mut specs = Vec::new();
    let workloads = [
        ("CronJob", "spec/jobTemplate/spec/template/spec"),
        ("DaemonSet", "spec/template/spec"),
        ("Deployment", "spec/template/spec"),
        ("Job", "spec/template/spec"),
        ("Pod", "spec"),
        ("ReplicaSet", "spec/template/spec"),
        ("StatefulSet", "spec/template/spec"),
    ];
    for (kind, base) in workloads {
        for containers in ["containers", "initContainers"] {
            for field in ["args", "command", "env/value", "volumeMounts/mountPath"] {
                specs.push(spec(kind, format!("{base}/{containers}/{field}")));
            }
        }
    }
    for path in ["spec/rules/host", "spec/tls/hosts", "spec/tls/secretName"] {
        specs.push(spec("Ingress", path.to_string()));
    }
    for path in ["spec/ports/port", "spec/ports/targetPort"] {
        specs.push(spec("Service", path.to_string()));
    }
    specs.push(FieldSpec {
        kind: None,
        ..spec("", "metadata/labels".to_string())
    });
    specs
}

/// Substitutes every var of `vars` in the var-reference fields (defaults plus `configured`)
/// of `acc`. A var bound to no object is an error ("cannot be mapped").
pub fn resolve(vars: &[Var], configured: &[FieldSpec], acc: &mut [Res]) -> Result<(), RenderError> {
    if vars.is_empty() {
        return Ok(());
    }
    let mut values: Vec<(String, Value)> = Vec::new();
    for var in vars {
        let holder = acc
            .iter()
            .find(|r| r.ref_vars.contains(&var.name))
            .ok_or_else(|| RenderError::Invalid(format!("var {} cannot be mapped", var.name)))?;
        let path = var
            .fieldref
            .as_ref()
            .map(|f| f.fieldpath.as_str())
            .filter(|p| !p.is_empty())
            .unwrap_or("metadata.name");
        let value = field_value(&holder.obj, path).ok_or_else(|| {
            RenderError::Invalid(format!(
                "var {}: field path '{path}' not found in {}",
                var.name,
                holder.id()
            ))
        })?;
        values.push((var.name.clone(), value));
    }
    let mut specs = default_specs();
    specs.extend(configured.iter().cloned());
    let mut failure = None;
    for res in acc.iter_mut() {
        for spec in &specs {
            labels::visit(res, spec, &mut |node| {
                if let Err(e) = substitute_node(node, &values) {
                    failure.get_or_insert(e);
                }
            });
        }
    }
    match failure {
        Some(message) => Err(RenderError::Invalid(message)),
        None => Ok(()),
    }
}

/// Substitutes in one field: a string, the string values of a map, or a list of strings
/// (any other element is an error, as in kustomize).
fn substitute_node(node: &mut Value, values: &[(String, Value)]) -> Result<(), String> {
    match node {
        Value::String(s) => {
            *node = expand(s, values);
            Ok(())
        }
        Value::Object(map) => {
            for value in map.values_mut() {
                if let Value::String(s) = value {
                    *value = expand(s, values);
                }
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// kustomize's `expansion.Expand`: `$(NAME)` of a known var is replaced (a string that is
/// exactly one reference takes the value with its type), `$$` becomes `$`, anything else
/// stays as written.
fn expand(input: &str, values: &[(String, Value)]) -> Value {
    let lookup = |name: &str| values.iter().find(|(n, _)| n == name).map(|(_, v)| v);
    if let Some(name) = input.strip_prefix("$(").and_then(|r| r.strip_suffix(')'))
        && !name.contains(')')
        && let Some(value) = lookup(name)
    {
        return value.clone();
    }
    let mut out = String::with_capacity(input.len());
    let mut rest = input;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if after.is_empty() {
            out.push('$');
            rest = after;
        } else if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(body) = after.strip_prefix('(') {
            match body.find(')') {
                Some(close) => {
                    let name = &body[..close];
                    match lookup(name) {
                        Some(Value::String(s)) => out.push_str(s),
                        Some(other) => out.push_str(&other.to_string()),
                        None => {
                            out.push_str("$(");
                            out.push_str(name);
                            out.push(')');
                        }
                    }
                    rest = &body[close + 1..];
                }
                None => {
                    // No `)` anywhere after: nothing later can close either (kept linear).
                    out.push_str("$(");
                    out.push_str(body);
                    rest = "";
                }
            }
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    Value::String(out)
}

/// The value at a dotted `path` (`[n]` indexes a list) of `obj`.
fn field_value(obj: &Value, path: &str) -> Option<Value> {
    let mut current = obj;
    for part in path.split('.') {
        let (key, index) = match part.split_once('[') {
            Some((key, rest)) => (key, rest.strip_suffix(']')?.parse::<usize>().ok()),
            None => (part, None),
        };
        if !key.is_empty() {
            current = current.get(key)?;
        }
        if let Some(i) = index {
            current = current.get(i)?;
        }
    }
    Some(current.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vals() -> Vec<(String, Value)> {
        vec![
            ("A".into(), Value::String("svc".into())),
            ("P".into(), Value::from(8080)),
        ]
    }

    #[test]
    fn expands_like_kustomize() {
        let v = vals();
        assert_eq!(expand("$(A)", &v), "svc");
        assert_eq!(expand("$(P)", &v), 8080);
        assert_eq!(expand("http://$(A):$(P)/x", &v), "http://svc:8080/x");
        assert_eq!(expand("$(B) $$(A) $$ $", &v), "$(B) $(A) $ $");
        assert_eq!(expand("$(A", &v), "$(A");
        assert_eq!(expand("a$b", &v), "a$b");
        assert_eq!(expand("$(A $(A)", &v), "$(A $(A)");
        assert_eq!(expand("x $(A", &v), "x $(A");
    }

    #[test]
    fn hostile_strings_expand_in_linear_time() {
        // 200,000 unclosed references: quadratic scanning would take minutes.
        let storm = "$(".repeat(200_000);
        assert_eq!(expand(&storm, &vals()), storm.as_str());
        let nested = format!("{}A{}", "$(".repeat(100_000), ")".repeat(100_000));
        assert!(expand(&nested, &vals()).as_str().is_some());
    }

    #[test]
    fn reads_dotted_field_paths() {
        let obj: Value =
            serde_json::json!({"metadata": {"name": "n"}, "spec": {"ports": [{"port": 80}]}});
        assert_eq!(field_value(&obj, "metadata.name").unwrap(), "n");
        assert_eq!(field_value(&obj, "spec.ports[0].port").unwrap(), 80);
        assert!(field_value(&obj, "spec.ports[1].port").is_none());
        assert!(field_value(&obj, "spec.x[").is_none());
    }
}
