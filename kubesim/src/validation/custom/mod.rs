//! Custom resources held to their CRD version's `openAPIV3Schema`, as the apiextensions
//! apiserver holds them: [`prune`] drops the fields the schema does not specify (decoding),
//! [`apply_defaults`] fills in `default`s and drops non-nullable nulls (defaulting), and
//! [`check`] validates the result: types, `required`, `enum`, bounds, patterns and sizes
//! (`openapi`), `x-kubernetes-list-type` set and map uniqueness (`lists`), then the
//! `x-kubernetes-validations` CEL rules (`cel`) when nothing else failed.
//!
//! `node` helpers read one schema node; every walk below keeps the API server's field paths
//! (`spec.items[0].name`, `spec.labels.key`).

mod cel;
mod defaulting;
mod lists;
mod node;
mod openapi;
mod prune;

use serde_json::Value;

use super::field::Errors;

pub use cel::compile_error;
pub use defaulting::apply_defaults;
pub use prune::prune;

/// Validates a custom resource (`old`: the stored object on update) against its version's
/// schema, appending field errors as kube-apiserver reports them.
pub fn check(schema: &Value, old: Option<&Value>, new: &Value, errs: &mut Errors) {
    let before = errs.len();
    openapi::validate_root(schema, new, errs);
    lists::validate(schema, new, "", errs);
    if errs.len() == before {
        cel::validate(schema, new, old, "", errs);
    }
}

/// `path.key` (or `key` at the root).
fn child(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}
