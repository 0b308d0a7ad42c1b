//! `wardn serve --role operator`: reconciles the Apps of `--apps` (and App resources),
//! resolving registered clusters through a wardn server's
//! `GET /internal/clusters/{name}/kubeconfig` and fetching private repositories with the
//! credentials registered there (`GET /internal/repositories/{id}/credentials`), both with
//! `WARDN_INTERNAL_TOKEN`, and polling at once the repositories the server's webhook received
//! pushes for (`GET /internal/pushes`). No store: its statuses live in memory and in the App
//! resources' status, and it reports its Apps and their statuses to the server, which lists
//! them and hands it the operations (approvals, syncs, promotions, …) asked for there (see
//! the runner's `report`). Its listener (health and metrics) is served by the `server` module.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::DaemonError;
use super::management;
use super::runner::Runner;
use crate::clusters::resolve::Resolver;
use crate::clusters::throttle::Throttles;
use crate::notify::Notifier;
use crate::reconcile::pass::Options;
use crate::reconcile::upkeep::Scheduling;
use crate::server_link::ServerLink;
use crate::sources::git::GitSettings;
use crate::sources::poller::{Poller, PollerConfig};
use crate::sources::server_credentials::ServerCredentials;
use crate::sources::server_pushes::{PushFollower, ServerPushes};

/// Settings of `wardn serve --role operator`. Not `Debug`: it holds the internal token.
#[derive(Clone)]
pub struct OperatorOptions {
    /// Address of the health listener.
    pub listen: SocketAddr,
    /// Data directory (Git mirrors).
    pub data_dir: PathBuf,
    /// Directory of App YAML files to reconcile.
    pub apps_dir: Option<PathBuf>,
    /// Base URL of the wardn server, e.g. `http://wardn:8080`.
    pub server: String,
    /// PEM file of CA certificates trusted for an `https://` server besides the system's
    /// (`--server-ca-file`).
    pub server_ca_file: Option<PathBuf>,
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
    /// `--shards auto`: this replica's Lease settings; `None`: this operator reconciles all.
    pub shards: Option<crate::shard::ShardConfig>,
    /// The id this operator reports its Apps to the server under (`--replica-id`), when not
    /// sharded (sharded, its Lease's id): `None` for `POD_NAME`, else host name and process id.
    pub replica_id: Option<String>,
    /// Extra CA certificates (PEM file) trusted for `https://` Git remotes (`--git-ca-file`).
    pub git_ca_file: Option<PathBuf>,
    /// How long a Git remote may stay silent before a fetch gives up (`--git-timeout`).
    pub git_timeout: Duration,
    /// Where every App's notifications go (`--notify-url`, `--notify-slack-url`), beside each
    /// App's own `spec.notify`.
    pub notify: Vec<crate::notify::Target>,
    /// The key JSON notifications are signed with (`WARDN_NOTIFY_SECRET`); unsigned without.
    pub notify_secret: Option<String>,
    /// The URL people reach the server's API at (`--public-url`): a Held notification links
    /// to its approve route there; none without.
    pub public_url: Option<String>,
}

/// The link to the server of `options`, trusting `--server-ca-file`.
fn server_link(options: &OperatorOptions) -> Result<ServerLink, DaemonError> {
    let ca = options
        .server_ca_file
        .as_ref()
        .map(|path| {
            std::fs::read(path).map_err(|source| DaemonError::ServerCa {
                path: path.clone(),
                source,
            })
        })
        .transpose()?;
    Ok(ServerLink::new(
        &options.server,
        &options.internal_token,
        ca.as_deref(),
        options.timeout,
    )?)
}

/// A running operator: the App runner and the Git poller feeding it.
pub struct Operator {
    runner: Arc<Runner>,
    membership: Option<Arc<crate::shard::Membership>>,
    // Followed as long as the operator lives.
    pushes: PushFollower,
    // Held so the poller's update channel lives as long as the operator.
    _poller: Poller,
}

impl Operator {
    /// Checks the settings, loads the Apps and starts reconciling them.
    pub async fn start(options: &OperatorOptions) -> Result<Operator, DaemonError> {
        if let Some(id) = &options.replica_id {
            crate::shard::membership::check_replica_id(id)
                .map_err(|e| DaemonError::Role(e.to_string()))?;
        }
        if options.server.trim().is_empty() {
            return Err(DaemonError::Role(
                "--role operator needs --server URL (the wardn server holding the clusters)".into(),
            ));
        }
        if options.internal_token.is_empty() {
            return Err(DaemonError::Role(
                "--role operator needs WARDN_INTERNAL_TOKEN (the server's internal token)".into(),
            ));
        }
        let throttles = Arc::new(Throttles::new(
            options.scheduling.cluster_qps,
            options.scheduling.cluster_burst,
        ));
        let server = server_link(options)?;
        let mut resolver = Resolver::remote(server.clone(), options.cache_ttl, options.timeout)
            .with_throttles(throttles);
        let management =
            management::infer_logged(options.management_kubeconfig.as_deref(), options.timeout)
                .await?;
        if let Some(found) = &management {
            resolver = resolver.with_management(found.client.clone(), found.server.clone());
        }
        // Registered repository credentials are read from the server before each fetch.
        let (poller, updates) = Poller::with_provider(
            PollerConfig::new(GitSettings::read(
                &options.data_dir,
                options.git_ca_file.as_deref(),
                options.git_timeout,
            )?),
            Arc::new(ServerCredentials::new(server.clone())),
        );
        // No store: an operator's statuses live in memory (and in App resources' status).
        let runner = Runner::new(
            resolver,
            options.pipeline.clone(),
            poller.clone(),
            None,
            options.scheduling.clone(),
        );
        // Statuses go to the server, and are read back from it (below, or as clusters are
        // taken over when sharded).
        runner.link_server(server.clone());
        let membership =
            super::join_fleet(&runner, options.shards.as_ref(), management.as_ref()).await?;
        if membership.is_none() {
            match runner.restore_from_server().await {
                Ok(n) => tracing::info!(statuses = n, "App statuses read back from the server"),
                Err(error) => tracing::warn!(%error,
                    "cannot read App statuses back from the server; the Apps are planned afresh"),
            }
        }
        // Approve links point at the server, which hands approvals to this operator.
        runner.set_notifier(
            Notifier::start(options.notify.clone(), options.notify_secret.clone()),
            options.public_url.clone(),
        );
        if let Some(found) = management {
            runner.watch_resources(found.client, options.app_namespaces.clone());
        }
        if let Some(dir) = &options.apps_dir {
            runner.watch_apps_dir(dir).await?;
        }
        runner.start(updates);
        // The server lists this operator's Apps and hands it the operations asked for there.
        let operator = match (&membership, &options.replica_id) {
            (Some(membership), _) => membership.replica_id().to_string(),
            (None, Some(id)) => id.clone(),
            (None, None) => crate::shard::membership::default_replica_id(),
        };
        runner.report_to(operator);
        // Pushes the server's webhook recorded: each repository polled here is polled at once.
        let pushes = ServerPushes::new(server).follow(poller.clone());
        Ok(Operator {
            runner,
            membership,
            pushes,
            _poller: poller,
        })
    }

    /// The App runner (statuses of the reconciled Apps).
    pub fn runner(&self) -> &Arc<Runner> {
        &self.runner
    }

    /// This operator's metrics: its passes (and, sharded, its share) and the pushes it
    /// followed, in the Prometheus text format.
    pub fn metrics_text(&self) -> String {
        let mut text = self.runner.metrics_text();
        text.push_str(&self.pushes.metrics_text());
        text
    }

    /// Stops reconciling and waits until every status change is published.
    pub async fn shutdown(&self) {
        self.runner.shutdown().await;
        if let Some(membership) = &self.membership {
            membership.leave().await;
        }
    }
}
