//! Cluster probe results shared by the processes of one store: replicas sharing one
//! PostgreSQL probe each registered cluster once per interval between them (Argo CD's shards
//! likewise refresh only their own clusters' info), and each replica's API shows the latest
//! result, whoever took it. A process claims a probe by moving the cluster's due time forward
//! in one conditional statement, so two processes never both claim the same round.

use super::{Store, StoreError};

/// The longest probe result stored, in bytes: the registry bounds the error text it records,
/// so a longer value is a caller's bug, refused rather than stored.
pub const MAX_STATUS_BYTES: usize = 8192;

/// One cluster's shared probe row.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct ProbeRow {
    /// The cluster.
    pub name: String,
    /// When the next probe is due (Unix milliseconds); a claim moves it forward.
    pub due_ms: i64,
    /// The latest result (the registry's JSON), if any process recorded one.
    pub status: Option<String>,
    /// When that result was taken (Unix milliseconds; 0 without a result).
    pub probed_ms: i64,
}

impl Store {
    /// Every probe row, by cluster name.
    pub async fn probe_rows(&self) -> Result<Vec<ProbeRow>, StoreError> {
        Ok(sqlx::query_as(
            "SELECT name, due_ms, status, probed_ms FROM cluster_probes ORDER BY name",
        )
        .fetch_all(&self.pool)
        .await?)
    }

    /// Claims the probe of `name` for the caller: when its due time is at or before
    /// `due_by_ms` (or it has no row yet), moves it to `next_due_ms` and returns true (the
    /// caller probes now); otherwise returns false (another process claimed this round).
    pub async fn claim_probe(
        &self,
        name: &str,
        due_by_ms: i64,
        next_due_ms: i64,
    ) -> Result<bool, StoreError> {
        let result = sqlx::query(
            "INSERT INTO cluster_probes (name, due_ms, status, probed_ms) VALUES ($1, $2, NULL, 0) \
             ON CONFLICT (name) DO UPDATE SET due_ms = excluded.due_ms \
             WHERE cluster_probes.due_ms <= $3",
        )
        .bind(name)
        .bind(next_due_ms)
        .bind(due_by_ms)
        .execute(&self.pool)
        .await?;
        Ok(result.rows_affected() > 0)
    }

    /// Notes that `name` is due at `due_ms` unless it has a row already: a process that is not
    /// expected to probe a cluster it sees for the first time gives the expected one that long.
    pub async fn schedule_probe(&self, name: &str, due_ms: i64) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO cluster_probes (name, due_ms, status, probed_ms) VALUES ($1, $2, NULL, 0) \
             ON CONFLICT (name) DO NOTHING",
        )
        .bind(name)
        .bind(due_ms)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Records the result `status` of a probe of `name` taken at `probed_ms`, unless a later
    /// result is already recorded (a slow probe never overwrites a newer one). A cluster
    /// without a row (probed outside a round, e.g. right after its registration) gets one due
    /// at `probed_ms`: its expected prober takes it at its next round, the others not before
    /// an interval has passed.
    pub async fn record_probe(
        &self,
        name: &str,
        status: &str,
        probed_ms: i64,
    ) -> Result<(), StoreError> {
        if status.len() > MAX_STATUS_BYTES {
            return Err(StoreError::Corrupt {
                field: "cluster_probes.status",
                reason: format!(
                    "a probe result of {} bytes for cluster {name:?} exceeds {MAX_STATUS_BYTES}",
                    status.len()
                ),
            });
        }
        sqlx::query(
            "INSERT INTO cluster_probes (name, due_ms, status, probed_ms) VALUES ($1, $2, $3, $2) \
             ON CONFLICT (name) DO UPDATE SET status = excluded.status, \
             probed_ms = excluded.probed_ms WHERE cluster_probes.probed_ms <= excluded.probed_ms",
        )
        .bind(name)
        .bind(probed_ms)
        .bind(status)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Deletes the probe row of `name` (its registration changed or went): the next round
    /// probes it at once, and no earlier result is shown for it.
    pub async fn forget_probe(&self, name: &str) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM cluster_probes WHERE name = $1")
            .bind(name)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Deletes the rows of clusters no longer registered (a probe that finished after its
    /// cluster was removed may have recorded one).
    pub async fn prune_probes(&self) -> Result<u64, StoreError> {
        let result =
            sqlx::query("DELETE FROM cluster_probes WHERE name NOT IN (SELECT name FROM clusters)")
                .execute(&self.pool)
                .await?;
        Ok(result.rows_affected())
    }
}
