//! Kubernetes merge semantics, shared by wardn's renderer and kubesim: the v1.32 API schema
//! facts (list types, merge keys, patch strategies), JSON patch (RFC 6902), JSON merge patch
//! (RFC 7386), strategic merge patch as the API server applies it, and server-side apply field
//! ownership (structured-merge-diff v4). Pure functions over `serde_json::Value`: no I/O, no
//! async.
//!
//! - [`Schema::builtin`] gives the type of a built-in kind ([`Schema::kind_type`]); `None` means
//!   a custom resource, for which every function falls back to untyped semantics (maps merge key
//!   by key, lists are replaced whole).
//! - [`strategic_merge_patch`] orders merged lists as the brief of this crate asks (original
//!   order, new items appended); [`strategic_merge_patch_with_order`] gives the API server's
//!   order ([`ListOrder::Server`], checked against `kubectl patch --local`) and kustomize's
//!   ([`ListOrder::Kustomize`], checked against `kubectl kustomize`).
//! - [`ssa::apply`] and [`ssa::record_update`] maintain `metadata.managedFields`.
//!
//! ```
//! use k8s_merge::{ListOrder, Schema, strategic_merge_patch_with_order};
//! use serde_json::json;
//!
//! let ty = Schema::builtin().kind_type("apps/v1", "Deployment");
//! let live = json!({"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "a:1"}]}}}});
//! let patch = json!({"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "a:2"}]}}}});
//! let out = strategic_merge_patch_with_order(&live, &patch, ty, ListOrder::Server).unwrap();
//! assert_eq!(out["spec"]["template"]["spec"]["containers"][0]["image"], "a:2");
//!
//! let applied = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "v"}});
//! let cm = Schema::builtin().kind_type("v1", "ConfigMap");
//! let created = k8s_merge::ssa::apply(None, &applied, "kubectl", false, cm, "2026-01-01T00:00:00Z").unwrap();
//! assert_eq!(created["metadata"]["managedFields"][0]["fieldsV1"], json!({"f:data": {"f:k": {}}}));
//! ```

mod error;
mod json_patch;
mod merge_patch;
#[cfg(test)]
mod robustness;
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
pub mod ssa;
