//! kubesim: a Kubernetes API emulator, the test and demo cluster for wardn.
//!
//! Start a cluster in-process with [`Cluster::start`], point kubectl or kube-rs at
//! [`Cluster::kubeconfig`], and read what they did with [`Cluster::get_object`].

mod api_services;
mod auth;
mod cluster;
mod config;
mod connections;
mod controller_events;
pub mod defaults;
mod discovery;
mod error;
mod event_versions;
mod faults;
mod handlers;
mod hooks;
mod hpa_versions;
pub mod kwok;
mod lifecycle;
mod names;
mod openapi;
mod openapi_v2;
pub mod protobuf;
mod quantity;
pub mod rbac;
mod reply;
mod resources;
mod sa_tokens;
pub mod selectors;
mod server;
mod sim;
mod state;
mod status;
mod store;
mod table;
mod tls;
mod tokens;
mod util;
mod validation;
mod versions;
pub mod write_log;

pub use cluster::Cluster;
pub use config::ClusterConfig;
pub use connections::Connections;
pub use error::Error;
pub use faults::Faults;
pub use tls::install_crypto_provider;
pub use tokens::Tokens;
pub use write_log::WriteRecord;
