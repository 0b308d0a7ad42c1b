//! Push webhooks recorded for operator-role processes. A `--role server` process reconciles
//! nothing and the operators hold no store, so the server records each authenticated push
//! here (one row per repository: the latest push) and the operators read the recent rows
//! through the server's `GET /internal/pushes`, polling the repositories they use. Each push
//! gets a random id, so a reader tells two pushes of one repository apart whatever the clocks
//! of the server replicas that received them.

use super::{Store, StoreError};

/// How long a push is kept: far longer than an operator's two-second reading period, so an
/// operator that restarts or loses the server for a few minutes still sees what it missed.
pub const KEEP_MS: i64 = 10 * 60 * 1000;
/// The most rows kept (distinct repositories pushed to within [`KEEP_MS`]); beyond it the
/// oldest go first.
pub const MAX_ROWS: i64 = 10_000;
/// The longest repository key recorded, in bytes (the webhook reads URLs of at most 2,048
/// characters, so a key is shorter than this).
pub const MAX_REPOSITORY_BYTES: usize = 8192;

/// One repository's latest push.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct PushRow {
    /// The repository's key (its normalised URL).
    pub repository: String,
    /// The push's random id (16 hex digits).
    pub push_id: String,
    /// When the server received it (Unix milliseconds, that server's clock).
    pub pushed_ms: i64,
}

impl Store {
    /// Records one push of `repositories` (the spellings a delivery names) received at
    /// `pushed_ms`, each replacing that repository's previous push, then deletes the pushes
    /// older than [`KEEP_MS`] (and the oldest beyond [`MAX_ROWS`]), once. Returns each
    /// repository's push id, in order. An over-long key refuses the whole push before
    /// anything is written.
    pub async fn record_push(
        &self,
        repositories: &[&str],
        pushed_ms: i64,
    ) -> Result<Vec<String>, StoreError> {
        if let Some(long) = repositories.iter().find(|r| r.len() > MAX_REPOSITORY_BYTES) {
            return Err(StoreError::Corrupt {
                field: "git_pushes.repository",
                reason: format!(
                    "a repository key of {} bytes exceeds {MAX_REPOSITORY_BYTES}",
                    long.len()
                ),
            });
        }
        let mut ids = Vec::with_capacity(repositories.len());
        for repository in repositories {
            let push_id = super::random_hex::<8>("a push id")?;
            sqlx::query(
                "INSERT INTO git_pushes (repository, push_id, pushed_ms) VALUES ($1, $2, $3) \
                 ON CONFLICT (repository) DO UPDATE SET push_id = excluded.push_id, \
                 pushed_ms = excluded.pushed_ms",
            )
            .bind(repository)
            .bind(&push_id)
            .bind(pushed_ms)
            .execute(&self.pool)
            .await?;
            ids.push(push_id);
        }
        sqlx::query("DELETE FROM git_pushes WHERE pushed_ms < $1")
            .bind(pushed_ms - KEEP_MS)
            .execute(&self.pool)
            .await?;
        sqlx::query(
            "DELETE FROM git_pushes WHERE pushed_ms < \
             (SELECT pushed_ms FROM git_pushes ORDER BY pushed_ms DESC LIMIT 1 OFFSET $1)",
        )
        .bind(MAX_ROWS - 1)
        .execute(&self.pool)
        .await?;
        Ok(ids)
    }

    /// The pushes received at or after `since_ms`, oldest first, at most `limit` of them.
    pub async fn pushes_since(
        &self,
        since_ms: i64,
        limit: i64,
    ) -> Result<Vec<PushRow>, StoreError> {
        Ok(sqlx::query_as(
            "SELECT repository, push_id, pushed_ms FROM git_pushes WHERE pushed_ms >= $1 \
             ORDER BY pushed_ms, repository LIMIT $2",
        )
        .bind(since_ms)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?)
    }
}
