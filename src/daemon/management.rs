//! The management cluster: where App resources live and where Apps with
//! `destination.cluster: ""` deploy.

use std::path::Path;
use std::time::Duration;

use super::DaemonError;
use crate::clusters::connect::client_from_kubeconfig;

/// The management cluster's client when one is configured: the kubeconfig at `path`, else the
/// in-cluster service account. (Without either, the management cluster is still inferred on
/// first use as a destination, but App resources are not watched.)
pub async fn client(
    path: Option<&Path>,
    timeout: Duration,
) -> Result<Option<kube::Client>, DaemonError> {
    if let Some(path) = path {
        let kubeconfig_error = |message: String| DaemonError::Kubeconfig {
            path: path.to_path_buf(),
            message,
        };
        let text = std::fs::read_to_string(path).map_err(|e| kubeconfig_error(e.to_string()))?;
        let client = client_from_kubeconfig(&text, timeout)
            .await
            .map_err(|e| kubeconfig_error(e.to_string()))?;
        return Ok(Some(client));
    }
    Ok(kube::Config::incluster().ok().and_then(|mut config| {
        crate::clusters::connect::no_hidden_retries(&mut config);
        kube::Client::try_from(config).ok()
    }))
}
