//! Login attempts counted in the store (the server's login limiter,
//! `src/server/login_limit.rs`, decides the limits): with server replicas sharing one
//! PostgreSQL, an address that spreads its attempts over
//! every replica still gets only the documented attempts. Each check and count is one
//! transaction, serialised across replicas (a PostgreSQL advisory lock; SQLite's
//! `BEGIN IMMEDIATE`), so two replicas never both admit the last allowed attempt. The rows are
//! bounded: those older than the window go at every attempt, a subject never holds more rows
//! than its limit (refused attempts are not counted), and beyond a total cap the oldest rows
//! go first.

use super::{Backend, Store, StoreError};

/// The PostgreSQL advisory lock key that serialises login counting ("wardn lg" in ASCII).
const LOGIN_LOCK: i64 = 0x7761_7264_6e20_6c67;

/// The sliding-window limits one login attempt is checked against.
#[derive(Debug, Clone)]
pub struct AttemptLimits {
    /// Each subject (a source address; an address and user name) with the attempts it may
    /// make within the window.
    pub subjects: Vec<(String, usize)>,
    /// The window, in milliseconds.
    pub window_ms: i64,
    /// The most rows the table keeps; beyond it the oldest are deleted.
    pub max_rows: i64,
}

/// An attempt the store admitted: the row counted per subject, in the order given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counted {
    /// The ids of the rows recorded, one per subject of [`AttemptLimits::subjects`].
    pub rows: Vec<String>,
}

impl Store {
    /// Checks a login attempt at `now_ms` (Unix milliseconds) against `limits` and records it
    /// when every subject is under its limit: `Ok(Ok(counted))`. Otherwise nothing is recorded
    /// and `Ok(Err(ms))` says how long until the most limited subject may try again.
    pub async fn count_login_attempt(
        &self,
        limits: &AttemptLimits,
        now_ms: i64,
    ) -> Result<Result<Counted, i64>, StoreError> {
        let mut tx = self.begin_write().await?;
        if self.backend == Backend::Postgres {
            sqlx::query("SELECT pg_advisory_xact_lock($1)")
                .bind(LOGIN_LOCK)
                .execute(&mut *tx)
                .await?;
        }
        sqlx::query("DELETE FROM login_attempts WHERE at_ms <= $1")
            .bind(now_ms - limits.window_ms)
            .execute(&mut *tx)
            .await?;
        let mut wait: Option<i64> = None;
        for (subject, limit) in &limits.subjects {
            let times: Vec<i64> = sqlx::query_scalar(
                "SELECT at_ms FROM login_attempts WHERE subject = $1 ORDER BY at_ms DESC",
            )
            .bind(subject)
            .fetch_all(&mut *tx)
            .await?;
            if *limit == 0 || times.len() >= *limit {
                // The attempt that frees a place: the `limit`-th newest leaving the window.
                let freeing = times
                    .get(limit.saturating_sub(1))
                    .copied()
                    .unwrap_or(now_ms);
                let ms = (freeing + limits.window_ms - now_ms).max(1);
                wait = Some(wait.map_or(ms, |w| w.max(ms)));
            }
        }
        if let Some(ms) = wait {
            tx.commit().await?;
            return Ok(Err(ms));
        }
        let mut rows = Vec::with_capacity(limits.subjects.len());
        for (subject, _) in &limits.subjects {
            let id = super::random_hex::<8>("a login attempt id")?;
            sqlx::query("INSERT INTO login_attempts (id, subject, at_ms) VALUES ($1, $2, $3)")
                .bind(&id)
                .bind(subject)
                .bind(now_ms)
                .execute(&mut *tx)
                .await?;
            rows.push(id);
        }
        let total: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM login_attempts")
            .fetch_one(&mut *tx)
            .await?;
        if total > limits.max_rows {
            sqlx::query(
                "DELETE FROM login_attempts WHERE id IN \
                 (SELECT id FROM login_attempts ORDER BY at_ms, id LIMIT $1)",
            )
            .bind(total - limits.max_rows)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(Ok(Counted { rows }))
    }

    /// After a successful login: deletes the row `refund` (its attempt no longer counts) and
    /// every row of `forget` (the failures of that user from that address).
    pub async fn forget_login_attempts(
        &self,
        refund: &str,
        forget: &str,
    ) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM login_attempts WHERE id = $1 OR subject = $2")
            .bind(refund)
            .bind(forget)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// The rows counted and the longest subject stored (in bytes): for tests of the bounds.
    pub async fn login_attempts_footprint(&self) -> Result<(i64, i64), StoreError> {
        let (rows, longest): (i64, Option<i64>) =
            sqlx::query_as("SELECT COUNT(*), MAX(LENGTH(subject)) FROM login_attempts")
                .fetch_one(&self.pool)
                .await?;
        Ok((rows, longest.unwrap_or(0)))
    }
}
