//! The cluster shell (`cluster.shell`): people reach a registered cluster through wardn, which
//! forwards their Kubernetes API requests with the cluster's sealed credentials, so they never
//! hold them. This module holds what the HTTP handlers (`server/shell.rs`) build on: the
//! checks of forwarded paths against the namespace allowlist, the open sessions, the command
//! box's language and what it shows, resource discovery, and Kubernetes `Status` answers.

pub mod command;
pub mod discover;
pub mod path;
pub mod render;
pub mod sessions;
pub mod status;
