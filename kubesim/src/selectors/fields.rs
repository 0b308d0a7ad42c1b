//! Field selectors (`?fieldSelector=`): the grammar of apimachinery `pkg/fields/selector.go`
//! (`=`, `==`, `!=`, backslash escapes), the per-kind field labels the API server accepts,
//! and matching against an object's fields.

use serde_json::Value;

use super::error::SelectorError;

/// A field selector operator (`=` and `==` are the same).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldOperator {
    /// `field=value` or `field==value`.
    Equals,
    /// `field!=value`.
    NotEquals,
}

/// One term of a field selector: a supported field label, an operator and a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldRequirement {
    /// The field label, e.g. `metadata.name`.
    pub field: String,
    /// Equality or inequality.
    pub operator: FieldOperator,
    /// The unescaped value to compare with.
    pub value: String,
}

/// A parsed field selector: a conjunction of [`FieldRequirement`]s over one kind's fields.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FieldSelector {
    requirements: Vec<FieldRequirement>,
}

/// The field labels the API server accepts in field selectors for a kind, beyond
/// `metadata.name` and `metadata.namespace` which every kind supports. Sources: the
/// `GetAttrs`/`ToSelectableFields` functions and `AddFieldLabelConversionFuncForKind`
/// registrations in kubernetes `pkg/registry/*` and `pkg/apis/*/v1/conversion.go`.
pub fn supported_field_labels(api_version: &str, kind: &str) -> &'static [&'static str] {
    match (api_version, kind) {
        ("v1", "Pod") => &[
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
        ],
        ("v1", "Event") => &[
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "type",
        ],
        ("v1", "Secret") => &["type"],
        ("v1", "Namespace") => &["status.phase"],
        ("v1", "Node") => &["spec.unschedulable"],
        ("apps/v1", "ReplicaSet") => &["status.replicas"],
        ("batch/v1", "Job") => &["status.successful"],
        _ => &[],
    }
}

impl FieldSelector {
    /// Parses a field selector (`?fieldSelector=`) for objects of `api_version`/`kind`, as
    /// apimachinery `fields.ParseSelector` and the kind's field label conversion do: terms
    /// are comma-joined (`\,` escapes a comma), each split at its first `!=`, `==` or `=`;
    /// values may escape `\\`, `\,` and `\=`. Syntax errors come first; then a field the
    /// server does not support for the kind yields `field label not supported: FIELD`.
    pub fn parse(selector: &str, api_version: &str, kind: &str) -> Result<Self, SelectorError> {
        let mut terms = split_unescaped(selector, ',');
        terms.sort();
        let mut requirements = Vec::new();
        for term in terms.iter().filter(|term| !term.is_empty()) {
            let (field, operator, raw_value) = split_field_term(term)
                .ok_or_else(|| SelectorError::FieldSyntax(selector.to_string(), term.clone()))?;
            requirements.push(FieldRequirement {
                field: field.to_string(),
                operator,
                value: unescape(raw_value)?,
            });
        }
        for requirement in &requirements {
            let field = requirement.field.as_str();
            let supported = field == "metadata.name"
                || field == "metadata.namespace"
                || supported_field_labels(api_version, kind).contains(&field);
            if !supported {
                return Err(SelectorError::FieldNotSupported(field.to_string()));
            }
        }
        Ok(FieldSelector { requirements })
    }

    /// The parsed terms, in selector order.
    pub fn requirements(&self) -> &[FieldRequirement] {
        &self.requirements
    }

    /// Whether an object satisfies every term. A missing field compares as the empty string
    /// (so `metadata.namespace=` selects cluster-scoped objects); booleans and numbers compare
    /// by their text, as the server's selectable-field sets hold them.
    pub fn matches(&self, object: &Value) -> bool {
        self.requirements.iter().all(|requirement| {
            let actual = field_value(object, &requirement.field);
            let equal = actual == requirement.value;
            match requirement.operator {
                FieldOperator::Equals => equal,
                FieldOperator::NotEquals => !equal,
            }
        })
    }
}

/// The text of a dotted field path in an object, "" when absent.
fn field_value(object: &Value, field: &str) -> String {
    let mut current = object;
    for part in field.split('.') {
        match current.get(part) {
            Some(next) => current = next,
            None => {
                // The server's selectable fields hold `false` for an absent boolean.
                return match field {
                    "spec.hostNetwork" | "spec.unschedulable" => "false".to_string(),
                    "status.replicas" | "status.successful" => "0".to_string(),
                    _ => String::new(),
                };
            }
        }
    }
    match current {
        Value::String(text) => text.clone(),
        Value::Bool(flag) => flag.to_string(),
        Value::Number(number) => number.to_string(),
        _ => String::new(),
    }
}

/// Splits on `separator` where it is not preceded by a backslash escape; escapes are kept.
fn split_unescaped(text: &str, separator: char) -> Vec<String> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            current.push(c);
            if let Some(escaped) = chars.next() {
                current.push(escaped);
            }
        } else if c == separator {
            parts.push(std::mem::take(&mut current));
        } else {
            current.push(c);
        }
    }
    parts.push(current);
    parts
}

/// Splits a field term at the first position where `!=`, `==` or `=` starts (tried in that
/// order, as apimachinery `fields.splitTerm`; the field name has no escapes).
fn split_field_term(term: &str) -> Option<(&str, FieldOperator, &str)> {
    let operators = [
        ("!=", FieldOperator::NotEquals),
        ("==", FieldOperator::Equals),
        ("=", FieldOperator::Equals),
    ];
    term.char_indices().find_map(|(index, _)| {
        operators.iter().find_map(|(text, operator)| {
            term[index..]
                .starts_with(text)
                .then(|| (&term[..index], *operator, &term[index + text.len()..]))
        })
    })
}

/// Unescapes a field selector value (apimachinery `fields.UnescapeValue`): `\\`, `\,` and
/// `\=` are the only escapes; an unescaped `,` or `=` is an error.
fn unescape(text: &str) -> Result<String, SelectorError> {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(escaped @ ('\\' | ',' | '=')) => out.push(escaped),
                Some(other) => {
                    return Err(SelectorError::FieldValue(format!(
                        "invalid field selector: invalid escape sequence: \\{other}"
                    )));
                }
                None => {
                    return Err(SelectorError::FieldValue(
                        "invalid field selector: invalid escape sequence: \\".to_string(),
                    ));
                }
            },
            ',' | '=' => {
                // Go prints the rune with %v: its code point.
                return Err(SelectorError::FieldValue(format!(
                    "invalid field selector: unescaped character in value: {}",
                    u32::from(c)
                )));
            }
            other => out.push(other),
        }
    }
    Ok(out)
}
