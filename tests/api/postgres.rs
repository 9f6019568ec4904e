//! PostgreSQL as the backend: its migrations carry SQLite's versions and go up, down and up
//! again; pooled connections get their settings; `conduit migrate` and `db reset` work on it;
//! one service per database; a password in the URL is never shown. The rest of the suite runs
//! on PostgreSQL as a whole in its second pass (`scripts/with-postgres.sh`); these tests are
//! skipped, saying so, in the SQLite pass.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use conduit::db::backend::{self, POSTGRES_MIGRATIONS};
use conduit::db::{self, Database, DbConnection, Store, StoreError};
use diesel::connection::SimpleConnection;
use diesel::prelude::*;
use diesel::sql_types::Text;
use diesel_migrations::MigrationHarness;

use crate::support::database::{postgres_server, test_database};

/// A fresh database on the suite's PostgreSQL server, or `None` (with a note) on the SQLite pass.
fn fresh_database(dir: &Path) -> Option<Database> {
    if postgres_server().is_none() {
        eprintln!("SKIPPED: the suite runs on SQLite (scripts/with-postgres.sh runs it on PostgreSQL)");
        return None;
    }
    Some(test_database(&dir.join("pg.db")))
}

fn pg(database: &Database) -> PgConnection {
    let Database::Postgres(url) = database else { panic!("a PostgreSQL database") };
    backend::open_postgres(url, 5000).expect("connect")
}

#[derive(QueryableByName)]
struct Name {
    #[diesel(sql_type = Text)]
    name: String,
}

fn tables(conn: &mut PgConnection) -> Vec<String> {
    diesel::sql_query(
        "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public' \
         AND table_name != '__diesel_schema_migrations' ORDER BY table_name",
    )
    .load::<Name>(conn)
    .expect("list tables")
    .into_iter()
    .map(|n| n.name)
    .collect()
}

#[test]
fn postgres_migrations_carry_sqlite_s_versions_and_go_up_down_and_up_again() {
    let dir = tempfile::tempdir().expect("tempdir");
    let Some(database) = fresh_database(dir.path()) else { return };
    let mut sqlite = db::open_sqlite(&dir.path().join("s.db"), 5000).expect("sqlite");
    let sqlite_versions = db::run_migrations(&mut sqlite).expect("sqlite up");

    let mut conn = DbConnection::Pg(pg(&database));
    assert_eq!(db::migrate(&mut conn).expect("up"), sqlite_versions, "the same versions, in the same order");
    let DbConnection::Pg(mut conn) = conn else { unreachable!("built as PostgreSQL above") };
    let expected = crate::support::database::TABLES;
    assert_eq!(tables(&mut conn), expected);

    assert_eq!(backend::revert_all(&mut conn).expect("down").len(), sqlite_versions.len());
    assert!(tables(&mut conn).is_empty(), "down removes every table");
    conn.run_pending_migrations(POSTGRES_MIGRATIONS).expect("up again");
    assert_eq!(tables(&mut conn), expected);
    assert!(db::migrate(&mut DbConnection::Pg(conn)).expect("idempotent").is_empty());
}

#[derive(QueryableByName)]
struct Setting {
    #[diesel(sql_type = Text)]
    value: String,
}

#[actix_web::test]
async fn pooled_postgres_connections_have_a_lock_timeout_and_enforce_foreign_keys() {
    let dir = tempfile::tempdir().expect("tempdir");
    let Some(database) = fresh_database(dir.path()) else { return };
    let store = Store::open_blocking(database, 4, 1234).await.expect("store");
    let (timeout, name) = store
        .run(|conn| {
            let DbConnection::Pg(c) = conn else { panic!("a PostgreSQL store") };
            let setting = |c: &mut PgConnection, name: &str| {
                diesel::sql_query(format!("SELECT current_setting('{name}') AS value")).get_result::<Setting>(c)
            };
            Ok((setting(c, "lock_timeout")?.value, setting(c, "application_name")?.value))
        })
        .await
        .expect("settings");
    assert_eq!((timeout.as_str(), name.as_str()), ("1234ms", "conduit"));

    let refused = store
        .run(|conn| {
            diesel::sql_query(
                "INSERT INTO sessions (id, project_id, name, status, created_at, last_active_at) \
                 VALUES ('s', 'no-such-project', 'x', 'idle', 'now', 'now')",
            )
            .execute(conn)
            .map_err(StoreError::from)
        })
        .await;
    assert!(matches!(refused, Err(StoreError::Rejected(_))), "a foreign key violation is refused: {refused:?}");
    assert!(store.ping().await);
}

/// Waits until some connection waits on a lock (a row lock of a session, here).
fn until_one_waits(conn: &mut PgConnection) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let waiting: Vec<Setting> =
            diesel::sql_query("SELECT pid::text AS value FROM pg_stat_activity WHERE wait_event_type = 'Lock'")
                .load(conn)
                .expect("pg_stat_activity");
        if !waiting.is_empty() {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "no connection came to wait on the session's lock");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// On PostgreSQL a trigger checks the sessions of lines and events once per statement (no
/// foreign key): it locks them as a key would, so a session deleted while its lines are written
/// waits for them and takes them along, and lines written while their session is being deleted
/// wait for the deletion and are refused.
#[actix_web::test]
async fn lines_and_the_deletion_of_their_session_wait_for_each_other() {
    let dir = tempfile::tempdir().expect("tempdir");
    let Some(database) = fresh_database(dir.path()) else { return };
    let _migrated = Store::open_blocking(database.clone(), 1, 5000).await.expect("store");
    let line = |session: &str| {
        format!(
            "INSERT INTO messages (session_id, direction, message_type, content, timestamp) \
             VALUES ('{session}', 'from_cli', 'stream_event', '{{}}', 'now')"
        )
    };
    let mut a = pg(&database);
    a.batch_execute(
        "INSERT INTO projects (id, name, folder_path, created_at, updated_at) VALUES ('p', 'p', '/p', 'now', 'now');
         INSERT INTO sessions (id, project_id, name, status, created_at, last_active_at) VALUES
             ('s1', 'p', 'n', 'idle', 'now', 'now'), ('s2', 'p', 'n', 'idle', 'now', 'now');",
    )
    .expect("seed");

    // The lines first: the deletion waits for their commit, then takes them.
    a.batch_execute(&format!("BEGIN; {};", line("s1"))).expect("a line, uncommitted");
    let db = database.clone();
    let deletion = std::thread::spawn(move || pg(&db).batch_execute("DELETE FROM sessions WHERE id = 's1'"));
    until_one_waits(&mut pg(&database));
    a.batch_execute("COMMIT").expect("commit the line");
    deletion.join().expect("the deleting thread").expect("the session is deleted");
    let left: Vec<Setting> =
        diesel::sql_query("SELECT count(*)::text AS value FROM messages").load(&mut a).expect("count");
    assert_eq!(left[0].value, "0", "the deleted session's line went with it");

    // The deletion first: the line waits for it, then is refused.
    a.batch_execute("BEGIN; DELETE FROM sessions WHERE id = 's2';").expect("a deletion, uncommitted");
    let (db, insert) = (database.clone(), line("s2"));
    let writing = std::thread::spawn(move || pg(&db).batch_execute(&insert));
    until_one_waits(&mut pg(&database));
    a.batch_execute("COMMIT").expect("commit the deletion");
    let refused = writing.join().expect("the writing thread");
    assert!(
        matches!(
            refused,
            Err(diesel::result::Error::DatabaseError(diesel::result::DatabaseErrorKind::ForeignKeyViolation, _))
        ),
        "{refused:?}"
    );
}

/// The binary on `url`, with its own folder (its own lock file: only the database is shared).
fn conduit(dir: &Path, url: &str) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_conduit"));
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", dir)
        .env("CONDUIT_DB_PATH", dir.join("data/c.db"))
        .env("CONDUIT_DATABASE_URL", url)
        .env("CONDUIT_PROJECT_ROOT", dir)
        .current_dir(dir);
    cmd
}

fn run(cmd: &mut Command) -> (i32, String) {
    let out = cmd.output().expect("conduit runs");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.code().unwrap_or(-1), text)
}

#[test]
fn migrate_reset_and_one_service_per_postgres_database() {
    let dir = tempfile::tempdir().expect("tempdir");
    let Some(Database::Postgres(url)) = fresh_database(dir.path()) else { return };
    // Trust authentication ignores the password: it is there to be looked for in the output.
    let url = url.as_str().replacen("postgres://postgres@", "postgres://postgres:hunter2@", 1);
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    for d in [&a, &b] {
        std::fs::create_dir_all(d).expect("folder");
    }

    let all = diesel::migration::MigrationSource::<diesel::pg::Pg>::migrations(&POSTGRES_MIGRATIONS)
        .expect("the embedded migrations")
        .len();
    let (applied, reverted) = (format!("applied {all} migration(s)"), format!("reverted {all} migration(s)"));
    let (code, out) = run(conduit(&a, &url).arg("migrate"));
    assert_eq!(code, 0, "{out}");
    assert!(out.contains(&applied) && out.contains("postgres:***@"), "{out}");
    let (code, out) = run(conduit(&a, &url).arg("migrate"));
    assert!(code == 0 && out.contains("up to date"), "{out}");

    let mut service = conduit(&a, &url)
        .arg("serve")
        .env("CONDUIT_PORT", "0")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut line = String::new();
    BufReader::new(service.stdout.take().expect("stdout")).read_line(&mut line).expect("listening line");
    assert!(line.starts_with("conduit listening on "), "{line}");

    // Another folder, the same database: refused before touching anything.
    let (code, out) = run(conduit(&b, &url).arg("serve").env("CONDUIT_PORT", "0"));
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("already using the PostgreSQL database"), "{out}");
    for args in [vec!["migrate"], vec!["db", "reset", "--yes"]] {
        let (code, out) = run(conduit(&b, &url).args(&args));
        assert_eq!(code, 1, "{args:?} refuses while a service runs: {out}");
        assert!(out.contains("already using the PostgreSQL database"), "{out}");
        assert!(!out.contains("hunter2"), "{out}");
    }

    Command::new("kill").args(["-TERM", &service.id().to_string()]).status().expect("kill");
    let output = service.wait_with_output().expect("wait");
    assert!(output.status.success());
    let log = String::from_utf8_lossy(&output.stderr);
    assert!(!log.contains("hunter2"), "the password is never logged: {log}");

    let (code, out) = run(conduit(&b, &url).args(["db", "reset"]));
    assert!(code != 0 && out.contains("--yes") && !out.contains("hunter2"), "{out}");
    let (code, out) = run(conduit(&b, &url).args(["db", "reset", "--yes"]));
    assert_eq!(code, 0, "{out}");
    assert!(out.contains(&reverted) && out.contains(&applied), "{out}");
}

#[test]
fn a_database_url_that_is_neither_is_refused_in_one_line_without_its_password() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (code, out) = run(conduit(dir.path(), "mysql://u:hunter2@db.lan/conduit").arg("migrate"));
    assert_eq!(code, 2, "{out}");
    assert_eq!(out.trim().lines().count(), 1, "{out}");
    assert!(out.contains("`database_url`") && out.contains("CONDUIT_DATABASE_URL"), "{out}");
    assert!(!out.contains("hunter2"), "{out}");
}

/// How long a request may take while the database is unreachable: a 503 at once, not a hang.
const REFUSAL_WITHIN: std::time::Duration = std::time::Duration::from_secs(15);

#[actix_web::test]
async fn a_postgres_server_that_goes_away_is_a_503_and_loses_nothing_acknowledged() {
    use crate::support::pg_server::PgServer;
    use crate::support::service::{fake_cli, ServiceConfig, TestService};
    use futures_util::FutureExt;
    use serde_json::{json, Value};
    use std::time::{Duration, Instant};

    if postgres_server().is_none() {
        eprintln!("SKIPPED: the suite runs on SQLite (scripts/with-postgres.sh runs it on PostgreSQL)");
        return;
    }
    let Some(server) = PgServer::start() else { return };
    let url = server.create_database("conduit");
    let service = TestService::start(ServiceConfig::new(fake_cli()).env("CONDUIT_DATABASE_URL", &url));
    let project = service.project("p").await;
    let session = service.launch(&project, json!({ "model": "fake-default" })).await;
    let id = session["id"].as_str().expect("id").to_string();
    service.wait_status(&id, "idle", Duration::from_secs(60)).await;
    let path = format!("/api/sessions/{id}/message");
    let say = |text: &'static str| service.post(&path, json!({ "content": text }));
    assert_eq!(say("before").await.status().as_u16(), 202);
    service.wait_for(&id, Duration::from_secs(60), |r| r["num_turns"] == 1 && r["status"] == "idle").await;

    std::fs::create_dir_all(service.root.join("q")).expect("a folder for a project");
    server.stop();
    let health = health_until(&service, |h| h["checks"]["database_ok"] == false).await;
    assert_eq!(health["status"], "unhealthy", "{health}");
    for (what, request) in [
        ("a message (its stored turn is waited for)", say("refused").boxed_local()),
        ("a read", service.get("/api/projects").boxed_local()),
        ("a write", service.post("/api/projects", json!({ "name": "q", "folder_path": "q" })).boxed_local()),
    ] {
        let started = Instant::now();
        let res = request.await;
        let (status, took) = (res.status().as_u16(), started.elapsed());
        let body: Value = res.json().await.expect("a JSON error");
        // Both codes say "retry": the writer's queue refuses with the first, a pooled
        // connection that cannot be had with the second.
        let code = body["error"]["code"].as_str().unwrap_or_default();
        assert!(status == 503 && ["storage_unavailable", "database_busy"].contains(&code), "{what}: {status} {body}");
        assert!(took < REFUSAL_WITHIN, "{what} took {took:?}");
        println!("database down: {what} refused in {took:?}");
    }

    server.restart();
    health_until(&service, |h| h["status"] == "healthy").await;
    assert_eq!(say("after").await.status().as_u16(), 202);
    service.wait_for(&id, Duration::from_secs(60), |r| r["num_turns"] == 2 && r["status"] == "idle").await;
    let lines = service.get_json(&format!("/api/sessions/{id}/messages?limit=1000")).await;
    let turns: Vec<String> = lines
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["direction"] == "to_cli" && m["message_type"] == "user")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect();
    assert!(turns.len() == 2 && turns[0].contains("before") && turns[1].contains("after"), "{turns:?}");
}

async fn health_until(
    service: &crate::support::service::TestService,
    done: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let health: serde_json::Value =
            service.get("/api/health").await.json().await.expect("health is JSON, whatever the database does");
        if done(&health) {
            return health;
        }
        assert!(std::time::Instant::now() < deadline, "health never changed: {health}\n{}", service.log());
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}
