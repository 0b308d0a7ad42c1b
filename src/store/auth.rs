//! Users, login sessions and API tokens. Only hashes are stored: argon2 for passwords,
//! SHA-256 for the random session and API tokens. API tokens also have a random id (what lists
//! and revocation name them by), an expiry and the time they were last used.

use super::users::Role;
use super::{Store, StoreError};

/// How long an API token lives when its creator names no `ttl` (90 days, in seconds); tokens
/// created before tokens had an expiry get this much from the first start that knows about it.
pub const DEFAULT_TOKEN_TTL_SECS: i64 = 90 * 86_400;

/// How often `last_used_at` of one token is written at most (seconds).
pub const LAST_USED_RESOLUTION_SECS: i64 = 60;

/// Number of random bytes of an API token id (shown as lowercase hex).
pub const TOKEN_ID_BYTES: usize = 12;

/// An API token as stored, without its hash (read with `query_as`: its fields are the columns).
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct ApiToken {
    /// Its id (lowercase hex), which lists and revocation name it by.
    pub id: String,
    /// The token's name, given at creation.
    pub name: String,
    /// The user who created it.
    pub username: String,
    /// When it was created (RFC 3339).
    pub created_at: String,
    /// When it stops being accepted (unix seconds).
    pub expires_at: i64,
    /// When it was last used (unix seconds, to within [`LAST_USED_RESOLUTION_SECS`]).
    pub last_used_at: Option<i64>,
    /// The most it may do (never more than its user's current role); `None` for tokens
    /// created before roles existed, which act with their user's role.
    pub role: Option<Role>,
}

/// A new random API token id: [`TOKEN_ID_BYTES`] random bytes in lowercase hex.
pub fn new_token_id() -> Result<String, StoreError> {
    super::random_hex::<TOKEN_ID_BYTES>("an API token id")
}

/// Whether `id` has the shape of an API token id (so anything else is refused before a query).
pub fn is_token_id(id: &str) -> bool {
    id.len() == 2 * TOKEN_ID_BYTES
        && id
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

impl Store {
    /// Replaces the password hash of `username`, or creates that user as an admin (the
    /// bootstrap admin; an existing user keeps its role).
    pub async fn upsert_user(
        &self,
        username: &str,
        password_hash: &str,
        now: &str,
    ) -> Result<(), StoreError> {
        let mut tx = self.begin_write().await?;
        let updated = sqlx::query("UPDATE users SET password_hash = $1 WHERE username = $2")
            .bind(password_hash)
            .bind(username)
            .execute(&mut *tx)
            .await?;
        if updated.rows_affected() == 0 {
            sqlx::query(
                "INSERT INTO users (username, password_hash, created_at, role) \
                 VALUES ($1, $2, $3, 'admin')",
            )
            .bind(username)
            .bind(password_hash)
            .bind(now)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// The stored password hash of `username`, if the user exists.
    pub async fn password_hash(&self, username: &str) -> Result<Option<String>, StoreError> {
        Ok(
            sqlx::query_scalar("SELECT password_hash FROM users WHERE username = $1")
                .bind(username)
                .fetch_optional(&self.pool)
                .await?,
        )
    }

    /// Records a login session valid until `expires_at` (unix seconds).
    pub async fn create_session(
        &self,
        token_hash: &str,
        username: &str,
        expires_at: i64,
    ) -> Result<(), StoreError> {
        sqlx::query("INSERT INTO sessions (token_hash, username, expires_at) VALUES ($1, $2, $3)")
            .bind(token_hash)
            .bind(username)
            .bind(expires_at)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// The user of a session that has not expired at `now` (unix seconds).
    pub async fn session_user(
        &self,
        token_hash: &str,
        now: i64,
    ) -> Result<Option<String>, StoreError> {
        let user = sqlx::query_scalar(
            "SELECT username FROM sessions WHERE token_hash = $1 AND expires_at > $2",
        )
        .bind(token_hash)
        .bind(now)
        .fetch_optional(&self.pool)
        .await?;
        Ok(user)
    }

    /// Ends a session (logout) and drops every session expired at `now`.
    pub async fn delete_session(&self, token_hash: &str, now: i64) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM sessions WHERE token_hash = $1 OR expires_at <= $2")
            .bind(token_hash)
            .bind(now)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Records a new API token by its hash, with its `id` and expiry (unix seconds).
    pub async fn create_api_token(
        &self,
        token_hash: &str,
        token: &ApiToken,
    ) -> Result<(), StoreError> {
        let result = sqlx::query(
            "INSERT INTO api_tokens (token_hash, id, name, username, created_at, expires_at, role) \
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(token_hash)
        .bind(&token.id)
        .bind(&token.name)
        .bind(&token.username)
        .bind(&token.created_at)
        .bind(token.expires_at)
        .bind(token.role.map(Role::as_str))
        .execute(&self.pool)
        .await;
        Store::inserted(result, || format!("API token {}", token.id))
    }

    /// The API token with this hash, if it exists (expired or not: the caller decides).
    pub async fn api_token(&self, token_hash: &str) -> Result<Option<ApiToken>, StoreError> {
        Ok(sqlx::query_as(
            "SELECT id, name, username, created_at, expires_at, last_used_at, role \
             FROM api_tokens WHERE token_hash = $1",
        )
        .bind(token_hash)
        .fetch_optional(&self.pool)
        .await?)
    }

    /// Records that the token `id` was used at `now` (unix seconds), unless that was already
    /// recorded less than [`LAST_USED_RESOLUTION_SECS`] ago (so a busy token costs one write a
    /// minute, not one per request).
    pub async fn touch_api_token(&self, id: &str, now: i64) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE api_tokens SET last_used_at = $1 \
             WHERE id = $2 AND (last_used_at IS NULL OR last_used_at <= $3)",
        )
        .bind(now)
        .bind(id)
        .bind(now - LAST_USED_RESOLUTION_SECS)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// The API tokens of `username`, oldest first (expired ones included until revoked).
    pub async fn api_tokens(&self, username: &str) -> Result<Vec<ApiToken>, StoreError> {
        Ok(sqlx::query_as(
            "SELECT id, name, username, created_at, expires_at, last_used_at, role \
             FROM api_tokens WHERE username = $1 ORDER BY created_at, id",
        )
        .bind(username)
        .fetch_all(&self.pool)
        .await?)
    }

    /// Deletes the API token `id` of `username`; false when that user has no such token.
    pub async fn delete_api_token(&self, username: &str, id: &str) -> Result<bool, StoreError> {
        let deleted = sqlx::query("DELETE FROM api_tokens WHERE id = $1 AND username = $2")
            .bind(id)
            .bind(username)
            .execute(&self.pool)
            .await?;
        Ok(deleted.rows_affected() > 0)
    }

    /// Gives every token created before tokens had ids (migration 0004) a random id and an
    /// expiry [`DEFAULT_TOKEN_TTL_SECS`] after `now` (unix seconds). Runs at every open; a
    /// no-op once done.
    pub(crate) async fn backfill_api_tokens(&self, now: i64) -> Result<(), StoreError> {
        let legacy: Vec<String> =
            sqlx::query_scalar("SELECT token_hash FROM api_tokens WHERE id IS NULL")
                .fetch_all(&self.pool)
                .await?;
        for hash in legacy {
            sqlx::query(
                "UPDATE api_tokens SET id = $1, expires_at = $2 \
                 WHERE token_hash = $3 AND id IS NULL",
            )
            .bind(new_token_id()?)
            .bind(now + DEFAULT_TOKEN_TTL_SECS)
            .bind(&hash)
            .execute(&self.pool)
            .await?;
        }
        Ok(())
    }

    /// Replaces the password hash of `username` and ends every session of that user except
    /// `keep_session` (a session token hash), in one transaction. API tokens are untouched.
    /// Returns how many sessions were ended.
    pub async fn change_password(
        &self,
        username: &str,
        password_hash: &str,
        keep_session: Option<&str>,
    ) -> Result<u64, StoreError> {
        let mut tx = self.begin_write().await?;
        sqlx::query("UPDATE users SET password_hash = $1 WHERE username = $2")
            .bind(password_hash)
            .bind(username)
            .execute(&mut *tx)
            .await?;
        let ended = sqlx::query("DELETE FROM sessions WHERE username = $1 AND token_hash <> $2")
            .bind(username)
            .bind(keep_session.unwrap_or(""))
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(ended.rows_affected())
    }
}
