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
];

/// Applies every migration not yet recorded in the database.
pub(super) async fn run(pool: &AnyPool) -> Result<(), StoreError> {
    sqlx::query(
        "CREATE TABLE IF NOT EXISTS wardn_migrations (version BIGINT PRIMARY KEY, name TEXT NOT NULL)",
    )
    .execute(pool)
    .await?;
    let applied: Vec<i64> = sqlx::query_scalar("SELECT version FROM wardn_migrations")
        .fetch_all(pool)
        .await?;
    for &(version, name, sql) in MIGRATIONS {
        if applied.contains(&version) {
            continue;
        }
        let mut tx = pool.begin().await?;
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
