//! The client commands that look at Apps from the clusters' side: `wardn clusters validate`
//! (App destinations against the registered clusters) and `wardn clusters check` (access
//! reviews through the server).

use std::collections::BTreeSet;
use std::path::Path;

use reqwest::Method;
use serde_json::Value;

use super::client::{ApiClient, CliError};
use super::git_args::GitArgs;
use crate::cli::offline::targets::{self, ClusterNeeds, RenderedApp, ServedKind, ServedKinds};
use crate::cli::offline::validate;
use crate::clusters::access::{CheckReport, CheckRequest, KindCheck, KindResult, ResourceCheck};
use crate::clusters::connect::Connectivity;
use crate::clusters::rbac::VERBS;
use crate::clusters::registry::ClusterView;

/// Loads and renders the Apps of `dir` off the async runtime; Git sources are fetched as
/// `git` says into a temporary directory removed afterwards.
pub async fn rendered_apps(dir: &Path, git: &GitArgs) -> Result<Vec<RenderedApp>, CliError> {
    let dir = dir.to_path_buf();
    let work = std::env::temp_dir().join(format!("wardn-apps-{}", std::process::id()));
    let settings = git.settings(&work)?;
    tokio::task::spawn_blocking(move || {
        let result = targets::load_and_render(&dir, &settings);
        // Best effort: the directory only holds throw-away Git mirrors.
        let _ = std::fs::remove_dir_all(&work);
        result
    })
    .await
    .map_err(|err| CliError::Failed(format!("rendering the Apps: {err}")))?
    .map_err(|err| CliError::Failed(err.to_string()))
}

/// The registered clusters.
pub async fn registered(client: &ApiClient) -> Result<Vec<ClusterView>, CliError> {
    let list: Value = client.call(Method::GET, "/api/v1/clusters", None).await?;
    serde_json::from_value(list["clusters"].clone()).map_err(|err| CliError::Decode {
        what: "cluster list".into(),
        reason: err.to_string(),
    })
}

/// `wardn clusters validate --apps DIR`: prints every violation, fails if there is any.
pub async fn validate(client: &ApiClient, apps_dir: &Path, git: &GitArgs) -> Result<(), CliError> {
    let apps = rendered_apps(apps_dir, git).await?;
    let clusters = registered(client).await?;
    let violations = validate::validate(&apps, &clusters);
    for violation in &violations {
        println!("{violation}");
    }
    if violations.is_empty() {
        println!(
            "{} App(s) valid against {} registered cluster(s)",
            apps.len(),
            clusters.len()
        );
        Ok(())
    } else {
        Err(CliError::Failed(format!(
            "{} violation(s) in {}",
            violations.len(),
            apps_dir.display()
        )))
    }
}

/// The access reviews the Apps routed to one cluster need: every verb on every resource, in
/// each namespace its objects land in (cluster-wide for cluster-scoped kinds).
pub fn reviews(needs: &ClusterNeeds) -> CheckRequest {
    let mut resources = Vec::new();
    for (namespace, grants) in &needs.by_namespace {
        resources.extend(
            grants
                .iter()
                .map(|g| ResourceCheck::of(g, Some(namespace), VERBS)),
        );
    }
    resources.extend(
        needs
            .grants
            .iter()
            .filter(|g| !g.namespaced)
            .map(|g| ResourceCheck::of(g, None, VERBS)),
    );
    CheckRequest {
        resources,
        kinds: Vec::new(),
    }
}

/// `wardn clusters check`: through the server, finds the custom kinds the Apps routed to each
/// cluster need (CRDs no App installs) in its discovery, then reviews every resource; prints a
/// table, fails on a missing kind, a denial or an unreachable cluster.
pub async fn check(
    client: &ApiClient,
    only: &[String],
    apps_dir: Option<&Path>,
    git: &GitArgs,
) -> Result<(), CliError> {
    let apps = match apps_dir {
        Some(dir) => rendered_apps(dir, git).await?,
        None => Vec::new(),
    };
    let mut names: Vec<String> = if only.is_empty() {
        registered(client)
            .await?
            .into_iter()
            .map(|c| c.name)
            .collect()
    } else {
        only.to_vec()
    };
    names.sort();
    names.dedup();
    let mut reports = Vec::new();
    let mut problems = Vec::new();
    for name in &names {
        let routed: Vec<&RenderedApp> = apps.iter().filter(|a| a.cluster() == name).collect();
        let kinds = discover_kinds(client, name, &routed).await?;
        let served: ServedKinds = kinds
            .iter()
            .filter_map(|k| {
                Some((
                    (k.api_version.clone(), k.kind.clone()),
                    ServedKind {
                        resource: k.resource.clone()?,
                        namespaced: k.namespaced?,
                    },
                ))
            })
            .collect();
        let placed: Vec<RenderedApp> = routed.iter().map(|a| a.placed_with(&served)).collect();
        let cluster_needs = targets::needs_of(&placed, &served);
        problems.extend(cluster_needs.errors.iter().map(|e| format!("{name}: {e}")));
        let mut report: CheckReport = call_check(client, name, &reviews(&cluster_needs)).await?;
        report.kinds = kinds;
        reports.push(report);
    }
    println!("{}", check_table(&reports));
    for report in &reports {
        if let Some(error) = &report.error {
            problems.push(format!("{}: unreachable: {error}", report.name));
        }
        let missing = report.missing_kinds().count();
        if missing > 0 {
            problems.push(format!(
                "{}: {missing} kind(s) not served (CRDs not installed)",
                report.name
            ));
        }
        let denied = report.denied().count();
        if denied > 0 {
            problems.push(format!("{}: {denied} access check(s) denied", report.name));
        }
    }
    for problem in &problems {
        eprintln!("{problem}");
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(CliError::Failed(format!(
            "{} problem(s) found",
            problems.len()
        )))
    }
}

/// Asks the cluster's discovery, through the server, for the custom kinds `apps` render that
/// no rendered CRD defines (none asked: no request).
async fn discover_kinds(
    client: &ApiClient,
    cluster: &str,
    apps: &[&RenderedApp],
) -> Result<Vec<KindResult>, CliError> {
    let kinds: BTreeSet<(String, String)> =
        apps.iter().flat_map(|app| app.external_kinds()).collect();
    if kinds.is_empty() {
        return Ok(Vec::new());
    }
    let request = CheckRequest {
        resources: Vec::new(),
        kinds: kinds
            .into_iter()
            .map(|(api_version, kind)| KindCheck { api_version, kind })
            .collect(),
    };
    Ok(call_check(client, cluster, &request).await?.kinds)
}

/// `POST /api/v1/clusters/{cluster}/check` with `request`.
async fn call_check(
    client: &ApiClient,
    cluster: &str,
    request: &CheckRequest,
) -> Result<CheckReport, CliError> {
    let body = serde_json::to_value(request).map_err(|err| CliError::Decode {
        what: "check request".into(),
        reason: err.to_string(),
    })?;
    client
        .call(
            Method::POST,
            &format!("/api/v1/clusters/{cluster}/check"),
            Some(&body),
        )
        .await
}

/// The `wardn clusters check` table: one line per cluster, then one per denied review.
pub fn check_table(reports: &[CheckReport]) -> String {
    let mut lines = vec![format!(
        "{:<20} {:<13} {:<12} {:>7} {:>6}",
        "CLUSTER", "STATUS", "VERSION", "CHECKS", "DENIED"
    )];
    for report in reports {
        let status = match report.status {
            Connectivity::Connected => "connected",
            Connectivity::Disconnected => "disconnected",
        };
        lines.push(format!(
            "{:<20} {:<13} {:<12} {:>7} {:>6}",
            report.name,
            status,
            report.version.as_deref().unwrap_or("-"),
            report.checks.len(),
            report.denied().count()
        ));
        for missing in report.missing_kinds() {
            lines.push(format!(
                "  missing: {} {}{}",
                missing.api_version,
                missing.kind,
                missing
                    .reason
                    .as_deref()
                    .map(|r| format!(": {r}"))
                    .unwrap_or_default()
            ));
        }
        for denied in report.denied() {
            let group = if denied.group.is_empty() {
                "core"
            } else {
                &denied.group
            };
            lines.push(format!(
                "  denied: {} {}/{} in {}{}",
                denied.verb,
                group,
                denied.resource,
                denied.namespace.as_deref().unwrap_or("(cluster)"),
                denied
                    .reason
                    .as_deref()
                    .map(|r| format!(": {r}"))
                    .unwrap_or_default()
            ));
        }
    }
    lines.join("\n")
}
