//! Command-line entry points of the registry's subcommands (`serve`, `login`, `tokens`,
//! `clusters`, `audit`); `src/main.rs` only dispatches here.

pub mod client;
pub mod cluster_apps;
pub mod commands;
pub mod serve;
