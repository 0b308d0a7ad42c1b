//! Label requirements and [`LabelSelector`]: the operators, one requirement's validation
//! (apimachinery `labels.NewRequirement`) and matching, the canonical text of both, and a
//! selector built from a `LabelSelector` object (`matchLabels` / `matchExpressions`, as
//! apimachinery `metav1.LabelSelectorAsSelector`). The query-string form is parsed in
//! `parser`.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use super::error::SelectorError;
use super::validation::{go_string_slice, label_key_error, label_value_problems};

/// A label selector operator (apimachinery `selection.Operator`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Operator {
    /// `key=value` / `key==value` / matchLabels: the label is present with that value.
    Equals,
    /// `key!=value`: the label is absent or has another value.
    NotEquals,
    /// `key in (a,b)`: the label is present with one of the values.
    In,
    /// `key notin (a,b)`: the label is absent or has none of the values.
    NotIn,
    /// `key`: the label is present.
    Exists,
    /// `!key`: the label is absent.
    DoesNotExist,
    /// `key>N`: the label is present and its integer value is greater than N.
    GreaterThan,
    /// `key<N`: the label is present and its integer value is less than N.
    LessThan,
}

/// One requirement of a label selector: a key, an operator and its values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Requirement {
    pub(super) key: String,
    operator: Operator,
    values: BTreeSet<String>,
}

impl Requirement {
    /// Builds a requirement, validating the key, the values and their count the way
    /// apimachinery `labels.NewRequirement` does; the error is the aggregated field errors'
    /// text, e.g. `key: Invalid value: "-a": name part must consist of …`.
    pub(super) fn new(key: &str, operator: Operator, values: Vec<String>) -> Result<Self, String> {
        let mut errors = Vec::new();
        if let Some(error) = label_key_error(key, "key") {
            errors.push(error);
        }
        let count = values.len();
        let wrong_count = match operator {
            Operator::In | Operator::NotIn => {
                (count == 0).then_some("for 'in', 'notin' operators, values set can't be empty")
            }
            Operator::Equals | Operator::NotEquals => {
                (count != 1).then_some("exact-match compatibility requires one single value")
            }
            Operator::Exists | Operator::DoesNotExist => {
                (count != 0).then_some("values set must be empty for exists and does not exist")
            }
            Operator::GreaterThan | Operator::LessThan => {
                (count != 1).then_some("for 'Gt', 'Lt' operators, exactly one value is required")
            }
        };
        if let Some(reason) = wrong_count {
            errors.push(format!(
                "values: Invalid value: {}: {reason}",
                go_string_slice(&values)
            ));
        }
        if matches!(operator, Operator::GreaterThan | Operator::LessThan) {
            for (index, value) in values.iter().enumerate() {
                if value.parse::<i64>().is_err() {
                    errors.push(format!(
                        "values[{index}]: Invalid value: {value:?}: for 'Gt', 'Lt' operators, the value must be an integer"
                    ));
                }
            }
        }
        for (index, value) in values.iter().enumerate() {
            let problems = label_value_problems(value);
            if !problems.is_empty() {
                errors.push(format!(
                    "values[{index}][{key}]: Invalid value: {value:?}: {}",
                    problems.join("; ")
                ));
            }
        }
        match errors.len() {
            0 => Ok(Requirement {
                key: key.to_string(),
                operator,
                values: values.into_iter().collect(),
            }),
            1 => Err(errors.remove(0)),
            _ => Err(format!("[{}]", errors.join(", "))),
        }
    }

    /// Whether a labels map satisfies this requirement (apimachinery `Requirement.Matches`).
    fn matches(&self, labels: &Map<String, Value>) -> bool {
        let value = labels
            .get(&self.key)
            .map(|v| v.as_str().unwrap_or_default());
        match self.operator {
            Operator::Equals | Operator::In => value.is_some_and(|v| self.values.contains(v)),
            Operator::NotEquals | Operator::NotIn => {
                !value.is_some_and(|v| self.values.contains(v))
            }
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
            Operator::GreaterThan | Operator::LessThan => {
                let (Some(actual), Some(bound)) = (
                    value.and_then(|v| v.parse::<i64>().ok()),
                    self.values.first().and_then(|v| v.parse::<i64>().ok()),
                ) else {
                    return false;
                };
                if self.operator == Operator::GreaterThan {
                    actual > bound
                } else {
                    actual < bound
                }
            }
        }
    }
}

/// A parsed label selector: a conjunction of [`Requirement`]s. The empty selector matches
/// every object; [`LabelSelector::nothing`] (a null `LabelSelector` object) matches none.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LabelSelector {
    pub(super) requirements: Vec<Requirement>,
    pub(super) nothing: bool,
}

/// The canonical text of a requirement (apimachinery `Requirement.String`): `key=value`,
/// `key!=value`, `key in (a,b)`, `key notin (a)`, `key`, `!key`, `key>1`, `key<1`; set
/// values sorted.
impl std::fmt::Display for Requirement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let values = self.values.iter().cloned().collect::<Vec<_>>().join(",");
        let key = &self.key;
        match self.operator {
            Operator::Equals => write!(f, "{key}={values}"),
            Operator::NotEquals => write!(f, "{key}!={values}"),
            Operator::In => write!(f, "{key} in ({values})"),
            Operator::NotIn => write!(f, "{key} notin ({values})"),
            Operator::Exists => write!(f, "{key}"),
            Operator::DoesNotExist => write!(f, "!{key}"),
            Operator::GreaterThan => write!(f, "{key}>{values}"),
            Operator::LessThan => write!(f, "{key}<{values}"),
        }
    }
}

/// The canonical text of a selector (apimachinery `Selector.String`): its requirements
/// sorted by key and comma-joined, e.g. `app=web,tier in (a,b)`; "" for the empty and the
/// nothing selector. This is what the `scale` subresource reports as `status.selector`.
impl std::fmt::Display for LabelSelector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.nothing {
            return Ok(());
        }
        for (index, requirement) in self.requirements.iter().enumerate() {
            if index > 0 {
                f.write_str(",")?;
            }
            write!(f, "{requirement}")?;
        }
        Ok(())
    }
}

impl LabelSelector {
    /// The selector that matches no object (what a null `LabelSelector` means).
    pub fn nothing() -> Self {
        LabelSelector {
            requirements: Vec::new(),
            nothing: true,
        }
    }

    /// Builds a selector from a `LabelSelector` object (`matchLabels`, `matchExpressions`
    /// with In/NotIn/Exists/DoesNotExist). JSON `null` yields [`LabelSelector::nothing`];
    /// `{}` matches everything.
    pub fn from_object(object: &Value) -> Result<Self, SelectorError> {
        let object = match object {
            Value::Null => return Ok(Self::nothing()),
            Value::Object(map) => map,
            _ => return Err(object_error("a label selector must be an object")),
        };
        let mut requirements = Vec::new();
        match object.get("matchLabels") {
            None | Some(Value::Null) => {}
            Some(Value::Object(labels)) => {
                for (key, value) in labels {
                    let value = value.as_str().ok_or_else(|| {
                        object_error(&format!("matchLabels[{key}]: must be a string"))
                    })?;
                    requirements.push(
                        Requirement::new(key, Operator::Equals, vec![value.to_string()])
                            .map_err(SelectorError::LabelSelectorObject)?,
                    );
                }
            }
            Some(_) => return Err(object_error("matchLabels: must be a map of strings")),
        }
        match object.get("matchExpressions") {
            None | Some(Value::Null) => {}
            Some(Value::Array(expressions)) => {
                for (index, expression) in expressions.iter().enumerate() {
                    requirements.push(expression_requirement(index, expression)?);
                }
            }
            Some(_) => return Err(object_error("matchExpressions: must be a list")),
        }
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(LabelSelector {
            requirements,
            nothing: false,
        })
    }

    /// Whether the selector matches everything (no requirements, not [`LabelSelector::nothing`]).
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty() && !self.nothing
    }

    /// Whether a labels map (`metadata.labels`) satisfies every requirement.
    pub fn matches(&self, labels: &Map<String, Value>) -> bool {
        !self.nothing && self.requirements.iter().all(|r| r.matches(labels))
    }

    /// Whether an object's `metadata.labels` (absent means no labels) satisfy the selector.
    pub fn matches_object(&self, object: &Value) -> bool {
        static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
        let labels = object
            .pointer("/metadata/labels")
            .and_then(Value::as_object)
            .unwrap_or_else(|| EMPTY.get_or_init(Map::new));
        self.matches(labels)
    }
}

fn object_error(message: &str) -> SelectorError {
    SelectorError::LabelSelectorObject(message.to_string())
}

/// Converts one `matchExpressions[index]` entry to a requirement.
fn expression_requirement(index: usize, expression: &Value) -> Result<Requirement, SelectorError> {
    let at = format!("matchExpressions[{index}]");
    let key = expression
        .get("key")
        .and_then(Value::as_str)
        .ok_or_else(|| object_error(&format!("{at}.key: must be a string")))?;
    let operator = match expression.get("operator").and_then(Value::as_str) {
        Some("In") => Operator::In,
        Some("NotIn") => Operator::NotIn,
        Some("Exists") => Operator::Exists,
        Some("DoesNotExist") => Operator::DoesNotExist,
        Some(other) => {
            return Err(object_error(&format!(
                "{at}.operator: {other:?} is not a valid label selector operator"
            )));
        }
        None => return Err(object_error(&format!("{at}.operator: must be a string"))),
    };
    let values = match expression.get("values") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(values)) => values
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| object_error(&format!("{at}.values: must be strings")))
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(object_error(&format!("{at}.values: must be a list"))),
    };
    Requirement::new(key, operator, values).map_err(SelectorError::LabelSelectorObject)
}
