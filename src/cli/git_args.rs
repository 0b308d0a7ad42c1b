//! `--git-ca-file` and `--git-timeout`: how wardn reaches Git remotes, shared by `serve` and the
//! commands that render Apps offline (`clusters validate|check|bootstrap --apps`,
//! `generate rbac`), so a private Git server is reached the same way by both.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::client::CliError;
use crate::sources::git::GitSettings;

/// The Git flags.
#[derive(Debug, Clone, clap::Args)]
pub struct GitArgs {
    /// PEM file of extra CA certificates trusted for https:// Git remotes (private Git servers).
    #[arg(long, env = "WARDN_GIT_CA_FILE")]
    pub git_ca_file: Option<PathBuf>,
    /// Seconds a Git remote may stay silent (connecting, or in the middle of a fetch) before
    /// the fetch gives up (and, for `serve`, the poll backs off).
    #[arg(
        long,
        default_value_t = crate::sources::transport::DEFAULT_TIMEOUT.as_secs(),
        value_parser = clap::value_parser!(u64).range(1..=3600)
    )]
    pub git_timeout: u64,
}

impl GitArgs {
    /// `--git-timeout` as a duration.
    pub fn timeout(&self) -> Duration {
        Duration::from_secs(self.git_timeout)
    }

    /// Git settings with mirrors under `data_dir`, the CA file read now (an unreadable one is
    /// an error naming it).
    pub fn settings(&self, data_dir: &Path) -> Result<GitSettings, CliError> {
        GitSettings::read(data_dir, self.git_ca_file.as_deref(), self.timeout()).map_err(|e| {
            CliError::File {
                path: e.path,
                source: e.source,
            }
        })
    }
}
