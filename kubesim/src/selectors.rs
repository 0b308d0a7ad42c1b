//! Label and field selectors, as the Kubernetes API server parses and applies them.
//!
//! * Label selectors in their query-string form (`?labelSelector=`), with the grammar of
//!   apimachinery `pkg/labels/selector.go`: `a=b`, `a==b`, `a!=b`, `a in (x,y)`,
//!   `a notin (x)`, `a` (exists), `!a` (does not exist), `a>1` / `a<1` (integer comparison),
//!   comma-joined into a conjunction.
//! * Label selectors from a `LabelSelector` object (`matchLabels` / `matchExpressions`), as
//!   workloads, PodDisruptionBudgets and ClusterRole aggregation rules carry them
//!   (apimachinery `metav1.LabelSelectorAsSelector`).
//! * Field selectors (`?fieldSelector=`), with the grammar of apimachinery
//!   `pkg/fields/selector.go` (`=`, `==`, `!=`, backslash escapes) and the per-kind field
//!   labels the API server accepts (every kind: `metadata.name`, `metadata.namespace`; a few
//!   kinds add their own, see [`supported_field_labels`]). Any other field is rejected with
//!   the server's own wording, `field label not supported: spec.foo`.
//!
//! Errors name the offending selector part; the server turns them into 400 BadRequest.

use std::collections::BTreeSet;

use serde_json::{Map, Value};
use thiserror::Error;

/// Why a label or field selector was rejected; the server reports it as 400 BadRequest.
/// Messages are worded as apimachinery words them.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SelectorError {
    /// A label selector string does not follow the grammar or one of its requirements is
    /// invalid, e.g. `unable to parse requirement: found 'b' expected: '('` or
    /// `found '=', expected: ',' or 'end of string'`.
    #[error("{0}")]
    Label(String),
    /// A `LabelSelector` object is malformed: wrong JSON types, an unknown operator, or an
    /// invalid requirement (e.g. `values: Invalid value: []string{}: for 'in', 'notin'
    /// operators, values set can't be empty`).
    #[error("{0}")]
    LabelSelectorObject(String),
    /// A field selector term has no `=`, `==` or `!=` operator.
    #[error("invalid selector: '{0}'; can't understand '{1}'")]
    FieldSyntax(String, String),
    /// A field selector value has a bad escape or an unescaped `=` or `,`.
    #[error("{0}")]
    FieldValue(String),
    /// A field selector names a field the API server does not index for that kind.
    #[error("field label not supported: {0}")]
    FieldNotSupported(String),
}

/// A label selector operator (apimachinery `selection.Operator`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Operator {
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
struct Requirement {
    key: String,
    operator: Operator,
    values: BTreeSet<String>,
}

impl Requirement {
    /// Builds a requirement, validating the key, the values and their count the way
    /// apimachinery `labels.NewRequirement` does; the error is the aggregated field errors'
    /// text, e.g. `key: Invalid value: "-a": name part must consist of …`.
    fn new(key: &str, operator: Operator, values: Vec<String>) -> Result<Self, String> {
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
    requirements: Vec<Requirement>,
    nothing: bool,
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

    /// Parses the query-string form (`?labelSelector=`), e.g. `app=web,tier in (a,b),!canary`.
    pub fn parse(selector: &str) -> Result<Self, SelectorError> {
        Parser::new(selector).parse()
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

/// Formats strings as Go's `%#v` prints a `[]string`, as field errors show bad values.
fn go_string_slice(values: &[String]) -> String {
    let quoted: Vec<String> = values.iter().map(|v| format!("{v:?}")).collect();
    format!("[]string{{{}}}", quoted.join(", "))
}

/// apimachinery `validation.RegexError`: the message, examples and the regex.
fn regex_error(message: &str, regex: &str, examples: &[&str]) -> String {
    let examples: Vec<String> = examples.iter().map(|e| format!("'{e}', ")).collect();
    format!(
        "{message} (e.g. {}regex used for validation is '{regex}')",
        examples.join(" or ")
    )
}

const QUALIFIED_NAME_MESSAGE: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const QUALIFIED_NAME_REGEX: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";

/// The problems of a label key (apimachinery `validation.IsQualifiedName`): an optional
/// DNS-subdomain prefix and `/`, then a name of at most 63 characters.
fn label_key_problems(key: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let parts: Vec<&str> = key.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                problems.push("prefix part must be non-empty".to_string());
            } else {
                if prefix.len() > 253 {
                    problems.push("prefix part must be no more than 253 characters".to_string());
                }
                if !is_dns_subdomain(prefix) {
                    problems.push(format!(
                        "prefix part {}",
                        regex_error(
                            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
                            r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*",
                            &["example.com"],
                        )
                    ));
                }
            }
            *name
        }
        _ => {
            problems.push(format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(QUALIFIED_NAME_MESSAGE, QUALIFIED_NAME_REGEX, &["MyName", "my.name", "123-abc"])
            ));
            return problems;
        }
    };
    if name.is_empty() {
        problems.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        problems.push("name part must be no more than 63 characters".to_string());
    }
    if !is_qualified_name_part(name) {
        problems.push(format!(
            "name part {}",
            regex_error(
                QUALIFIED_NAME_MESSAGE,
                QUALIFIED_NAME_REGEX,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    problems
}

/// The field error for an invalid label key at `path` ("" in the string parser, `key` in
/// `NewRequirement`), or None when the key is valid.
fn label_key_error(key: &str, path: &str) -> Option<String> {
    let problems = label_key_problems(key);
    (!problems.is_empty())
        .then(|| format!("{path}: Invalid value: {key:?}: {}", problems.join("; ")))
}

/// The problems of a label value (apimachinery `validation.IsValidLabelValue`).
fn label_value_problems(value: &str) -> Vec<String> {
    let mut problems = Vec::new();
    if value.len() > 63 {
        problems.push("must be no more than 63 characters".to_string());
    }
    if !value.is_empty() && !is_qualified_name_part(value) {
        problems.push(regex_error(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
            "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?",
            &["MyValue", "my_value", "12345"],
        ));
    }
    problems
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`
fn is_qualified_name_part(text: &str) -> bool {
    let bytes = text.as_bytes();
    let (Some(first), Some(last)) = (bytes.first(), bytes.last()) else {
        return false;
    };
    first.is_ascii_alphanumeric()
        && last.is_ascii_alphanumeric()
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// A lowercase RFC 1123 subdomain: dot-separated labels of `[a-z0-9]([-a-z0-9]*[a-z0-9])?`.
fn is_dns_subdomain(text: &str) -> bool {
    text.split('.').all(|label| {
        let bytes = label.as_bytes();
        match (bytes.first(), bytes.last()) {
            (Some(first), Some(last)) => {
                (first.is_ascii_lowercase() || first.is_ascii_digit())
                    && (last.is_ascii_lowercase() || last.is_ascii_digit())
                    && bytes
                        .iter()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
            }
            _ => false,
        }
    })
}

/// A token of the label selector lexer (apimachinery `labels.Token`).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Identifier(String),
    Bang,
    Equals,
    DoubleEquals,
    NotEquals,
    GreaterThan,
    LessThan,
    OpenParen,
    CloseParen,
    Comma,
    In,
    NotIn,
    End,
}

impl Token {
    /// The literal text, as apimachinery quotes it in `found '…'` messages.
    fn literal(&self) -> &str {
        match self {
            Token::Identifier(text) => text,
            Token::Bang => "!",
            Token::Equals => "=",
            Token::DoubleEquals => "==",
            Token::NotEquals => "!=",
            Token::GreaterThan => ">",
            Token::LessThan => "<",
            Token::OpenParen => "(",
            Token::CloseParen => ")",
            Token::Comma => ",",
            Token::In => "in",
            Token::NotIn => "notin",
            Token::End => "",
        }
    }
}

/// Whether a byte ends an identifier (apimachinery's whitespace and special symbols).
fn is_special(c: char) -> bool {
    matches!(
        c,
        ' ' | '\t' | '\r' | '\n' | '!' | '=' | '(' | ')' | ',' | '<' | '>'
    )
}

/// Splits a label selector string into tokens.
fn tokenize(input: &str) -> Vec<Token> {
    let mut tokens = Vec::new();
    let mut chars = input.char_indices().peekable();
    while let Some((start, c)) = chars.next() {
        let next_is_eq = chars.peek().is_some_and(|(_, n)| *n == '=');
        let token = match c {
            ' ' | '\t' | '\r' | '\n' => continue,
            '!' if next_is_eq => {
                chars.next();
                Token::NotEquals
            }
            '!' => Token::Bang,
            '=' if next_is_eq => {
                chars.next();
                Token::DoubleEquals
            }
            '=' => Token::Equals,
            '>' => Token::GreaterThan,
            '<' => Token::LessThan,
            '(' => Token::OpenParen,
            ')' => Token::CloseParen,
            ',' => Token::Comma,
            _ => {
                let mut end = start + c.len_utf8();
                while let Some((index, next)) = chars.peek().copied() {
                    if is_special(next) {
                        break;
                    }
                    end = index + next.len_utf8();
                    chars.next();
                }
                match &input[start..end] {
                    "in" => Token::In,
                    "notin" => Token::NotIn,
                    word => Token::Identifier(word.to_string()),
                }
            }
        };
        tokens.push(token);
    }
    tokens
}

/// A recursive-descent parser over the tokens (apimachinery `labels.Parser`).
struct Parser {
    tokens: Vec<Token>,
    position: usize,
}

/// `found 'LITERAL', expected: WHAT`.
fn found(token: &Token, expected: &str) -> String {
    format!("found '{}', expected: {expected}", token.literal())
}

impl Token {
    /// The identifier this token stands for where a key or value is expected: `in` and
    /// `notin` are plain words there (apimachinery's `Values` parser context).
    fn as_word(&self) -> Option<&str> {
        match self {
            Token::Identifier(word) => Some(word),
            Token::In => Some("in"),
            Token::NotIn => Some("notin"),
            _ => None,
        }
    }
}

impl Parser {
    fn new(input: &str) -> Self {
        Parser {
            tokens: tokenize(input),
            position: 0,
        }
    }

    fn peek(&self) -> &Token {
        self.tokens.get(self.position).unwrap_or(&Token::End)
    }

    fn next(&mut self) -> Token {
        let token = self.peek().clone();
        self.position += 1;
        token
    }

    fn parse(mut self) -> Result<LabelSelector, SelectorError> {
        let mut requirements = Vec::new();
        loop {
            let token = self.peek();
            if token.as_word().is_some() || *token == Token::Bang {
                let requirement = self.parse_requirement().map_err(|error| {
                    SelectorError::Label(format!("unable to parse requirement: {error}"))
                })?;
                requirements.push(requirement);
                match self.next() {
                    Token::End => break,
                    Token::Comma => {
                        let after = self.peek();
                        if after.as_word().is_none() && *after != Token::Bang {
                            return Err(SelectorError::Label(found(after, "identifier after ','")));
                        }
                    }
                    other => {
                        return Err(SelectorError::Label(found(
                            &other,
                            "',' or 'end of string'",
                        )));
                    }
                }
            } else if *token == Token::End {
                break;
            } else {
                return Err(SelectorError::Label(found(
                    token,
                    "!, identifier, or 'end of string'",
                )));
            }
        }
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(LabelSelector {
            requirements,
            nothing: false,
        })
    }

    fn parse_requirement(&mut self) -> Result<Requirement, String> {
        let mut token = self.next();
        let negated = token == Token::Bang;
        if negated {
            token = self.next();
        }
        let Some(key) = token.as_word().map(str::to_string) else {
            return Err(found(&token, "identifier"));
        };
        if let Some(error) = label_key_error(&key, "") {
            return Err(error);
        }
        if negated {
            return Requirement::new(&key, Operator::DoesNotExist, Vec::new());
        }
        if matches!(self.peek(), Token::End | Token::Comma) {
            return Requirement::new(&key, Operator::Exists, Vec::new());
        }
        let operator = match self.next() {
            Token::Equals | Token::DoubleEquals => Operator::Equals,
            Token::NotEquals => Operator::NotEquals,
            Token::In => Operator::In,
            Token::NotIn => Operator::NotIn,
            Token::GreaterThan => Operator::GreaterThan,
            Token::LessThan => Operator::LessThan,
            other => return Err(found(&other, "in, notin, =, ==, !=, gt, lt")),
        };
        let values = if matches!(operator, Operator::In | Operator::NotIn) {
            self.parse_value_set()?
        } else {
            vec![self.parse_exact_value()?]
        };
        Requirement::new(&key, operator, values)
    }

    /// `(a,b,c)`; empty members (`()`, `(a,)`, `(,a)`) stand for the empty value.
    fn parse_value_set(&mut self) -> Result<Vec<String>, String> {
        let open = self.next();
        if open != Token::OpenParen {
            return Err(format!("found '{}' expected: '('", open.literal()));
        }
        let first = self.peek().clone();
        if first == Token::CloseParen {
            self.next();
            return Ok(vec![String::new()]);
        }
        if first.as_word().is_none() && first != Token::Comma {
            return Err(found(&first, "',', ')' or identifier"));
        }
        let mut values = Vec::new();
        loop {
            let token = self.next();
            if let Some(word) = token.as_word() {
                values.push(word.to_string());
                match self.peek() {
                    Token::Comma => continue,
                    Token::CloseParen => {
                        self.next();
                        break;
                    }
                    other => return Err(found(other, "',' or ')'")),
                }
            } else if token == Token::Comma {
                if values.is_empty() {
                    values.push(String::new());
                }
                match self.peek() {
                    Token::CloseParen => {
                        values.push(String::new());
                        self.next();
                        break;
                    }
                    Token::Comma => values.push(String::new()),
                    _ => {}
                }
            } else {
                return Err(found(&token, "',', or identifier"));
            }
        }
        values.sort();
        values.dedup();
        Ok(values)
    }

    /// The value after `=`, `==`, `!=`, `>` or `<`; absent (`a=`) means the empty value.
    fn parse_exact_value(&mut self) -> Result<String, String> {
        if matches!(self.peek(), Token::End | Token::Comma) {
            return Ok(String::new());
        }
        let token = self.next();
        token
            .as_word()
            .map(str::to_string)
            .ok_or_else(|| found(&token, "identifier"))
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn labels(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    fn matches(selector: &str, value: Value) -> bool {
        LabelSelector::parse(selector)
            .unwrap()
            .matches(&labels(value))
    }

    #[test]
    fn equality_forms() {
        let l = json!({"app": "web", "tier": "front"});
        assert!(matches("app=web", l.clone()));
        assert!(matches("app==web", l.clone()));
        assert!(matches(" app = web ", l.clone()));
        assert!(!matches("app=db", l.clone()));
        assert!(matches("app!=db", l.clone()));
        assert!(!matches("app!=web", l.clone()));
        assert!(matches("missing!=x", l.clone()), "!= matches absent keys");
        assert!(matches("app=web,tier=front", l.clone()));
        assert!(!matches("app=web,tier=back", l));
    }

    #[test]
    fn set_forms() {
        let l = json!({"env": "prod"});
        assert!(matches("env in (prod,staging)", l.clone()));
        assert!(matches("env in (staging, prod)", l.clone()));
        assert!(!matches("env in (dev)", l.clone()));
        assert!(matches("env notin (dev)", l.clone()));
        assert!(!matches("env notin (prod)", l.clone()));
        assert!(matches("other notin (prod)", l.clone()));
        assert!(!matches("other in (prod)", l));
    }

    #[test]
    fn existence_forms() {
        let l = json!({"canary": ""});
        assert!(matches("canary", l.clone()));
        assert!(!matches("!canary", l.clone()));
        assert!(matches("!stable", l.clone()));
        assert!(!matches("stable", l.clone()));
        assert!(matches("canary=", l.clone()), "a=  selects the empty value");
        assert!(
            matches("canary in ()", l.clone()),
            "() holds the empty value"
        );
        assert!(matches("!stable,canary", l));
    }

    #[test]
    fn integer_comparisons() {
        let l = json!({"rank": "5"});
        assert!(matches("rank>3", l.clone()));
        assert!(!matches("rank>5", l.clone()));
        assert!(matches("rank<6", l.clone()));
        assert!(!matches("absent<6", l));
        assert!(LabelSelector::parse("rank>x").is_err());
    }

    #[test]
    fn empty_selector_matches_everything() {
        let selector = LabelSelector::parse("").unwrap();
        assert!(selector.is_empty());
        assert!(selector.matches(&Map::new()));
        assert!(selector.matches_object(&json!({"metadata": {"name": "x"}})));
    }

    #[test]
    fn prefixed_keys() {
        assert!(matches(
            "app.kubernetes.io/name=web",
            json!({"app.kubernetes.io/name": "web"})
        ));
    }

    #[test]
    fn syntax_errors_are_worded_as_apimachinery() {
        let err = |s: &str| LabelSelector::parse(s).unwrap_err().to_string();
        assert_eq!(
            err("a in b"),
            "unable to parse requirement: found 'b' expected: '('"
        );
        assert_eq!(err("a,"), "found '', expected: identifier after ','");
        assert_eq!(err("!a=b"), "found '=', expected: ',' or 'end of string'");
        assert_eq!(
            err("a b"),
            "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"
        );
        assert_eq!(
            err("=a"),
            "found '=', expected: !, identifier, or 'end of string'"
        );
        assert_eq!(
            err("!"),
            "unable to parse requirement: found '', expected: identifier"
        );
        assert_eq!(
            err("a in (x"),
            "unable to parse requirement: found '', expected: ',' or ')'"
        );
        assert_eq!(
            err("a in (x=)"),
            "unable to parse requirement: found '=', expected: ',' or ')'"
        );
        assert_eq!(
            err("a in )"),
            "unable to parse requirement: found ')' expected: '('"
        );
        assert_eq!(err("a=b c"), "found 'c', expected: ',' or 'end of string'");
        assert_eq!(
            err("a=(b)"),
            "unable to parse requirement: found '(', expected: identifier"
        );
    }

    #[test]
    fn keywords_are_words_where_keys_and_values_are_expected() {
        assert!(matches("in", json!({"in": "x"})));
        assert!(matches("a in (in,notin)", json!({"a": "notin"})));
        assert!(matches("notin=in", json!({"notin": "in"})));
    }

    #[test]
    fn empty_members_of_value_sets() {
        assert!(matches("a in (,x)", json!({"a": ""})));
        assert!(matches("a in (x,)", json!({"a": ""})));
        assert!(matches("a in (x,,y)", json!({"a": ""})));
        assert!(!matches("a in (x,y)", json!({"a": ""})));
    }

    #[test]
    fn invalid_keys_and_values() {
        let err = |s: &str| LabelSelector::parse(s).unwrap_err().to_string();
        assert_eq!(
            err("-a=b"),
            "unable to parse requirement: : Invalid value: \"-a\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
        );
        assert_eq!(
            err("a=-x"),
            "unable to parse requirement: values[0][a]: Invalid value: \"-x\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
        );
        assert!(err("Bad_Prefix/a=b").contains(
            ": Invalid value: \"Bad_Prefix/a\": prefix part a lowercase RFC 1123 subdomain"
        ));
        assert!(err("/a").contains("prefix part must be non-empty"));
        assert!(err("a/b/c").contains("a qualified name must consist of"));
        assert!(
            err(&format!("{}=b", "k".repeat(64)))
                .contains("name part must be no more than 63 characters")
        );
        assert_eq!(
            err("a>x"),
            "unable to parse requirement: values[0]: Invalid value: \"x\": for 'Gt', 'Lt' operators, the value must be an integer"
        );
    }

    #[test]
    fn label_selector_objects() {
        let selector = LabelSelector::from_object(&json!({
            "matchLabels": {"app": "web"},
            "matchExpressions": [
                {"key": "env", "operator": "In", "values": ["prod", "staging"]},
                {"key": "canary", "operator": "DoesNotExist"},
                {"key": "tier", "operator": "Exists"},
                {"key": "zone", "operator": "NotIn", "values": ["b"]}
            ]
        }))
        .unwrap();
        assert!(selector.matches(&labels(
            json!({"app": "web", "env": "prod", "tier": "x", "zone": "a"})
        )));
        assert!(!selector.matches(&labels(
            json!({"app": "web", "env": "prod", "tier": "x", "canary": "1"})
        )));
        assert!(!selector.matches(&labels(json!({"app": "web", "env": "dev", "tier": "x"}))));
        assert!(!selector.matches(&labels(json!({"app": "web", "env": "prod"}))));
        assert!(!selector.matches(&labels(
            json!({"app": "web", "env": "prod", "tier": "x", "zone": "b"})
        )));
    }

    #[test]
    fn canonical_text() {
        let parsed =
            LabelSelector::parse("tier in (b, a),app==web,!canary,x notin (z),y,n>1,m<9,e!=f")
                .unwrap();
        assert_eq!(
            parsed.to_string(),
            "app=web,!canary,e!=f,m<9,n>1,tier in (a,b),x notin (z),y"
        );
        assert_eq!(
            LabelSelector::parse(&parsed.to_string()).unwrap(),
            parsed,
            "round trip"
        );
        let object = LabelSelector::from_object(&json!({"matchLabels": {"b": "2", "a": "1"},
            "matchExpressions": [{"key": "c", "operator": "Exists"}]}))
        .unwrap();
        assert_eq!(object.to_string(), "a=1,b=2,c");
        assert_eq!(LabelSelector::default().to_string(), "");
        assert_eq!(LabelSelector::nothing().to_string(), "");
    }

    #[test]
    fn null_and_empty_label_selector_objects() {
        assert!(
            !LabelSelector::from_object(&Value::Null)
                .unwrap()
                .matches(&Map::new())
        );
        assert!(
            LabelSelector::from_object(&json!({}))
                .unwrap()
                .matches(&Map::new())
        );
    }

    #[test]
    fn bad_label_selector_objects() {
        let err = |v: Value| LabelSelector::from_object(&v).unwrap_err().to_string();
        assert_eq!(
            err(json!({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]})),
            "matchExpressions[0].operator: \"Gt\" is not a valid label selector operator"
        );
        assert_eq!(
            err(json!({"matchExpressions": [{"key": "a", "operator": "In"}]})),
            "values: Invalid value: []string{}: for 'in', 'notin' operators, values set can't be empty"
        );
        assert_eq!(
            err(json!({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]})),
            "values: Invalid value: []string{\"x\"}: values set must be empty for exists and does not exist"
        );
        assert!(
            err(json!({"matchLabels": {"-a": "b"}}))
                .starts_with("key: Invalid value: \"-a\": name part")
        );
        assert_eq!(
            err(json!({"matchLabels": {"a": "-b", "-c": "d"}}))
                .matches("Invalid value")
                .count(),
            1,
            "the first invalid requirement is reported"
        );
        assert!(err(json!({"matchLabels": {"a": 1}})).contains("matchLabels[a]"));
        assert!(err(json!("app=web")).contains("must be an object"));
    }

    #[test]
    fn field_selectors_on_metadata() {
        let object = json!({"metadata": {"name": "web", "namespace": "prod"}});
        let parse = |s: &str| FieldSelector::parse(s, "v1", "ConfigMap").unwrap();
        assert!(parse("metadata.name=web").matches(&object));
        assert!(parse("metadata.name==web").matches(&object));
        assert!(!parse("metadata.name!=web").matches(&object));
        assert!(parse("metadata.name=web,metadata.namespace=prod").matches(&object));
        assert!(!parse("metadata.name=web,metadata.namespace=dev").matches(&object));
        assert!(parse("metadata.namespace!=dev").matches(&object));
        assert!(parse("").matches(&object));
        let cluster_scoped = json!({"metadata": {"name": "n"}});
        assert!(parse("metadata.namespace=").matches(&cluster_scoped));
    }

    #[test]
    fn field_selector_escapes() {
        let object = json!({"metadata": {"name": "a,b=c"}});
        let selector = FieldSelector::parse(r"metadata.name=a\,b\=c", "v1", "Pod").unwrap();
        assert_eq!(selector.requirements()[0].value, "a,b=c");
        assert!(selector.matches(&object));
    }

    #[test]
    fn kind_specific_fields() {
        let pod = json!({"metadata": {"name": "p"}, "spec": {"nodeName": "n1"}, "status": {"phase": "Running"}});
        let selector =
            FieldSelector::parse("spec.nodeName=n1,status.phase!=Failed", "v1", "Pod").unwrap();
        assert!(selector.matches(&pod));
        let host = FieldSelector::parse("spec.hostNetwork=false", "v1", "Pod").unwrap();
        assert!(host.matches(&pod), "an absent boolean compares as false");
        let secret = json!({"metadata": {"name": "s"}, "type": "Opaque"});
        assert!(
            FieldSelector::parse("type=Opaque", "v1", "Secret")
                .unwrap()
                .matches(&secret)
        );
        let event = json!({"involvedObject": {"name": "web", "kind": "Deployment"}});
        assert!(
            FieldSelector::parse(
                "involvedObject.name=web,involvedObject.kind=Deployment",
                "v1",
                "Event"
            )
            .unwrap()
            .matches(&event)
        );
    }

    #[test]
    fn unsupported_fields_are_rejected_as_the_server_words_it() {
        let err = FieldSelector::parse("spec.foo=bar", "v1", "ConfigMap").unwrap_err();
        assert_eq!(err.to_string(), "field label not supported: spec.foo");
        let err = FieldSelector::parse("spec.nodeName=n", "apps/v1", "Deployment").unwrap_err();
        assert_eq!(err.to_string(), "field label not supported: spec.nodeName");
    }

    #[test]
    fn field_value_escapes_are_checked() {
        let err = |s: &str| {
            FieldSelector::parse(s, "v1", "Pod")
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            err(r"metadata.name=a\x"),
            r"invalid field selector: invalid escape sequence: \x"
        );
        assert_eq!(
            err(r"metadata.name=a\"),
            r"invalid field selector: invalid escape sequence: \"
        );
        assert_eq!(
            err("metadata.name==a=b"),
            "invalid field selector: unescaped character in value: 61"
        );
        assert_eq!(
            FieldSelector::parse(r"metadata.name=a\\b", "v1", "Pod")
                .unwrap()
                .requirements()[0]
                .value,
            r"a\b"
        );
    }

    #[test]
    fn syntax_errors_come_before_unsupported_fields() {
        let err = FieldSelector::parse("spec.foo=1,zzz", "v1", "ConfigMap").unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid selector: 'spec.foo=1,zzz'; can't understand 'zzz'"
        );
        let err = FieldSelector::parse("metadata.name =x", "v1", "ConfigMap").unwrap_err();
        assert_eq!(err.to_string(), "field label not supported: metadata.name ");
    }

    #[test]
    fn field_terms_without_operator_are_rejected() {
        let err = FieldSelector::parse("metadata.name", "v1", "Pod").unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid selector: 'metadata.name'; can't understand 'metadata.name'"
        );
    }
}
