//! Decisions on Held plans handed between replicas (`--shards auto`): the replica an approver
//! reached records the request, the replica that owns the App claims it (exactly one claim
//! succeeds), performs it and writes the outcome, which the first replica reads back. The
//! outcome is JSON of a type the store does not know.

use super::{Store, StoreError};

/// One handed-over request as stored.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct AppRequest {
    /// A random id.
    pub id: String,
    /// The App's key (`namespace/name`).
    pub app_key: String,
    /// `approve` or `reject`.
    pub operation: String,
    /// The plan hash the approver reviewed, if given.
    pub plan_hash: Option<String>,
    /// When it was recorded (RFC 3339).
    pub requested_at: String,
    /// The replica that claimed it.
    pub claimed_by: Option<String>,
    /// When it was performed.
    pub done_at: Option<String>,
    /// The outcome (JSON), once performed.
    pub outcome: Option<String>,
}

impl Store {
    /// Records request `id` to `operation` App `app_key`'s Held plan.
    pub async fn insert_app_request(
        &self,
        id: &str,
        app_key: &str,
        operation: &str,
        plan_hash: Option<&str>,
        at: &str,
    ) -> Result<(), StoreError> {
        let result = sqlx::query(
            "INSERT INTO app_requests (id, app_key, operation, plan_hash, requested_at) \
             VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(id)
        .bind(app_key)
        .bind(operation)
        .bind(plan_hash)
        .bind(at)
        .execute(&self.pool)
        .await;
        Store::inserted(result, || format!("app request {id}"))
    }

    /// The requests no replica has claimed yet, oldest first.
    pub async fn open_app_requests(&self) -> Result<Vec<AppRequest>, StoreError> {
        Ok(sqlx::query_as(
            "SELECT id, app_key, operation, plan_hash, requested_at, claimed_by, done_at, outcome \
             FROM app_requests WHERE claimed_by IS NULL ORDER BY requested_at, id",
        )
        .fetch_all(&self.pool)
        .await?)
    }

    /// Claims request `id` for `replica`; false when another replica claimed it first.
    pub async fn claim_app_request(&self, id: &str, replica: &str) -> Result<bool, StoreError> {
        let result = sqlx::query(
            "UPDATE app_requests SET claimed_by = $1 WHERE id = $2 AND claimed_by IS NULL",
        )
        .bind(replica)
        .bind(id)
        .execute(&self.pool)
        .await?;
        Ok(result.rows_affected() == 1)
    }

    /// Records the `outcome` of request `id`, performed at `at`.
    pub async fn finish_app_request(
        &self,
        id: &str,
        outcome: &str,
        at: &str,
    ) -> Result<(), StoreError> {
        sqlx::query("UPDATE app_requests SET outcome = $1, done_at = $2 WHERE id = $3")
            .bind(outcome)
            .bind(at)
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Request `id`, if stored.
    pub async fn app_request(&self, id: &str) -> Result<Option<AppRequest>, StoreError> {
        Ok(sqlx::query_as(
            "SELECT id, app_key, operation, plan_hash, requested_at, claimed_by, done_at, outcome \
             FROM app_requests WHERE id = $1",
        )
        .bind(id)
        .fetch_optional(&self.pool)
        .await?)
    }

    /// Deletes request `id` (once its asker read the outcome, or gave up on it).
    pub async fn delete_app_request(&self, id: &str) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM app_requests WHERE id = $1")
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Deletes the requests recorded before `before` (RFC 3339, as stored): no asker waits for
    /// them any more (it died, or gave up). Returns how many went.
    pub async fn delete_app_requests_before(&self, before: &str) -> Result<u64, StoreError> {
        let result = sqlx::query("DELETE FROM app_requests WHERE requested_at < $1")
            .bind(before)
            .execute(&self.pool)
            .await?;
        Ok(result.rows_affected())
    }
}
