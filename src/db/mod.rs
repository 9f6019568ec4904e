//! Storage: the connection type, the pool, migrations, and [`Store`], the one gateway through
//! which every query runs.
//!
//! Queries live in one file per table (`projects.rs`, ...) as plain functions taking
//! `&mut DbConnection`. They are written against [`DbConnection`], a diesel `MultiConnection`
//! enum over SQLite and PostgreSQL (see [`backend`]), so one query serves both. Nothing here
//! is async: [`Store::run`] moves each closure onto tokio's blocking pool, so no diesel call
//! ever runs on an actix worker thread.

pub mod accounts;
pub mod agents;
pub mod audit;
pub mod backend;
pub mod backlog;
pub mod checkpoint;
pub mod claim;
pub mod lock;
pub mod login_failures;
pub mod login_sessions;
pub mod messages;
pub mod nodes;
pub mod ownership;
pub mod permission_log;
pub mod processes;
pub mod projects;
pub mod redaction;
pub mod relay;
pub mod rules;
pub mod schema;
pub mod sessions;
pub mod types;
pub mod usage;
pub mod webhooks;
pub mod writer;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use diesel::connection::{Connection, SimpleConnection};
use diesel::pg::PgConnection;
use diesel::r2d2::{ManageConnection, Pool, PooledConnection, R2D2Connection};
use diesel::result::{DatabaseErrorKind, Error as DieselError};
use diesel::sqlite::SqliteConnection;

pub use backend::{migrate, open_sqlite, run_migrations, Database, SQLITE_MIGRATIONS};

/// Every backend Conduit can run on.
#[derive(diesel::MultiConnection)]
pub enum DbConnection {
    Sqlite(SqliteConnection),
    Pg(PgConnection),
}

impl DbConnection {
    /// A transaction that writes. On SQLite it takes the write lock at its start (`BEGIN
    /// IMMEDIATE`), so a busy database is waited for (`busy_timeout`). A deferred transaction
    /// that reads before it writes cannot wait: when another connection has written since its
    /// read, WAL's snapshot rule fails its first write at once with `SQLITE_BUSY` (seen as a 503
    /// `database_busy` from a cleanup under load). On PostgreSQL, a plain transaction. Nested
    /// calls are savepoints, as with `transaction`.
    pub fn write_transaction<T, E, F>(&mut self, f: F) -> Result<T, E>
    where
        F: FnOnce(&mut DbConnection) -> Result<T, E>,
        E: From<DieselError>,
    {
        use diesel::connection::{AnsiTransactionManager, TransactionManager};
        let DbConnection::Sqlite(sqlite) = self else { return self.transaction(f) };
        let outermost = AnsiTransactionManager::transaction_manager_status_mut(sqlite)
            .transaction_depth()
            .map_err(E::from)?
            .is_none();
        if !outermost {
            return self.transaction(f);
        }
        AnsiTransactionManager::begin_transaction_sql(sqlite, "BEGIN IMMEDIATE").map_err(E::from)?;
        match f(self) {
            Ok(value) => {
                let DbConnection::Sqlite(sqlite) = self else { return Ok(value) };
                AnsiTransactionManager::commit_transaction(sqlite).map_err(E::from)?;
                Ok(value)
            }
            Err(e) => {
                if let DbConnection::Sqlite(sqlite) = self {
                    let _ = AnsiTransactionManager::rollback_transaction(sqlite);
                }
                Err(e)
            }
        }
    }
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
            // PostgreSQL: a serialization failure or a lock not had within the lock timeout
            // passes by retrying, as SQLite's "database is locked" does; a lost connection is
            // the server gone for now.
            DieselError::DatabaseError(
                DatabaseErrorKind::SerializationFailure | DatabaseErrorKind::ClosedConnection,
                info,
            ) => StoreError::Busy(info.message().to_string()),
            DieselError::DatabaseError(_, info)
                if info.message().contains("database is locked")
                    || info.message().contains("database is busy")
                    || info.message().contains("lock timeout")
                    || info.message().contains("deadlock detected") =>
            {
                StoreError::Busy(info.message().to_string())
            }
            other => StoreError::Other(other.to_string()),
        }
    }
}

/// How long a request first waits for a pooled connection. Enough to open one; past it, a
/// database that could not be reached meanwhile is answered at once (503) instead of after
/// the pool's whole timeout, which is left for a pool that is merely all in use.
const FIRST_WAIT: Duration = Duration::from_millis(500);

/// Opens connections for the pool, and remembers whether the last attempt failed.
pub struct ConnectionManager {
    database: Database,
    busy_timeout_ms: u64,
    unreachable: Arc<AtomicBool>,
}

impl ManageConnection for ConnectionManager {
    type Connection = DbConnection;
    type Error = diesel::r2d2::Error;

    fn connect(&self) -> Result<DbConnection, Self::Error> {
        let result = self.database.connect(self.busy_timeout_ms);
        self.unreachable.store(result.is_err(), Ordering::Relaxed);
        result.map_err(|e| diesel::r2d2::Error::ConnectionError(diesel::ConnectionError::BadConnection(e.to_string())))
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
    database: Database,
    busy_timeout_ms: u64,
    /// The pool's last attempt to open a connection failed.
    unreachable: Arc<AtomicBool>,
}

impl Store {
    /// Runs pending migrations, then builds the pool. Blocking: call it through
    /// [`Store::open_blocking`] from async code.
    pub fn open(database: &Database, pool_size: u32, busy_timeout_ms: u64) -> Result<Store, StoreError> {
        let mut conn = database.connect(busy_timeout_ms)?;
        let applied = migrate(&mut conn)?;
        if !applied.is_empty() {
            tracing::info!(migrations = ?applied, "database migrated");
        }
        drop(conn);
        let unreachable = Arc::new(AtomicBool::new(false));
        let manager =
            ConnectionManager { database: database.clone(), busy_timeout_ms, unreachable: unreachable.clone() };
        let pool = Pool::builder()
            .max_size(pool_size)
            .connection_timeout(Duration::from_secs(10))
            .build(manager)
            .map_err(|e| StoreError::Other(format!("cannot build the connection pool: {e}")))?;
        Ok(Store { pool, database: database.clone(), busy_timeout_ms, unreachable })
    }

    /// A connection of its own, outside the pool, for a thread that writes all the time (the
    /// writer) or checkpoints: it keeps its settings (`sqlite_pragmas`, on SQLite only) and
    /// never waits for a pooled connection.
    pub fn dedicated(&self, sqlite_pragmas: &str) -> Result<DbConnection, StoreError> {
        let mut conn = self.database.connect(self.busy_timeout_ms)?;
        if let DbConnection::Sqlite(c) = &mut conn {
            c.batch_execute(sqlite_pragmas)?;
        }
        Ok(conn)
    }

    /// The database this store reaches.
    pub fn database(&self) -> &Database {
        &self.database
    }

    pub async fn open_blocking(
        database: impl Into<Database>,
        pool_size: u32,
        busy_timeout_ms: u64,
    ) -> Result<Store, StoreError> {
        let database = database.into();
        tokio::task::spawn_blocking(move || Store::open(&database, pool_size, busy_timeout_ms))
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
        let store = self.clone();
        tokio::task::spawn_blocking(move || {
            let mut conn = store.checkout()?;
            f(&mut conn)
        })
        .await
        .map_err(|e| StoreError::Other(format!("database task failed: {e}")))?
    }

    /// Runs `f` on the calling thread, for threads that are not async (the writer thread).
    pub fn run_blocking<T>(&self, f: impl FnOnce(&mut DbConnection) -> Result<T, StoreError>) -> Result<T, StoreError> {
        let mut conn = self.checkout()?;
        f(&mut conn)
    }

    /// A pooled connection: at once if one can be had, else after the pool's timeout, unless
    /// the database cannot be reached (then a `Busy` error at once).
    fn checkout(&self) -> Result<PooledConnection<ConnectionManager>, StoreError> {
        let busy = |e: diesel::r2d2::PoolError| StoreError::Busy(format!("no database connection available: {e}"));
        match self.pool.get_timeout(FIRST_WAIT) {
            Ok(conn) => Ok(conn),
            Err(e) if self.unreachable.load(Ordering::Relaxed) => Err(busy(e)),
            Err(_) => self.pool.get().map_err(busy),
        }
    }

    /// A trivial round trip, for health checks.
    pub async fn ping(&self) -> bool {
        self.run(|conn| conn.batch_execute("SELECT 1").map_err(StoreError::from)).await.is_ok()
    }
}

#[cfg(test)]
mod write_transaction_tests {
    use diesel::connection::SimpleConnection;
    use diesel::RunQueryDsl;

    use super::{backend, DbConnection, StoreError};

    #[derive(diesel::QueryableByName)]
    struct Count {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }

    /// A transaction that reads, then writes while another connection wrote meanwhile: it
    /// waits for the other instead of failing with SQLITE_BUSY (which a deferred one does).
    #[test]
    fn a_transaction_that_reads_first_still_waits_for_a_busy_database() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.db");
        let open = |path: &std::path::Path| DbConnection::Sqlite(backend::open_sqlite(path, 5_000).expect("open"));
        open(&path).batch_execute("CREATE TABLE t (n INTEGER)").expect("table");
        let (first, then) = (std::sync::mpsc::channel(), std::sync::mpsc::channel());
        let (read_done, go_on) = (first.0, then.1);
        let at = path.clone();
        let reader = std::thread::spawn(move || {
            let mut conn = open(&at);
            conn.write_transaction(|conn| {
                let seen: Vec<Count> = diesel::sql_query("SELECT count(*) AS n FROM t").load(conn)?;
                read_done.send(()).expect("tell");
                // The other connection tries to write now; this one holds the write lock.
                let _ = go_on.recv_timeout(std::time::Duration::from_millis(300));
                diesel::sql_query(format!("INSERT INTO t VALUES ({})", seen[0].n)).execute(conn)?;
                Ok::<_, StoreError>(())
            })
        });
        first.1.recv().expect("the read happened");
        let mut other = open(&path);
        let wrote = other.batch_execute("INSERT INTO t VALUES (100)");
        // Its write waited for the first transaction, which has finished by now (no one listens).
        let _ = then.0.send(());
        reader.join().expect("no panic").expect("the first transaction committed");
        wrote.expect("the other write waited for it, then went in");
        let rows: Vec<Count> = diesel::sql_query("SELECT count(*) AS n FROM t").load(&mut other).expect("count");
        assert_eq!(rows[0].n, 2);
    }
}
