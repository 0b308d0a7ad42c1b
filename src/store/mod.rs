//! Persistent state of the control plane: registered clusters (sealed), Git repository
//! credentials (sealed), users with their roles, sessions, API tokens, the MAC-chained audit log and the last
//! status of every App.
//!
//! One code path serves both backends through `sqlx::Any`: an embedded SQLite file in the data
//! directory by default, PostgreSQL when a `postgres://` URL is given. The migrations in
//! `migrations/` are portable SQL and run unchanged on both.

pub mod apps;
pub mod audit;
pub mod auth;
pub mod clusters;
pub mod login_attempts;
mod migrate;
pub mod operator_apps;
pub mod probes;
pub mod promotions;
pub mod pushes;
pub mod repositories;
pub mod requests;
pub mod users;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use sqlx::AnyPool;
use sqlx::any::AnyPoolOptions;

/// Name of the SQLite file created in the data directory when no database URL is given.
pub const SQLITE_FILE: &str = "wardn.db";

/// The write-ahead log is folded into the database every this many pages (4 KiB each;
/// SQLite's default is 1,000, about 4 MiB). See [`sqlite_pragmas`].
pub const SQLITE_WAL_CHECKPOINT_PAGES: u64 = 64;
/// The write-ahead log is cut back to this size when it restarts after a checkpoint (by
/// default it keeps its largest size). See [`sqlite_pragmas`].
pub const SQLITE_WAL_LIMIT_BYTES: u64 = 256 << 10;

/// Run on every SQLite connection. WAL lets readers (the clusters list) proceed while a
/// writer commits; [`SQLITE_WAL_CHECKPOINT_PAGES`] and [`SQLITE_WAL_LIMIT_BYTES`] keep the log
/// small, so a burst of small writes (audit entries of a login flood) leaves no megabytes of
/// log behind.
fn sqlite_pragmas() -> [String; 3] {
    [
        "PRAGMA journal_mode=WAL".to_string(),
        format!("PRAGMA wal_autocheckpoint={SQLITE_WAL_CHECKPOINT_PAGES}"),
        format!("PRAGMA journal_size_limit={SQLITE_WAL_LIMIT_BYTES}"),
    ]
}

/// Errors from the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The data directory could not be created.
    #[error("cannot create data directory {path}: {source}")]
    DataDir {
        /// The directory.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The database URL is neither `sqlite:` nor `postgres://`/`postgresql://`.
    #[error("--database-url: unsupported scheme (expected postgres:// or sqlite:)")]
    UnsupportedUrl,
    /// Connecting to the database failed.
    #[error("cannot connect to the {backend} database: {source}")]
    Connect {
        /// `sqlite` or `postgres`.
        backend: &'static str,
        /// The driver error.
        source: sqlx::Error,
    },
    /// A migration failed to apply.
    #[error("migration {name} failed: {source}")]
    Migrate {
        /// The migration file name.
        name: &'static str,
        /// The driver error.
        source: sqlx::Error,
    },
    /// A row with the same key exists already.
    #[error("{0} already exists")]
    Duplicate(String),
    /// A stored value could not be decoded.
    #[error("corrupt stored value in {field}: {reason}")]
    Corrupt {
        /// Table and column.
        field: &'static str,
        /// What was wrong.
        reason: String,
    },
    /// An audit entry was to be written before the store was given its audit key.
    #[error("audit log: no audit key configured (WARDN_CREDENTIALS_KEY), cannot chain entries")]
    AuditKeyMissing,
    /// The audit chain failed verification where an intact one was needed (a re-chain).
    #[error("audit log: {0}")]
    AuditChain(#[from] audit::ChainError),
    /// The change would leave no admin (the last admin cannot be demoted or deleted).
    #[error("{0} is the last admin: make another user admin first")]
    LastAdmin(String),
    /// The random generator failed while making an id.
    #[error("random generator failed making {what}: {reason}")]
    Random {
        /// What the id was for.
        what: &'static str,
        /// The generator's error.
        reason: String,
    },
    /// Any other database error.
    #[error("database error: {0}")]
    Query(#[from] sqlx::Error),
}

/// Which database engine a [`Store`] talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// The embedded SQLite file.
    Sqlite,
    /// A PostgreSQL server.
    Postgres,
}

/// A handle to the database; cheap to clone and shared by every request handler.
#[derive(Clone)]
pub struct Store {
    pool: AnyPool,
    backend: Backend,
    /// Serialises audit appends in this process so the MAC chain stays linear.
    audit_lock: Arc<tokio::sync::Mutex<()>>,
    /// The audit keys and the head last written (see [`Store::init_audit`]).
    audit: Arc<parking_lot::RwLock<audit::AuditState>>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("backend", &self.backend)
            .finish()
    }
}

impl Store {
    /// Opens the store wardn is configured with: PostgreSQL when `database_url` is given,
    /// otherwise the SQLite file [`SQLITE_FILE`] in `data_dir` (created if missing).
    pub async fn open(data_dir: &Path, database_url: Option<&str>) -> Result<Store, StoreError> {
        match database_url {
            Some(url) => Store::connect(url).await,
            None => {
                std::fs::create_dir_all(data_dir).map_err(|source| StoreError::DataDir {
                    path: data_dir.to_path_buf(),
                    source,
                })?;
                let path = data_dir.join(SQLITE_FILE);
                Store::connect(&format!("sqlite://{}?mode=rwc", path.display())).await
            }
        }
    }

    /// Connects to `url` (`sqlite:` or `postgres://`) and applies pending migrations.
    pub async fn connect(url: &str) -> Result<Store, StoreError> {
        sqlx::any::install_default_drivers();
        let backend = if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Backend::Postgres
        } else if url.starts_with("sqlite:") {
            Backend::Sqlite
        } else {
            return Err(StoreError::UnsupportedUrl);
        };
        let name = match backend {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
        };
        let mut options = AnyPoolOptions::new().max_connections(8);
        if backend == Backend::Sqlite {
            options = options.after_connect(|conn, _| {
                Box::pin(async move {
                    for pragma in sqlite_pragmas() {
                        sqlx::query(sqlx::AssertSqlSafe(pragma))
                            .execute(&mut *conn)
                            .await?;
                    }
                    Ok(())
                })
            });
        }
        let pool = options
            .connect(url)
            .await
            .map_err(|source| StoreError::Connect {
                backend: name,
                source,
            })?;
        migrate::run(&pool, backend).await?;
        let store = Store {
            pool,
            backend,
            audit_lock: Arc::new(tokio::sync::Mutex::new(())),
            audit: Arc::default(),
        };
        store
            .backfill_api_tokens(jiff::Timestamp::now().as_second())
            .await?;
        Ok(store)
    }

    /// Starts a transaction that will write. On SQLite it takes the write lock at once
    /// (`BEGIN IMMEDIATE`), waiting for it under the busy timeout: a deferred transaction that
    /// reads first and writes later fails with "database is locked" when another connection
    /// wrote in between (WAL snapshots cannot be upgraded), and under load that lost audit
    /// entries.
    pub(crate) async fn begin_write(
        &self,
    ) -> Result<sqlx::Transaction<'static, sqlx::Any>, sqlx::Error> {
        match self.backend {
            Backend::Sqlite => self.pool.begin_with("BEGIN IMMEDIATE").await,
            Backend::Postgres => self.pool.begin().await,
        }
    }

    /// The result of an INSERT whose unique key may already exist: a unique violation becomes
    /// [`StoreError::Duplicate`] naming `what`.
    fn inserted(
        result: Result<sqlx::any::AnyQueryResult, sqlx::Error>,
        what: impl FnOnce() -> String,
    ) -> Result<(), StoreError> {
        match result {
            Ok(_) => Ok(()),
            Err(sqlx::Error::Database(err)) if err.is_unique_violation() => {
                Err(StoreError::Duplicate(what()))
            }
            Err(err) => Err(err.into()),
        }
    }

    /// The engine behind this store.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Closes every pooled connection (flushes SQLite's WAL on the last close).
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

/// `N` random bytes in lowercase hex: a row id; `what` names it in the error.
fn random_hex<const N: usize>(what: &'static str) -> Result<String, StoreError> {
    let mut bytes = [0u8; N];
    getrandom::fill(&mut bytes).map_err(|e| StoreError::Random {
        what,
        reason: e.to_string(),
    })?;
    Ok(hex::encode(bytes))
}
