//! The database a test's service uses. By default the SQLite file the test names. When the
//! suite runs on PostgreSQL (`scripts/with-postgres.sh` sets `CONDUIT_TEST_POSTGRES_URL`), a
//! database of its own on that server instead, created on first use and remembered in a file
//! beside where the SQLite file would be, so a service restarted in the same folder finds its
//! data again.

use std::path::{Path, PathBuf};

use conduit::db::{Database, DbConnection};
use diesel::pg::PgConnection;
use diesel::{Connection, RunQueryDsl};

/// Conduit's tables after every migration, by name, on either backend.
pub const TABLES: [&str; 21] = [
    "agent_executions",
    "agents",
    "api_tokens",
    "audit_log",
    "login_failures",
    "login_lockouts",
    "login_sessions",
    "messages",
    "nodes",
    "permission_log",
    "permission_rules",
    "processes",
    "projects",
    "session_events",
    "sessions",
    "usage_daily",
    "usage_hourly",
    "usage_ledger",
    "users",
    "webhook_deliveries",
    "webhooks",
];

/// The server the suite runs on, when it runs on PostgreSQL.
pub fn postgres_server() -> Option<String> {
    std::env::var("CONDUIT_TEST_POSTGRES_URL").ok().filter(|url| !url.is_empty())
}

/// True when this run of the suite is on PostgreSQL.
pub fn on_postgres() -> bool {
    postgres_server().is_some()
}

/// The database for a test whose SQLite file would be `sqlite_path`.
pub fn test_database(sqlite_path: &Path) -> Database {
    let Some(server) = postgres_server() else {
        return Database::Sqlite(sqlite_path.to_path_buf());
    };
    let marker = marker(sqlite_path);
    let url = match std::fs::read_to_string(&marker) {
        Ok(url) => url,
        Err(_) => {
            let url = create_database(&server, &format!("t_{}", uuid::Uuid::new_v4().simple()));
            if let Some(parent) = marker.parent() {
                std::fs::create_dir_all(parent).expect("the database's folder");
            }
            std::fs::write(&marker, &url).expect("remember the test database");
            url
        }
    };
    Database::from_setting(&url, sqlite_path).expect("a PostgreSQL URL")
}

/// Creates the database `name` on the server at `server` (a URL without a database) and
/// returns its URL.
pub fn create_database(server: &str, name: &str) -> String {
    let mut admin = PgConnection::establish(&format!("{server}/postgres")).expect("connect to the test server");
    diesel::sql_query(format!("CREATE DATABASE {name}")).execute(&mut admin).expect("create a test database");
    format!("{server}/{name}")
}

/// The `CONDUIT_DATABASE_URL` for a service whose SQLite file would be `sqlite_path`: empty on
/// SQLite (the service uses `CONDUIT_DB_PATH`).
pub fn database_url(sqlite_path: &Path) -> String {
    match test_database(sqlite_path) {
        Database::Sqlite(_) => String::new(),
        Database::Postgres(url) => url.as_str().to_string(),
    }
}

/// A connection to a test's database, to read what the service stored.
pub fn connect(sqlite_path: &Path) -> DbConnection {
    test_database(sqlite_path).connect(5000).expect("connect to the test's database")
}

fn marker(sqlite_path: &Path) -> PathBuf {
    let mut name = sqlite_path.as_os_str().to_owned();
    name.push(".postgres-url");
    PathBuf::from(name)
}
