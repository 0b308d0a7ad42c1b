//! The `wardn` command line: the daemon and its client commands.

use wardn::cli::client::ConnectionArgs;
use wardn::cli::commands;
use wardn::telemetry;

use clap::{Parser, Subcommand};

/// wardn: a GitOps reconciler that deploys applications from Git to many Kubernetes clusters.
/// Not `Debug`, nor are its commands: arguments carry tokens and the database URL.
#[derive(Parser)]
#[command(name = "wardn", version, about)]
struct Cli {
    /// Log line format.
    #[arg(long, global = true, value_enum, default_value_t = telemetry::LogFormat::Text, env = "WARDN_LOG_FORMAT")]
    log_format: telemetry::LogFormat,

    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print the version of this build.
    Version,
    /// Render a directory like `kubectl kustomize DIR` (kustomize v5), without kustomize.
    Render {
        /// The directory (with a kustomization, or plain manifests).
        dir: std::path::PathBuf,
        /// Print a JSON array of the objects instead of YAML.
        #[arg(long)]
        json: bool,
    },
    /// Run the wardn server: API, cluster registry and prober.
    Serve(Box<wardn::cli::serve::ServeArgs>),
    /// Log in to a wardn server and save an API token for the client commands.
    Login(commands::LoginArgs),
    /// Manage API tokens.
    Tokens {
        #[command(flatten)]
        connection: ConnectionArgs,
        #[command(subcommand)]
        command: commands::TokensCommand,
    },
    /// Create, list, change the role of and delete users (admins only).
    Users {
        #[command(flatten)]
        connection: ConnectionArgs,
        #[command(subcommand)]
        command: wardn::cli::users::UsersCommand,
    },
    /// Register, list, test and remove clusters.
    Clusters {
        #[command(flatten)]
        connection: ConnectionArgs,
        #[command(subcommand)]
        command: commands::ClustersCommand,
    },
    /// Register Git repository credentials and webhook secrets (sealed on the server).
    Repos {
        #[command(flatten)]
        connection: ConnectionArgs,
        #[command(subcommand)]
        command: wardn::cli::repos::ReposCommand,
    },
    /// Generate files from the Apps (`generate rbac`, `generate bundle`).
    Generate {
        #[command(subcommand)]
        command: wardn::cli::generate::GenerateCommand,
    },
    /// Inspect the audit log.
    Audit {
        #[command(flatten)]
        connection: ConnectionArgs,
        #[command(subcommand)]
        command: commands::AuditCommand,
    },
    /// List, inspect, diff, sync, approve and reject Apps.
    Apps {
        #[command(flatten)]
        connection: ConnectionArgs,
        #[command(subcommand)]
        command: wardn::cli::apps::AppsCommand,
    },
    /// Print the App CustomResourceDefinition (YAML), for `wardn crd | kubectl apply -f -`.
    Crd,
    /// Check App files without a cluster: structure, destination templates and (with a
    /// server configured) registered clusters; `--full` prints the routing table.
    Validate(wardn::cli::validate::ValidateArgs),
}

/// Runs the command; a failure prints its cause chain on one line (`error: a: b: c`) and exits
/// with status 1. Never a backtrace: anyhow's `Debug` form, which `main` returning a `Result`
/// would print, adds one whenever `RUST_BACKTRACE` is set, as it is on many machines.
fn main() -> std::process::ExitCode {
    wardn::server::tune_allocator();
    match run() {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> anyhow::Result<std::process::ExitCode> {
    let cli = Cli::parse();
    if !matches!(cli.command, Command::Serve(_)) {
        die_quietly_on_closed_output();
    }
    // `wardn render` logs nothing and speaks no TLS: without a log subscriber and a crypto
    // provider, their code and data stay out of its memory (it is measured against kustomize).
    if !matches!(cli.command, Command::Render { .. }) {
        telemetry::init(cli.log_format);
        install_crypto_provider();
    }
    match cli.command {
        Command::Version => println!("wardn {}", env!("CARGO_PKG_VERSION")),
        Command::Render { dir, json } => {
            let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
            wardn::render::render_path(&dir, json, &mut out)?;
            std::io::Write::flush(&mut out)?;
        }
        Command::Serve(args) => {
            let runtime = runtime()?;
            let result = runtime.block_on(wardn::cli::serve::run(*args));
            // Blocking work still running (a render, a Git fetch) must not hold the exit: the
            // grace period is over by now.
            runtime.shutdown_timeout(std::time::Duration::from_millis(500));
            result?
        }
        Command::Login(args) => runtime()?.block_on(commands::login(args))?,
        Command::Tokens {
            connection,
            command,
        } => runtime()?.block_on(commands::tokens(&connection, command))?,
        Command::Users {
            connection,
            command,
        } => runtime()?.block_on(wardn::cli::users::users(&connection, command))?,
        Command::Clusters {
            connection,
            command,
        } => return Ok(runtime()?.block_on(commands::clusters(&connection, command))?),
        Command::Audit {
            connection,
            command,
        } => runtime()?.block_on(commands::audit(&connection, command))?,
        Command::Repos {
            connection,
            command,
        } => runtime()?.block_on(wardn::cli::repos::repos(&connection, command))?,
        Command::Apps {
            connection,
            command,
        } => return Ok(runtime()?.block_on(wardn::cli::apps::run(&connection, command))?),
        Command::Generate { command } => {
            runtime()?.block_on(wardn::cli::generate::generate(command))?
        }
        Command::Crd => print!(
            "{}---\n{}",
            wardn::app::crd_yaml()?,
            wardn::clusters::declared::crd_yaml()?
        ),
        Command::Validate(args) => runtime()?.block_on(wardn::cli::validate::validate(&args))?,
    }
    Ok(std::process::ExitCode::SUCCESS)
}

/// The multi-threaded tokio runtime the async subcommands run on.
fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?)
}

/// Selects ring as the process-wide rustls provider. Several crates (reqwest through kube,
/// sqlx) may pull in aws-lc-rs too; with two providers compiled in, rustls refuses to pick one
/// and the first TLS client panics, so wardn chooses explicitly before any TLS is set up.
fn install_crypto_provider() {
    // An Err only means a provider is installed already, which is what we want.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// A client command whose output goes to a closed pipe (`wardn clusters list | head -1`) ends
/// quietly, as other command-line tools do, instead of panicking in `println!` (Rust ignores
/// SIGPIPE, which turns the closed pipe into a write error). Only a closed standard output or
/// error does: a pipe to a child process that exited early (an ssh command that refused the
/// connection before reading gix's request) stays a write error the command reports, where
/// SIGPIPE's default disposition killed the command with status 141 and no message. The daemon
/// keeps ignoring SIGPIPE (a client hanging up must never end the server).
fn die_quietly_on_closed_output() {
    #[cfg(unix)]
    // SAFETY: called at start-up, before any thread is spawned; the handler calls only
    // async-signal-safe functions.
    unsafe {
        libc::signal(
            libc::SIGPIPE,
            on_sigpipe as extern "C" fn(libc::c_int) as libc::sighandler_t,
        );
    }
}

/// SIGPIPE's handler for client commands: when standard output or error is a pipe whose
/// reader is gone, dies of SIGPIPE as the default disposition would; otherwise returns, and
/// the write that raised it fails with `EPIPE`.
#[cfg(unix)]
extern "C" fn on_sigpipe(_: libc::c_int) {
    let mut outputs = [1, 2].map(|fd| libc::pollfd {
        fd,
        events: 0,
        revents: 0,
    });
    // SAFETY: poll, signal and raise are async-signal-safe; `outputs` outlives the call.
    unsafe {
        let ready = libc::poll(outputs.as_mut_ptr(), 2, 0);
        if ready > 0
            && outputs
                .iter()
                .any(|output| output.revents & (libc::POLLERR | libc::POLLHUP) != 0)
        {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
            libc::raise(libc::SIGPIPE);
        }
    }
}
