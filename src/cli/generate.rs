//! `wardn generate rbac` (one least-privilege RBAC file per cluster the Apps route to) and
//! `wardn generate bundle` (the install manifests of `deploy/`, rendered, plus those files):
//! the declarative counterparts of `clusters bootstrap`, for installs kept in Git.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::client::CliError;
use super::cluster_apps::rendered_apps;
use super::git_args::GitArgs;
use crate::app::LOCAL_CLUSTER;
use crate::cli::offline::targets::{self, ClusterNeeds, RenderedApp};
use crate::clusters::declared;
use crate::clusters::rbac::{self, IdentityPlan};
use crate::render::{self, DirTree};

/// `wardn generate` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum GenerateCommand {
    /// Write one least-privilege RBAC file per destination cluster of the Apps
    /// (`wardn-<cluster>-rbac.yaml`; `rbac.yaml` for the management cluster): a ServiceAccount,
    /// Roles and RoleBindings in the namespaces the Apps deploy to, a ClusterRole for
    /// cluster-scoped kinds, and a token Secret. No wildcards. Template-routed Apps' kinds go
    /// into every cluster's file, with a warning.
    Rbac(RbacArgs),
    /// Write the install bundle: `wardn.yaml` (the rendered `deploy/` variant: namespace,
    /// identity, RBAC, the App CRD, Service and workloads) plus the files of `generate rbac`.
    Bundle {
        #[command(flatten)]
        rbac: RbacArgs,
        /// Which install to render: `default` (one process, SQLite) or `split-postgres`
        /// (API server and operator, PostgreSQL).
        #[arg(long, default_value = "default")]
        variant: BundleVariant,
    },
}

/// What `generate rbac` and `generate bundle` read and where they write.
#[derive(Debug, clap::Args)]
pub struct RbacArgs {
    /// Directory of App YAML files.
    #[arg(long, env = "WARDN_APPS_DIR")]
    apps: PathBuf,
    /// Directory to write the files to (created if missing).
    #[arg(long)]
    out: PathBuf,
    /// Namespace for wardn's ServiceAccount and token Secret.
    #[arg(long, default_value = "wardn")]
    sa_namespace: String,
    /// A clusters file (`wardn serve --clusters`): its clusters get a file even when no App
    /// routes to them yet, and the printed instructions name their servers.
    #[arg(long)]
    clusters: Option<PathBuf>,
    /// How the Apps' Git sources are fetched.
    #[command(flatten)]
    git: GitArgs,
}

/// The `deploy/` variants `generate bundle` can render.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum BundleVariant {
    /// `deploy/default`.
    Default,
    /// `deploy/split-postgres`.
    SplitPostgres,
}

/// The files of `deploy/`, embedded so the binary alone can write a bundle.
const DEPLOY_FILES: &[(&str, &str)] = &[
    (
        "core/kustomization.yaml",
        include_str!("../../deploy/core/kustomization.yaml"),
    ),
    ("core/crd.yaml", include_str!("../../deploy/core/crd.yaml")),
    (
        "core/namespace.yaml",
        include_str!("../../deploy/core/namespace.yaml"),
    ),
    (
        "core/rbac.yaml",
        include_str!("../../deploy/core/rbac.yaml"),
    ),
    (
        "core/service.yaml",
        include_str!("../../deploy/core/service.yaml"),
    ),
    (
        "core/serviceaccount.yaml",
        include_str!("../../deploy/core/serviceaccount.yaml"),
    ),
    (
        "default/kustomization.yaml",
        include_str!("../../deploy/default/kustomization.yaml"),
    ),
    (
        "default/data.yaml",
        include_str!("../../deploy/default/data.yaml"),
    ),
    (
        "default/deployment.yaml",
        include_str!("../../deploy/default/deployment.yaml"),
    ),
    (
        "split-postgres/kustomization.yaml",
        include_str!("../../deploy/split-postgres/kustomization.yaml"),
    ),
    (
        "split-postgres/operator.yaml",
        include_str!("../../deploy/split-postgres/operator.yaml"),
    ),
    (
        "split-postgres/server.yaml",
        include_str!("../../deploy/split-postgres/server.yaml"),
    ),
];

/// Runs a `wardn generate` subcommand.
pub async fn generate(command: GenerateCommand) -> Result<(), CliError> {
    match command {
        GenerateCommand::Rbac(args) => generate_rbac(&args).await,
        GenerateCommand::Bundle { rbac, variant } => {
            create_dir(&rbac.out)?;
            let path = rbac.out.join("wardn.yaml");
            std::fs::write(&path, render_install(variant)?).map_err(file_error(&path))?;
            println!("Apply to the management cluster first:");
            println!("  kubectl apply -f {}", path.display());
            println!();
            generate_rbac(&rbac).await
        }
    }
}

/// Renders the `deploy/` variant from the embedded files (written to a temporary directory,
/// removed afterwards).
fn render_install(variant: BundleVariant) -> Result<String, CliError> {
    let work = tempfile::tempdir()
        .map_err(|err| CliError::Failed(format!("creating a directory for the bundle: {err}")))?;
    for (relative, text) in DEPLOY_FILES {
        let path = work.path().join(relative);
        if let Some(parent) = path.parent() {
            create_dir(parent)?;
        }
        std::fs::write(&path, text).map_err(file_error(&path))?;
    }
    let dir = match variant {
        BundleVariant::Default => "default",
        BundleVariant::SplitPostgres => "split-postgres",
    };
    let tree = DirTree::new(work.path())
        .map_err(|err| CliError::Failed(format!("reading the bundle's files: {err}")))?;
    render::render(&tree, dir)
        .map(|rendered| rendered.yaml)
        .map_err(|err| CliError::Failed(format!("rendering deploy/{dir}: {err}")))
}

async fn generate_rbac(args: &RbacArgs) -> Result<(), CliError> {
    let declared = match &args.clusters {
        Some(path) => declared::read_file(path).map_err(|err| CliError::Failed(err.to_string()))?,
        None => Vec::new(),
    };
    let servers: BTreeMap<String, String> = declared
        .iter()
        .map(|d| (d.name.clone(), d.spec.server.clone()))
        .collect();
    let apps = rendered_apps(&args.apps, &args.git).await?;
    let known: Vec<String> = servers.keys().cloned().collect();
    let (needs, templated) = targets::rbac_needs(&apps, &known);
    refuse_unplaceable(&needs)?;
    warn_template_routed(&templated);
    create_dir(&args.out)?;
    for (cluster, cluster_needs) in &needs {
        let path = args.out.join(rbac_file_name(cluster));
        let plan = IdentityPlan {
            cluster: display_name(cluster).to_string(),
            sa_namespace: args.sa_namespace.clone(),
            grants: cluster_needs.grants.clone(),
            namespaces: cluster_needs.namespaces.clone(),
        };
        std::fs::write(&path, rbac::to_yaml(&rbac::identity_objects(&plan)))
            .map_err(file_error(&path))?;
        println!(
            "{}",
            apply_instruction(cluster, servers.get(cluster), &path)
        );
    }
    Ok(())
}

/// Fails, writing nothing, when some App's objects cannot be turned into rules.
fn refuse_unplaceable(needs: &BTreeMap<String, ClusterNeeds>) -> Result<(), CliError> {
    let errors: Vec<String> = needs
        .iter()
        .flat_map(|(cluster, n)| {
            n.errors
                .iter()
                .map(move |e| format!("{}: {e}", display_name(cluster)))
        })
        .collect();
    if errors.is_empty() {
        return Ok(());
    }
    for error in &errors {
        eprintln!("{error}");
    }
    Err(CliError::Failed(format!(
        "{} App(s) cannot be turned into rules; nothing written",
        errors.len()
    )))
}

/// The seed's warning for template-routed Apps, on stderr.
pub fn warn_template_routed(templated: &[String]) {
    if !templated.is_empty() {
        eprintln!(
            "warning: template-routed App(s) added to all cluster RBAC files: {}",
            templated.join(", ")
        );
        eprintln!("  Remove rules for clusters that should not have access.");
    }
}

/// `rbac.yaml` for the management cluster, `wardn-<cluster>-rbac.yaml` for the others.
fn rbac_file_name(cluster: &str) -> String {
    if cluster.is_empty() {
        "rbac.yaml".to_string()
    } else {
        format!("wardn-{cluster}-rbac.yaml")
    }
}

/// `local` for the management cluster (the empty destination), the name otherwise.
fn display_name(cluster: &str) -> &str {
    if cluster.is_empty() {
        LOCAL_CLUSTER
    } else {
        cluster
    }
}

/// Where to apply one file: `Apply to cluster "prod" (https://…):` and the kubectl command.
fn apply_instruction(cluster: &str, server: Option<&String>, path: &Path) -> String {
    let heading = if cluster.is_empty() {
        "Apply to the management cluster (local):".to_string()
    } else {
        match server {
            Some(server) => format!("Apply to cluster {cluster:?} ({server}):"),
            None => format!("Apply to cluster {cluster:?}:"),
        }
    };
    format!("{heading}\n  kubectl apply -f {}\n", path.display())
}

fn create_dir(dir: &Path) -> Result<(), CliError> {
    std::fs::create_dir_all(dir).map_err(file_error(dir))
}

fn file_error(path: &Path) -> impl FnOnce(std::io::Error) -> CliError {
    let path = path.to_path_buf();
    move |source| CliError::File { path, source }
}

/// The Apps' needs as `clusters bootstrap --apps` grants them on `cluster`: the Apps routed
/// there and every template-routed App (with the warning), as in the generated files.
pub async fn bootstrap_needs(
    apps_dir: &Path,
    cluster: &str,
    git: &GitArgs,
) -> Result<ClusterNeeds, CliError> {
    let apps: Vec<RenderedApp> = rendered_apps(apps_dir, git).await?;
    let (mut needs, templated) = targets::rbac_needs(&apps, &[cluster.to_string()]);
    let routed = apps.iter().any(|app| app.cluster() == cluster) || !templated.is_empty();
    if !routed {
        return Err(CliError::Failed(format!(
            "no App in {} has destination.cluster {cluster:?}",
            apps_dir.display()
        )));
    }
    warn_template_routed(&templated);
    Ok(needs.remove(cluster).unwrap_or_default())
}
