//! Apps reconciled by operator-role processes, as they report them. A `--role server` process
//! reconciles nothing and reads no `--apps`, so each operator reports the Apps it reconciles
//! and the server lists them (their statuses are the operators' rows of `app_status`, their
//! operations go through `app_requests`). One row per App key: the operator that reported it
//! last, the App as JSON (a type the store does not know), when it was last reported and when
//! its App or operator last changed. Rows an operator stopped reporting go with its next report;
//! those of an operator that stopped reporting at all expire after [`REPORTED_FOR_MS`].

use std::collections::BTreeSet;

use super::{Store, StoreError};

/// How long an App counts as reconciled after its operator last reported it: four of the
/// operators' thirty-second reports, so a slow or restarting operator's Apps stay listed
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

/// What changes whenever a reported App, its operator or the set of live rows changes: a
/// server re-reads the rows only when it does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, sqlx::FromRow)]
pub struct OperatorAppsVersion {
    /// How many rows are live.
    pub reported: i64,
    /// The sum of their change times (a sum, not the latest: a server replica whose clock is
    /// behind another's still changes it).
    pub changed: i64,
}

impl Store {
    /// Records that `operator` reconciles exactly `apps` (key and JSON) at `now_ms`: each row is
    /// written (its change time moves only when its App or operator differs), the rows this
    /// operator reported before and no longer does are deleted, and so are the rows of every
    /// operator not heard from for [`REPORTED_FOR_MS`]. One transaction.
    pub async fn report_operator_apps(
        &self,
        operator: &str,
        apps: &[(String, String)],
        now_ms: i64,
    ) -> Result<(), StoreError> {
        let mut tx = self.begin_write().await?;
        let before: Vec<(String,)> =
            sqlx::query_as("SELECT app_key FROM operator_apps WHERE operator = $1")
                .bind(operator)
                .fetch_all(&mut *tx)
                .await?;
        let reported: BTreeSet<&str> = apps.iter().map(|(key, _)| key.as_str()).collect();
        for (key,) in before {
            if !reported.contains(key.as_str()) {
                sqlx::query("DELETE FROM operator_apps WHERE app_key = $1 AND operator = $2")
                    .bind(&key)
                    .bind(operator)
                    .execute(&mut *tx)
                    .await?;
            }
        }
        for (key, app) in apps {
            sqlx::query(
                "INSERT INTO operator_apps (app_key, operator, app, reported_ms, changed_ms) \
                 VALUES ($1, $2, $3, $4, $4) ON CONFLICT (app_key) DO UPDATE SET \
                 changed_ms = CASE WHEN operator_apps.app = excluded.app \
                 AND operator_apps.operator = excluded.operator \
                 THEN operator_apps.changed_ms ELSE excluded.changed_ms END, \
                 operator = excluded.operator, app = excluded.app, \
                 reported_ms = excluded.reported_ms",
            )
            .bind(key)
            .bind(operator)
            .bind(app)
            .bind(now_ms)
            .execute(&mut *tx)
            .await?;
        }
        sqlx::query("DELETE FROM operator_apps WHERE reported_ms < $1")
            .bind(now_ms - REPORTED_FOR_MS)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    /// The Apps reported at or after `since_ms`, by key.
    pub async fn operator_apps(&self, since_ms: i64) -> Result<Vec<OperatorAppRow>, StoreError> {
        Ok(sqlx::query_as(
            "SELECT app_key, operator, app FROM operator_apps WHERE reported_ms >= $1 \
             ORDER BY app_key",
        )
        .bind(since_ms)
        .fetch_all(&self.pool)
        .await?)
    }

    /// The version of the Apps reported at or after `since_ms` (see [`OperatorAppsVersion`]).
    pub async fn operator_apps_version(
        &self,
        since_ms: i64,
    ) -> Result<OperatorAppsVersion, StoreError> {
        Ok(sqlx::query_as(
            "SELECT COUNT(*) AS reported, CAST(COALESCE(SUM(changed_ms), 0) AS BIGINT) AS changed \
             FROM operator_apps WHERE reported_ms >= $1",
        )
        .bind(since_ms)
        .fetch_one(&self.pool)
        .await?)
    }
}
