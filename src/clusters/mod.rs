//! Registered remote clusters: sealing of kubeconfigs, their validation, connection and probing,
//! the client cache, resolution of App destinations with the namespace allowlist, and the
//! per-cluster request throttles.

pub mod access;
pub mod allowlist;
pub mod bootstrap;
pub mod cache;
pub mod cluster_resources;
pub mod connect;
pub mod declared;
pub mod expiry;
pub mod kubeconfig;
pub mod probes;
pub mod proxy;
pub mod rbac;
pub mod registry;
pub mod resolve;
pub mod status;

pub mod throttle;
pub mod transport;
