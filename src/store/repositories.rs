//! Registered Git repositories as stored: credentials and webhook secrets only ever as sealed
//! `enc:v1:` blobs.

use super::{Store, StoreError};

/// One registered repository as persisted (read with `query_as`: its fields are the columns).
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct RepositoryRecord {
    /// Short stable id: the digest of the normalised URL (see `sources::url::SourceKey::digest`).
    pub id: String,
    /// The normalised URL (the repository's source key); unique.
    pub url: String,
    /// `none`, `basic` or `bearer`.
    pub auth_kind: String,
    /// The user name of basic authentication (not secret).
    pub username: Option<String>,
    /// The sealed password (basic) or token (bearer).
    pub secret_sealed: Option<String>,
    /// The sealed per-repository webhook secret.
    pub webhook_secret_sealed: Option<String>,
    /// Registration time (RFC 3339).
    pub created_at: String,
    /// Last update time (RFC 3339).
    pub updated_at: String,
}

/// The column list of `repositories`, as a literal so queries stay `&'static str`.
macro_rules! columns {
    () => {
        "id, url, auth_kind, username, secret_sealed, webhook_secret_sealed, created_at, updated_at"
    };
}

impl Store {
    /// Inserts a repository; [`StoreError::Duplicate`] if its id or URL is registered.
    pub async fn insert_repository(&self, record: &RepositoryRecord) -> Result<(), StoreError> {
        let result = sqlx::query(concat!(
            "INSERT INTO repositories (",
            columns!(),
            ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"
        ))
        .bind(&record.id)
        .bind(&record.url)
        .bind(&record.auth_kind)
        .bind(record.username.clone())
        .bind(record.secret_sealed.clone())
        .bind(record.webhook_secret_sealed.clone())
        .bind(&record.created_at)
        .bind(&record.updated_at)
        .execute(&self.pool)
        .await;
        Store::inserted(result, || format!("repository {}", record.url))
    }

    /// The repository with id `id`, if registered.
    pub async fn get_repository(&self, id: &str) -> Result<Option<RepositoryRecord>, StoreError> {
        Ok(sqlx::query_as(concat!(
            "SELECT ",
            columns!(),
            " FROM repositories WHERE id = $1"
        ))
        .bind(id)
        .fetch_optional(&self.pool)
        .await?)
    }

    /// Every registered repository, ordered by URL.
    pub async fn list_repositories(&self) -> Result<Vec<RepositoryRecord>, StoreError> {
        Ok(sqlx::query_as(concat!(
            "SELECT ",
            columns!(),
            " FROM repositories ORDER BY url"
        ))
        .fetch_all(&self.pool)
        .await?)
    }

    /// Replaces the credentials, webhook secret and update time of a repository (matched by
    /// id); false if unknown.
    pub async fn update_repository(&self, record: &RepositoryRecord) -> Result<bool, StoreError> {
        let result = sqlx::query(
            "UPDATE repositories SET auth_kind = $1, username = $2, secret_sealed = $3, \
             webhook_secret_sealed = $4, updated_at = $5 WHERE id = $6",
        )
        .bind(&record.auth_kind)
        .bind(record.username.clone())
        .bind(record.secret_sealed.clone())
        .bind(record.webhook_secret_sealed.clone())
        .bind(&record.updated_at)
        .bind(&record.id)
        .execute(&self.pool)
        .await?;
        Ok(result.rows_affected() > 0)
    }

    /// Removes a repository; false if it was not registered.
    pub async fn delete_repository(&self, id: &str) -> Result<bool, StoreError> {
        let result = sqlx::query("DELETE FROM repositories WHERE id = $1")
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(result.rows_affected() > 0)
    }

    /// Rewrites every sealed secret of every repository with `reseal` in one transaction (all
    /// or nothing); returns how many repositories were rewritten.
    pub async fn reseal_repositories<E>(
        &self,
        reseal: impl Fn(&str) -> Result<String, E>,
    ) -> Result<Result<usize, E>, StoreError> {
        let mut tx = self.begin_write().await?;
        let rows: Vec<(String, Option<String>, Option<String>)> =
            sqlx::query_as("SELECT id, secret_sealed, webhook_secret_sealed FROM repositories")
                .fetch_all(&mut *tx)
                .await?;
        let mut count = 0;
        for (id, secret, webhook) in rows {
            let mut blobs = [secret, webhook];
            for blob in &mut blobs {
                *blob = match blob.as_deref().map(&reseal).transpose() {
                    Ok(resealed) => resealed,
                    Err(err) => return Ok(Err(err)),
                };
            }
            let [secret, webhook] = blobs;
            sqlx::query(
                "UPDATE repositories SET secret_sealed = $1, webhook_secret_sealed = $2 WHERE id = $3",
            )
            .bind(secret)
            .bind(webhook)
            .bind(id)
            .execute(&mut *tx)
            .await?;
            count += 1;
        }
        tx.commit().await?;
        Ok(Ok(count))
    }
}
