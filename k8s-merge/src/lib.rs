//! Kubernetes merge semantics, shared by wardn's renderer and kubesim.
