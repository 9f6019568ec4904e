//! Migrations run up, down and up again, and every connection gets its pragmas (SQLite; the
//! PostgreSQL twins are in `postgres.rs`).

use conduit::db::{self, DbConnection, Store};
use diesel::connection::SimpleConnection;
use diesel::prelude::*;
use diesel::sql_types::{Integer, Text};
use diesel_migrations::MigrationHarness;

#[derive(QueryableByName)]
struct Name {
    #[diesel(sql_type = Text)]
    name: String,
}

fn tables(conn: &mut diesel::SqliteConnection) -> Vec<String> {
    diesel::sql_query("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name != '__diesel_schema_migrations' ORDER BY name")
        .load::<Name>(conn)
        .expect("list tables")
        .into_iter()
        .map(|n| n.name)
        .collect()
}

#[test]
fn migrations_go_up_down_and_up_again() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut conn = db::open_sqlite(&dir.path().join("nested/dir/c.db"), 5000).expect("open creates parent folders");
    let applied = db::run_migrations(&mut conn).expect("up");
    assert!(!applied.is_empty());
    let expected = crate::support::database::TABLES;
    assert_eq!(tables(&mut conn), expected);

    conn.revert_all_migrations(db::SQLITE_MIGRATIONS).expect("down");
    assert!(tables(&mut conn).is_empty(), "down removes every table");

    db::run_migrations(&mut conn).expect("up again");
    assert_eq!(tables(&mut conn), expected);
    assert!(db::run_migrations(&mut conn).expect("idempotent").is_empty());
}

#[derive(QueryableByName)]
struct Pragma {
    #[diesel(sql_type = Text)]
    journal_mode: String,
}

#[derive(QueryableByName)]
struct Flag {
    #[diesel(sql_type = Integer)]
    foreign_keys: i32,
}

#[derive(QueryableByName)]
struct Timeout {
    #[diesel(sql_type = Integer)]
    timeout: i32,
}

#[actix_web::test]
async fn pooled_connections_use_wal_foreign_keys_and_a_busy_timeout() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open_blocking(&dir.path().join("c.db"), 4, 1234).await.expect("store");
    let (mode, fk, timeout) = store
        .run(|conn| {
            let DbConnection::Sqlite(c) = conn else { panic!("a SQLite file opens a SQLite connection") };
            let mode = diesel::sql_query("PRAGMA journal_mode").get_result::<Pragma>(c)?.journal_mode;
            let fk = diesel::sql_query("PRAGMA foreign_keys").get_result::<Flag>(c)?.foreign_keys;
            let timeout = diesel::sql_query("PRAGMA busy_timeout").get_result::<Timeout>(c)?.timeout;
            Ok((mode, fk, timeout))
        })
        .await
        .expect("pragmas");
    assert_eq!(mode, "wal");
    assert_eq!(fk, 1);
    assert_eq!(timeout, 1234);

    // Foreign keys are enforced: a session for a missing project is refused.
    let refused = store
        .run(|conn| {
            conn.batch_execute(
                "INSERT INTO sessions (id, project_id, name, status, created_at, last_active_at) \
                 VALUES ('s', 'no-such-project', 'x', 'idle', 'now', 'now')",
            )
            .map_err(db::StoreError::from)
        })
        .await;
    assert!(refused.is_err(), "foreign key violation must be refused");
}

#[actix_web::test]
async fn a_panic_inside_a_query_is_an_error_not_a_crash() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open_blocking(&dir.path().join("c.db"), 2, 1000).await.expect("store");
    let result: Result<(), _> = store.run(|_| panic!("boom")).await;
    assert!(result.is_err());
    assert!(store.ping().await, "the store still works afterwards");
}

#[derive(QueryableByName)]
struct Run {
    #[diesel(sql_type = Text)]
    status: String,
    #[diesel(sql_type = diesel::sql_types::Nullable<Text>)]
    resumes_at: Option<String>,
}

#[test]
fn a_run_waiting_for_a_limit_keeps_its_reset_and_is_failed_on_the_way_down() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut conn = db::open_sqlite(&dir.path().join("c.db"), 5000).expect("open");
    db::run_migrations(&mut conn).expect("up");
    conn.batch_execute(
        "INSERT INTO agents (id, name, objective, schedule, cwd, created_at, updated_at) \
         VALUES ('a', 'n', 'o', '0 3 * * *', '/tmp', 'now', 'now'); \
         INSERT INTO agent_executions (id, agent_id, trigger_kind, status, created_at, resumes_at) \
         VALUES ('e', 'a', 'cron', 'waiting_for_limit', 'now', '2030-01-01T00:00:00.000Z');",
    )
    .expect("a waiting run");
    let read = |conn: &mut diesel::SqliteConnection| {
        diesel::sql_query("SELECT status, resumes_at FROM agent_executions WHERE id = 'e'")
            .get_result::<Run>(conn)
            .expect("the run")
    };
    let run = read(&mut conn);
    assert_eq!(
        (run.status.as_str(), run.resumes_at.as_deref()),
        ("waiting_for_limit", Some("2030-01-01T00:00:00.000Z"))
    );
    // Down to before the status existed (later migrations first): the run is a failure there.
    loop {
        let version = conn.revert_last_migration(db::SQLITE_MIGRATIONS).expect("down").to_string();
        if version == "20261128000002" {
            break;
        }
    }
    assert_eq!(read_status(&mut conn), "failure");
    db::run_migrations(&mut conn).expect("up again");
    assert_eq!(read(&mut conn).status, "failure");
}

fn read_status(conn: &mut diesel::SqliteConnection) -> String {
    diesel::sql_query("SELECT status AS name FROM agent_executions WHERE id = 'e'")
        .get_result::<Name>(conn)
        .expect("the run")
        .name
}
