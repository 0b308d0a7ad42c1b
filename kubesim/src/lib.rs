//! kubesim: a Kubernetes API emulator, the test and demo cluster for wardn.

pub mod defaults;
pub mod kwok;
pub mod rbac;
pub mod selectors;
