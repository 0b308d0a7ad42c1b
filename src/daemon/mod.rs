//! The daemon: the long-running parts of `wardn serve` and how one process wires them. The
//! store, the cluster registry with its background probes, the Git repository registry and
//! poller, the cluster resolver, and the App runner ([`runner`]) that drives every App from its
//! source to its cluster. [`Daemon::start`] wires them for `--role all|server`;
//! [`operator::Operator`] for `--role operator`, which resolves clusters through a server.
//! The HTTP API on top of them lives in the `server` module, which imports this one.

pub mod lock;
pub mod management;
pub mod operator;
pub mod runner;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;

use crate::app::files::AppsDirError;
use crate::clusters::probes::{ProbePreference, ProbeSchedule};
use crate::clusters::registry::Registry;
use crate::clusters::resolve::{ClusterSource, Resolver};
use crate::clusters::throttle::Throttles;
use crate::notify::Notifier;
use crate::reconcile::pass::Options;
use crate::reconcile::upkeep::Scheduling;
use crate::seal::{SealError, Sealer};
use crate::shard::observer::LeaseObserver;
use crate::sources::git::GitSettings;
use crate::sources::poller::{Poller, PollerConfig};
use crate::sources::repositories::Repositories;
use crate::store::audit::{AuditKey, AuditKeys, AuditStart};
use crate::store::{Store, StoreError};
use lock::DataDirLock;
use runner::Runner;

/// Settings of `wardn serve`: the daemon's, and the API listener's that the server reads.
/// Not `Debug`: it holds the admin password, the shared tokens and the database URL (whose
/// password must never reach a log line).
#[derive(Clone)]
pub struct ServeOptions {
    /// Address to listen on.
    pub listen: SocketAddr,
    /// PEM certificate chain to serve HTTPS with (`--tls-cert`, with `tls_key`); plain HTTP
    /// without.
    pub tls_cert: Option<PathBuf>,
    /// PEM private key of `tls_cert` (`--tls-key`).
    pub tls_key: Option<PathBuf>,
    /// The URL users reach the API at (`--public-url`), e.g. behind a TLS-terminating proxy;
    /// an `https://` one makes session cookies `Secure`.
    pub public_url: Option<String>,
    /// Data directory (holds the SQLite file).
    pub data_dir: PathBuf,
    /// PostgreSQL URL; SQLite in `data_dir` when absent.
    pub database_url: Option<String>,
    /// Admin password to set (`WARDN_ADMIN_PASSWORD`); generated and printed once if absent
    /// and no admin exists yet.
    pub admin_password: Option<String>,
    /// `WARDN_INTERNAL_TOKEN`; `/internal` is disabled without it.
    pub internal_token: Option<String>,
    /// `WARDN_WEBHOOK_SECRET`; the Git webhook rejects every request without it.
    pub webhook_secret: Option<String>,
    /// Where every App's notifications go (`--notify-url`, `--notify-slack-url`).
    pub notify: Vec<crate::notify::Target>,
    /// The key JSON notifications are signed with (`WARDN_NOTIFY_SECRET`); unsigned without.
    pub notify_secret: Option<String>,
    /// Directory of App YAML files to reconcile (`--apps`); no Apps when absent.
    pub apps_dir: Option<PathBuf>,
    /// Kubeconfig of the management cluster (`destination.cluster: ""`, App resources); when
    /// absent, `KUBECONFIG`, else in-cluster, else `~/.kube/config` (see [`management`]).
    pub management_kubeconfig: Option<PathBuf>,
    /// A file of `Cluster` documents whose credentials are Secrets in the management cluster
    /// (`--clusters`, see [`crate::clusters::declared`]); re-read every `probe_interval`.
    pub clusters_file: Option<PathBuf>,
    /// The namespace whose `Cluster` resources are registered (`--cluster-resources-namespace`,
    /// see [`crate::clusters::cluster_resources`]); default: the management client's own.
    pub cluster_resources_namespace: Option<String>,
    /// Extra CA certificates (PEM file) trusted for `https://` Git remotes, on top of the
    /// platform's roots (`--git-ca-file`).
    pub git_ca_file: Option<PathBuf>,
    /// How long a Git remote may stay silent before a fetch gives up (`--git-timeout`).
    pub git_timeout: Duration,
    /// Namespaces whose App resources are reconciled (`--namespaces`); empty: all.
    pub app_namespaces: Vec<String>,
    /// Whether this process reconciles Apps (`--role all`); `--role server` only serves the
    /// API, so neither App resources nor `--apps` are watched.
    pub reconcile_apps: bool,
    /// Time between background probe rounds.
    pub probe_interval: Duration,
    /// Time limit of one connection attempt or probe.
    pub probe_timeout: Duration,
    /// Resync interval, per-cluster rate limits and retry backoff.
    pub scheduling: Scheduling,
    /// Health and CRD timeouts of a pass, and how long a Held plan may be approved.
    pub pipeline: Options,
    /// `--shards auto`: this replica's Lease settings; `None`: one process reconciles all.
    pub shards: Option<crate::shard::ShardConfig>,
    /// On `--role server`: the namespace of the sharded operators' Leases in the management
    /// cluster (`--lease-namespace`), listed for `GET /api/v1/shards`; `None`: not listed.
    pub operator_leases: Option<String>,
}

/// Local defaults: 127.0.0.1:8080, `.data`, SQLite, no Apps, no management cluster, probes
/// every 30 s with a 10 s limit.
impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            tls_cert: None,
            tls_key: None,
            public_url: None,
            data_dir: PathBuf::from(".data"),
            database_url: None,
            admin_password: None,
            internal_token: None,
            webhook_secret: None,
            notify: Vec::new(),
            notify_secret: None,
            apps_dir: None,
            management_kubeconfig: None,
            clusters_file: None,
            cluster_resources_namespace: None,
            git_ca_file: None,
            git_timeout: crate::sources::transport::DEFAULT_TIMEOUT,
            app_namespaces: Vec::new(),
            reconcile_apps: true,
            probe_interval: Duration::from_secs(30),
            probe_timeout: Duration::from_secs(10),
            scheduling: Scheduling::default(),
            pipeline: Options::default(),
            shards: None,
            operator_leases: None,
        }
    }
}

/// Why the daemon could not start.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    /// The credentials key is missing or invalid.
    #[error(transparent)]
    Key(#[from] SealError),
    /// The store cannot be opened.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The Apps directory cannot be read or watched.
    #[error(transparent)]
    Apps(#[from] AppsDirError),
    /// The server CA file of an operator cannot be read.
    #[error("--server-ca-file {path}: {source}")]
    ServerCa {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// An operator's link to its server cannot be set up.
    #[error(transparent)]
    ServerLink(#[from] crate::server_link::ServerLinkError),
    /// The Git CA file cannot be read.
    #[error(transparent)]
    GitCa(#[from] crate::sources::git::GitCaError),
    /// The management cluster's kubeconfig is unusable.
    #[error("management kubeconfig {path}: {message}")]
    Kubeconfig {
        /// The kubeconfig file.
        path: PathBuf,
        /// The reason.
        message: String,
    },
    /// Another wardn process holds the data directory.
    #[error(
        "data directory {path} is in use by another wardn ({holder}); stop it, or give this one another --data-dir"
    )]
    DataDirInUse {
        /// The lock file.
        path: PathBuf,
        /// What the running process wrote into the lock file (pid and listen address).
        holder: String,
    },
    /// The data directory cannot be created or locked.
    #[error("data directory {path}: {source}")]
    DataDir {
        /// The directory or its lock file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The `--clusters` file cannot be read or holds an invalid declaration.
    #[error("--clusters {0}")]
    Declared(#[from] crate::clusters::declared::DeclaredError),
    /// The `--role` settings are inconsistent (e.g. an operator without `--server`).
    #[error("{0}")]
    Role(String),
    /// This replica's Lease cannot be taken (`--shards auto`).
    #[error(transparent)]
    Shard(#[from] crate::shard::ShardError),
}

/// Joins the fleet when `config` is given (`--shards auto`): takes this replica's Lease in the
/// management cluster (required) and makes `runner` pass only the Apps of the clusters this
/// replica owns. Call before the runner loads Apps.
pub async fn join_fleet(
    runner: &Arc<Runner>,
    config: Option<&crate::shard::ShardConfig>,
    management: Option<&management::Management>,
) -> Result<Option<Arc<crate::shard::Membership>>, DaemonError> {
    let Some(config) = config else {
        return Ok(None);
    };
    let Some(management) = management else {
        return Err(DaemonError::Role(
            "--shards auto needs the management cluster, where the replicas' Leases live (--kubeconfig, KUBECONFIG or in-cluster)".into(),
        ));
    };
    crate::clusters::connect::set_replica(&config.replica_id);
    let membership =
        crate::shard::Membership::start(management.config.clone(), config.clone()).await?;
    runner.set_sharding(Arc::clone(&membership));
    Ok(Some(membership))
}

/// Which clusters this process is expected to probe: in a sharded fleet those it owns or is
/// taking over, and its rendezvous share of those no App deploys to (it has the clients of its
/// own already; the others' owners probe theirs), otherwise all of them (server replicas
/// sharing a store then take turns, whoever claims a probe first).
fn probe_preference(membership: Option<&Arc<crate::shard::Membership>>) -> ProbePreference {
    match membership {
        Some(membership) => {
            let membership = Arc::clone(membership);
            Arc::new(move |cluster: &str| membership.is_owner(cluster))
        }
        None => Arc::new(|_: &str| true),
    }
}

/// The running daemon of `--role all|server`: its registries, poller and App runner.
pub struct Daemon {
    /// Held for the daemon's lifetime: one daemon per data directory.
    _lock: DataDirLock,
    registry: Arc<Registry>,
    repositories: Arc<Repositories>,
    poller: Poller,
    runner: Arc<Runner>,
    prober: JoinHandle<()>,
    /// Re-reads the `--clusters` file.
    declarer: Option<JoinHandle<()>>,
    /// Re-reads the `Cluster` resources of the management cluster.
    resource_declarer: Option<JoinHandle<()>>,
    /// This replica's membership of a sharded fleet (`--shards auto`).
    membership: Option<Arc<crate::shard::Membership>>,
    /// On `--role server` with a management cluster: its sharded operators' Leases.
    operator_leases: Option<Arc<LeaseObserver>>,
}

/// Gives the store the audit keys derived from the sealing keys and reports the chain's
/// state: intact, under the previous key (re-chained by a reseal), migrated from a legacy
/// SHA-256 chain, or broken (logged as an error; the daemon still starts, and verification
/// keeps naming the first bad entry).
pub async fn start_audit(store: &Store, sealer: &Sealer) -> Result<AuditStart, StoreError> {
    let (current, previous) = sealer.audit_keys();
    let keys = AuditKeys {
        current: AuditKey::new(current),
        previous: previous.map(AuditKey::new),
    };
    let start = store.init_audit(keys).await?;
    match &start {
        AuditStart::Intact(verified) => {
            tracing::info!(entries = verified.entries, "audit chain verified")
        }
        AuditStart::UnderPreviousKey(verified) => tracing::warn!(
            entries = verified.entries,
            "audit chain is under WARDN_CREDENTIALS_KEY_PREVIOUS; `wardn clusters reseal` re-chains it"
        ),
        AuditStart::Migrated { entries } => tracing::warn!(
            entries,
            "legacy SHA-256 audit chain verified and re-chained under the audit key"
        ),
        AuditStart::Broken(err) => {
            tracing::error!(%err, first_bad_seq = err.seq(), "audit chain does not verify")
        }
    }
    Ok(start)
}

impl Daemon {
    /// Opens the store, builds the registries, the Git poller and the cluster resolver,
    /// restores the stored App statuses, loads the Apps (`--role all`) and starts reconciling
    /// them and probing the registered clusters every `probe_interval`.
    pub async fn start(options: &ServeOptions, sealer: Sealer) -> Result<Daemon, DaemonError> {
        if options.shards.is_some() && options.database_url.is_none() {
            return Err(DaemonError::Role(
                "--shards auto needs a store every replica shares: give --database-url postgres://… (the SQLite file belongs to one process)".into(),
            ));
        }
        let lock = DataDirLock::acquire(&options.data_dir, options.listen)?;
        let store = Store::open(&options.data_dir, options.database_url.as_deref()).await?;
        start_audit(&store, &sealer).await?;
        let throttles = Arc::new(Throttles::new(
            options.scheduling.cluster_qps,
            options.scheduling.cluster_burst,
        ));
        let repositories = Arc::new(Repositories::new(store.clone(), sealer.clone()));
        let registry = Arc::new(
            Registry::new(store, sealer, options.probe_timeout)
                .with_throttles(Arc::clone(&throttles)),
        );
        // Git mirrors live under the data directory; fetches use the registered credentials.
        let (poller, updates) = Poller::with_provider(
            PollerConfig::new(GitSettings::read(
                &options.data_dir,
                options.git_ca_file.as_deref(),
                options.git_timeout,
            )?),
            repositories.clone(),
        );
        let mut resolver = Resolver::new(
            ClusterSource::Local(Arc::clone(&registry)),
            options.probe_timeout,
        )
        .with_throttles(throttles);
        let management = management::infer_logged(
            options.management_kubeconfig.as_deref(),
            options.probe_timeout,
        )
        .await?;
        if let Some(found) = &management {
            resolver = resolver.with_management(found.client.clone(), found.server.clone());
        }
        // Declared clusters are in the registry before any App is resolved.
        let declarer = match &options.clusters_file {
            Some(file) => {
                let client = management.as_ref().map(|found| found.client.clone());
                registry.declare_from(file, client.as_ref()).await?;
                Some(tokio::spawn(Arc::clone(&registry).declare_loop(
                    file.clone(),
                    client,
                    options.probe_interval,
                )))
            }
            None => None,
        };
        let resource_declarer = match &management {
            Some(found) => {
                let namespace = options
                    .cluster_resources_namespace
                    .clone()
                    .unwrap_or_else(|| found.client.default_namespace().to_string());
                let follow = Arc::clone(&registry).follow_resources(
                    found.client.clone(),
                    namespace,
                    options.probe_interval,
                    options.probe_timeout,
                );
                Some(follow.await)
            }
            None => None,
        };
        let runner = Runner::new(
            resolver,
            options.pipeline.clone(),
            poller.clone(),
            Some(registry.store().clone()),
            options.scheduling.clone(),
        );
        let membership = match options.reconcile_apps {
            true => join_fleet(&runner, options.shards.as_ref(), management.as_ref()).await?,
            false => None,
        };
        let operator_leases = match (&management, &options.operator_leases) {
            (Some(found), Some(namespace)) if !options.reconcile_apps => Some(Arc::new(
                LeaseObserver::new(found.client.clone(), namespace),
            )),
            _ => None,
        };
        if options.reconcile_apps {
            // After joining the fleet: a replica restores nothing here (see Runner::restore).
            runner.restore().await?;
        } else {
            // A server lists the Apps its operators report, and hands them their operations.
            runner.follow_operators(registry.store().clone());
        }
        runner.set_notifier(
            Notifier::start(options.notify.clone(), options.notify_secret.clone()),
            options.public_url.clone(),
        );
        if options.reconcile_apps {
            if let Some(found) = management {
                runner.watch_resources(found.client, options.app_namespaces.clone());
            }
            if let Some(dir) = &options.apps_dir {
                runner.watch_apps_dir(dir).await?;
            }
        }
        runner.start(updates);
        let prober = tokio::spawn(Arc::clone(&registry).probe_loop(
            ProbeSchedule::every(options.probe_interval),
            probe_preference(membership.as_ref()),
        ));
        Ok(Daemon {
            _lock: lock,
            registry,
            repositories,
            poller,
            runner,
            prober,
            declarer,
            resource_declarer,
            membership,
            operator_leases,
        })
    }

    /// The Leases of the sharded operators of a `--role server` process (`None` elsewhere, or
    /// without a management cluster).
    pub fn operator_leases(&self) -> Option<&Arc<LeaseObserver>> {
        self.operator_leases.as_ref()
    }

    /// The cluster registry.
    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// The Git repository registry (credentials, webhook secrets).
    pub fn repositories(&self) -> &Arc<Repositories> {
        &self.repositories
    }

    /// The Git poller (webhooks trigger its polls).
    pub fn poller(&self) -> &Poller {
        &self.poller
    }

    /// The App runner.
    pub fn runner(&self) -> &Arc<Runner> {
        &self.runner
    }

    /// The store.
    pub fn store(&self) -> &Store {
        self.registry.store()
    }

    /// Stops probing and reconciling, waits until every App status is stored, and closes the
    /// store.
    pub async fn shutdown(&self) {
        self.prober.abort();
        for declarer in [&self.declarer, &self.resource_declarer]
            .into_iter()
            .flatten()
        {
            declarer.abort();
        }
        self.runner.shutdown().await;
        if let Some(membership) = &self.membership {
            membership.leave().await;
        }
        self.registry.store().close().await;
    }
}
