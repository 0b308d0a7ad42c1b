//! Apps reconciled by operator-role processes, as they report them. A `--role server` process
//! reconciles nothing and reads no `--apps`, so each operator reports the Apps it reconciles
//! and the server lists them (their statuses are the operators' rows of `app_status`, their
//! operations go through `app_requests`).
//!
//! Two tables: `operators`, one row per operator with the digest of its last full report and
//! when it was last heard from; `operator_apps`, one row per App key with the operator that
//! reported it last, the App as JSON (a type the store does not know) and when its App or
//! operator last changed. A full report writes only the rows that differ; between full
//! reports an operator's sign of life is a heartbeat naming its report's digest, one row
//! written whatever the size of its fleet. An operator not heard from for
//! [`REPORTED_FOR_MS`] is no longer listed, and its rows go with any operator's next report.

use std::collections::HashMap;

use super::{Store, StoreError};

/// How long an operator's Apps count as reconciled after it was last heard from: four of the
/// operators' thirty-second heartbeats, so a slow or restarting operator's Apps stay listed
/// while one that is gone is no longer shown after two minutes.
pub const REPORTED_FOR_MS: i64 = 2 * 60 * 1000;

/// One reported App.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct OperatorAppRow {
    /// The App's key, `namespace/name` (a target's `namespace/name@target`).
    pub app_key: String,
    /// The operator that reconciles it (its replica id).
    pub operator: String,
    /// The App as JSON.
    pub app: String,
}

/// What changes whenever a listed App, its operator or the set of listed rows changes: a
/// server re-reads the rows only when it does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, sqlx::FromRow)]
pub struct OperatorAppsVersion {
    /// How many rows are listed.
    pub reported: i64,
    /// The sum of their change times (a sum, not the latest: a server replica whose clock is
    /// behind another's still changes it).
    pub changed: i64,
}

impl Store {
    /// Records that `operator` reconciles exactly `apps` (key and JSON) at `now_ms`, a report
    /// whose digest is `digest` (what its heartbeats name, [`Store::operator_heartbeat`]): the
    /// rows that differ are written (their change time moves), the rows this operator reported
    /// before and no longer does are deleted, and so are the rows of every operator not heard
    /// from for [`REPORTED_FOR_MS`]. One transaction; returns how many App rows it wrote or
    /// deleted.
    pub async fn report_operator_apps(
        &self,
        operator: &str,
        digest: &str,
        apps: &[(String, String)],
        now_ms: i64,
    ) -> Result<u64, StoreError> {
        let mut tx = self.begin_write().await?;
        let mut before: HashMap<String, String> =
            sqlx::query_as("SELECT app_key, app FROM operator_apps WHERE operator = $1")
                .bind(operator)
                .fetch_all(&mut *tx)
                .await?
                .into_iter()
                .collect();
        let mut written = 0;
        for (key, app) in apps {
            if before.remove(key).is_some_and(|held| held == *app) {
                continue;
            }
            // New, changed, or another operator's until now.
            sqlx::query(
                "INSERT INTO operator_apps (app_key, operator, app, changed_ms) \
                 VALUES ($1, $2, $3, $4) ON CONFLICT (app_key) DO UPDATE SET \
                 operator = excluded.operator, app = excluded.app, changed_ms = excluded.changed_ms",
            )
            .bind(key)
            .bind(operator)
            .bind(app)
            .bind(now_ms)
            .execute(&mut *tx)
            .await?;
            written += 1;
        }
        for key in before.into_keys() {
            sqlx::query("DELETE FROM operator_apps WHERE app_key = $1 AND operator = $2")
                .bind(&key)
                .bind(operator)
                .execute(&mut *tx)
                .await?;
            written += 1;
        }
        sqlx::query(
            "INSERT INTO operators (operator, digest, reported_ms) VALUES ($1, $2, $3) \
             ON CONFLICT (operator) DO UPDATE SET digest = excluded.digest, \
             reported_ms = excluded.reported_ms",
        )
        .bind(operator)
        .bind(digest)
        .bind(now_ms)
        .execute(&mut *tx)
        .await?;
        let expired = now_ms - REPORTED_FOR_MS;
        sqlx::query(
            "DELETE FROM operator_apps WHERE operator IN \
             (SELECT operator FROM operators WHERE reported_ms < $1)",
        )
        .bind(expired)
        .execute(&mut *tx)
        .await?;
        sqlx::query("DELETE FROM operators WHERE reported_ms < $1")
            .bind(expired)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(written)
    }

    /// Records that `operator` is alive at `now_ms` and still reconciles the Apps of its report
    /// of digest `digest`. `false` when the store holds another report of it, or none, or its
    /// last one expired (the server lost it, another replica took a newer one, or the operator
    /// was silent too long): the operator then sends its Apps again.
    pub async fn operator_heartbeat(
        &self,
        operator: &str,
        digest: &str,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let updated = sqlx::query(
            "UPDATE operators SET reported_ms = $3 \
             WHERE operator = $1 AND digest = $2 AND reported_ms >= $4",
        )
        .bind(operator)
        .bind(digest)
        .bind(now_ms)
        .bind(now_ms - REPORTED_FOR_MS)
        .execute(&self.pool)
        .await?;
        Ok(updated.rows_affected() == 1)
    }

    /// The operators heard from at or after `since_ms` (a report or a heartbeat), each with
    /// when it was last heard from, by operator id.
    pub async fn operators_heard(&self, since_ms: i64) -> Result<Vec<(String, i64)>, StoreError> {
        Ok(sqlx::query_as(
            "SELECT operator, reported_ms FROM operators WHERE reported_ms >= $1 ORDER BY operator",
        )
        .bind(since_ms)
        .fetch_all(&self.pool)
        .await?)
    }

    /// The Apps of the operators heard from at or after `since_ms`, by key.
    pub async fn operator_apps(&self, since_ms: i64) -> Result<Vec<OperatorAppRow>, StoreError> {
        Ok(sqlx::query_as(
            "SELECT a.app_key, a.operator, a.app FROM operator_apps a \
             JOIN operators o ON o.operator = a.operator WHERE o.reported_ms >= $1 \
             ORDER BY a.app_key",
        )
        .bind(since_ms)
        .fetch_all(&self.pool)
        .await?)
    }

    /// The version of the Apps [`Store::operator_apps`] lists (see [`OperatorAppsVersion`]).
    pub async fn operator_apps_version(
        &self,
        since_ms: i64,
    ) -> Result<OperatorAppsVersion, StoreError> {
        Ok(sqlx::query_as(
            "SELECT COUNT(*) AS reported, CAST(COALESCE(SUM(a.changed_ms), 0) AS BIGINT) AS changed \
             FROM operator_apps a JOIN operators o ON o.operator = a.operator \
             WHERE o.reported_ms >= $1",
        )
        .bind(since_ms)
        .fetch_one(&self.pool)
        .await?)
    }
}
