//! Command-line entry points of the registry's subcommands (`serve`, `login`, `tokens`,
//! `clusters`, `audit`, `repos`, `apps`, `users`, `validate`, `generate`); `src/main.rs` only dispatches here.

pub mod apps;
pub mod client;
pub mod cluster_apps;
pub mod commands;
pub mod generate;
pub mod git_args;
pub mod offline;
pub mod promotions;
pub mod repos;
pub mod serve;
pub mod shell;
pub mod table;
pub mod users;
pub mod validate;
