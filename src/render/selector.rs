//! Target selection for patches and replacements: anchored regexes on group, version, kind,
//! name and namespace (matched against the original and the current identity), plus
//! Kubernetes label and annotation selectors.

use std::collections::BTreeMap;

use regex::Regex;
use serde_json::Value;

use super::RenderError;
use super::kustomization::Target;
use super::resource::Res;

/// A compiled [`Target`].
pub struct Selector {
    group: Option<Regex>,
    version: Option<Regex>,
    kind: Option<Regex>,
    name: Option<Regex>,
    namespace: Option<Regex>,
    labels: Vec<Requirement>,
    annotations: Vec<Requirement>,
}

impl Selector {
    /// Compiles `target`; bad regexes or selectors are errors naming the field.
    pub fn new(target: &Target) -> Result<Self, RenderError> {
        Ok(Self {
            group: anchored("group", target.group.as_deref())?,
            version: anchored("version", target.version.as_deref())?,
            kind: anchored("kind", target.kind.as_deref())?,
            name: anchored("name", target.name.as_deref())?,
            namespace: anchored("namespace", target.namespace.as_deref())?,
            labels: parse_selector(target.label_selector.as_deref().unwrap_or(""))?,
            annotations: parse_selector(target.annotation_selector.as_deref().unwrap_or(""))?,
        })
    }

    /// Whether `res` is selected.
    pub fn matches(&self, res: &Res) -> bool {
        let is = |re: &Option<Regex>, value: &str| re.as_ref().is_none_or(|re| re.is_match(value));
        let effective = |ns: &str| {
            if res.is_cluster_scoped() {
                "_non_namespaceable_".to_string()
            } else if ns.is_empty() {
                "default".to_string()
            } else {
                ns.to_string()
            }
        };
        (is(&self.namespace, &effective(&res.orig_ns))
            || is(&self.namespace, &effective(res.namespace())))
            && (is(&self.name, &res.orig_name) || is(&self.name, res.name()))
            && is(&self.group, res.group())
            && is(&self.version, res.version())
            && is(&self.kind, res.kind())
            && requirements_hold(&self.labels, res.obj.pointer("/metadata/labels"))
            && requirements_hold(&self.annotations, res.obj.pointer("/metadata/annotations"))
    }
}

fn anchored(field: &str, pattern: Option<&str>) -> Result<Option<Regex>, RenderError> {
    match pattern.filter(|p| !p.is_empty()) {
        None => Ok(None),
        Some(p) => Regex::new(&format!("^(?:{p})$")).map(Some).map_err(|e| {
            RenderError::Invalid(format!("target {field} '{p}' is not a valid regex: {e}"))
        }),
    }
}

/// One term of a label selector.
#[derive(Debug)]
enum Requirement {
    Equals(String, String),
    NotEquals(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    NotExists(String),
}

fn parse_selector(s: &str) -> Result<Vec<Requirement>, RenderError> {
    let mut terms = Vec::new();
    let mut depth = 0;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                terms.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    terms.push(&s[start..]);
    let bad = |t: &str| RenderError::Invalid(format!("invalid selector '{s}': bad term '{t}'"));
    let mut out = Vec::new();
    for term in terms.into_iter().map(str::trim).filter(|t| !t.is_empty()) {
        let set = |rest: &str| -> Option<Vec<String>> {
            let inner = rest.trim().strip_prefix('(')?.strip_suffix(')')?;
            Some(inner.split(',').map(|v| v.trim().to_string()).collect())
        };
        let req = if let Some((k, v)) = term.split_once("!=") {
            Requirement::NotEquals(k.trim().into(), v.trim().into())
        } else if let Some((k, v)) = term.split_once("==").or_else(|| term.split_once('=')) {
            Requirement::Equals(k.trim().into(), v.trim().into())
        } else if let Some((k, rest)) = term.split_once(" notin ") {
            Requirement::NotIn(k.trim().into(), set(rest).ok_or_else(|| bad(term))?)
        } else if let Some((k, rest)) = term.split_once(" in ") {
            Requirement::In(k.trim().into(), set(rest).ok_or_else(|| bad(term))?)
        } else if let Some(k) = term.strip_prefix('!') {
            Requirement::NotExists(k.trim().into())
        } else if term.contains(char::is_whitespace) {
            return Err(bad(term));
        } else {
            Requirement::Exists(term.into())
        };
        out.push(req);
    }
    Ok(out)
}

fn requirements_hold(reqs: &[Requirement], map: Option<&Value>) -> bool {
    let labels: BTreeMap<&str, &str> = map
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.as_str(), v)))
                .collect()
        })
        .unwrap_or_default();
    reqs.iter().all(|r| match r {
        Requirement::Equals(k, v) => labels.get(k.as_str()) == Some(&v.as_str()),
        Requirement::NotEquals(k, v) => labels.get(k.as_str()) != Some(&v.as_str()),
        Requirement::In(k, vs) => labels
            .get(k.as_str())
            .is_some_and(|l| vs.iter().any(|v| v == l)),
        Requirement::NotIn(k, vs) => labels
            .get(k.as_str())
            .is_none_or(|l| !vs.iter().any(|v| v == l)),
        Requirement::Exists(k) => labels.contains_key(k.as_str()),
        Requirement::NotExists(k) => !labels.contains_key(k.as_str()),
    })
}
