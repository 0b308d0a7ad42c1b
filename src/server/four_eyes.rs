//! Four-eyes approval (`spec.syncPolicy.fourEyes: true`): a Held plan may not be approved by
//! a user who triggered a sync or refresh that produced it, nor by the user whose email
//! address is the author's of the Git commit the plan renders.
//!
//! Who triggered what is read from the audit log: `app.sync` and `app.refresh` entries record
//! the plan they left Held (`plan=HASH` in the outcome), and the log is MAC-chained, so the
//! record cannot be edited without the key. Only entries since the plan was first Held are
//! read. The commit author is read from the App's Git mirror; it is what the commit says (Git
//! does not verify it), so it adds a check, never replaces the first one. Directory sources
//! have no author.

use axum::http::StatusCode;

use super::AppState;
use super::auth::Caller;
use super::error::ApiError;
use crate::app::AppStatus;
use crate::store::StoreError;
use crate::store::audit::{PAGE_MAX, PageQuery};

/// The `plan=HASH` word the `app.sync` and `app.refresh` audit outcomes carry when they
/// leave a plan Held.
pub fn plan_word(plan_hash: &str) -> String {
    format!("plan={plan_hash}")
}

/// The user of an audit actor (`alice`, or `alice/token:NAME (ID)`): user names hold no `/`.
fn actor_user(actor: &str) -> &str {
    actor.split('/').next().unwrap_or(actor)
}

/// Whether `username` triggered a sync or refresh of `target` that left `plan_hash` Held, at
/// or after `since` (RFC 3339, when the plan was first Held).
async fn triggered(
    state: &AppState,
    target: &str,
    plan_hash: &str,
    since: Option<&str>,
    username: &str,
) -> Result<bool, StoreError> {
    let word = plan_word(plan_hash);
    let mut query = PageQuery {
        limit: Some(PAGE_MAX),
        before: None,
        action: Some("app.".into()),
        actor: None,
        target: Some(target.into()),
    };
    loop {
        let page = state.store().audit_page(&query).await?;
        for entry in page.entries.iter().rev() {
            if since.is_some_and(|since| entry.at.as_str() < since) {
                return Ok(false);
            }
            if matches!(entry.action.as_str(), "app.sync" | "app.refresh")
                && actor_user(&entry.actor) == username
                && entry.outcome.split_whitespace().any(|w| w == word)
            {
                return Ok(true);
            }
        }
        match page.next_before {
            Some(before) => query.before = Some(before),
            None => return Ok(false),
        }
    }
}

/// 403 when the App `key` (audited as `target`) asks for four eyes and `caller` triggered its
/// Held plan or authored the plan's revision; the message says which.
pub async fn check(
    state: &AppState,
    caller: &Caller,
    key: &str,
    target: &str,
) -> Result<(), ApiError> {
    let runner = state.runner();
    let wanted = runner
        .app(key)
        .is_some_and(|app| app.spec.sync_policy.four_eyes);
    let status: AppStatus = runner.current_status(key).await?.unwrap_or_default();
    let (true, Some(plan_hash)) = (wanted, status.plan_hash.as_deref()) else {
        return Ok(());
    };
    let refuse = |why: String| {
        Err(ApiError::new(
            StatusCode::FORBIDDEN,
            format!("four-eyes: {why}; another approver must approve this plan"),
        ))
    };
    let username = &caller.user.username;
    if triggered(
        state,
        target,
        plan_hash,
        status.held_at.as_deref(),
        username,
    )
    .await?
    {
        return refuse(format!(
            "{username} triggered the pass that produced plan {plan_hash}"
        ));
    }
    if let (Some(revision), Some(email)) = (&status.revision, &caller.user.email)
        && let Some(author) = state.poller().commit_author(key, revision).await
        && author.eq_ignore_ascii_case(email)
    {
        return refuse(format!("{username} ({email}) authored revision {revision}"));
    }
    Ok(())
}
