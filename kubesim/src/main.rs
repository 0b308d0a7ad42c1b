//! `kubesim serve`: runs one or more emulated clusters and writes their kubeconfigs.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::{Parser, Subcommand};
use kubesim::{Cluster, ClusterConfig};

/// Kubernetes API emulator for tests and demos.
#[derive(Parser)]
#[command(name = "kubesim", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve clusters until SIGINT or SIGTERM.
    Serve {
        /// Comma-separated cluster names, each optionally `name=port`.
        #[arg(long, default_value = "kubesim")]
        clusters: String,
        /// Directory for `<name>.kubeconfig` and `<name>.tokens.json`.
        #[arg(long)]
        dir: PathBuf,
        /// Simulated Nodes per cluster.
        #[arg(long, default_value_t = 1)]
        nodes: usize,
        /// Namespaces created in every cluster, each with a namespaced token.
        #[arg(long, value_delimiter = ',')]
        namespaces: Vec<String>,
        /// Milliseconds before simulated workloads become ready.
        #[arg(long, default_value_t = 500)]
        ready_delay_ms: u64,
    },
}

fn parse_cluster(spec: &str) -> anyhow::Result<(String, u16)> {
    match spec.split_once('=') {
        Some((name, port)) => Ok((
            name.to_string(),
            port.parse()
                .with_context(|| format!("--clusters: {spec:?}: port {port:?} is not a number"))?,
        )),
        None => Ok((spec.to_string(), 0)),
    }
}

fn write(path: &std::path::Path, text: &str) -> anyhow::Result<()> {
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .init();
    kubesim::install_crypto_provider();
    let Command::Serve {
        clusters,
        dir,
        nodes,
        namespaces,
        ready_delay_ms,
    } = Cli::parse().command;
    let specs: Vec<(String, u16)> = clusters
        .split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|s| parse_cluster(s.trim()))
        .collect::<anyhow::Result<_>>()?;
    if specs.is_empty() {
        bail!("--clusters: name at least one cluster");
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut running = Vec::new();
    for (name, port) in specs {
        let cluster = Cluster::start(ClusterConfig {
            name: name.clone(),
            port,
            nodes,
            namespaces: namespaces.clone(),
            ready_delay: Duration::from_millis(ready_delay_ms),
            ..ClusterConfig::default()
        })
        .await
        .with_context(|| format!("starting cluster {name}"))?;
        let kubeconfig = dir.join(format!("{name}.kubeconfig"));
        let tokens = dir.join(format!("{name}.tokens.json"));
        write(&kubeconfig, &cluster.kubeconfig())?;
        write(&tokens, &serde_json::to_string_pretty(cluster.tokens())?)?;
        println!(
            "cluster {name}: {} kubeconfig {} tokens {}",
            cluster.url(),
            kubeconfig.display(),
            tokens.display()
        );
        running.push(cluster);
    }
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .context("installing the SIGTERM handler")?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    for cluster in &running {
        cluster.stop().await;
    }
    println!("stopped");
    Ok(())
}
