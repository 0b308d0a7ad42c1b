//! Helpers shared by the integration tests. Each test binary uses a subset of them.
#![allow(dead_code)]

pub mod certs;
mod git_repo;
pub mod https_git;
pub mod postgres;
pub mod proxy;
pub mod receiver;
pub mod replica;
pub mod rss;
pub mod running;
pub mod server;
pub mod workloads;

#[allow(unused_imports)]
pub use git_repo::*;

use sqlx::any::AnyPoolOptions;

/// A database for one test case on one backend.
pub struct TestDb {
    /// Connection URL.
    pub url: String,
    /// The SQLite data dir (kept alive for the test), if SQLite.
    pub dir: Option<tempfile::TempDir>,
}

/// Backends the suites run against.
pub enum Backend<'a> {
    /// A fresh SQLite file per database.
    Sqlite,
    /// A fresh database per case on a throwaway PostgreSQL server.
    Postgres(&'a postgres::Postgres),
}

impl Backend<'_> {
    /// A fresh, empty database named after `case`.
    pub fn database(&self, case: &str) -> TestDb {
        match self {
            Backend::Sqlite => {
                let dir = tempfile::tempdir().unwrap();
                let url = format!(
                    "sqlite://{}?mode=rwc",
                    dir.path().join(wardn::store::SQLITE_FILE).display()
                );
                TestDb {
                    url,
                    dir: Some(dir),
                }
            }
            Backend::Postgres(pg) => TestDb {
                url: pg.create_database(case),
                dir: None,
            },
        }
    }
}

/// Runs one raw SQL statement against `url` (to tamper with stored data in tests).
pub async fn execute(url: &str, sql: &'static str) {
    sqlx::any::install_default_drivers();
    let pool = AnyPoolOptions::new()
        .max_connections(1)
        .connect(url)
        .await
        .unwrap();
    sqlx::raw_sql(sql).execute(&pool).await.unwrap();
    pool.close().await;
}

/// The names of the clusters a `GET /api/v1/clusters` body lists as connected, in its order.
pub fn connected_clusters(list: &serde_json::Value) -> Vec<String> {
    list["clusters"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["status"] == "connected")
        .filter_map(|c| c["name"].as_str().map(str::to_string))
        .collect()
}
