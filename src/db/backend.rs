//! Which database Conduit runs on, and how a connection to it is opened and migrated.
//!
//! `CONDUIT_DATABASE_URL` picks the backend: a `postgres://` (or `postgresql://`) URL selects
//! PostgreSQL; a path, a `sqlite://` URL or a `file:` URL selects SQLite (the default, the file
//! named by `CONDUIT_DB_PATH`). Every query is written once against [`DbConnection`]; only
//! what the two engines do differently (connection settings, migrations, bulk inserts, the
//! id of a new row) looks at the variant.

use std::fmt;
use std::path::{Path, PathBuf};

use diesel::connection::SimpleConnection;
use diesel::pg::PgConnection;
use diesel::sqlite::SqliteConnection;
use diesel::{Connection, RunQueryDsl};
use diesel_migrations::{embed_migrations, EmbeddedMigrations, MigrationHarness};

use super::{DbConnection, StoreError};

/// The SQLite migrations, compiled into the binary.
pub const SQLITE_MIGRATIONS: EmbeddedMigrations = embed_migrations!("migrations/sqlite");
/// The PostgreSQL migrations: the same versions, PostgreSQL's SQL.
pub const POSTGRES_MIGRATIONS: EmbeddedMigrations = embed_migrations!("migrations/postgres");

/// The advisory lock key migrations run under on PostgreSQL, so two services starting at once
/// on one database never apply the same migration twice ("cndt-mig" in ASCII).
const MIGRATION_LOCK: i64 = 0x636e_6474_2d6d_6967;

/// Where the data lives.
#[derive(Clone, PartialEq, Eq)]
pub enum Database {
    /// A SQLite file (created with its folders when missing).
    Sqlite(PathBuf),
    /// A PostgreSQL server, by its libpq connection URL.
    Postgres(PostgresUrl),
}

/// A PostgreSQL connection URL. Shown without its password or query (`Debug` and `Display`
/// alike), so it can be logged.
#[derive(Clone, PartialEq, Eq)]
pub struct PostgresUrl(String);

impl PostgresUrl {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for PostgresUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match url::Url::parse(&self.0) {
            Ok(mut url) => {
                if url.password().is_some() {
                    let _ = url.set_password(Some("***"));
                }
                url.set_query(None);
                f.write_str(url.as_str())
            }
            Err(_) => f.write_str("postgres://<unreadable URL>"),
        }
    }
}

impl fmt::Debug for PostgresUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for Database {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Database::Sqlite(path) => write!(f, "{}", path.display()),
            Database::Postgres(url) => write!(f, "{url}"),
        }
    }
}

impl fmt::Debug for Database {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Database::Sqlite(path) => f.debug_tuple("Sqlite").field(path).finish(),
            Database::Postgres(url) => f.debug_tuple("Postgres").field(url).finish(),
        }
    }
}

/// A path is a SQLite file.
impl From<&Path> for Database {
    fn from(path: &Path) -> Database {
        Database::Sqlite(path.to_path_buf())
    }
}

impl From<&PathBuf> for Database {
    fn from(path: &PathBuf) -> Database {
        Database::Sqlite(path.clone())
    }
}

impl Database {
    /// Reads the `database_url` setting; an empty one means the SQLite file `db_path`.
    pub fn from_setting(url: &str, db_path: &Path) -> Result<Database, String> {
        let url = url.trim();
        if url.is_empty() {
            return Ok(Database::Sqlite(db_path.to_path_buf()));
        }
        if url.contains('\0') {
            return Err("expected a postgres:// URL or a SQLite file path, got a NUL byte".to_string());
        }
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            let parsed = url::Url::parse(url).map_err(|e| format!("not a valid PostgreSQL URL: {e}"))?;
            if parsed.host_str().is_none_or(str::is_empty) && !parsed.query().is_some_and(|q| q.contains("host=")) {
                return Err("a PostgreSQL URL names a host, e.g. postgres://conduit@127.0.0.1:5432/conduit".into());
            }
            return Ok(Database::Postgres(PostgresUrl(url.to_string())));
        }
        let path = url.strip_prefix("sqlite://").or_else(|| url.strip_prefix("file:")).unwrap_or(url);
        if path.is_empty() || path.contains("://") {
            return Err(format!("expected a postgres:// URL or a SQLite file path, got {:?}", redact_scheme(url)));
        }
        Ok(Database::Sqlite(PathBuf::from(path)))
    }

    pub fn is_postgres(&self) -> bool {
        matches!(self, Database::Postgres(_))
    }

    /// Opens a connection with the backend's settings: SQLite's pragmas, or PostgreSQL's lock
    /// timeout and application name. `busy_timeout_ms` bounds waiting for a lock on both.
    pub fn connect(&self, busy_timeout_ms: u64) -> Result<DbConnection, StoreError> {
        match self {
            Database::Sqlite(path) => Ok(DbConnection::Sqlite(open_sqlite(path, busy_timeout_ms)?)),
            Database::Postgres(url) => Ok(DbConnection::Pg(open_postgres(url, busy_timeout_ms)?)),
        }
    }
}

/// Only the scheme of something that is not a database URL is repeated back: the rest may
/// hold a password.
fn redact_scheme(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, _)) => format!("{scheme}://..."),
        None => url.to_string(),
    }
}

/// Per-connection settings: WAL (readers never block the writer), enforced foreign keys
/// (SQLite leaves them off by default, per connection), and a busy timeout so concurrent
/// writers wait instead of failing at once. The busy timeout comes first: switching to WAL
/// takes a lock too, and a connection opened while another one writes or checkpoints failed
/// with "database is locked" before it had a timeout to wait with.
fn sqlite_pragmas(busy_timeout_ms: u64) -> String {
    format!(
        "PRAGMA busy_timeout = {busy_timeout_ms}; PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;"
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

/// Opens a PostgreSQL connection. A lock held longer than `busy_timeout_ms` fails the
/// statement (as SQLite's busy timeout does) instead of stalling a pooled connection forever.
/// A transaction left idle that long is ended by the server: a node frozen in the middle of
/// one (stopped, swapped out, cut off behind a link that stays up) would otherwise hold its
/// row locks for good, and every other node's writes to those rows (the leader declaring it
/// lost among them) would time out again and again. Conduit's transactions never wait between
/// their statements.
pub fn open_postgres(url: &PostgresUrl, busy_timeout_ms: u64) -> Result<PgConnection, StoreError> {
    // Unreachable is a busy database (503, try again), not a broken service.
    let mut conn = PgConnection::establish(url.as_str())
        .map_err(|e| StoreError::Busy(format!("cannot connect to PostgreSQL at {url}: {}", e.to_string().trim())))?;
    conn.batch_execute(&format!(
        "SET lock_timeout = {busy_timeout_ms}; SET idle_in_transaction_session_timeout = {busy_timeout_ms}; \
         SET application_name = 'conduit'; SET client_min_messages = warning;"
    ))?;
    Ok(conn)
}

/// Applies every pending SQLite migration; returns the versions applied.
pub fn run_migrations(conn: &mut SqliteConnection) -> Result<Vec<String>, StoreError> {
    let applied = conn
        .run_pending_migrations(SQLITE_MIGRATIONS)
        .map_err(|e| StoreError::Other(format!("migration failed: {e}")))?;
    Ok(applied.iter().map(|v| v.to_string()).collect())
}

/// Applies every pending migration of the connection's backend; returns the versions applied.
/// On PostgreSQL, under an advisory lock: services starting together take turns.
pub fn migrate(conn: &mut DbConnection) -> Result<Vec<String>, StoreError> {
    match conn {
        DbConnection::Sqlite(c) => run_migrations(c),
        DbConnection::Pg(c) => under_migration_lock(c, |c| {
            let applied = c
                .run_pending_migrations(POSTGRES_MIGRATIONS)
                .map_err(|e| StoreError::Other(format!("migration failed: {e}")))?;
            Ok(applied.iter().map(|v| v.to_string()).collect())
        }),
    }
}

/// Reverts every migration of a PostgreSQL database, leaving what Conduit created gone and
/// anything else in the database untouched (`db reset`; a SQLite file is simply deleted).
pub fn revert_all(conn: &mut PgConnection) -> Result<Vec<String>, StoreError> {
    under_migration_lock(conn, |c| {
        let reverted = c
            .revert_all_migrations(POSTGRES_MIGRATIONS)
            .map_err(|e| StoreError::Other(format!("reverting the migrations failed: {e}")))?;
        Ok(reverted.iter().map(|v| v.to_string()).collect())
    })
}

fn under_migration_lock<T>(
    conn: &mut PgConnection,
    f: impl FnOnce(&mut PgConnection) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    diesel::sql_query(format!("SELECT pg_advisory_lock({MIGRATION_LOCK})")).execute(conn)?;
    let result = f(conn);
    let unlocked = diesel::sql_query(format!("SELECT pg_advisory_unlock({MIGRATION_LOCK})")).execute(conn);
    let value = result?;
    unlocked?;
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_setting_picks_the_backend() {
        let default = Path::new("./data/conduit.db");
        assert_eq!(Database::from_setting("", default), Ok(Database::Sqlite(default.to_path_buf())));
        assert_eq!(Database::from_setting("/var/c.db", default), Ok(Database::Sqlite("/var/c.db".into())));
        assert_eq!(Database::from_setting("sqlite:///var/c.db", default), Ok(Database::Sqlite("/var/c.db".into())));
        assert_eq!(Database::from_setting("file:c.db", default), Ok(Database::Sqlite("c.db".into())));
        let pg = Database::from_setting("postgres://u:secret@127.0.0.1:5432/conduit?sslmode=disable", default);
        assert!(pg.as_ref().is_ok_and(Database::is_postgres));
        assert!(Database::from_setting("postgresql://db.lan/conduit", default).is_ok_and(|d| d.is_postgres()));
    }

    #[test]
    fn a_bad_setting_is_refused_without_repeating_a_password() {
        let default = Path::new("c.db");
        let err = Database::from_setting("mysql://u:secret@h/db", default).unwrap_err();
        assert!(!err.contains("secret"), "{err}");
        assert!(Database::from_setting("postgres://", default).is_err());
        assert!(Database::from_setting("sqlite://", default).is_err());
    }

    #[test]
    fn a_postgres_url_is_shown_without_its_password() {
        let db = Database::from_setting("postgres://u:secret@127.0.0.1/c?password=other", Path::new("c.db"))
            .expect("a PostgreSQL URL");
        for shown in [db.to_string(), format!("{db:?}")] {
            assert!(!shown.contains("secret") && !shown.contains("other"), "{shown}");
            assert!(shown.contains("u:***@127.0.0.1/c"), "{shown}");
        }
    }
}
