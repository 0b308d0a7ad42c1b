//! The caller's own sign-in: who the caller is (the UI's header), changing the password
//! (which ends every other session of that user) and logging out (which ends the caller's
//! session).

use std::time::Duration;

use axum::Extension;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use super::AppState;
use super::auth::{Actor, Caller, now_secs, set_session_cookie};
use super::body::JsonBody;
use super::error::ApiError;
use crate::redact::Hidden;
use crate::time::now_rfc3339;

/// Shortest password accepted by a password change (characters).
pub const MIN_PASSWORD_CHARS: usize = 12;
/// Longest password accepted by a password change (bytes; argon2 hashes it all).
pub const MAX_PASSWORD_BYTES: usize = 1024;

/// Checks a password about to be set (a change, or a new user's): [`MIN_PASSWORD_CHARS`]
/// characters to [`MAX_PASSWORD_BYTES`] bytes; the 400 names `field`.
pub fn check_new_password(field: &str, password: &str) -> Result<(), ApiError> {
    // Counting characters stops early: a 1 MiB password is refused by its length first.
    if password.len() > MAX_PASSWORD_BYTES || password.chars().count() < MIN_PASSWORD_CHARS {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            format!(
                "{field}: must be {MIN_PASSWORD_CHARS} characters to {MAX_PASSWORD_BYTES} bytes long"
            ),
        ));
    }
    Ok(())
}

/// `POST /api/v1/auth/password` body.
#[derive(Deserialize, schemars::JsonSchema)]
pub struct PasswordChange {
    /// The password in use now.
    pub current_password: String,
    /// The password to use from now on.
    pub new_password: String,
}

impl std::fmt::Debug for PasswordChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PasswordChange")
            .field("current_password", &Hidden)
            .field("new_password", &Hidden)
            .finish()
    }
}

/// `POST /api/v1/auth/password`: checks the current password, sets the new one and ends every
/// other session of the user (the caller's own session stays; API tokens are untouched).
pub async fn change_password(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Extension(caller): Extension<Caller>,
    JsonBody(body): JsonBody<PasswordChange>,
) -> Result<Response, ApiError> {
    check_new_password("new_password", &body.new_password)?;
    let store = state.store();
    let stored = store.password_hash(&caller.user.username).await?;
    let current = body.current_password;
    let valid = match stored {
        // A 1 MiB "current password" costs argon2 no more than the login's does.
        Some(stored) => state
            .password_workers()
            .verify(current, stored)
            .await
            .map_err(|err| ApiError::internal(&err))?,
        None => false,
    };
    if !valid {
        store
            .record_audit(
                &actor.0,
                "auth.password",
                &caller.user.username,
                "failure: wrong current password",
                &now_rfc3339(),
            )
            .await;
        // Slows guessing through a stolen session a little; the login limiter is the login's.
        tokio::time::sleep(Duration::from_millis(250)).await;
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "current_password: does not match",
        ));
    }
    let new_password = body.new_password;
    let hash = state
        .password_workers()
        .hash(new_password)
        .await
        .map_err(|err| ApiError::internal(&err))?;
    let ended = store
        .change_password(&caller.user.username, &hash, caller.session_hash.as_deref())
        .await?;
    store
        .record_audit(
            &actor.0,
            "auth.password",
            &caller.user.username,
            &format!("success: {ended} other session(s) ended"),
            &now_rfc3339(),
        )
        .await;
    Ok(axum::Json(serde_json::json!({ "sessions_ended": ended })).into_response())
}

/// `GET /api/v1/auth/me` → `{"username", "role", "clusters", "via"}`: who the caller is, the
/// role the request acts with, the clusters an approver may decide on (`null`: all) and
/// whether a `session` or a `token` authenticated it. The UI shows the user and offers only
/// the actions the role allows (the API enforces them regardless).
pub async fn me(Extension(caller): Extension<Caller>) -> axum::Json<serde_json::Value> {
    axum::Json(serde_json::json!({
        "username": caller.user.username,
        "role": caller.role,
        "clusters": caller.user.clusters,
        "via": if caller.token_id.is_some() { "token" } else { "session" },
    }))
}

/// `POST /api/v1/auth/logout`: ends the caller's session and clears the cookie. A request
/// authenticated by an API token has no session to end (400: revoke the token instead).
pub async fn logout(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Extension(caller): Extension<Caller>,
) -> Result<Response, ApiError> {
    let Some(session) = caller.session_hash else {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "no session to end: this request used an API token (revoke it with DELETE /api/v1/tokens/{id})",
        ));
    };
    state.store().delete_session(&session, now_secs()).await?;
    state
        .store()
        .record_audit(
            &actor.0,
            "auth.logout",
            &caller.user.username,
            "success",
            &now_rfc3339(),
        )
        .await;
    let cookie = set_session_cookie(&state, "", 0);
    Ok(([(header::SET_COOKIE, cookie)], StatusCode::NO_CONTENT).into_response())
}
