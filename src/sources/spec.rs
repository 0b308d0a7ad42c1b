//! The `source` block of an App (`spec.source` in the App CRD), as written by users, and its
//! validated form.
//!
//! ```yaml
//! source: {type: Git, git: {repoURL: https://host/org/repo, branch: main, path: overlays/prod, interval: 2m}}
//! source: {type: Directory, directory: {path: /srv/apps/demo}}
//! ```

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::url::{RepoUrl, parse_repo_url};
use crate::render::tree::normalize;

/// The polling interval used when an App names none.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(60);
/// The shortest polling interval accepted, to protect remotes from a typo like `1ms`.
pub const MIN_INTERVAL: Duration = Duration::from_secs(5);

/// Which kind of source an App reads from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub enum SourceType {
    /// A Git repository, fetched into a shared bare mirror.
    Git,
    /// A local directory, watched for changes (local runs and tests).
    Directory,
}

/// `spec.source` as written in an App.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SourceSpec {
    /// `Git` or `Directory`; selects which of the blocks below applies.
    #[serde(rename = "type")]
    pub kind: SourceType,
    /// The Git block, required when `type: Git`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git: Option<GitSpec>,
    /// The Directory block, required when `type: Directory`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub directory: Option<DirectorySpec>,
}

/// `spec.source.git`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GitSpec {
    /// The repository: `https://…`, `ssh://…`, `user@host:path`, `file://…` or an absolute path.
    #[serde(rename = "repoURL")]
    pub repo_url: String,
    /// Track this branch (exactly one of `branch`, `tag`, `commit`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// Track this tag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
    /// Pin this full commit id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// The directory inside the repository to render (default: the root).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// How often to poll, e.g. `30s`, `5m`, `1h30m` (default 60 s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<String>,
}

/// `spec.source.directory`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DirectorySpec {
    /// The local directory to render and watch.
    pub path: String,
}

/// What a Git source follows.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum GitRef {
    /// The tip of a branch (`refs/heads/NAME`).
    Branch(String),
    /// A tag (`refs/tags/NAME`), peeled to its commit.
    Tag(String),
    /// A fixed commit id (full hex).
    Commit(String),
}

impl GitRef {
    /// The full reference name in the mirror, `None` for a pinned commit.
    pub fn ref_name(&self) -> Option<String> {
        match self {
            GitRef::Branch(b) => Some(format!("refs/heads/{b}")),
            GitRef::Tag(t) => Some(format!("refs/tags/{t}")),
            GitRef::Commit(_) => None,
        }
    }
}

impl std::fmt::Display for GitRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GitRef::Branch(b) => write!(f, "branch {b}"),
            GitRef::Tag(t) => write!(f, "tag {t}"),
            GitRef::Commit(c) => write!(f, "commit {c}"),
        }
    }
}

/// A validated Git source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitSource {
    /// The repository URL and its key.
    pub url: RepoUrl,
    /// What to follow.
    pub reference: GitRef,
    /// The normalised directory inside the repository (`""` is the root).
    pub path: String,
    /// The polling interval.
    pub interval: Duration,
}

/// A validated `spec.source`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A Git repository.
    Git(GitSource),
    /// A local directory.
    Directory(PathBuf),
}

/// Why a `spec.source` was refused; the message names the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("spec.source.{field}: {reason}")]
pub struct SpecError {
    /// The offending field, relative to `spec.source` (e.g. `git.branch`).
    pub field: String,
    /// What is wrong.
    pub reason: String,
}

fn err(field: &str, reason: impl Into<String>) -> SpecError {
    SpecError {
        field: field.to_string(),
        reason: reason.into(),
    }
}

impl SourceSpec {
    /// Validates the block, returning the normalised source or an error naming the field.
    pub fn validate(&self) -> Result<Source, SpecError> {
        match self.kind {
            SourceType::Git => {
                if self.directory.is_some() {
                    return Err(err("directory", "must not be set when type is Git"));
                }
                let git = self
                    .git
                    .as_ref()
                    .ok_or_else(|| err("git", "is required when type is Git"))?;
                git.validate().map(Source::Git)
            }
            SourceType::Directory => {
                if self.git.is_some() {
                    return Err(err("git", "must not be set when type is Directory"));
                }
                let dir = self
                    .directory
                    .as_ref()
                    .ok_or_else(|| err("directory", "is required when type is Directory"))?;
                if dir.path.trim().is_empty() {
                    return Err(err("directory.path", "must not be empty"));
                }
                Ok(Source::Directory(PathBuf::from(&dir.path)))
            }
        }
    }
}

impl GitSpec {
    /// Validates the Git block.
    pub fn validate(&self) -> Result<GitSource, SpecError> {
        let url = parse_repo_url(&self.repo_url).map_err(|e| err("git.repoURL", e.reason))?;
        let reference = match (&self.branch, &self.tag, &self.commit) {
            (Some(b), None, None) => GitRef::Branch(ref_name("git.branch", b)?),
            (None, Some(t), None) => GitRef::Tag(ref_name("git.tag", t)?),
            (None, None, Some(c)) => GitRef::Commit(commit_id(c)?),
            (None, None, None) => {
                return Err(err("git", "one of branch, tag or commit is required"));
            }
            _ => return Err(err("git", "set only one of branch, tag or commit")),
        };
        let path = normalize("", self.path.as_deref().unwrap_or("")).map_err(|_| {
            err(
                "git.path",
                "must stay inside the repository (no leading ..)",
            )
        })?;
        let interval = match &self.interval {
            None => DEFAULT_INTERVAL,
            Some(text) => {
                let d = parse_duration(text).map_err(|r| err("git.interval", r))?;
                if d < MIN_INTERVAL {
                    return Err(err(
                        "git.interval",
                        format!("{text:?} is shorter than the minimum of 5s"),
                    ));
                }
                d
            }
        };
        Ok(GitSource {
            url,
            reference,
            path,
            interval,
        })
    }
}

/// Checks a short branch or tag name against Git's ref-name rules.
fn ref_name(field: &str, name: &str) -> Result<String, SpecError> {
    let bad = |why: &str| Err(err(field, format!("{name:?} is not a valid name: {why}")));
    if name.is_empty() {
        return bad("empty");
    }
    if name.starts_with("refs/") {
        return bad("give the short name, without refs/heads/ or refs/tags/");
    }
    if name.starts_with('-') || name.starts_with('/') || name.ends_with('/') || name.ends_with('.')
    {
        return bad("must not start with - or /, nor end with / or .");
    }
    if name.contains("..") || name.contains("//") || name.contains("@{") || name.ends_with(".lock")
    {
        return bad("must not contain .., //, @{ or end with .lock");
    }
    if name
        .chars()
        .any(|c| c.is_control() || c.is_whitespace() || "~^:?*[\\".contains(c))
    {
        return bad("must not contain spaces, control characters or ~ ^ : ? * [ \\");
    }
    Ok(name.to_string())
}

/// Checks a full commit id (40 or 64 hex digits), lower-casing it.
fn commit_id(id: &str) -> Result<String, SpecError> {
    if (id.len() == 40 || id.len() == 64) && id.chars().all(|c| c.is_ascii_hexdigit()) {
        Ok(id.to_ascii_lowercase())
    } else {
        Err(err(
            "git.commit",
            format!(
                "{id:?} is not a full commit id (40 hex digits; abbreviations are not accepted)"
            ),
        ))
    }
}

/// Parses `90s`, `5m`, `1h30m`, `2h` into a duration.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let mut total = 0u64;
    let mut number = String::new();
    let mut any = false;
    for c in text.trim().chars() {
        if c.is_ascii_digit() {
            number.push(c);
            continue;
        }
        let unit = match c {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            _ => return Err(format!("{text:?}: unknown unit {c:?} (use s, m or h)")),
        };
        let n: u64 = number
            .parse()
            .map_err(|_| format!("{text:?}: expected a number before {c:?}"))?;
        total = n
            .checked_mul(unit)
            .and_then(|v| total.checked_add(v))
            .ok_or_else(|| format!("{text:?}: too large"))?;
        number.clear();
        any = true;
    }
    if !number.is_empty() || !any {
        return Err(format!(
            "{text:?}: expected a duration like 30s, 5m or 1h30m"
        ));
    }
    Ok(Duration::from_secs(total))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(yaml: &str) -> SourceSpec {
        serde_json::from_str(yaml).unwrap()
    }

    #[test]
    fn git_source_validates_and_normalises() {
        let s = spec(
            r#"{"type":"Git","git":{"repoURL":"https://Host/org/repo.git","branch":"main","path":"./overlays//prod/","interval":"1m30s"}}"#,
        );
        let Source::Git(g) = s.validate().unwrap() else {
            panic!("not git")
        };
        assert_eq!(g.url.key.as_str(), "https://host/org/repo");
        assert_eq!(g.reference, GitRef::Branch("main".into()));
        assert_eq!(g.path, "overlays/prod");
        assert_eq!(g.interval, Duration::from_secs(90));
        let back = serde_json::to_value(&s).unwrap();
        assert_eq!(back["git"]["repoURL"], "https://Host/org/repo.git");
    }

    #[test]
    fn defaults_and_directory() {
        let s = spec(r#"{"type":"Git","git":{"repoURL":"/srv/r","tag":"v1.2"}}"#);
        let Source::Git(g) = s.validate().unwrap() else {
            panic!("not git")
        };
        assert_eq!(g.interval, DEFAULT_INTERVAL);
        assert_eq!(g.path, "");
        assert_eq!(g.reference.ref_name().unwrap(), "refs/tags/v1.2");
        let d = spec(r#"{"type":"Directory","directory":{"path":"/tmp/x"}}"#);
        assert_eq!(d.validate().unwrap(), Source::Directory("/tmp/x".into()));
    }

    #[test]
    fn invalid_sources_name_the_field() {
        let sha = "a".repeat(40);
        for (json, field, reason) in [
            (
                r#"{"type":"Git"}"#.to_string(),
                "spec.source.git:",
                "required",
            ),
            (
                r#"{"type":"Git","git":{"repoURL":"https://h/o/r"}}"#.into(),
                "spec.source.git:",
                "one of branch, tag or commit",
            ),
            (
                r#"{"type":"Git","git":{"repoURL":"https://h/o/r","branch":"a","tag":"b"}}"#.into(),
                "spec.source.git:",
                "only one",
            ),
            (
                r#"{"type":"Git","git":{"repoURL":"ftp://h/o/r","branch":"a"}}"#.into(),
                "spec.source.git.repoURL",
                "unsupported scheme",
            ),
            (
                r#"{"type":"Git","git":{"repoURL":"https://h/o/r","branch":"a b"}}"#.into(),
                "spec.source.git.branch",
                "spaces",
            ),
            (
                r#"{"type":"Git","git":{"repoURL":"https://h/o/r","tag":"refs/tags/v1"}}"#.into(),
                "spec.source.git.tag",
                "short name",
            ),
            (
                r#"{"type":"Git","git":{"repoURL":"https://h/o/r","commit":"abc123"}}"#.into(),
                "spec.source.git.commit",
                "full commit id",
            ),
            (
                format!(
                    r#"{{"type":"Git","git":{{"repoURL":"https://h/o/r","commit":"{sha}","path":"../x"}}}}"#
                ),
                "spec.source.git.path",
                "inside the repository",
            ),
            (
                r#"{"type":"Git","git":{"repoURL":"https://h/o/r","branch":"a","interval":"1s"}}"#
                    .into(),
                "spec.source.git.interval",
                "minimum",
            ),
            (
                r#"{"type":"Git","git":{"repoURL":"https://h/o/r","branch":"a","interval":"5d"}}"#
                    .into(),
                "spec.source.git.interval",
                "unknown unit",
            ),
            (
                r#"{"type":"Directory","git":{"repoURL":"x","branch":"a"}}"#.into(),
                "spec.source.git:",
                "must not be set",
            ),
            (
                r#"{"type":"Directory","directory":{"path":" "}}"#.into(),
                "spec.source.directory.path",
                "empty",
            ),
        ] {
            let e = spec(&json).validate().unwrap_err().to_string();
            assert!(e.contains(field) && e.contains(reason), "{json}: {e}");
        }
        assert!(serde_json::from_str::<SourceSpec>(r#"{"type":"Svn"}"#).is_err());
    }

    #[test]
    fn durations_parse() {
        assert_eq!(parse_duration("2h").unwrap(), Duration::from_secs(7200));
        assert_eq!(parse_duration("45s").unwrap(), Duration::from_secs(45));
        assert!(parse_duration("10").is_err());
        assert!(parse_duration("").is_err());
    }
}
