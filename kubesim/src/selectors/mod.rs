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
//!
//! The modules: `error` ([`SelectorError`]), `labels` (label requirements and
//! [`LabelSelector`], also from a `LabelSelector` object), `validation` (label keys and
//! values), `parser` (the tokenizer and parser of the query-string form) and `fields`
//! ([`FieldSelector`] and the supported field labels).

mod error;
mod fields;
mod labels;
mod parser;
#[cfg(test)]
mod tests;
mod validation;

pub use error::SelectorError;
pub use fields::{FieldOperator, FieldRequirement, FieldSelector, supported_field_labels};
pub use labels::LabelSelector;
