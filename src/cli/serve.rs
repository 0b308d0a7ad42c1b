//! `wardn serve`: starts the API server with the registry, the store and the prober, and the
//! App reconciler — or, with `--role`, only one side (see [`crate::server::role`]).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use super::git_args::GitArgs;
use crate::daemon::operator::OperatorOptions;
use crate::daemon::{DaemonError, ServeOptions};
use crate::notify::{Format, Target};
use crate::reconcile::pass::Options;
use crate::reconcile::upkeep::Scheduling;
use crate::seal::Sealer;
use crate::server::{OperatorServer, ServeError, Server};
use crate::shard::ShardConfig;

/// Which parts of wardn a process runs (`--role`):
/// - `all` (default): API, store, probing and App reconciliation in one process.
/// - `server`: API, store and probing; no App is reconciled (`--apps` is refused), so the Apps
///   API answers empty lists. Operators fetch cluster credentials from it.
/// - `operator`: reconciles Apps, resolving registered clusters and repository credentials
///   through the server's `/internal/…` routes with `WARDN_INTERNAL_TOKEN`; no store and no
///   user API (its listener serves `/api/v1/health` only).
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

/// Whether this process shares the fleet with other replicas (`--shards`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Shards {
    /// One process reconciles every App.
    #[default]
    Off,
    /// Several replicas each hold a Lease in the management cluster and reconcile the Apps of
    /// the destination clusters of their balanced shares (claimed in their Leases).
    Auto,
}

/// Arguments of `wardn serve`. Not `Debug`: `--database-url` may carry a password.
#[derive(clap::Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8080", env = "WARDN_LISTEN")]
    pub listen: SocketAddr,
    /// Serve HTTPS with this PEM certificate chain (with `--tls-key`); it is read again when
    /// the file changes, so a renewed certificate needs no restart.
    #[arg(long, env = "WARDN_TLS_CERT", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The PEM private key of `--tls-cert`.
    #[arg(long, env = "WARDN_TLS_KEY", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// The URL users reach the API at, e.g. `https://wardn.example.com` behind a
    /// TLS-terminating proxy: an https URL makes session cookies `Secure`, and Held
    /// notifications link to the approve route there (an operator's: its server's URL).
    #[arg(long, env = "WARDN_PUBLIC_URL")]
    pub public_url: Option<String>,
    /// Data directory; holds the embedded SQLite database.
    #[arg(long, default_value = ".data", env = "WARDN_DATA_DIR")]
    pub data_dir: PathBuf,
    /// PostgreSQL URL (postgres://…) instead of the embedded SQLite file.
    #[arg(long, env = "WARDN_DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,
    /// Directory of App YAML files to reconcile.
    #[arg(long, env = "WARDN_APPS_DIR")]
    pub apps: Option<PathBuf>,
    /// Send every App's notifications (Held with an approve link, approved, rejected,
    /// promoted, Degraded, Failed) to this URL as JSON signed with `WARDN_NOTIFY_SECRET`
    /// (`X-Wardn-Signature: sha256=…`). Repeatable, or comma-separated.
    #[arg(long, env = "WARDN_NOTIFY_URL", value_delimiter = ',', value_parser = notify_url)]
    pub notify_url: Vec<String>,
    /// Send every App's notifications to this Slack-compatible incoming webhook. Repeatable,
    /// or comma-separated.
    #[arg(long, env = "WARDN_NOTIFY_SLACK_URL", value_delimiter = ',', value_parser = notify_url)]
    pub notify_slack_url: Vec<String>,
    /// Kubeconfig of the management cluster, where App resources are watched and
    /// `destination.cluster: ""` deploys (default: `KUBECONFIG`, else in-cluster, else
    /// ~/.kube/config; the choice is logged with its server URL).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// A file of `Cluster` documents (`cd.wardn.space/v1alpha1`) whose credentials are Secrets
    /// in the management cluster: clusters declared as code, re-read every probe interval.
    #[arg(long = "clusters", env = "WARDN_CLUSTERS_FILE")]
    pub clusters_file: Option<PathBuf>,
    /// The namespace of the management cluster whose `Cluster` resources are registered, re-read
    /// every probe interval (default: the management cluster client's namespace, wardn's own
    /// when it runs in the cluster). Nothing is read while the Cluster CRD is not installed.
    #[arg(long, env = "WARDN_CLUSTER_RESOURCES_NAMESPACE")]
    pub cluster_resources_namespace: Option<String>,
    /// How Git remotes are reached.
    #[command(flatten)]
    pub git: GitArgs,
    /// Only reconcile App resources in these namespaces (comma-separated; default: all).
    #[arg(long, value_delimiter = ',')]
    pub namespaces: Vec<String>,
    /// Seconds between two probes of each registered cluster (by this process or another
    /// sharing the store).
    #[arg(long, default_value_t = 30)]
    pub probe_interval: u64,
    /// Seconds before a connection attempt or probe gives up.
    #[arg(long, default_value_t = 10)]
    pub probe_timeout: u64,
    /// What this process runs: `all` (API, store, probing and reconciliation), `server` (no
    /// reconciliation) or `operator` (reconciliation only, clusters resolved through --server).
    #[arg(long, value_enum, default_value_t = Role::All, env = "WARDN_ROLE")]
    pub role: Role,
    /// With `--role operator`: the wardn server's URL, e.g. http://wardn:8080.
    #[arg(long = "server", env = "WARDN_SERVER")]
    pub server_url: Option<String>,
    /// With `--role operator`: PEM file of CA certificates trusted for an https:// server
    /// besides the system's (a server serving `--tls-cert` under a private CA).
    #[arg(long, env = "WARDN_SERVER_CA_FILE")]
    pub server_ca_file: Option<PathBuf>,
    /// With `--role operator`: seconds a fetched cluster kubeconfig is reused before it is
    /// fetched again (so updates and removals on the server are seen).
    #[arg(long, default_value_t = 60)]
    pub cluster_cache_ttl: u64,
    /// How many App reconcile passes run at once (each App has at most one).
    #[arg(long, default_value_t = crate::reconcile::upkeep::DEFAULT_WORKERS,
        value_parser = workers)]
    pub workers: usize,
    /// How long a Held plan may be approved after it was Held (later approvals are refused
    /// and the plan Held afresh), e.g. 24h, 30m; `0s`: approvals never expire.
    #[arg(long, default_value = "24h", value_parser = crate::sources::spec::parse_duration)]
    pub approval_ttl: Duration,
    /// How long a pass waits for applied objects to become healthy before the App is
    /// Degraded, e.g. 5m.
    #[arg(long, default_value = "5m", value_parser = at_least_a_second)]
    pub health_timeout: Duration,
    /// Every App is reconciled at least this often (±10 %), e.g. 90s, 3m, 1h.
    #[arg(long, default_value = "3m", value_parser = at_least_a_second)]
    pub resync_interval: Duration,
    /// Sustained API requests per second to one destination cluster.
    #[arg(long, default_value_t = crate::clusters::throttle::DEFAULT_QPS, value_parser = cluster_qps)]
    pub cluster_qps: f64,
    /// Requests to one destination cluster that may go at once before the rate applies.
    #[arg(long, default_value_t = crate::clusters::throttle::DEFAULT_BURST,
        value_parser = clap::value_parser!(u32).range(1..))]
    pub cluster_burst: u32,
    /// `auto`: run as one of several replicas sharing the destination clusters through Leases
    /// in the management cluster (`--role operator`, or `--role all` with PostgreSQL).
    #[arg(long, value_enum, default_value_t = Shards::Off, env = "WARDN_SHARDS")]
    pub shards: Shards,
    /// With `--shards auto`: this replica's id, naming its Lease `wardn-shard-ID`; on
    /// `--role operator`, also the id it reports its Apps to the server under (default:
    /// `POD_NAME`, else `<hostname>-<pid>`).
    #[arg(long, env = "WARDN_REPLICA_ID")]
    pub replica_id: Option<String>,
    /// With `--shards auto`: the namespace of the Leases in the management cluster; on
    /// `--role server`, where it lists its sharded operators' Leases (`GET /api/v1/shards`).
    #[arg(long, default_value = "default", env = "POD_NAMESPACE")]
    pub lease_namespace: String,
    /// With `--shards auto`: how long a replica's Lease lasts without renewal (renewed every
    /// third of it); a dead replica's clusters move within it.
    #[arg(long, default_value = "15s", value_parser = crate::sources::spec::parse_duration)]
    pub lease_duration: Duration,
}

/// The shard settings of `args`: `None` without `--shards auto`.
fn shard_config(args: &ServeArgs) -> Result<Option<ShardConfig>, DaemonError> {
    if args.shards == Shards::Off {
        return Ok(None);
    }
    let id = args
        .replica_id
        .clone()
        .unwrap_or_else(crate::shard::membership::default_replica_id);
    let config = ShardConfig::new(&id, &args.lease_namespace, args.lease_duration)
        .map_err(|e| DaemonError::Role(e.to_string()))?;
    // Before any client is built, so every request names the replica.
    crate::clusters::connect::set_replica(&config.replica_id);
    Ok(Some(config))
}

/// A `--notify-url` / `--notify-slack-url` value: `http(s)://HOST…`.
fn notify_url(text: &str) -> Result<String, String> {
    let url = text.trim().to_string();
    Target {
        url: url.clone(),
        format: Format::Json,
    }
    .validate()?;
    Ok(url)
}

/// `WARDN_NOTIFY_SECRET`, the key JSON notifications are signed with (unset or empty: none).
fn notify_secret() -> Option<String> {
    std::env::var("WARDN_NOTIFY_SECRET")
        .ok()
        .filter(|s| !s.is_empty())
}

/// The global notification targets: `json` URLs, then `slack` ones.
fn notify_targets(json: &[String], slack: &[String]) -> Vec<Target> {
    let target = |format| {
        move |url: &String| Target {
            url: url.clone(),
            format,
        }
    };
    json.iter()
        .map(target(Format::Json))
        .chain(slack.iter().map(target(Format::Slack)))
        .collect()
}

/// `--resync-interval`, `--health-timeout`: a duration of at least one second.
fn at_least_a_second(text: &str) -> Result<Duration, String> {
    let d = crate::sources::spec::parse_duration(text)?;
    if d.is_zero() {
        return Err("must be at least 1s".into());
    }
    Ok(d)
}

/// `--workers`: 1 to 1024.
fn workers(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(n) if (1..=1024).contains(&n) => Ok(n),
        _ => Err(format!(
            "{text:?}: expected a number of workers from 1 to 1024"
        )),
    }
}

/// `--cluster-qps`: a positive, finite number.
fn cluster_qps(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(q) if q.is_finite() && q > 0.0 => Ok(q),
        _ => Err(format!(
            "{text:?}: expected a positive number of requests per second"
        )),
    }
}

/// Runs the server until Ctrl-C or SIGTERM. Reads `WARDN_CREDENTIALS_KEY` (required),
/// `WARDN_CREDENTIALS_KEY_PREVIOUS`, `WARDN_ADMIN_PASSWORD`, `WARDN_INTERNAL_TOKEN` and
/// `WARDN_WEBHOOK_SECRET`.
pub async fn run(args: ServeArgs) -> Result<(), ServeError> {
    match args.role {
        Role::Operator
            if args.clusters_file.is_some() || args.cluster_resources_namespace.is_some() =>
        {
            return Err(ServeError::Daemon(DaemonError::Role(
                "--clusters and --cluster-resources-namespace declare clusters in the registry, which the server holds: give them to the --role server process".into(),
            )));
        }
        Role::Operator => {
            if let Some(refused) = unused_by_operator(&args) {
                return Err(ServeError::Daemon(DaemonError::Role(refused.into())));
            }
            return run_operator(args).await;
        }
        Role::Server if args.apps.is_some() => {
            return Err(ServeError::Daemon(DaemonError::Role(
                "--role server reconciles no Apps: drop --apps, or run --role all or operator"
                    .into(),
            )));
        }
        Role::Server if args.shards == Shards::Auto => {
            return Err(ServeError::Daemon(DaemonError::Role(
                "--role server reconciles no Apps, so it has no clusters to share: drop --shards (server replicas share the store, not Leases)".into(),
            )));
        }
        Role::All if args.shards == Shards::Auto && args.database_url.is_none() => {
            return Err(ServeError::Daemon(DaemonError::Role(
                "--shards auto needs a store every replica shares: give --database-url postgres://… (the SQLite file belongs to one process)".into(),
            )));
        }
        Role::All | Role::Server => {}
    }
    let shards = shard_config(&args)?;
    let sealer = Sealer::from_env().map_err(DaemonError::from)?;
    let scheduling = scheduling(&args);
    let pipeline = pipeline(&args);
    let notify = notify_targets(&args.notify_url, &args.notify_slack_url);
    let options = ServeOptions {
        listen: args.listen,
        tls_cert: args.tls_cert,
        tls_key: args.tls_key,
        public_url: args.public_url,
        data_dir: args.data_dir,
        database_url: args.database_url,
        admin_password: std::env::var("WARDN_ADMIN_PASSWORD").ok(),
        internal_token: std::env::var("WARDN_INTERNAL_TOKEN").ok(),
        webhook_secret: std::env::var(crate::sources::webhook::SECRET_ENV).ok(),
        notify,
        notify_secret: notify_secret(),
        apps_dir: args.apps,
        management_kubeconfig: args.kubeconfig,
        clusters_file: args.clusters_file,
        cluster_resources_namespace: args.cluster_resources_namespace,
        git_timeout: args.git.timeout(),
        git_ca_file: args.git.git_ca_file,
        app_namespaces: args.namespaces,
        reconcile_apps: args.role == Role::All,
        probe_interval: Duration::from_secs(args.probe_interval.max(1)),
        probe_timeout: Duration::from_secs(args.probe_timeout.max(1)),
        scheduling,
        pipeline,
        shards,
        operator_leases: (args.role == Role::Server).then(|| args.lease_namespace.clone()),
    };
    let server = Server::bind(options, sealer).await?;
    if let Some(password) = &server.generated_admin_password {
        // Printed once, to stdout rather than the log: it is a secret.
        println!("wardn: generated password for user 'admin' (shown once): {password}");
    }
    println!("wardn: listening on {}://{}", server.scheme(), server.addr);
    within_grace(|shutdown| server.run(shutdown)).await
}

/// The pass settings of `args` (`--approval-ttl`, `--health-timeout`).
fn pipeline(args: &ServeArgs) -> Options {
    Options {
        health_timeout: args.health_timeout,
        approval_ttl: (!args.approval_ttl.is_zero()).then_some(args.approval_ttl),
        ..Options::default()
    }
}

/// The scheduling settings of `args`.
fn scheduling(args: &ServeArgs) -> Scheduling {
    Scheduling {
        workers: args.workers,
        resync_interval: args.resync_interval,
        cluster_qps: args.cluster_qps,
        cluster_burst: args.cluster_burst,
        ..Scheduling::default()
    }
}

/// Why `args` give an operator a setting only the server uses, if they do: a careless
/// `--tls-cert` on an operator would otherwise leave its listener on plain HTTP unnoticed.
fn unused_by_operator(args: &ServeArgs) -> Option<&'static str> {
    if args.database_url.is_some() {
        Some(
            "--role operator holds no store: drop --database-url (WARDN_DATABASE_URL); the --role server process holds it",
        )
    } else if args.tls_cert.is_some() || args.tls_key.is_some() {
        Some(
            "--role operator serves only health and metrics, over http: drop --tls-cert and --tls-key (the --role server process serves the API over https)",
        )
    } else {
        None
    }
}

/// `--role operator`: reconciles `--apps` with clusters resolved through `--server`.
async fn run_operator(args: ServeArgs) -> Result<(), ServeError> {
    let scheduling = scheduling(&args);
    let pipeline = pipeline(&args);
    let shards = shard_config(&args)?;
    let options = OperatorOptions {
        listen: args.listen,
        data_dir: args.data_dir,
        apps_dir: args.apps,
        server: args.server_url.unwrap_or_default(),
        server_ca_file: args.server_ca_file,
        internal_token: std::env::var("WARDN_INTERNAL_TOKEN").unwrap_or_default(),
        management_kubeconfig: args.kubeconfig,
        app_namespaces: args.namespaces.clone(),
        cache_ttl: Duration::from_secs(args.cluster_cache_ttl.max(1)),
        timeout: Duration::from_secs(args.probe_timeout.max(1)),
        scheduling,
        pipeline,
        shards,
        replica_id: args.replica_id,
        git_timeout: args.git.timeout(),
        git_ca_file: args.git.git_ca_file,
        notify: notify_targets(&args.notify_url, &args.notify_slack_url),
        notify_secret: notify_secret(),
        public_url: args.public_url,
    };
    let operator = OperatorServer::bind(options).await?;
    println!("wardn operator: health on http://{}", operator.addr);
    within_grace(|shutdown| operator.run(shutdown)).await
}

/// How long the process may take to stop after SIGTERM or Ctrl-C.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// Runs `serve` until SIGTERM or Ctrl-C, then gives it [`SHUTDOWN_GRACE`] to stop (finish
/// open requests, cancel passes, store statuses); past that the process stops anyway, whatever
/// a pass or a connection is doing.
async fn within_grace<F>(serve: impl FnOnce(BoxFuture) -> F) -> Result<(), ServeError>
where
    F: std::future::Future<Output = Result<(), ServeError>>,
{
    let (signalled, on_signal) = tokio::sync::watch::channel(false);
    let shutdown: BoxFuture = Box::pin(async move {
        shutdown_signal().await;
        signalled.send_replace(true);
    });
    let mut on_signal = on_signal;
    let deadline = async move {
        let _ = on_signal.wait_for(|signalled| *signalled).await;
        tokio::time::sleep(SHUTDOWN_GRACE).await;
    };
    tokio::select! {
        result = serve(shutdown) => result,
        () = deadline => {
            tracing::warn!(grace = ?SHUTDOWN_GRACE, "not stopped within the grace period; exiting");
            Ok(())
        }
    }
}

/// The shutdown future handed to the servers.
type BoxFuture = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + 'static>>;

async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(term) => term,
                Err(err) => {
                    tracing::warn!(%err, "cannot listen for SIGTERM; stopping on Ctrl-C only");
                    let _ = interrupt.await;
                    return;
                }
            };
        tokio::select! {
            _ = interrupt => {},
            _ = term.recv() => {},
        }
    }
    #[cfg(not(unix))]
    {
        let _ = interrupt.await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        serve: ServeArgs,
    }

    #[test]
    fn scheduling_flags_have_defaults_and_refuse_nonsense() {
        let d = Cli::try_parse_from(["wardn"]).unwrap().serve;
        assert_eq!(d.resync_interval, Duration::from_secs(180));
        assert_eq!((d.cluster_qps, d.cluster_burst), (50.0, 100));
        assert_eq!(d.workers, 16);
        let p = pipeline(&d);
        assert_eq!(p.approval_ttl, Some(Duration::from_secs(24 * 3600)));
        assert_eq!(p.health_timeout, Duration::from_secs(300));
        let s = Cli::try_parse_from([
            "wardn",
            "--resync-interval",
            "1h30m",
            "--cluster-qps",
            "2.5",
            "--cluster-burst",
            "7",
            "--workers",
            "3",
            "--approval-ttl",
            "0s",
            "--health-timeout",
            "90s",
        ])
        .unwrap()
        .serve;
        assert_eq!(s.resync_interval, Duration::from_secs(5400));
        assert_eq!((s.cluster_qps, s.cluster_burst), (2.5, 7));
        assert_eq!(s.workers, 3);
        let p = pipeline(&s);
        assert_eq!(p.approval_ttl, None, "0s: approvals never expire");
        assert_eq!(p.health_timeout, Duration::from_secs(90));
        for bad in [
            ["--resync-interval", "0s"],
            ["--resync-interval", "soon"],
            ["--cluster-qps", "0"],
            ["--cluster-qps", "NaN"],
            ["--cluster-burst", "0"],
            ["--workers", "0"],
            ["--health-timeout", "0s"],
            ["--approval-ttl", "a day"],
            ["--workers", "5000"],
        ] {
            let err = Cli::try_parse_from(["wardn", bad[0], bad[1]]).err();
            assert!(err.is_some(), "{bad:?} accepted");
        }
    }
}
