//! The per-App view of its source: what revision it has and whether anything is wrong.

use std::time::Duration;

use super::git::{ChangeKind, GitError, RefChange};
use super::snapshot::Snapshot;
use super::url::SourceKey;

/// Why a source is in its current state, as shown in an App's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Reason {
    /// The tracked ref resolved normally (first fetch or fast-forward).
    Fetched,
    /// The tracked branch was rewritten (force-push): the new commit does not descend from the
    /// old one.
    ForcePushed,
    /// The tracked tag was moved to another commit.
    TagMoved,
    /// The tracked branch or tag no longer exists on the remote; the last revision is kept.
    RefDeleted,
    /// The ref or commit is not in the repository.
    RefNotFound,
    /// The remote did not answer (network, DNS, TLS, server down); retried with backoff.
    Unreachable,
    /// The remote rejected or required credentials.
    AuthenticationFailed,
    /// Credentials were configured for a transport that would leak them.
    InsecureCredentials,
    /// The mirror's object database is damaged; it is re-created and fetched again.
    Corrupted,
    /// Any other fetch failure.
    FetchFailed,
}

impl Reason {
    /// Whether the App's source is healthy with this reason.
    pub fn is_error(self) -> bool {
        !matches!(
            self,
            Reason::Fetched | Reason::ForcePushed | Reason::TagMoved
        )
    }
}

/// The status of one App's source.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SourceStatus {
    /// The repository.
    pub source_key: SourceKey,
    /// The revision in use (the last good one when the source is failing).
    pub revision: Option<String>,
    /// The reason for the current state.
    pub reason: Reason,
    /// A human-readable explanation.
    pub message: String,
    /// Consecutive failed polls of the repository (0 when healthy).
    pub failures: u32,
    /// When the repository is polled next, from the moment the status was produced.
    #[serde(with = "secs")]
    pub next_poll: Duration,
}

mod secs {
    use std::time::Duration;

    pub fn serialize<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }
}

/// A notification to a subscriber (an App) that its source moved or changed state.
#[derive(Debug, Clone)]
pub struct SourceUpdate {
    /// The App key the subscription was made with.
    pub app: String,
    /// The new status.
    pub status: SourceStatus,
    /// The snapshot to render, present when the revision changed.
    pub snapshot: Option<Snapshot>,
}

/// Classifies a fetch error into a status reason.
pub fn reason_for(error: &GitError) -> Reason {
    match error {
        GitError::InsecureCredentials(_) => Reason::InsecureCredentials,
        GitError::Unreachable { .. } => Reason::Unreachable,
        GitError::Authentication { .. } => Reason::AuthenticationFailed,
        GitError::Corrupt { .. } => Reason::Corrupted,
        GitError::RefNotFound { .. } => Reason::RefNotFound,
        GitError::Fetch { .. } | GitError::Mirror { .. } => Reason::FetchFailed,
    }
}

/// The reason and message for a tracked ref that moved, given the fetch's changes.
pub fn reason_for_change(change: Option<&RefChange>) -> (Reason, String) {
    let Some(change) = change else {
        return (Reason::Fetched, "up to date".to_string());
    };
    let short = |id: Option<gix::ObjectId>| {
        id.map(|i| i.to_hex_with_len(12).to_string())
            .unwrap_or_else(|| "none".to_string())
    };
    let (old, new) = (short(change.old), short(change.new));
    match change.kind {
        ChangeKind::ForcePushed => (
            Reason::ForcePushed,
            format!(
                "{} was force-pushed: {old} → {new} (history rewritten)",
                change.name
            ),
        ),
        ChangeKind::TagMoved => (
            Reason::TagMoved,
            format!("{} was moved: {old} → {new}", change.name),
        ),
        ChangeKind::Deleted => (
            Reason::RefDeleted,
            format!(
                "{} was deleted on the remote; keeping the last revision {old}",
                change.name
            ),
        ),
        ChangeKind::Created | ChangeKind::FastForward => {
            (Reason::Fetched, format!("{} is at {new}", change.name))
        }
    }
}
