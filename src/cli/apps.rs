//! `wardn apps list|get|diff|sync|approve|reject` (and `promote|history|rollback|unpin`, in
//! [`super::promotions`]): the Apps API from the command line, with
//! `-o table|json|yaml`, a progress display for long syncs (`sync --wait`) and exit codes that
//! tell a script how a sync ended (see [`exit_code`]).

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::Method;
use serde::Deserialize;
use serde_json::{Value, json};

use super::client::{ApiClient, CliError, ConnectionArgs};
use super::promotions;
use super::table::{self, short_revision};
use crate::app::{AppStatus, Phase};
use crate::sources::spec::parse_duration;

/// Exit code of a sync or approval that ended Degraded, Failed or OutOfSync (and of errors).
pub const EXIT_FAILED: u8 = 1;
/// Exit code of a sync that ended Held (waiting for approval) or Waiting (sync window).
pub const EXIT_HELD: u8 = 3;
/// Exit code of `sync --wait` when `--timeout` passed before the App settled.
pub const EXIT_TIMEOUT: u8 = 4;

/// How often `sync --wait` polls the App.
const POLL: Duration = Duration::from_millis(500);

/// Output formats of the `apps` commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Output {
    /// Aligned columns (`diff`: the unified text diff).
    #[default]
    Table,
    /// Pretty-printed JSON.
    Json,
    /// YAML.
    Yaml,
}

/// `wardn apps` subcommands. APP is `CLUSTER/NAME`, or `NAME` for an App deployed to the
/// management cluster (`local`), or `CLUSTER/NAMESPACE/NAME` to pick one of several Apps of
/// the same name.
#[derive(Debug, clap::Subcommand)]
pub enum AppsCommand {
    /// List Apps: NAME CLUSTER PHASE REVISION MESSAGE (one row per target of an App with
    /// `spec.targets`, named `NAME:TARGET`).
    List {
        /// Only Apps deployed to this cluster (`local`: the management cluster).
        #[arg(long)]
        cluster: Option<String>,
        /// Only Apps in this phase (Synced, OutOfSync, Progressing, Held, Waiting, Degraded, Failed).
        #[arg(long)]
        phase: Option<String>,
        /// Output format.
        #[arg(short, long, value_enum, default_value_t)]
        output: Output,
    },
    /// Show one App and its status.
    Get {
        /// `CLUSTER/NAME`, `NAME` (cluster `local`) or `CLUSTER/NAMESPACE/NAME`.
        app: String,
        /// Output format.
        #[arg(short, long, value_enum, default_value_t)]
        output: Output,
    },
    /// Show what a sync would change now (unified text diff; json/yaml: the structured plan).
    Diff {
        /// `CLUSTER/NAME`, `NAME` (cluster `local`) or `CLUSTER/NAMESPACE/NAME`.
        app: String,
        /// Output format.
        #[arg(short, long, value_enum, default_value_t)]
        output: Output,
    },
    /// Sync an App now. Exit code: 0 Synced, 3 Held or Waiting, 4 timeout, 1 otherwise.
    Sync {
        /// `CLUSTER/NAME`, `NAME` (cluster `local`) or `CLUSTER/NAMESPACE/NAME`.
        app: String,
        /// Show phase changes while the sync runs and wait until the App settles.
        #[arg(long)]
        wait: bool,
        /// With --wait: give up after this long (e.g. 90s, 5m).
        #[arg(long, default_value = "5m", value_parser = parse_duration)]
        timeout: Duration,
        /// Sync even inside a closed sync window (audited).
        #[arg(long)]
        override_window: bool,
        /// Output format of the final status.
        #[arg(short, long, value_enum, default_value_t)]
        output: Output,
    },
    /// Hard refresh: fetch the App's source now and re-diff every object against the cluster
    /// (applies only if the App syncs automatically). Prints the resulting status.
    Refresh {
        /// `CLUSTER/NAME`, `NAME` (cluster `local`) or `CLUSTER/NAMESPACE/NAME`.
        app: String,
        /// Output format of the resulting status.
        #[arg(short, long, value_enum, default_value_t)]
        output: Output,
    },
    /// Approve the Held plan; with --plan-hash only if it is still that plan (else 409).
    Approve {
        /// `CLUSTER/NAME`, `NAME` (cluster `local`) or `CLUSTER/NAMESPACE/NAME`.
        app: String,
        /// The hash of the plan you reviewed (`wardn apps get`, status.planHash).
        #[arg(long)]
        plan_hash: Option<String>,
        /// Output format of the resulting status.
        #[arg(short, long, value_enum, default_value_t)]
        output: Output,
    },
    /// Reject the Held plan (the App becomes OutOfSync).
    Reject {
        /// `CLUSTER/NAME`, `NAME` (cluster `local`) or `CLUSTER/NAMESPACE/NAME`.
        app: String,
        /// Output format of the resulting status.
        #[arg(short, long, value_enum, default_value_t)]
        output: Output,
    },
    /// Promote the image digests APP's Pods run onto the App --to names (Held when it
    /// requires approval). Exit code: 0 Synced, 3 Held or Waiting, 1 otherwise.
    Promote {
        /// The source: `CLUSTER/NAME`, `NAME` (cluster `local`) or `CLUSTER/NAMESPACE/NAME`.
        app: String,
        /// The target App: `NAME` (on any cluster) or `CLUSTER/NAME`.
        #[arg(long)]
        to: String,
        /// Output format (json/yaml: the promotion record and the target's status).
        #[arg(short, long, value_enum, default_value_t)]
        output: Output,
    },
    /// List an App's promotions and rollbacks, newest first: ID SOURCE REVISION IMAGES ACTOR
    /// WHEN OUTCOME.
    History {
        /// `CLUSTER/NAME`, `NAME` (cluster `local`) or `CLUSTER/NAMESPACE/NAME`.
        app: String,
        /// Output format.
        #[arg(short, long, value_enum, default_value_t)]
        output: Output,
    },
    /// Pin the images of an earlier promotion of APP again (Held when it requires approval).
    Rollback {
        /// `CLUSTER/NAME`, `NAME` (cluster `local`) or `CLUSTER/NAMESPACE/NAME`.
        app: String,
        /// The promotion's id (`wardn apps history`).
        #[arg(long)]
        to: u64,
        /// Output format.
        #[arg(short, long, value_enum, default_value_t)]
        output: Output,
    },
    /// Remove the images a promotion pinned on APP: it runs what its source renders again.
    Unpin {
        /// `CLUSTER/NAME`, `NAME` (cluster `local`) or `CLUSTER/NAMESPACE/NAME`.
        app: String,
        /// Output format of the resulting status.
        #[arg(short, long, value_enum, default_value_t)]
        output: Output,
    },
}

/// An App as `GET /api/v1/apps` shows it.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AppView {
    /// The App's name.
    pub name: Option<String>,
    /// The App's namespace (in the management cluster or the apps directory).
    pub namespace: Option<String>,
    /// The destination cluster segment (`local`: the management cluster).
    pub cluster: String,
    /// The target of an App with `spec.targets` this row is.
    #[serde(default)]
    pub target: Option<String>,
    /// The namespace the App deploys to.
    pub destination_namespace: Option<String>,
    /// The App's status.
    #[serde(default)]
    pub status: AppStatus,
    /// On a `--role server` process, the operator (replica id) that reconciles the App.
    #[serde(default)]
    pub operator: Option<String>,
}

/// Checks a `CLUSTER/NAME`, `NAME` or `--cluster` value: Kubernetes-style names only, so it
/// can go into a URL path or query as is.
fn checked<'a>(what: &str, value: &'a str) -> Result<&'a str, CliError> {
    let fine = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_');
    if value.is_empty() || !value.chars().all(fine) {
        return Err(CliError::Failed(format!(
            "{what} {value:?}: expected letters, digits, '-', '.' or '_'"
        )));
    }
    Ok(value)
}

/// `NAME` or `NAME:TARGET`, each part checked as [`checked`] does.
fn addressed_name(name: &str) -> Result<&str, CliError> {
    let (app, target) = crate::app::key::split_name(name);
    checked("APP name", app)?;
    if let Some(target) = target {
        checked("APP target", target)?;
    }
    Ok(name)
}

/// The API path of APP's `action` (`""` for the App itself, else e.g. `"sync"`). APP is
/// `NAME` (on `local`), `CLUSTER/NAME`, or `CLUSTER/NAMESPACE/NAME` when Apps of the same name
/// deploy to the cluster from several namespaces (`?namespace=`); NAME may be `NAME:TARGET`
/// for one target of an App with `spec.targets`.
pub fn app_path(app: &str, action: &str) -> Result<String, CliError> {
    let parts: Vec<&str> = app.split('/').collect();
    let (cluster, namespace, name) = match parts.as_slice() {
        [name] => ("local", None, *name),
        [cluster, name] => (*cluster, None, *name),
        [cluster, namespace, name] => (*cluster, Some(*namespace), *name),
        _ => {
            return Err(CliError::Failed(format!(
                "APP {app:?}: expected NAME, CLUSTER/NAME or CLUSTER/NAMESPACE/NAME"
            )));
        }
    };
    let mut path = format!(
        "/api/v1/apps/{}/{}",
        checked("APP cluster", cluster)?,
        addressed_name(name)?
    );
    if !action.is_empty() {
        path.push('/');
        path.push_str(action);
    }
    if let Some(namespace) = namespace {
        path.push_str("?namespace=");
        path.push_str(checked("APP namespace", namespace)?);
    }
    Ok(path)
}

fn decode<T: serde::de::DeserializeOwned>(what: &str, value: Value) -> Result<T, CliError> {
    serde_json::from_value(value).map_err(|err| CliError::Decode {
        what: what.to_string(),
        reason: err.to_string(),
    })
}

/// `value` in `output` format (`table` is handled by the caller).
fn structured(value: &Value, output: Output) -> Result<String, CliError> {
    let text = match output {
        Output::Yaml => serde_saphyr::to_string(value).map_err(|err| err.to_string()),
        _ => serde_json::to_string_pretty(value).map_err(|err| err.to_string()),
    };
    text.map(|t| t.trim_end().to_string())
        .map_err(|reason| CliError::Decode {
            what: "output".into(),
            reason,
        })
}

/// A phase as shown in tables.
fn phase_name(phase: Option<Phase>) -> String {
    phase.map_or_else(|| "Unknown".to_string(), |p| format!("{p:?}"))
}

/// The `wardn apps list` / `get` table; with an OPERATOR column when operators reconcile the
/// Apps (a `--role server` process).
pub fn apps_table(views: &[AppView]) -> String {
    let operated = views.iter().any(|v| v.operator.is_some());
    let mut header = vec!["NAME", "CLUSTER", "PHASE", "REVISION"];
    if operated {
        header.push("OPERATOR");
    }
    header.push("MESSAGE");
    let mut rows = vec![header.iter().map(|h| h.to_string()).collect::<Vec<_>>()];
    for v in views {
        let name = v.name.clone().unwrap_or_default();
        let mut row = vec![
            match &v.target {
                Some(target) => format!("{name}:{target}"),
                None => name,
            },
            v.cluster.clone(),
            phase_name(v.status.phase),
            short_revision(v.status.revision.as_deref()),
        ];
        if operated {
            row.push(v.operator.clone().unwrap_or_default());
        }
        row.push(v.status.message.as_deref().unwrap_or("").replace('\n', " "));
        rows.push(row);
    }
    table::render(&rows)
}

/// One line for a status: phase, revision, plan summary and message.
pub fn status_line(app: &str, status: &AppStatus) -> String {
    let mut line = format!(
        "{app}: {} revision {}",
        phase_name(status.phase),
        short_revision(status.revision.as_deref())
    );
    if let Some(plan) = status.plan {
        line.push_str(&format!(
            " plan: {} to create, {} to update, {} unchanged, {} to prune",
            plan.creates, plan.updates, plan.unchanged, plan.prunes
        ));
    }
    if let Some(message) = status.message.as_deref().filter(|m| !m.is_empty()) {
        line.push_str(&format!(" ({message})"));
    }
    line
}

/// The exit code a sync or approval ending in `phase` returns: 0 Synced, [`EXIT_HELD`] for
/// Held and Waiting, [`EXIT_FAILED`] otherwise.
pub fn exit_code(phase: Option<Phase>) -> u8 {
    match phase {
        Some(Phase::Synced) => 0,
        Some(Phase::Held | Phase::Waiting) => EXIT_HELD,
        _ => EXIT_FAILED,
    }
}

/// Runs a `wardn apps` subcommand; the exit code reflects the App's phase after a sync or
/// approval.
pub async fn run(connection: &ConnectionArgs, command: AppsCommand) -> Result<ExitCode, CliError> {
    let client = ApiClient::from_args(connection)?;
    match command {
        AppsCommand::List {
            cluster,
            phase,
            output,
        } => list(&client, cluster.as_deref(), phase.as_deref(), output).await,
        AppsCommand::Get { app, output } => {
            let value: Value = client.call(Method::GET, &app_path(&app, "")?, None).await?;
            match output {
                Output::Table => println!("{}", apps_table(&[decode("App", value)?])),
                _ => println!("{}", structured(&value, output)?),
            }
            Ok(ExitCode::SUCCESS)
        }
        AppsCommand::Diff { app, output } => {
            let path = app_path(&app, "diff")?;
            let value: Value = client.call(Method::GET, &path, None).await?;
            match output {
                Output::Table => match value["text"].as_str() {
                    Some("") | None => println!("no changes"),
                    Some(text) => print!("{text}"),
                },
                _ => println!("{}", structured(&value["plan"], output)?),
            }
            Ok(ExitCode::SUCCESS)
        }
        AppsCommand::Sync {
            app,
            wait,
            timeout,
            override_window,
            output,
        } => {
            let body = json!({ "override_window": override_window });
            let status = if wait {
                match sync_and_watch(Arc::new(client), &app, body, timeout).await? {
                    Some(status) => status,
                    None => return Ok(ExitCode::from(EXIT_TIMEOUT)),
                }
            } else {
                let path = app_path(&app, "sync")?;
                let done: Value = client.call(Method::POST, &path, Some(&body)).await?;
                decode("status", done["status"].clone())?
            };
            print_status(&app, &status, output)?;
            Ok(ExitCode::from(exit_code(status.phase)))
        }
        AppsCommand::Approve {
            app,
            plan_hash,
            output,
        } => {
            let path = app_path(&app, "approve")?;
            let body = plan_hash.map(|h| json!({ "plan_hash": h }));
            let done: Value = client.call(Method::POST, &path, body.as_ref()).await?;
            let status: AppStatus = decode("status", done["status"].clone())?;
            print_status(&app, &status, output)?;
            Ok(ExitCode::from(exit_code(status.phase)))
        }
        AppsCommand::Refresh { app, output } => {
            let path = app_path(&app, "refresh")?;
            let done: Value = client.call(Method::POST, &path, None).await?;
            let status: AppStatus = decode("status", done["status"].clone())?;
            print_status(&app, &status, output)?;
            Ok(ExitCode::SUCCESS)
        }
        AppsCommand::Reject { app, output } => {
            let path = app_path(&app, "reject")?;
            let done: Value = client.call(Method::POST, &path, None).await?;
            let status: AppStatus = decode("status", done["status"].clone())?;
            print_status(&app, &status, output)?;
            Ok(ExitCode::SUCCESS)
        }
        AppsCommand::Promote { app, to, output } => {
            let to = promotions::target(&to, |what, v| checked(what, v).map(str::to_string))?;
            let path = promotions::with_query(app_path(&app, "promote")?, &format!("to={to}"));
            let done: Value = client.call(Method::POST, &path, None).await?;
            promoted(&done, output)
        }
        AppsCommand::History { app, output } => {
            let path = app_path(&app, "promotions")?;
            let value: Value = client.call(Method::GET, &path, None).await?;
            match output {
                Output::Table => {
                    let records: Vec<promotions::PromotionView> =
                        decode("promotions", value["promotions"].clone())?;
                    println!("{}", promotions::history_table(&records));
                }
                _ => println!("{}", structured(&value, output)?),
            }
            Ok(ExitCode::SUCCESS)
        }
        AppsCommand::Rollback { app, to, output } => {
            let path = promotions::with_query(app_path(&app, "rollback")?, &format!("to={to}"));
            let done: Value = client.call(Method::POST, &path, None).await?;
            promoted(&done, output)
        }
        AppsCommand::Unpin { app, output } => {
            let path = app_path(&app, "unpin")?;
            let done: Value = client.call(Method::POST, &path, None).await?;
            let status: AppStatus = decode("status", done["status"].clone())?;
            print_status(&app, &status, output)?;
            Ok(ExitCode::from(exit_code(status.phase)))
        }
    }
}

/// Prints the answer of `promote` or `rollback` (what was pinned, the target's status and,
/// when it is Held, the command that approves it) and returns the exit code of the target's
/// phase.
fn promoted(done: &Value, output: Output) -> Result<ExitCode, CliError> {
    let status: AppStatus = decode("status", done["status"].clone())?;
    let record: promotions::PromotionView = decode("promotion", done["promotion"].clone())?;
    match output {
        Output::Table => {
            print!("{}", done["text"].as_str().unwrap_or_default());
            print_status(&record.target, &status, output)?;
            if status.phase == Some(Phase::Held) {
                println!(
                    "approve with: wardn apps approve {} --plan-hash {}",
                    record.target,
                    status.plan_hash.as_deref().unwrap_or_default()
                );
            }
        }
        _ => println!("{}", structured(done, output)?),
    }
    Ok(ExitCode::from(exit_code(status.phase)))
}

async fn list(
    client: &ApiClient,
    cluster: Option<&str>,
    phase: Option<&str>,
    output: Output,
) -> Result<ExitCode, CliError> {
    let mut query = Vec::new();
    if let Some(cluster) = cluster {
        query.push(format!("cluster={}", checked("--cluster", cluster)?));
    }
    if let Some(phase) = phase {
        query.push(format!("phase={}", checked("--phase", phase)?));
    }
    let mut path = "/api/v1/apps".to_string();
    if !query.is_empty() {
        path = format!("{path}?{}", query.join("&"));
    }
    let value: Value = client.call(Method::GET, &path, None).await?;
    let listed = value["apps"]
        .as_array()
        .is_some_and(|apps| !apps.is_empty());
    if value["reconciles_apps"] == false && !listed {
        eprintln!(
            "note: {} reconciles no Apps (--role server) and none of its operators reported any (yet)",
            client.server()
        );
    }
    match output {
        Output::Table => {
            let views: Vec<AppView> = decode("App list", value["apps"].clone())?;
            println!("{}", apps_table(&views));
        }
        _ => println!("{}", structured(&value["apps"], output)?),
    }
    Ok(ExitCode::SUCCESS)
}

fn print_status(app: &str, status: &AppStatus, output: Output) -> Result<(), CliError> {
    match output {
        Output::Table => println!("{}", status_line(app, status)),
        _ => {
            let value = serde_json::to_value(status).map_err(|err| CliError::Decode {
                what: "status".into(),
                reason: err.to_string(),
            })?;
            println!("{}", structured(&value, output)?);
        }
    }
    Ok(())
}

/// `sync --wait`: sends the sync and, while the server runs it, polls the App and prints each
/// phase change (to stderr, keeping stdout for the result). Returns the final status, or
/// `None` (after saying so) when `timeout` passed first.
async fn sync_and_watch(
    client: Arc<ApiClient>,
    app: &str,
    body: Value,
    timeout: Duration,
) -> Result<Option<AppStatus>, CliError> {
    let path = app_path(app, "")?;
    let sync_path = app_path(app, "sync")?;
    let poster = Arc::clone(&client);
    let mut sync = tokio::spawn(async move {
        poster
            .call::<Value>(Method::POST, &sync_path, Some(&body))
            .await
    });
    let deadline = Instant::now() + timeout;
    let mut shown: Option<(Option<Phase>, Option<String>)> = None;
    let mut show = |status: &AppStatus| {
        let now = (status.phase, status.message.clone());
        if shown.as_ref() != Some(&now) {
            eprintln!("{}", status_line(app, status));
            shown = Some(now);
        }
    };
    // Once the sync request is answered (or lost), the App is polled until it settles.
    let mut answered = false;
    loop {
        if !answered {
            let remaining = deadline.saturating_duration_since(Instant::now());
            tokio::select! {
                joined = &mut sync => {
                    answered = true;
                    match joined {
                        Ok(Ok(done)) => {
                            let status: AppStatus = decode("status", done["status"].clone())?;
                            if status.phase != Some(Phase::Progressing) {
                                show(&status);
                                return Ok(Some(status));
                            }
                        }
                        Ok(Err(CliError::Http { .. })) => {}
                        Ok(Err(err)) => return Err(err),
                        Err(err) => return Err(CliError::Failed(format!("sync request: {err}"))),
                    }
                }
                _ = tokio::time::sleep(POLL.min(remaining)) => {}
            }
        } else {
            tokio::time::sleep(POLL.min(deadline.saturating_duration_since(Instant::now()))).await;
        }
        if Instant::now() >= deadline {
            sync.abort();
            eprintln!(
                "timed out after {}s waiting for {app}",
                timeout.as_secs_f64()
            );
            return Ok(None);
        }
        let view: AppView = decode("App", client.call(Method::GET, &path, None).await?)?;
        show(&view.status);
        if answered && view.status.phase != Some(Phase::Progressing) {
            return Ok(Some(view.status));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn app_paths_default_to_the_management_cluster_and_refuse_odd_names() {
        assert_eq!(app_path("web", "").unwrap(), "/api/v1/apps/local/web");
        assert_eq!(
            app_path("staging/web", "sync").unwrap(),
            "/api/v1/apps/staging/web/sync"
        );
        assert_eq!(
            app_path("staging/team-a/web", "diff").unwrap(),
            "/api/v1/apps/staging/web/diff?namespace=team-a"
        );
        assert_eq!(
            app_path("prod/web:eu", "approve").unwrap(),
            "/api/v1/apps/prod/web:eu/approve"
        );
        assert!(app_path("prod/web:", "").is_err());
        assert!(app_path("prod/web:a:b", "").is_err());
        assert!(app_path("prod/web:..%2f", "").is_err());
        assert!(app_path("staging/", "").is_err());
        assert!(app_path("a/b/c/d", "").is_err());
        assert!(app_path("a//c", "").is_err());
        assert!(app_path("web?x=1", "").is_err());
    }

    #[test]
    fn the_table_names_each_target_as_its_address() {
        let views: Vec<AppView> = serde_json::from_value(serde_json::json!([
            {"name": "shop", "cluster": "prod", "target": "prod", "status": {"phase": "Held"}},
            {"name": "shop", "cluster": "staging", "target": "staging", "status": {"phase": "Synced"}},
            {"name": "web", "cluster": "local", "target": null, "status": {}},
        ]))
        .unwrap();
        let table = apps_table(&views);
        let rows: Vec<Vec<&str>> = table
            .lines()
            .map(|l| l.split_whitespace().collect())
            .collect();
        assert_eq!(rows[1][..3], ["shop:prod", "prod", "Held"]);
        assert_eq!(rows[2][..3], ["shop:staging", "staging", "Synced"]);
        assert_eq!(rows[3][..3], ["web", "local", "Unknown"]);
    }

    /// A server whose operators reconcile the Apps: an OPERATOR column names each one's; a
    /// `--role all` list (no operator) keeps the columns it had.
    #[test]
    fn the_table_names_the_operator_of_each_app_when_operators_reconcile_them() {
        let views: Vec<AppView> = serde_json::from_value(serde_json::json!([
            {"name": "web", "cluster": "east-0", "operator": "op-0", "status": {"phase": "Synced", "message": "ok"}},
            {"name": "api", "cluster": "east-1", "operator": "op-1", "status": {"phase": "Held"}},
        ]))
        .unwrap();
        let rows: Vec<Vec<String>> = apps_table(&views)
            .lines()
            .map(|l| l.split_whitespace().map(str::to_string).collect())
            .collect();
        assert_eq!(
            rows[0],
            [
                "NAME", "CLUSTER", "PHASE", "REVISION", "OPERATOR", "MESSAGE"
            ]
        );
        assert_eq!(rows[1][4], "op-0");
        assert_eq!(rows[1][5], "ok");
        assert_eq!(rows[2][4], "op-1");
        let local: Vec<AppView> = serde_json::from_value(serde_json::json!([
            {"name": "web", "cluster": "local", "operator": null, "status": {}},
        ]))
        .unwrap();
        assert!(!apps_table(&local).contains("OPERATOR"));
    }

    #[test]
    fn exit_codes_follow_the_phase() {
        assert_eq!(exit_code(Some(Phase::Synced)), 0);
        assert_eq!(exit_code(Some(Phase::Held)), EXIT_HELD);
        assert_eq!(exit_code(Some(Phase::Waiting)), EXIT_HELD);
        assert_eq!(exit_code(Some(Phase::Degraded)), EXIT_FAILED);
        assert_eq!(exit_code(Some(Phase::Failed)), EXIT_FAILED);
        assert_eq!(exit_code(None), EXIT_FAILED);
    }
}
