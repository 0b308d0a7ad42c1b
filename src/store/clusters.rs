//! Registered clusters as stored: the kubeconfig only ever as a sealed `enc:v1:` blob.

use super::{Store, StoreError};

/// One registered cluster as persisted. `kubeconfig_sealed` is the sealed blob, never plain text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterRecord {
    /// Unique name (a DNS label).
    pub name: String,
    /// The API server URL (https://).
    pub server_url: String,
    /// The kubeconfig sealed by `clusters::seal`.
    pub kubeconfig_sealed: String,
    /// Namespace allowlist; empty means every namespace.
    pub namespaces: Vec<String>,
    /// When the kubeconfig's credentials expire (RFC 3339), if that can be read from them.
    pub credential_expires_at: Option<String>,
    /// Registration time (RFC 3339).
    pub created_at: String,
    /// Last update time (RFC 3339).
    pub updated_at: String,
    /// The file that declares the cluster (`wardn serve --clusters FILE`); `None` when it was
    /// registered through the API.
    pub declared_in: Option<String>,
}

/// The column list of `clusters`, as a literal so queries stay `&'static str`.
macro_rules! columns {
    () => {
        "name, server_url, kubeconfig_sealed, namespaces, credential_expires_at, created_at, updated_at, declared_in"
    };
}

/// A `clusters` row as read. The allowlist is JSON text: the `Any` driver decodes only plain
/// column types (no `Json<T>`), so [`ClusterRecord::try_from`] parses it, reporting a bad value
/// as [`StoreError::Corrupt`].
#[derive(sqlx::FromRow)]
struct ClusterRow {
    name: String,
    server_url: String,
    kubeconfig_sealed: String,
    namespaces: String,
    credential_expires_at: Option<String>,
    created_at: String,
    updated_at: String,
    declared_in: Option<String>,
}

impl TryFrom<ClusterRow> for ClusterRecord {
    type Error = StoreError;

    fn try_from(row: ClusterRow) -> Result<ClusterRecord, StoreError> {
        let namespaces =
            serde_json::from_str(&row.namespaces).map_err(|err| StoreError::Corrupt {
                field: "clusters.namespaces",
                reason: err.to_string(),
            })?;
        Ok(ClusterRecord {
            name: row.name,
            server_url: row.server_url,
            kubeconfig_sealed: row.kubeconfig_sealed,
            namespaces,
            credential_expires_at: row.credential_expires_at,
            created_at: row.created_at,
            updated_at: row.updated_at,
            declared_in: row.declared_in,
        })
    }
}

fn namespaces_json(namespaces: &[String]) -> String {
    serde_json::Value::from(namespaces.to_vec()).to_string()
}

impl Store {
    /// Inserts a new cluster; [`StoreError::Duplicate`] if the name is taken.
    pub async fn insert_cluster(&self, record: &ClusterRecord) -> Result<(), StoreError> {
        let result = sqlx::query(concat!(
            "INSERT INTO clusters (",
            columns!(),
            ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"
        ))
        .bind(&record.name)
        .bind(&record.server_url)
        .bind(&record.kubeconfig_sealed)
        .bind(namespaces_json(&record.namespaces))
        .bind(record.credential_expires_at.clone())
        .bind(&record.created_at)
        .bind(&record.updated_at)
        .bind(record.declared_in.clone())
        .execute(&self.pool)
        .await;
        Store::inserted(result, || format!("cluster {:?}", record.name))
    }

    /// The cluster named `name`, if registered.
    pub async fn get_cluster(&self, name: &str) -> Result<Option<ClusterRecord>, StoreError> {
        let row: Option<ClusterRow> = sqlx::query_as(concat!(
            "SELECT ",
            columns!(),
            " FROM clusters WHERE name = $1"
        ))
        .bind(name)
        .fetch_optional(&self.pool)
        .await?;
        row.map(ClusterRecord::try_from).transpose()
    }

    /// Every registered cluster, ordered by name.
    pub async fn list_clusters(&self) -> Result<Vec<ClusterRecord>, StoreError> {
        let rows: Vec<ClusterRow> = sqlx::query_as(concat!(
            "SELECT ",
            columns!(),
            " FROM clusters ORDER BY name"
        ))
        .fetch_all(&self.pool)
        .await?;
        rows.into_iter().map(ClusterRecord::try_from).collect()
    }

    /// Replaces the stored fields of an existing cluster (matched by name); false if unknown.
    pub async fn update_cluster(&self, record: &ClusterRecord) -> Result<bool, StoreError> {
        let result = sqlx::query(
            "UPDATE clusters SET server_url = $1, kubeconfig_sealed = $2, namespaces = $3, \
             credential_expires_at = $4, updated_at = $5, declared_in = $6 WHERE name = $7",
        )
        .bind(&record.server_url)
        .bind(&record.kubeconfig_sealed)
        .bind(namespaces_json(&record.namespaces))
        .bind(record.credential_expires_at.clone())
        .bind(&record.updated_at)
        .bind(record.declared_in.clone())
        .bind(&record.name)
        .execute(&self.pool)
        .await?;
        Ok(result.rows_affected() > 0)
    }

    /// Removes a cluster; false if it was not registered.
    pub async fn delete_cluster(&self, name: &str) -> Result<bool, StoreError> {
        let result = sqlx::query("DELETE FROM clusters WHERE name = $1")
            .bind(name)
            .execute(&self.pool)
            .await?;
        Ok(result.rows_affected() > 0)
    }

    /// Rewrites every sealed blob with `reseal` in one transaction (all or nothing); returns
    /// how many were rewritten.
    pub async fn reseal_clusters<E>(
        &self,
        reseal: impl Fn(&str) -> Result<String, E>,
    ) -> Result<Result<usize, E>, StoreError> {
        let mut tx = self.begin_write().await?;
        let rows: Vec<(String, String)> =
            sqlx::query_as("SELECT name, kubeconfig_sealed FROM clusters")
                .fetch_all(&mut *tx)
                .await?;
        let mut count = 0;
        for (name, sealed) in rows {
            let resealed = match reseal(&sealed) {
                Ok(blob) => blob,
                Err(err) => return Ok(Err(err)),
            };
            sqlx::query("UPDATE clusters SET kubeconfig_sealed = $1 WHERE name = $2")
                .bind(resealed)
                .bind(name)
                .execute(&mut *tx)
                .await?;
            count += 1;
        }
        tx.commit().await?;
        Ok(Ok(count))
    }
}
