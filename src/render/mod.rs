//! Rendering: a directory of a source snapshot → the ordered Kubernetes objects it declares,
//! with kustomize v5 semantics and byte-identical output.

pub mod tree;
