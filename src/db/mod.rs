//! Storage: the connection type, the pool, migrations, and [`Store`], the one gateway through
//! which every query runs.
//!
//! Queries live in one file per table (`projects.rs`, ...) as plain functions taking
//! `&mut DbConnection`. They are written against [`DbConnection`], a diesel `MultiConnection`
//! enum, so a PostgreSQL variant can be added later (with `migrations/postgres/`) without
//! rewriting a single query. Nothing here is async: [`Store::run`] moves each closure onto
//! tokio's blocking pool, so no diesel call ever runs on an actix worker thread.

pub mod agents;
pub mod backlog;
pub mod checkpoint;
pub mod lock;
pub mod messages;
pub mod permission_log;
pub mod processes;
pub mod projects;
pub mod rules;
pub mod schema;
pub mod sessions;
pub mod types;
pub mod usage;
pub mod webhooks;
pub mod writer;

use std::path::Path;
use std::time::Duration;

use diesel::connection::SimpleConnection;
use diesel::r2d2::{ManageConnection, Pool, R2D2Connection};
use diesel::result::{DatabaseErrorKind, Error as DieselError};
use diesel::sqlite::SqliteConnection;
use diesel::Connection;
use diesel_migrations::{embed_migrations, EmbeddedMigrations, MigrationHarness};

/// The SQLite migrations, compiled into the binary.
pub const SQLITE_MIGRATIONS: EmbeddedMigrations = embed_migrations!("migrations/sqlite");

/// Every backend Conduit can run on. Only SQLite today.
#[derive(diesel::MultiConnection)]
pub enum DbConnection {
    Sqlite(SqliteConnection),
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("no such row")]
    NotFound,
    #[error("unique constraint violated: {0}")]
    Conflict(String),
    /// The database refused the row for good (a foreign key, check or not-null constraint).
    #[error("the database refused the row: {0}")]
    Rejected(String),
    #[error("database busy: {0}")]
    Busy(String),
    #[error("database error: {0}")]
    Other(String),
}

impl From<DieselError> for StoreError {
    fn from(e: DieselError) -> Self {
        match e {
            DieselError::NotFound => StoreError::NotFound,
            DieselError::DatabaseError(DatabaseErrorKind::UniqueViolation, info) => {
                StoreError::Conflict(info.message().to_string())
            }
            DieselError::DatabaseError(
                DatabaseErrorKind::ForeignKeyViolation
                | DatabaseErrorKind::CheckViolation
                | DatabaseErrorKind::NotNullViolation,
                info,
            ) => StoreError::Rejected(info.message().to_string()),
            DieselError::DatabaseError(_, info)
                if info.message().contains("database is locked") || info.message().contains("database is busy") =>
            {
                StoreError::Busy(info.message().to_string())
            }
            other => StoreError::Other(other.to_string()),
        }
    }
}

/// Per-connection settings: WAL (readers never block the writer), enforced foreign keys
/// (SQLite leaves them off by default, per connection), and a busy timeout so concurrent
/// writers wait instead of failing at once.
fn sqlite_pragmas(busy_timeout_ms: u64) -> String {
    format!(
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; PRAGMA busy_timeout = {busy_timeout_ms};"
    )
}

/// Opens a SQLite connection with the pragmas set. Used by the pool and by the CLI commands.
pub fn open_sqlite(path: &Path, busy_timeout_ms: u64) -> Result<SqliteConnection, StoreError> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .map_err(|e| StoreError::Other(format!("cannot create the database folder {}: {e}", parent.display())))?;
    }
    let url =
        path.to_str().ok_or_else(|| StoreError::Other(format!("database path is not UTF-8: {}", path.display())))?;
    let mut conn = SqliteConnection::establish(url)
        .map_err(|e| StoreError::Other(format!("cannot open the database {}: {e}", path.display())))?;
    conn.batch_execute(&sqlite_pragmas(busy_timeout_ms))?;
    Ok(conn)
}

/// Applies every pending migration; returns the versions applied.
pub fn run_migrations(conn: &mut SqliteConnection) -> Result<Vec<String>, StoreError> {
    let applied = conn
        .run_pending_migrations(SQLITE_MIGRATIONS)
        .map_err(|e| StoreError::Other(format!("migration failed: {e}")))?;
    Ok(applied.iter().map(|v| v.to_string()).collect())
}

/// Opens connections for the pool.
pub struct ConnectionManager {
    path: std::path::PathBuf,
    busy_timeout_ms: u64,
}

impl ManageConnection for ConnectionManager {
    type Connection = DbConnection;
    type Error = diesel::r2d2::Error;

    fn connect(&self) -> Result<DbConnection, Self::Error> {
        open_sqlite(&self.path, self.busy_timeout_ms)
            .map(DbConnection::Sqlite)
            .map_err(|e| diesel::r2d2::Error::ConnectionError(diesel::ConnectionError::BadConnection(e.to_string())))
    }

    fn is_valid(&self, conn: &mut DbConnection) -> Result<(), Self::Error> {
        conn.ping().map_err(diesel::r2d2::Error::QueryError)
    }

    fn has_broken(&self, conn: &mut DbConnection) -> bool {
        conn.is_broken()
    }
}

/// The blocking gateway to the database. Cheap to clone.
#[derive(Clone)]
pub struct Store {
    pool: Pool<ConnectionManager>,
    path: std::path::PathBuf,
    busy_timeout_ms: u64,
}

impl Store {
    /// Runs pending migrations, then builds the pool. Blocking: call it through
    /// [`Store::open_blocking`] from async code.
    pub fn open(path: &Path, pool_size: u32, busy_timeout_ms: u64) -> Result<Store, StoreError> {
        let mut conn = open_sqlite(path, busy_timeout_ms)?;
        let applied = run_migrations(&mut conn)?;
        if !applied.is_empty() {
            tracing::info!(migrations = ?applied, "database migrated");
        }
        drop(conn);
        let manager = ConnectionManager { path: path.to_path_buf(), busy_timeout_ms };
        let pool = Pool::builder()
            .max_size(pool_size)
            .connection_timeout(Duration::from_secs(10))
            .build(manager)
            .map_err(|e| StoreError::Other(format!("cannot build the connection pool: {e}")))?;
        Ok(Store { pool, path: path.to_path_buf(), busy_timeout_ms })
    }

    /// A connection of its own, outside the pool, for a thread that writes all the time (the
    /// writer) or checkpoints: it keeps its pragmas and never waits for a pooled connection.
    pub fn dedicated(&self, extra_pragmas: &str) -> Result<DbConnection, StoreError> {
        let mut conn = open_sqlite(&self.path, self.busy_timeout_ms)?;
        conn.batch_execute(extra_pragmas)?;
        Ok(DbConnection::Sqlite(conn))
    }

    pub async fn open_blocking(path: &Path, pool_size: u32, busy_timeout_ms: u64) -> Result<Store, StoreError> {
        let path = path.to_path_buf();
        tokio::task::spawn_blocking(move || Store::open(&path, pool_size, busy_timeout_ms))
            .await
            .map_err(|e| StoreError::Other(format!("database task failed: {e}")))?
    }

    /// Runs `f` with a pooled connection on the blocking pool. A panic inside `f` comes back
    /// as an error instead of taking the service down.
    pub async fn run<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        F: FnOnce(&mut DbConnection) -> Result<T, StoreError> + Send + 'static,
        T: Send + 'static,
    {
        let pool = self.pool.clone();
        tokio::task::spawn_blocking(move || {
            let mut conn =
                pool.get().map_err(|e| StoreError::Busy(format!("no database connection available: {e}")))?;
            f(&mut conn)
        })
        .await
        .map_err(|e| StoreError::Other(format!("database task failed: {e}")))?
    }

    /// Runs `f` on the calling thread, for threads that are not async (the writer thread).
    pub fn run_blocking<T>(&self, f: impl FnOnce(&mut DbConnection) -> Result<T, StoreError>) -> Result<T, StoreError> {
        let mut conn =
            self.pool.get().map_err(|e| StoreError::Busy(format!("no database connection available: {e}")))?;
        f(&mut conn)
    }

    /// A trivial round trip, for health checks.
    pub async fn ping(&self) -> bool {
        self.run(|conn| conn.batch_execute("SELECT 1").map_err(StoreError::from)).await.is_ok()
    }
}
