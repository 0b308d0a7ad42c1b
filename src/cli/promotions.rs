//! The promotion pieces of `wardn apps promote|history|rollback` (run by
//! [`super::apps`]): the records as the API lists them, the history table, the checked
//! `--to` target and the query of the promotion routes.

use serde::Deserialize;

use super::client::CliError;
use super::table::{self, short_revision};
use crate::app::promotion::PinnedImage;

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
pub fn with_query(path: String, query: &str) -> String {
    let separator = if path.contains('?') { '&' } else { '?' };
    format!("{path}{separator}{query}")
}

/// Checks `--to` of `promote` (`NAME` or `CLUSTER/NAME`, NAME with an optional `:TARGET`),
/// each part with `checked`.
pub fn target(
    to: &str,
    checked: impl Fn(&str, &str) -> Result<String, CliError>,
) -> Result<String, CliError> {
    let name = |name: &str| match crate::app::key::split_name(name) {
        (app, None) => checked("--to name", app),
        (app, Some(target)) => Ok(format!(
            "{}:{}",
            checked("--to name", app)?,
            checked("--to target", target)?
        )),
    };
    match to.split_once('/') {
        None => name(to),
        Some((cluster, app)) => Ok(format!(
            "{}/{}",
            checked("--to cluster", cluster)?,
            name(app)?
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_and_queries_are_checked_and_joined() {
        let checked = |what: &str, v: &str| {
            if v.is_empty() || v.contains(['/', '&', ' ']) {
                Err(CliError::Failed(format!("{what} {v:?}")))
            } else {
                Ok(v.to_string())
            }
        };
        assert_eq!(target("prod", checked).unwrap(), "prod");
        assert_eq!(target("production/web", checked).unwrap(), "production/web");
        assert_eq!(target("web:eu", checked).unwrap(), "web:eu");
        assert_eq!(target("prod/web:eu", checked).unwrap(), "prod/web:eu");
        for bad in ["", "a/", "/b", "a/b/c", "x&to=y", "a b", "web:", "p/web:"] {
            assert!(target(bad, checked).is_err(), "{bad}");
        }
        assert_eq!(
            with_query("/api/v1/apps/s/web/promote?namespace=ns".into(), "to=prod"),
            "/api/v1/apps/s/web/promote?namespace=ns&to=prod"
        );
        assert_eq!(
            with_query("/api/v1/apps/s/web/rollback".into(), "to=3"),
            "/api/v1/apps/s/web/rollback?to=3"
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
