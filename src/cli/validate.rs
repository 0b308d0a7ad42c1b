//! `wardn validate --apps DIR [--full]`: checks App files before they are deployed, without a
//! cluster: every file parses as Apps, every destination template parses and resolves (errors
//! name the file, document, field and column), and — when a server is configured — every
//! destination names a registered cluster. `--full` prints the routing table: each App (each
//! target of an App with `spec.targets`, as `namespace/name:target`), the cluster it routes
//! to, and whether that is a static name, a template or the management cluster.

use std::path::{Path, PathBuf};

use super::client::{ApiClient, CliError, ConnectionArgs};
use super::cluster_apps::registered;
use crate::app::App;
use crate::app::files::AppsDir;
use crate::app::targets::expand;

/// Arguments of `wardn validate`.
#[derive(Debug, clap::Args)]
pub struct ValidateArgs {
    /// Directory of App YAML files.
    #[arg(long, env = "WARDN_APPS_DIR")]
    pub apps: PathBuf,
    /// Print the routing table (App → cluster, static or template).
    #[arg(long)]
    pub full: bool,
    /// Do not ask a server for the registered clusters, even when one is configured.
    #[arg(long)]
    pub offline: bool,
    #[command(flatten)]
    pub connection: ConnectionArgs,
}

/// How an App reaches its cluster.
fn route(app: &App) -> &'static str {
    if app.spec.destination.cluster_template.is_some() {
        "template"
    } else if app.spec.destination.cluster.is_empty() {
        "management"
    } else {
        "static"
    }
}

/// Runs `wardn validate`: prints `✓`/`✗` per App (and each invalid file), then the routing
/// table with `--full`; fails when anything is invalid.
pub async fn validate(args: &ValidateArgs) -> Result<(), CliError> {
    let mut dir = AppsDir::default();
    let reload = dir
        .reload(&args.apps)
        .map_err(|err| CliError::Failed(err.to_string()))?;
    let registered = if args.offline {
        None
    } else {
        match ApiClient::from_args(&args.connection) {
            Ok(client) => Some(registered(&client).await?),
            Err(CliError::NotConfigured(_)) => None,
            Err(err) => return Err(err),
        }
    };
    let mut failures = reload.errors.len();
    for error in &reload.errors {
        println!("✗ {error}");
    }
    let mut rows = vec![vec![
        "APP".to_string(),
        "CLUSTER".to_string(),
        "ROUTE".to_string(),
        "FILE".to_string(),
    ]];
    for (file, apps) in &reload.files {
        // Each target of an App with `spec.targets` is routed (and checked) on its own.
        let mut routed: Vec<App> = Vec::new();
        for app in apps {
            match expand(app) {
                Ok(expanded) => routed.extend(expanded),
                Err(error) => {
                    failures += 1;
                    let key = crate::app::key::app_key(app);
                    println!("✗ {}: App {key}: {error}", file.display());
                }
            }
        }
        for app in &routed {
            let key = crate::app::key::app_key(app);
            let cluster = app.spec.destination.cluster_segment();
            let unregistered = registered.as_ref().and_then(|clusters| {
                let name = &app.spec.destination.cluster;
                (!name.is_empty() && !clusters.iter().any(|c| &c.name == name)).then(|| {
                    let known: Vec<&str> = clusters.iter().map(|c| c.name.as_str()).collect();
                    format!(
                        "cluster {name:?} is not registered (registered: {})",
                        known.join(", ")
                    )
                })
            });
            match unregistered {
                Some(reason) => {
                    failures += 1;
                    let field = app.spec.destination.cluster_field();
                    println!("✗ {}: App {key}: {field}: {reason}", file.display());
                }
                None => println!(
                    "✓ {}: App {key} → {cluster} ({})",
                    file.display(),
                    route(app)
                ),
            }
            rows.push(vec![
                key,
                cluster.to_string(),
                route(app).to_string(),
                relative(file, &args.apps),
            ]);
        }
    }
    if args.full {
        println!("\n{}", super::table::render(&rows));
    }
    if registered.is_none() {
        println!(
            "note: registered clusters not checked (no server: `wardn login`, or --server and --token)"
        );
    }
    if failures > 0 {
        return Err(CliError::Failed(format!(
            "{failures} problem(s) in {}",
            args.apps.display()
        )));
    }
    Ok(())
}

/// `file` relative to the Apps directory, for a compact table.
fn relative(file: &Path, dir: &Path) -> String {
    file.strip_prefix(dir).unwrap_or(file).display().to_string()
}
