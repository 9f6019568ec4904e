//! The write-behind writer: batches commit in order, acknowledged writes are durable, a failing
//! database loses nothing (writes are kept and retried, health says so until the backlog is
//! written), and only rows the database refuses for good are dropped, one by one.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use conduit::db::backlog::Backlog;
use conduit::db::messages::{self, NewMessage, NewSessionEvent};
use conduit::db::writer::{WriteError, WriteOp, Writer};
use conduit::db::{DbConnection, Store, StoreError};
use diesel::connection::SimpleConnection;

fn row(session: &str, n: usize) -> NewMessage {
    NewMessage {
        session_id: session.to_string(),
        direction: "from_cli",
        message_type: "stream_event".to_string(),
        message_subtype: None,
        content: format!("{{\"n\":{n}}}"),
        timestamp: conduit::domain::time::now(),
        seq: Some(n as i64 + 1),
        cli_seq: None,
    }
}

fn line(session: &str, n: usize) -> WriteOp {
    WriteOp::Message(row(session, n))
}

async fn store_with_session(dir: &std::path::Path) -> Store {
    let store =
        Store::open_blocking(crate::support::database::test_database(&dir.join("w.db")), 2, 1000).await.expect("store");
    store
        .run(|conn| {
            conn.batch_execute(
                "INSERT INTO projects (id, name, folder_path, created_at, updated_at) VALUES ('p', 'p', '/p', 'now', 'now');
                 INSERT INTO sessions (id, project_id, name, status, created_at, last_active_at) VALUES ('s', 'p', 'n', 'idle', 'now', 'now');",
            )
            .map_err(StoreError::from)
        })
        .await
        .expect("seed");
    store
}

fn event(session: &str, seq: i64) -> WriteOp {
    WriteOp::Event(NewSessionEvent {
        session_id: session.to_string(),
        seq,
        kind: "assistant.delta".to_string(),
        name: "assistant_delta".to_string(),
        data: format!("{{\"n\":{seq}}}"),
        timestamp: conduit::domain::time::now(),
    })
}

async fn stored(store: &Store) -> Vec<messages::Message> {
    store.run(|conn: &mut DbConnection| messages::list(conn, "s", 100_000, 0)).await.expect("list")
}

async fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[actix_web::test]
async fn lines_are_stored_in_order_and_acks_mean_durable() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = store_with_session(dir.path()).await;
    let (writer, _thread) = Writer::start(store.clone());
    for n in 0..10_000 {
        writer.persist(line("s", n));
    }
    writer.persist_acked(line("s", 10_000)).await.expect("acked");
    let rows = stored(&store).await;
    assert_eq!(rows.len(), 10_001, "everything queued before the ack is stored");
    assert!(rows.iter().enumerate().all(|(i, r)| r.content == format!("{{\"n\":{i}}}")), "in order");
    assert_eq!(writer.stats.stored.load(Ordering::Relaxed), 10_001);
    assert_eq!(writer.stats.pending.load(Ordering::Relaxed), 0);
    assert_eq!(writer.stats.rejected.load(Ordering::Relaxed), 0);
}

#[actix_web::test]
async fn a_failing_database_loses_nothing_and_stays_degraded_until_the_backlog_is_written() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = store_with_session(dir.path()).await;
    let (writer, _thread) = Writer::start(store.clone());
    // Every insert now fails, as on a full disk.
    let (refuse, allow) = if crate::support::database::on_postgres() {
        (
            "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN \
             RAISE EXCEPTION 'database or disk is full' USING ERRCODE = 'disk_full'; END $$; \
             CREATE TRIGGER refuse BEFORE INSERT ON messages FOR EACH ROW EXECUTE FUNCTION refuse();",
            "DROP TRIGGER refuse ON messages",
        )
    } else {
        (
            "CREATE TRIGGER refuse BEFORE INSERT ON messages BEGIN SELECT RAISE(FAIL, 'database or disk is full'); END;",
            "DROP TRIGGER refuse",
        )
    };
    store.run(move |conn| conn.batch_execute(refuse).map_err(StoreError::from)).await.expect("trigger");
    let gate = Backlog::new(1 << 20);
    for n in 0..500 {
        writer.persist_charged(line("s", n), gate.charge(100));
    }
    wait_until("the writer notices the failure", || writer.is_failing()).await;
    // Someone who waits is answered at once (a 503 for a client), not after the disk returns.
    match writer.persist_acked(line("s", 9_999)).await {
        Err(WriteError::Failing(why)) => assert!(why.contains("disk is full"), "{why}"),
        other => panic!("expected Failing, got {other:?}"),
    }
    assert!(writer.flush().await.is_err(), "a flush fails fast too");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(writer.stats.pending.load(Ordering::Relaxed), 500, "every line waits; none is dropped");
    assert_eq!(gate.used(), 500 * 100, "the lines still hold their session's backlog");
    assert!(writer.stats.retries.load(Ordering::Relaxed) >= 1, "the batch is retried");
    assert!(stored(&store).await.is_empty());

    store.run(move |conn| conn.batch_execute(allow).map_err(StoreError::from)).await.expect("drop");
    wait_until("the backlog is written", || !writer.is_failing()).await;
    let rows = stored(&store).await;
    assert_eq!(rows.len(), 500, "everything that waited is stored");
    assert!(rows.iter().enumerate().all(|(i, r)| r.content == format!("{{\"n\":{i}}}")), "in order");
    assert_eq!(gate.used(), 0, "committed lines give their backlog back");
    assert_eq!(writer.stats.pending.load(Ordering::Relaxed), 0);
    writer.persist_acked(line("s", 500)).await.expect("acknowledged writes work again");
}

#[actix_web::test]
async fn a_row_refused_for_good_is_dropped_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = store_with_session(dir.path()).await;
    let (writer, _thread) = Writer::start(store.clone());
    writer.persist(line("s", 0));
    // A line of a session that does not exist (deleted meanwhile): a foreign key refusal.
    writer.persist(line("gone", 1));
    writer.persist(line("s", 2));
    let refused = writer.persist_acked(line("gone", 3)).await;
    assert!(matches!(refused, Err(WriteError::Rejected(_))), "{refused:?}");
    writer.flush().await.expect("flush");
    let rows = stored(&store).await;
    assert_eq!(rows.iter().map(|r| r.content.as_str()).collect::<Vec<_>>(), ["{\"n\":0}", "{\"n\":2}"]);
    assert_eq!(writer.stats.rejected.load(Ordering::Relaxed), 2);
    assert!(!writer.is_failing(), "a refused row is not a storage failure");
}

#[actix_web::test]
async fn a_user_turn_gets_its_id_and_its_delivery_is_recorded() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = store_with_session(dir.path()).await;
    let (writer, _thread) = Writer::start(store.clone());
    let id = writer.persist_returning_id(row("s", 0)).await.expect("stored");
    writer.persist(WriteOp::Delivered { message_id: id, at: Some("2026-11-22T00:00:00.000Z".into()) });
    writer.flush().await.expect("flush");
    let rows = stored(&store).await;
    assert_eq!(rows[0].id, id);
    assert_eq!(rows[0].delivered_at.as_deref(), Some("2026-11-22T00:00:00.000Z"));
}

/// On PostgreSQL a row's session is checked once per statement by a trigger, not by a foreign
/// key: the same refusals and the same cascade as SQLite's foreign keys, on both backends.
#[actix_web::test]
async fn deleting_a_session_takes_its_lines_and_events_and_rows_of_a_missing_session_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = store_with_session(dir.path()).await;
    store
        .run(|conn| {
            conn.batch_execute(
                "INSERT INTO sessions (id, project_id, name, status, created_at, last_active_at) VALUES ('t', 'p', 'n', 'idle', 'now', 'now');",
            )
            .map_err(StoreError::from)
        })
        .await
        .expect("a second session");
    let (writer, _thread) = Writer::start(store.clone());
    for n in 0..3 {
        for session in ["s", "t"] {
            writer.persist(line(session, n));
            writer.persist(event(session, 100 + n as i64));
        }
    }
    writer.flush().await.expect("flush");
    let counts = |store: Store| async move {
        store
            .run(|conn| {
                let mut count = |table: &str, session: &str| {
                    #[derive(diesel::QueryableByName)]
                    struct Count {
                        #[diesel(sql_type = diesel::sql_types::BigInt)]
                        n: i64,
                    }
                    let sql = format!("SELECT count(*) AS n FROM {table} WHERE session_id = '{session}'");
                    diesel::RunQueryDsl::get_result::<Count>(diesel::sql_query(sql), conn).map(|c| c.n)
                };
                Ok([
                    count("messages", "s")?,
                    count("session_events", "s")?,
                    count("messages", "t")?,
                    count("session_events", "t")?,
                ])
            })
            .await
            .expect("count")
    };
    assert_eq!(counts(store.clone()).await, [3, 3, 3, 3]);

    store
        .run(|conn| conn.batch_execute("DELETE FROM sessions WHERE id = 's'").map_err(StoreError::from))
        .await
        .expect("delete a session");
    assert_eq!(counts(store.clone()).await, [0, 0, 3, 3], "the deleted session's rows went with it, and only those");

    for op in [line("s", 9), event("s", 109)] {
        let refused = writer.persist_acked(op).await;
        assert!(matches!(refused, Err(WriteError::Rejected(_))), "{refused:?}");
    }
    writer.persist_acked(event("t", 109)).await.expect("the other session's event is taken");
    assert_eq!(counts(store).await, [0, 0, 3, 4]);
}
