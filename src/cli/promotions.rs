//! `wardn apps promote|history|rollback`: promotions from the command line. `promote` and
//! `rollback` print what was pinned (`promotion from CLUSTER/APP at REVISION` and one
//! `repo:tag → repo@sha256:…` line per image), the target's status and, when it is Held, the
//! command that approves it; their exit code follows the target's phase like `sync`'s.

use std::process::ExitCode;

use reqwest::Method;
use serde::Deserialize;
use serde_json::Value;

use super::apps::{
    Output, app_path, checked, decode, exit_code, print_status, short_revision, structured,
};
use super::client::{ApiClient, CliError};
use super::table;
use crate::app::promotion::PinnedImage;
use crate::app::{AppStatus, Phase};

/// A promotion record as `…/promotions` shows it.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromotionView {
    /// The record's id.
    pub id: i64,
    /// The source (`CLUSTER/NAME`).
    pub source: String,
    /// The target (`CLUSTER/NAME`).
    pub target: String,
    /// The source revision.
    pub revision: String,
    /// The pinned images.
    #[serde(default)]
    pub images: Vec<PinnedImage>,
    /// Who promoted.
    pub actor: String,
    /// When.
    pub created_at: String,
    /// The target's phase after the promotion, or `refused: …`.
    pub outcome: String,
}

/// `path` with `query` (`key=value`) appended after `?` or `&`.
fn with_query(path: String, query: &str) -> String {
    let separator = if path.contains('?') { '&' } else { '?' };
    format!("{path}{separator}{query}")
}

/// Checks `--to` of `promote`: `NAME` or `CLUSTER/NAME`.
fn target(to: &str) -> Result<String, CliError> {
    match to.split_once('/') {
        None => Ok(checked("--to", to)?.to_string()),
        Some((cluster, name)) => Ok(format!(
            "{}/{}",
            checked("--to cluster", cluster)?,
            checked("--to name", name)?
        )),
    }
}

/// The `wardn apps history` table.
pub fn history_table(records: &[PromotionView]) -> String {
    let header = [
        "ID", "SOURCE", "REVISION", "IMAGES", "ACTOR", "WHEN", "OUTCOME",
    ];
    let mut rows = vec![header.iter().map(|h| h.to_string()).collect::<Vec<_>>()];
    for r in records {
        let images: Vec<String> = r.images.iter().map(PinnedImage::pinned).collect();
        rows.push(vec![
            r.id.to_string(),
            r.source.clone(),
            short_revision(Some(&r.revision)),
            if images.is_empty() {
                "-".into()
            } else {
                images.join(",")
            },
            r.actor.clone(),
            r.created_at.clone(),
            r.outcome.replace('\n', " "),
        ]);
    }
    table::render(&rows)
}

/// Prints the answer of `promote` or `rollback` and returns the exit code of the target's
/// phase.
fn report(done: &Value, output: Output) -> Result<ExitCode, CliError> {
    let status: AppStatus = decode("status", done["status"].clone())?;
    let record: PromotionView = decode("promotion", done["promotion"].clone())?;
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

/// `wardn apps promote APP --to TARGET`.
pub async fn promote(
    client: &ApiClient,
    app: &str,
    to: &str,
    output: Output,
) -> Result<ExitCode, CliError> {
    let path = with_query(app_path(app, "promote")?, &format!("to={}", target(to)?));
    let done: Value = client.call(Method::POST, &path, None).await?;
    report(&done, output)
}

/// `wardn apps rollback APP --to ID`.
pub async fn rollback(
    client: &ApiClient,
    app: &str,
    id: u64,
    output: Output,
) -> Result<ExitCode, CliError> {
    let path = with_query(app_path(app, "rollback")?, &format!("to={id}"));
    let done: Value = client.call(Method::POST, &path, None).await?;
    report(&done, output)
}

/// `wardn apps history APP`.
pub async fn history(client: &ApiClient, app: &str, output: Output) -> Result<ExitCode, CliError> {
    let value: Value = client
        .call(Method::GET, &app_path(app, "promotions")?, None)
        .await?;
    match output {
        Output::Table => {
            let records: Vec<PromotionView> = decode("promotions", value["promotions"].clone())?;
            println!("{}", history_table(&records));
        }
        _ => println!("{}", structured(&value, output)?),
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_and_queries_are_checked_and_joined() {
        assert_eq!(target("prod").unwrap(), "prod");
        assert_eq!(target("production/web").unwrap(), "production/web");
        for bad in ["", "a/", "/b", "a/b/c", "x&to=y", "a b"] {
            assert!(target(bad).is_err(), "{bad}");
        }
        assert_eq!(
            with_query(app_path("staging/ns/web", "promote").unwrap(), "to=prod"),
            "/api/v1/apps/staging/web/promote?namespace=ns&to=prod"
        );
        assert_eq!(
            with_query(app_path("staging/web", "rollback").unwrap(), "to=3"),
            "/api/v1/apps/staging/web/rollback?to=3"
        );
    }

    #[test]
    fn history_lists_each_record() {
        let digest = format!("sha256:{}", "a".repeat(64));
        let records = vec![PromotionView {
            id: 2,
            source: "staging/web".into(),
            target: "production/web".into(),
            revision: "0123456789abcdef".into(),
            images: vec![PinnedImage {
                repository: "ghcr.io/acme/web".into(),
                from: "ghcr.io/acme/web:1.4".into(),
                digest: digest.clone(),
            }],
            actor: "admin".into(),
            created_at: "2026-12-01T15:00:00Z".into(),
            outcome: "Held".into(),
        }];
        let text = history_table(&records);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("ID  SOURCE"), "{text}");
        assert!(
            lines[1].contains(&format!("ghcr.io/acme/web@{digest}")),
            "{text}"
        );
        assert!(lines[1].contains("0123456789ab  "), "{text}");
        assert!(lines[1].ends_with("Held"), "{text}");
    }
}
