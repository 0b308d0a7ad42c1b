//! API tokens: create (with a time to live and a role), list and revoke. A token is shown once, in the
//! creation answer; lists and revocation name it by its id, never by its secret or hash.
//!
//! Every token expires: `ttl` is a whole number of seconds, minutes, hours or days (`"30s"`,
//! `"15m"`, `"12h"`, `"30d"`), at most [`MAX_TOKEN_TTL_SECS`]; without one a token lives
//! [`DEFAULT_TOKEN_TTL_SECS`]. There are no never-expiring tokens (`"0"` is refused).
//!
//! A token carries a role no higher than its creator's (by default, the creator's), and acts
//! with the lower of that role and its user's current role: demoting a user demotes its tokens.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::{Deserialize, Serialize};

use super::AppState;
use super::auth::{Actor, Caller, TOKEN_PREFIX, now_secs, random_secret, token_hash};
use super::body::JsonBody;
use super::error::ApiError;
use super::users::parse_role;
use crate::store::auth::{ApiToken, DEFAULT_TOKEN_TTL_SECS, is_token_id, new_token_id};
use crate::store::users::Role;
use crate::time::{now_rfc3339, unix_rfc3339};

/// The longest time to live of an API token (365 days, in seconds).
pub const MAX_TOKEN_TTL_SECS: i64 = 365 * 86_400;

/// Longest `ttl` text accepted (`"31536000s"` is 10 characters).
const MAX_TTL_CHARS: usize = 16;

/// Why a `ttl` was refused; the message names the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TtlError {
    /// Not a whole number followed by a unit.
    #[error("ttl: expected a whole number followed by s, m, h or d (e.g. \"30d\", \"12h\")")]
    Syntax,
    /// Zero: tokens always expire.
    #[error("ttl: must be positive (API tokens always expire; the longest ttl is 365d)")]
    Zero,
    /// Longer than [`MAX_TOKEN_TTL_SECS`].
    #[error("ttl: at most 365d")]
    TooLong,
}

/// Parses a token's time to live (`"30d"`, `"12h"`, `"15m"`, `"30s"`) into seconds.
pub fn parse_ttl(text: &str) -> Result<i64, TtlError> {
    let text = text.trim();
    if text.len() > MAX_TTL_CHARS || text.len() < 2 {
        return Err(if text == "0" {
            TtlError::Zero
        } else {
            TtlError::Syntax
        });
    }
    let Some(last) = text.chars().last() else {
        return Err(TtlError::Syntax);
    };
    let digits = &text[..text.len() - last.len_utf8()];
    let unit: i64 = match last {
        's' => 1,
        'm' => 60,
        'h' => 3600,
        'd' => 86_400,
        _ => return Err(TtlError::Syntax),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(TtlError::Syntax);
    }
    // At most 15 digits: fits an i64, and the product below is checked anyway.
    let count: i64 = digits.parse().map_err(|_| TtlError::TooLong)?;
    let seconds = count.checked_mul(unit).ok_or(TtlError::TooLong)?;
    match seconds {
        0 => Err(TtlError::Zero),
        s if s > MAX_TOKEN_TTL_SECS => Err(TtlError::TooLong),
        s => Ok(s),
    }
}

/// `POST /api/v1/tokens` body.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct TokenRequest {
    /// A label for the token (e.g. `ci` or `laptop`).
    pub name: String,
    /// Time to live, a string (see [`parse_ttl`]); [`DEFAULT_TOKEN_TTL_SECS`] when absent or
    /// `null`. Kept as JSON so that a number or an object is refused naming the field.
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub ttl: Option<serde_json::Value>,
    /// The most the token may do: a role no higher than the caller's (403 otherwise);
    /// the caller's role when absent.
    #[serde(default)]
    pub role: Option<String>,
}

/// An API token as the API shows it: never its secret or hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TokenView {
    /// Its id (for `DELETE /api/v1/tokens/{id}`).
    pub id: String,
    /// Its name.
    pub name: String,
    /// When it was created (RFC 3339).
    pub created_at: String,
    /// When it was last used (RFC 3339, to the minute), `null` if never.
    pub last_used_at: Option<String>,
    /// When it stops being accepted (RFC 3339).
    pub expires_at: Option<String>,
    /// Whether it has expired (it stays listed until revoked).
    pub expired: bool,
    /// The most it may do (it never acts above its user's current role); `null` for tokens
    /// created before roles, which act with their user's role.
    pub role: Option<Role>,
}

impl TokenView {
    fn new(token: &ApiToken, now: i64) -> TokenView {
        TokenView {
            id: token.id.clone(),
            name: token.name.clone(),
            created_at: token.created_at.clone(),
            last_used_at: token.last_used_at.and_then(unix_rfc3339),
            expires_at: unix_rfc3339(token.expires_at),
            expired: token.expires_at <= now,
            role: token.role,
        }
    }
}

/// `POST /api/v1/tokens`: creates an API token, shown once in the answer beside its id.
pub async fn create(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Extension(caller): Extension<Caller>,
    JsonBody(body): JsonBody<TokenRequest>,
) -> Result<Response, ApiError> {
    let name = body.name.trim();
    if name.is_empty() || name.len() > 100 {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "name: must be 1-100 characters",
        ));
    }
    let ttl = match &body.ttl {
        None | Some(serde_json::Value::Null) => Ok(DEFAULT_TOKEN_TTL_SECS),
        Some(serde_json::Value::String(text)) => parse_ttl(text),
        Some(_) => Err(TtlError::Syntax),
    }
    .map_err(|err| ApiError::new(StatusCode::BAD_REQUEST, err.to_string()))?;
    let role = match body.role.as_deref().map(parse_role).transpose()? {
        Some(role) if role > caller.role => {
            return Err(ApiError::new(
                StatusCode::FORBIDDEN,
                format!(
                    "role: a token cannot do more than its creator: asked for {role}; you are {}",
                    caller.role
                ),
            ));
        }
        Some(role) => role,
        None => caller.role,
    };
    let secret = format!(
        "{TOKEN_PREFIX}{}",
        random_secret(32).map_err(|err| ApiError::internal(&err))?
    );
    let now = now_secs();
    let token = ApiToken {
        id: new_token_id()?,
        name: name.to_string(),
        username: caller.user.username,
        created_at: now_rfc3339(),
        expires_at: now + ttl,
        last_used_at: None,
        role: Some(role),
    };
    state
        .store()
        .create_api_token(&token_hash(&secret), &token)
        .await?;
    state
        .store()
        .record_audit(
            &actor.0,
            "token.create",
            &format!("{name} ({})", token.id),
            &format!("success role={role}"),
            &now_rfc3339(),
        )
        .await;
    let view = TokenView::new(&token, now);
    Ok((
        StatusCode::CREATED,
        Json(serde_json::json!({
            "id": view.id,
            "name": view.name,
            "token": secret,
            "created_at": view.created_at,
            "expires_at": view.expires_at,
            "role": role,
        })),
    )
        .into_response())
}

/// `GET /api/v1/tokens`: the caller's API tokens (id, name, created, last used, expiry).
pub async fn list(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let now = now_secs();
    let tokens: Vec<TokenView> = state
        .store()
        .api_tokens(&caller.user.username)
        .await?
        .iter()
        .map(|token| TokenView::new(token, now))
        .collect();
    Ok(Json(serde_json::json!({ "tokens": tokens })))
}

/// `DELETE /api/v1/tokens/{id}`: revokes one of the caller's API tokens at once.
pub async fn revoke(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    if !is_token_id(&id) {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "id: not an API token id (24 lowercase hex digits, as GET /api/v1/tokens lists them)",
        ));
    }
    let store = state.store();
    let name = store
        .api_tokens(&caller.user.username)
        .await?
        .into_iter()
        .find(|token| token.id == id)
        .map(|token| token.name);
    let found = match name {
        Some(_) => store.delete_api_token(&caller.user.username, &id).await?,
        None => false,
    };
    let target = format!("{} ({id})", name.as_deref().unwrap_or("?"));
    let outcome = if found {
        "success"
    } else {
        "failure: not found"
    };
    store
        .record_audit(&actor.0, "token.revoke", &target, outcome, &now_rfc3339())
        .await;
    if !found {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            format!("API token {id} not found"),
        ));
    }
    Ok(StatusCode::NO_CONTENT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttls_are_a_positive_count_of_a_unit_up_to_a_year() {
        assert_eq!(parse_ttl("30d"), Ok(30 * 86_400));
        assert_eq!(parse_ttl("12h"), Ok(12 * 3600));
        assert_eq!(parse_ttl("15m"), Ok(900));
        assert_eq!(parse_ttl(" 1s "), Ok(1));
        assert_eq!(parse_ttl("365d"), Ok(MAX_TOKEN_TTL_SECS));
        assert_eq!(parse_ttl("366d"), Err(TtlError::TooLong));
        assert_eq!(parse_ttl("999999999999999d"), Err(TtlError::TooLong));
        assert_eq!(parse_ttl("0"), Err(TtlError::Zero));
        assert_eq!(parse_ttl("0d"), Err(TtlError::Zero));
        for bad in [
            "", "d", "-5d", "+5d", "5", "5w", "5 d", "1.5h", "٣d", "never", "5dd", "5é",
        ] {
            assert_eq!(parse_ttl(bad), Err(TtlError::Syntax), "{bad:?}");
        }
        assert_eq!(parse_ttl(&"9".repeat(1 << 20)), Err(TtlError::Syntax));
        assert!(TtlError::Syntax.to_string().starts_with("ttl: "));
    }
}
