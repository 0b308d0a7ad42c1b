//! The error of selector parsing, [`SelectorError`], worded as apimachinery words it.

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
