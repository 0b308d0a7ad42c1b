//! Users, login sessions and API tokens. Only hashes are stored: argon2 for passwords,
//! SHA-256 for the random session and API tokens.

use super::{Store, StoreError};

/// Who an API token belongs to (read with `query_as`: its fields are the columns).
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct TokenOwner {
    /// The token's name, given at creation.
    pub name: String,
    /// The user who created it.
    pub username: String,
}

impl Store {
    /// Creates the user or replaces its password hash.
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
                "INSERT INTO users (username, password_hash, created_at) VALUES ($1, $2, $3)",
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

    /// Records a new API token by its hash.
    pub async fn create_api_token(
        &self,
        token_hash: &str,
        name: &str,
        username: &str,
        now: &str,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO api_tokens (token_hash, name, username, created_at) VALUES ($1, $2, $3, $4)",
        )
        .bind(token_hash)
        .bind(name)
        .bind(username)
        .bind(now)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// The owner of the API token with this hash, if it exists.
    pub async fn api_token_owner(
        &self,
        token_hash: &str,
    ) -> Result<Option<TokenOwner>, StoreError> {
        Ok(
            sqlx::query_as("SELECT name, username FROM api_tokens WHERE token_hash = $1")
                .bind(token_hash)
                .fetch_optional(&self.pool)
                .await?,
        )
    }
}
