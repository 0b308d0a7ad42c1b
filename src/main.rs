//! The `wardn` command line: the daemon and its client commands.

use wardn::telemetry;

use clap::{Parser, Subcommand};

/// wardn: a GitOps reconciler that deploys applications from Git to many Kubernetes clusters.
#[derive(Debug, Parser)]
#[command(name = "wardn", version, about)]
struct Cli {
    /// Log line format.
    #[arg(long, global = true, value_enum, default_value_t = telemetry::LogFormat::Text, env = "WARDN_LOG_FORMAT")]
    log_format: telemetry::LogFormat,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print the version of this build.
    Version,
    /// Print the App CustomResourceDefinition (YAML), for `wardn crd | kubectl apply -f -`.
    Crd,
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    telemetry::init(cli.log_format);
    install_crypto_provider();
    match cli.command {
        Command::Version => {
            println!("wardn {}", env!("CARGO_PKG_VERSION"));
            Ok(())
        }
        Command::Crd => {
            print!("{}", wardn::app::crd_yaml()?);
            Ok(())
        }
    }
}

/// Selects ring as the process-wide rustls provider. Several crates (reqwest through kube,
/// sqlx) may pull in aws-lc-rs too; with two providers compiled in, rustls refuses to pick one
/// and the first TLS client panics, so wardn chooses explicitly before any TLS is set up.
fn install_crypto_provider() {
    // An Err only means a provider is installed already, which is what we want.
    let _ = rustls::crypto::ring::default_provider().install_default();
}
