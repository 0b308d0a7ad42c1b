//! Promotion records: one row per promotion or rollback (the target App, the source, the
//! source revision, the pinned images, who, when, the plan hash and the outcome). The images
//! are JSON of a type the store does not know (it belongs to the App module, above the
//! store). A record is inserted before its pass runs (its id goes into the target's status)
//! and finished with the pass's outcome.

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{Store, StoreError};

/// A promotion as stored (and as an operator sends its automatic ones to its server).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PromotionRecord<I> {
    /// The id, allocated in order.
    pub id: i64,
    /// The target App's key (`namespace/name`).
    pub target_key: String,
    /// The target as the API names it (`cluster/name`).
    pub target: String,
    /// The source as the API names it (`cluster/name`); for a rollback, the source of the
    /// promotion rolled back to.
    pub source: String,
    /// The source revision.
    pub revision: String,
    /// The pinned images.
    pub images: I,
    /// Who promoted.
    pub actor: String,
    /// When (RFC 3339).
    pub created_at: String,
    /// The hash of the plan the promotion produced (empty until it ran).
    pub plan_hash: String,
    /// `pending`, then the target's phase after the pass (`Held`, `Synced`, …) or
    /// `refused: REASON`.
    pub outcome: String,
}

#[derive(sqlx::FromRow)]
struct PromotionRow {
    id: i64,
    target_key: String,
    target: String,
    source: String,
    revision: String,
    images: String,
    actor: String,
    created_at: String,
    plan_hash: String,
    outcome: String,
}

impl PromotionRow {
    fn parse<I: DeserializeOwned>(self) -> Result<PromotionRecord<I>, StoreError> {
        let images = serde_json::from_str(&self.images).map_err(|err| StoreError::Corrupt {
            field: "promotions.images",
            reason: err.to_string(),
        })?;
        Ok(PromotionRecord {
            id: self.id,
            target_key: self.target_key,
            target: self.target,
            source: self.source,
            revision: self.revision,
            images,
            actor: self.actor,
            created_at: self.created_at,
            plan_hash: self.plan_hash,
            outcome: self.outcome,
        })
    }
}

/// The columns of `promotions`, in [`PromotionRow`]'s order (a macro, so the queries stay
/// string literals).
macro_rules! columns {
    () => {
        "id, target_key, target, source, revision, images, actor, created_at, plan_hash, outcome"
    };
}

/// How often an insert tries when concurrent ones take the same id (each loser retries with
/// the next id).
const INSERT_ATTEMPTS: usize = 32;

impl Store {
    /// Inserts `record` with the next id (its `id` is ignored) and returns that id.
    pub async fn insert_promotion<I: Serialize>(
        &self,
        record: &PromotionRecord<I>,
    ) -> Result<i64, StoreError> {
        let images = serde_json::to_string(&record.images).map_err(|err| StoreError::Corrupt {
            field: "promotions.images",
            reason: err.to_string(),
        })?;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let id: i64 = sqlx::query_scalar("SELECT COALESCE(MAX(id), 0) + 1 FROM promotions")
                .fetch_one(&self.pool)
                .await?;
            let inserted = sqlx::query(concat!(
                "INSERT INTO promotions (",
                columns!(),
                ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"
            ))
            .bind(id)
            .bind(&record.target_key)
            .bind(&record.target)
            .bind(&record.source)
            .bind(&record.revision)
            .bind(&images)
            .bind(&record.actor)
            .bind(&record.created_at)
            .bind(&record.plan_hash)
            .bind(&record.outcome)
            .execute(&self.pool)
            .await;
            match inserted {
                Ok(_) => return Ok(id),
                Err(_) if attempt < INSERT_ATTEMPTS => continue,
                Err(err) => return Err(err.into()),
            }
        }
    }

    /// Finishes promotion `record.id`: its revision, images, plan hash and outcome (known once
    /// the source was read and the target's pass ran).
    pub async fn finish_promotion<I: Serialize>(
        &self,
        record: &PromotionRecord<I>,
    ) -> Result<(), StoreError> {
        let images = serde_json::to_string(&record.images).map_err(|err| StoreError::Corrupt {
            field: "promotions.images",
            reason: err.to_string(),
        })?;
        sqlx::query(
            "UPDATE promotions SET revision = $1, images = $2, plan_hash = $3, outcome = $4 \
             WHERE id = $5",
        )
        .bind(&record.revision)
        .bind(images)
        .bind(&record.plan_hash)
        .bind(&record.outcome)
        .bind(record.id)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Records the approval or rejection of promotion `id`'s Held plan as its outcome (only
    /// while its outcome is `Held`); whether it was.
    pub async fn decide_promotion(&self, id: i64, outcome: &str) -> Result<bool, StoreError> {
        let result =
            sqlx::query("UPDATE promotions SET outcome = $1 WHERE id = $2 AND outcome = 'Held'")
                .bind(outcome)
                .bind(id)
                .execute(&self.pool)
                .await?;
        Ok(result.rows_affected() > 0)
    }

    /// The promotions of the App `target_key`, newest first.
    pub async fn promotions<I: DeserializeOwned>(
        &self,
        target_key: &str,
    ) -> Result<Vec<PromotionRecord<I>>, StoreError> {
        let rows: Vec<PromotionRow> = sqlx::query_as(concat!(
            "SELECT ",
            columns!(),
            " FROM promotions WHERE target_key = $1 ORDER BY id DESC"
        ))
        .bind(target_key)
        .fetch_all(&self.pool)
        .await?;
        rows.into_iter().map(PromotionRow::parse).collect()
    }

    /// Promotion `id`, if it exists.
    pub async fn promotion<I: DeserializeOwned>(
        &self,
        id: i64,
    ) -> Result<Option<PromotionRecord<I>>, StoreError> {
        let row: Option<PromotionRow> = sqlx::query_as(concat!(
            "SELECT ",
            columns!(),
            " FROM promotions WHERE id = $1"
        ))
        .bind(id)
        .fetch_optional(&self.pool)
        .await?;
        row.map(PromotionRow::parse).transpose()
    }
}
