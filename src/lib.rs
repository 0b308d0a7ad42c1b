//! wardn: a GitOps reconciler daemon that deploys applications from Git to many Kubernetes
//! clusters from one control plane. The binary (`src/main.rs`) is a thin CLI over these modules.

pub mod app;
pub mod apply;
pub mod backoff;
pub mod cli;
pub mod clusters;
pub mod daemon;
pub mod diff;
pub mod kube_error;
pub mod notify;
pub mod object;
pub mod reconcile;
pub mod redact;
pub mod render;
pub mod seal;
pub mod server;
pub mod server_link;
pub mod shard;
pub mod shell;
pub mod sources;
pub mod store;
pub mod telemetry;
#[cfg(test)]
mod test_rng;
pub mod text_table;
pub mod time;
