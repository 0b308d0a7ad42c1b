//! `wardn serve --role`: which parts of wardn one process runs.
//!
//! - `all` (default): API, store, probing and App reconciliation in one process.
//! - `server`: API, store and probing; no App is reconciled (`--apps` is refused), so the
//!   Apps API answers empty lists. Operators fetch cluster credentials from it.
//! - `operator`: reconciles the Apps of `--apps`, resolving registered clusters through the
//!   server's `GET /internal/clusters/{name}/kubeconfig` with `WARDN_INTERNAL_TOKEN`; no store
//!   and no user API — its listener serves `/api/v1/health` only.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::routing::get;

use super::{ServeError, health};
use crate::clusters::connect::client_from_kubeconfig;
use crate::clusters::resolve::Resolver;
use crate::clusters::throttle::Throttles;
use crate::reconcile::pipeline::Options;
use crate::reconcile::upkeep::Scheduling;
use crate::runner::Runner;
use crate::sources::git::GitSettings;
use crate::sources::poller::{Poller, PollerConfig};

/// Which parts of wardn a process runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Role {
    /// API, store, probing and reconciliation.
    #[default]
    All,
    /// API, store and probing; no reconciliation.
    Server,
    /// Reconciliation only, with clusters resolved through a server.
    Operator,
}

/// The management cluster's client when one is configured: the kubeconfig at `path`, else the
/// in-cluster service account. (Without either, the management cluster is still inferred on
/// first use as a destination, but App resources are not watched.)
pub async fn management_client(
    path: Option<&Path>,
    timeout: Duration,
) -> Result<Option<kube::Client>, ServeError> {
    if let Some(path) = path {
        let kubeconfig_error = |message: String| ServeError::Kubeconfig {
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

/// Settings of `wardn serve --role operator`.
#[derive(Debug, Clone)]
pub struct OperatorOptions {
    /// Address of the health listener.
    pub listen: SocketAddr,
    /// Data directory (Git mirrors).
    pub data_dir: PathBuf,
    /// Directory of App YAML files to reconcile.
    pub apps_dir: Option<PathBuf>,
    /// Base URL of the wardn server, e.g. `http://wardn:8080`.
    pub server: String,
    /// `WARDN_INTERNAL_TOKEN`, shared with the server.
    pub internal_token: String,
    /// Kubeconfig of the management cluster.
    pub management_kubeconfig: Option<PathBuf>,
    /// Namespaces whose App resources are reconciled (`--namespaces`); empty: all.
    pub app_namespaces: Vec<String>,
    /// How long a fetched kubeconfig's client is reused before it is fetched again.
    pub cache_ttl: Duration,
    /// Time limit of connecting to a cluster or the server.
    pub timeout: Duration,
    /// Resync interval, per-cluster rate limits and retry backoff.
    pub scheduling: Scheduling,
    /// Health and CRD timeouts of a pass, and how long a Held plan may be approved.
    pub pipeline: Options,
}

/// A bound operator: the App runner and the health listener.
pub struct Operator {
    listener: tokio::net::TcpListener,
    runner: Arc<Runner>,
    // The Git poller feeding the runner; held so its update channel lives as long as the operator.
    _poller: Poller,
    /// The address actually bound.
    pub addr: SocketAddr,
}

impl Operator {
    /// Loads the Apps, starts reconciling them and binds the health listener.
    pub async fn bind(options: OperatorOptions) -> Result<Operator, ServeError> {
        if options.server.trim().is_empty() {
            return Err(ServeError::Role(
                "--role operator needs --server URL (the wardn server holding the clusters)".into(),
            ));
        }
        if options.internal_token.is_empty() {
            return Err(ServeError::Role(
                "--role operator needs WARDN_INTERNAL_TOKEN (the server's internal token)".into(),
            ));
        }
        let throttles = Arc::new(Throttles::new(
            options.scheduling.cluster_qps,
            options.scheduling.cluster_burst,
        ));
        let mut resolver = Resolver::remote(
            &options.server,
            &options.internal_token,
            options.cache_ttl,
            options.timeout,
        )
        .with_throttles(throttles);
        let management =
            management_client(options.management_kubeconfig.as_deref(), options.timeout).await?;
        if let Some(client) = &management {
            resolver = resolver.with_management(client.clone());
        }
        let (poller, updates) = Poller::new(PollerConfig::new(GitSettings {
            data_dir: options.data_dir.clone(),
            extra_roots_pem: None,
        }));
        // No store: an operator's statuses live in memory (and in App resources' status).
        let runner = Runner::new(
            resolver,
            options.pipeline.clone(),
            poller.clone(),
            None,
            options.scheduling.clone(),
        );
        if let Some(client) = management {
            runner.watch_resources(client, options.app_namespaces.clone());
        }
        if let Some(dir) = &options.apps_dir {
            runner.watch_apps_dir(dir).await?;
        }
        let listener = tokio::net::TcpListener::bind(options.listen)
            .await
            .map_err(|source| ServeError::Io {
                addr: options.listen,
                source,
            })?;
        let addr = listener.local_addr().map_err(|source| ServeError::Io {
            addr: options.listen,
            source,
        })?;
        runner.start(updates);
        Ok(Operator {
            listener,
            runner,
            _poller: poller,
            addr,
        })
    }

    /// The App runner (statuses of the reconciled Apps).
    pub fn runner(&self) -> &Arc<Runner> {
        &self.runner
    }

    /// Serves `/api/v1/health` until `shutdown` completes, then stops the runner.
    pub async fn run(
        self,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServeError> {
        tracing::info!(addr = %self.addr, "wardn operator listening (health only)");
        let router = Router::new().route("/api/v1/health", get(health));
        let result = axum::serve(self.listener, router)
            .with_graceful_shutdown(shutdown)
            .await;
        self.runner.shutdown().await;
        result.map_err(|source| ServeError::Io {
            addr: self.addr,
            source,
        })
    }
}
