//! App statuses as stored: one row per App key (`namespace/name`), with the destination
//! cluster segment and name for lookups, and the status as JSON. The store does not know the
//! status type (it belongs to the App module, above the store): any serde type round-trips.

use futures_util::TryStreamExt;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{Store, StoreError};

/// The stored status of one App.
#[derive(Debug, Clone, PartialEq)]
pub struct AppStatusRecord<S> {
    /// The App's key, `namespace/name`.
    pub key: String,
    /// The destination cluster segment (`local`: the management cluster).
    pub cluster: String,
    /// The App's name.
    pub name: String,
    /// The App's status.
    pub status: S,
    /// When the status was written (RFC 3339).
    pub updated_at: String,
}

/// A query reading [`AppStatusRow`]s: the columns it maps, then the given clauses.
macro_rules! select_app_status {
    ($clauses:literal) => {
        concat!(
            "SELECT app_key, cluster, name, status, updated_at FROM app_status ",
            $clauses
        )
    };
}

/// An `app_status` row as read. The status is JSON text of a type the store does not know
/// (and the `Any` driver decodes no `Json<T>`), so [`AppStatusRow::parse`] deserialises it,
/// reporting a bad value as [`StoreError::Corrupt`].
#[derive(sqlx::FromRow)]
struct AppStatusRow {
    app_key: String,
    cluster: String,
    name: String,
    status: String,
    updated_at: String,
}

impl AppStatusRow {
    fn parse<S: DeserializeOwned>(self) -> Result<AppStatusRecord<S>, StoreError> {
        let status = serde_json::from_str(&self.status).map_err(|err| StoreError::Corrupt {
            field: "app_status.status",
            reason: err.to_string(),
        })?;
        Ok(AppStatusRecord {
            key: self.app_key,
            cluster: self.cluster,
            name: self.name,
            status,
            updated_at: self.updated_at,
        })
    }
}

impl Store {
    /// Inserts or replaces the status of App `record.key`.
    pub async fn put_app_status<S: Serialize>(
        &self,
        record: &AppStatusRecord<S>,
    ) -> Result<(), StoreError> {
        let status = serde_json::to_string(&record.status).map_err(|err| StoreError::Corrupt {
            field: "app_status.status",
            reason: err.to_string(),
        })?;
        sqlx::query(
            "INSERT INTO app_status (app_key, cluster, name, status, updated_at) \
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT (app_key) DO UPDATE SET \
             cluster = excluded.cluster, name = excluded.name, status = excluded.status, \
             updated_at = excluded.updated_at",
        )
        .bind(&record.key)
        .bind(&record.cluster)
        .bind(&record.name)
        .bind(status)
        .bind(&record.updated_at)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// The stored status of App `key`, if one is stored: what a replica that does not own the
    /// App answers for it (its owner writes it).
    pub async fn app_status<S: DeserializeOwned>(
        &self,
        key: &str,
    ) -> Result<Option<AppStatusRecord<S>>, StoreError> {
        sqlx::query_as::<_, AppStatusRow>(select_app_status!("WHERE app_key = $1"))
            .bind(key)
            .fetch_optional(&self.pool)
            .await?
            .map(AppStatusRow::parse)
            .transpose()
    }

    /// Every stored App status, ordered by key.
    pub async fn app_statuses<S: DeserializeOwned>(
        &self,
    ) -> Result<Vec<AppStatusRecord<S>>, StoreError> {
        let mut records = Vec::new();
        self.each_app_status(None, |record| records.push(record))
            .await?;
        Ok(records)
    }

    /// At most `limit` stored statuses with keys after `after` (`""`: from the first), in key
    /// order, of the Apps deploying to `cluster` when given: one page of a reader that reads
    /// them all a page at a time (an operator restoring its statuses from its server).
    pub async fn app_statuses_page<S: DeserializeOwned>(
        &self,
        cluster: Option<&str>,
        after: &str,
        limit: i64,
    ) -> Result<Vec<AppStatusRecord<S>>, StoreError> {
        const ALL: &str = select_app_status!("WHERE app_key > $1 ORDER BY app_key LIMIT $2");
        const CLUSTER: &str =
            select_app_status!("WHERE app_key > $1 AND cluster = $3 ORDER BY app_key LIMIT $2");
        let query =
            sqlx::query_as::<_, AppStatusRow>(if cluster.is_some() { CLUSTER } else { ALL })
                .bind(after)
                .bind(limit);
        let query = match cluster {
            Some(cluster) => query.bind(cluster),
            None => query,
        };
        query
            .fetch_all(&self.pool)
            .await?
            .into_iter()
            .map(AppStatusRow::parse)
            .collect()
    }

    /// Hands `each` every stored App status (written at or after `since`, when given: RFC 3339
    /// as [`crate::time::rfc3339`] writes it, which orders as text), in key order, one row at a
    /// time as the database sends them: a replica reloading the statuses of a whole fleet holds
    /// one row at once, not all of them. Returns how many were handed
    /// over; stops at the first row that cannot be read (a row handed over stays handed over).
    pub async fn each_app_status<S: DeserializeOwned>(
        &self,
        since: Option<&str>,
        mut each: impl FnMut(AppStatusRecord<S>),
    ) -> Result<usize, StoreError> {
        const ALL: &str = select_app_status!("ORDER BY app_key");
        const SINCE: &str = select_app_status!("WHERE updated_at >= $1 ORDER BY app_key");
        let query = sqlx::query_as::<_, AppStatusRow>(if since.is_some() { SINCE } else { ALL });
        let query = match since {
            Some(since) => query.bind(since),
            None => query,
        };
        let mut rows = query.fetch(&self.pool);
        let mut count = 0;
        while let Some(row) = rows.try_next().await? {
            each(row.parse()?);
            count += 1;
        }
        Ok(count)
    }

    /// Deletes the status of App `key`; false if none was stored.
    pub async fn delete_app_status(&self, key: &str) -> Result<bool, StoreError> {
        let result = sqlx::query("DELETE FROM app_status WHERE app_key = $1")
            .bind(key)
            .execute(&self.pool)
            .await?;
        Ok(result.rows_affected() > 0)
    }
}
