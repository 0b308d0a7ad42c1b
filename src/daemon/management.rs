//! The management cluster: where App resources live and where Apps with
//! `destination.cluster: ""` deploy. Found once at start-up, the same way for both uses, in
//! kubectl's order with in-cluster configuration where a controller expects it: `--kubeconfig`,
//! else `KUBECONFIG`, else the Pod's service account (in-cluster), else `~/.kube/config`. The
//! choice and its server URL are logged.

use std::path::{Path, PathBuf};
use std::time::Duration;

use kube::config::{KubeConfigOptions, Kubeconfig};

use super::DaemonError;
use crate::clusters::connect::{no_hidden_retries, unreadable};

/// The management cluster's client and where its configuration came from.
pub struct Management {
    /// The client (kube's built-in retries off, like every wardn client).
    pub client: kube::Client,
    /// The configuration `client` was built from, for parts that need a client of their own
    /// on another runtime (the shard Lease's renewal thread).
    pub config: kube::Config,
    /// Where the configuration came from: `--kubeconfig PATH`, `KUBECONFIG`, `in-cluster` or
    /// `~/.kube/config`.
    pub origin: String,
    /// The API server's URL.
    pub server: String,
}

/// Finds the management cluster (see the module docs); `None` when nothing configures one.
/// A configuration that exists but cannot be used is an error naming it, never skipped.
pub async fn infer(
    explicit: Option<&Path>,
    timeout: Duration,
) -> Result<Option<Management>, DaemonError> {
    if let Some(path) = explicit {
        let config = from_files(&[path.to_path_buf()]).await?;
        return build(config, format!("--kubeconfig {}", path.display()), timeout).map(Some);
    }
    if let Some(paths) = std::env::var_os("KUBECONFIG").filter(|v| !v.is_empty()) {
        let paths: Vec<PathBuf> = std::env::split_paths(&paths).collect();
        let config = from_files(&paths).await?;
        return build(config, "KUBECONFIG".into(), timeout).map(Some);
    }
    if let Ok(config) = kube::Config::incluster() {
        return build(config, "in-cluster".into(), timeout).map(Some);
    }
    let home = std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".kube").join("config"));
    if let Some(path) = home.filter(|p| p.is_file()) {
        let config = from_files(&[path]).await?;
        return build(config, "~/.kube/config".into(), timeout).map(Some);
    }
    Ok(None)
}

/// The configuration of the current context of the kubeconfig files `paths` (merged as
/// kubectl merges them).
async fn from_files(paths: &[PathBuf]) -> Result<kube::Config, DaemonError> {
    let error = |message: String| DaemonError::Kubeconfig {
        path: std::env::join_paths(paths).map_or_else(|_| PathBuf::new(), PathBuf::from),
        message,
    };
    let mut merged: Option<Kubeconfig> = None;
    for path in paths {
        // By position only: the daemon's log must not show the file's lines (its token).
        let one = Kubeconfig::read_from(path).map_err(|e| error(unreadable(&e)))?;
        merged = Some(match merged {
            Some(before) => before.merge(one).map_err(|e| error(e.to_string()))?,
            None => one,
        });
    }
    let kubeconfig = merged.ok_or_else(|| error("no kubeconfig file named".into()))?;
    kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .map_err(|e| error(unreadable(&e)))
}

fn build(
    mut config: kube::Config,
    origin: String,
    timeout: Duration,
) -> Result<Management, DaemonError> {
    config.connect_timeout = Some(timeout);
    no_hidden_retries(&mut config);
    let server = config.cluster_url.to_string();
    let client = kube::Client::try_from(config.clone()).map_err(|e| DaemonError::Kubeconfig {
        path: PathBuf::from(&origin),
        message: e.to_string(),
    })?;
    Ok(Management {
        client,
        config,
        origin,
        server,
    })
}

/// [`infer`], logging what was found: the management cluster is where App resources are
/// watched and where `destination.cluster: ""` deploys, so an operator must see which one it is.
pub async fn infer_logged(
    explicit: Option<&Path>,
    timeout: Duration,
) -> Result<Option<Management>, DaemonError> {
    let found = infer(explicit, timeout).await?;
    match &found {
        Some(m) => tracing::info!(
            server = %m.server,
            from = %m.origin,
            "management cluster: App resources are watched there and destination.cluster \"\" deploys there"
        ),
        None => tracing::warn!(
            "no management cluster (no --kubeconfig, KUBECONFIG, in-cluster service account or ~/.kube/config): App resources are not watched and Apps with destination.cluster \"\" fail"
        ),
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An unreadable management kubeconfig names its file and the position, never the lines
    /// around the fault (its token) in the daemon's log.
    #[tokio::test]
    async fn an_unreadable_file_is_named_by_path_and_position_without_its_token() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config");
        std::fs::write(
            &path,
            "users:\n- user:\n    token: tok-Qz7vK2\nclusters: []\n",
        )
        .unwrap();
        let shown = match from_files(std::slice::from_ref(&path)).await {
            Ok(_) => panic!("an unreadable kubeconfig gave a configuration"),
            Err(err) => err.to_string(),
        };
        assert!(!shown.contains("Qz7vK2"), "{shown}");
        assert!(shown.contains(&path.display().to_string()), "{shown}");
        assert!(shown.contains("(line 2, column 3)"), "{shown}");
    }
}
