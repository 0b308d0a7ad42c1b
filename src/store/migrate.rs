//! A minimal migration runner over `sqlx::Any`: the SQL files in `migrations/` are embedded at
//! build time and applied in order, each in its own transaction, recorded in `wardn_migrations`.

use sqlx::AnyPool;

use super::StoreError;

/// Every migration, in order: (version, file name, SQL).
const MIGRATIONS: &[(i64, &str, &str)] = &[
    (
        1,
        "0001_registry.sql",
        include_str!("../../migrations/0001_registry.sql"),
    ),
    (
        2,
        "0002_app_status.sql",
        include_str!("../../migrations/0002_app_status.sql"),
    ),
    (
        3,
        "0003_repositories.sql",
        include_str!("../../migrations/0003_repositories.sql"),
    ),
    (
        4,
        "0004_api_token_ids.sql",
        include_str!("../../migrations/0004_api_token_ids.sql"),
    ),
    (
        5,
        "0005_promotions.sql",
        include_str!("../../migrations/0005_promotions.sql"),
    ),
    (
        6,
        "0006_declared_clusters.sql",
        include_str!("../../migrations/0006_declared_clusters.sql"),
    ),
    (
        7,
        "0007_roles.sql",
        include_str!("../../migrations/0007_roles.sql"),
    ),
    (
        8,
        "0008_app_requests.sql",
        include_str!("../../migrations/0008_app_requests.sql"),
    ),
    (
        10,
        "0010_login_attempts.sql",
        include_str!("../../migrations/0010_login_attempts.sql"),
    ),
    (
        11,
        "0011_cluster_probes.sql",
        include_str!("../../migrations/0011_cluster_probes.sql"),
    ),
    (
        12,
        "0012_git_pushes.sql",
        include_str!("../../migrations/0012_git_pushes.sql"),
    ),
    (
        13,
        "0013_operator_apps.sql",
        include_str!("../../migrations/0013_operator_apps.sql"),
    ),
];

/// The PostgreSQL advisory lock key held while migrating ("wardn mi" in ASCII): replicas
/// starting together on an empty database migrate one after the other.
const MIGRATION_LOCK: i64 = 0x7761_7264_6e20_6d69;

/// Applies every migration not yet recorded in the database. On PostgreSQL the whole run holds
/// a session advisory lock, so replicas starting at once do not apply the same migration twice.
pub(super) async fn run(pool: &AnyPool, backend: super::Backend) -> Result<(), StoreError> {
    let mut conn = pool.acquire().await?;
    let postgres = backend == super::Backend::Postgres;
    if postgres {
        sqlx::query("SELECT pg_advisory_lock($1)")
            .bind(MIGRATION_LOCK)
            .execute(&mut *conn)
            .await?;
    }
    let result = apply(&mut conn, postgres).await;
    if postgres {
        sqlx::query("SELECT pg_advisory_unlock($1)")
            .bind(MIGRATION_LOCK)
            .execute(&mut *conn)
            .await?;
    }
    result
}

/// [`run`]'s work on one connection. Each migration is applied in a transaction that first
/// checks it is still pending (on SQLite one taking the write lock at once): a second store
/// opened on the same file at the same moment skips what the first applied.
async fn apply(
    conn: &mut sqlx::pool::PoolConnection<sqlx::Any>,
    postgres: bool,
) -> Result<(), StoreError> {
    use sqlx::Connection;
    sqlx::query(
        "CREATE TABLE IF NOT EXISTS wardn_migrations (version BIGINT PRIMARY KEY, name TEXT NOT NULL)",
    )
    .execute(&mut **conn)
    .await?;
    let applied: Vec<i64> = sqlx::query_scalar("SELECT version FROM wardn_migrations")
        .fetch_all(&mut **conn)
        .await?;
    for &(version, name, sql) in MIGRATIONS {
        if applied.contains(&version) {
            continue;
        }
        let mut tx = match postgres {
            true => conn.begin().await?,
            false => conn.begin_with("BEGIN IMMEDIATE").await?,
        };
        let done: Option<i64> =
            sqlx::query_scalar("SELECT version FROM wardn_migrations WHERE version = $1")
                .bind(version)
                .fetch_optional(&mut *tx)
                .await?;
        if done.is_some() {
            continue;
        }
        sqlx::raw_sql(sql)
            .execute(&mut *tx)
            .await
            .map_err(|source| StoreError::Migrate { name, source })?;
        sqlx::query("INSERT INTO wardn_migrations (version, name) VALUES ($1, $2)")
            .bind(version)
            .bind(name)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
    }
    Ok(())
}
