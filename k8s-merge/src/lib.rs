//! Kubernetes merge semantics, shared by wardn's renderer and kubesim: the v1.32 API schema
//! facts (list types, merge keys, patch strategies), JSON patch (RFC 6902), JSON merge patch
//! (RFC 7386), strategic merge patch as the API server applies it, and server-side apply field
//! ownership (structured-merge-diff). Pure functions over `serde_json::Value`: no I/O, no async.

mod error;
mod json_patch;
mod merge_patch;
mod schema;
mod strategic;
#[cfg(test)]
mod testgen;
mod value;

pub use error::PatchError;
pub use json_patch::json_patch;
pub use merge_patch::json_merge_patch;
pub use schema::{KindEntry, ListType, PatchStrategy, Schema, TypeRef, is_builtin};
pub use strategic::{ListOrder, strategic_merge_patch, strategic_merge_patch_with_order};
