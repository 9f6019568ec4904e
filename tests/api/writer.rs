//! The write-behind writer: batches commit in order, acknowledged writes are durable, and a
//! failing database is counted and reported instead of crashing anything.

use std::sync::atomic::Ordering;

use conduit::db::messages::{self, NewMessage};
use conduit::db::writer::{WriteOp, Writer};
use conduit::db::{DbConnection, Store, StoreError};
use diesel::connection::SimpleConnection;

fn line(session: &str, n: usize) -> WriteOp {
    WriteOp::Message(NewMessage {
        session_id: session.to_string(),
        direction: "from_cli",
        message_type: "stream_event".to_string(),
        message_subtype: None,
        content: format!("{{\"n\":{n}}}"),
        timestamp: conduit::domain::time::now(),
    })
}

async fn store_with_session(dir: &std::path::Path) -> Store {
    let store = Store::open_blocking(&dir.join("w.db"), 2, 1000).await.expect("store");
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

#[actix_web::test]
async fn lines_are_stored_in_order_and_acks_mean_durable() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = store_with_session(dir.path()).await;
    let (writer, _thread) = Writer::start(store.clone());
    for n in 0..10_000 {
        writer.persist(line("s", n));
    }
    writer.persist_acked(line("s", 10_000)).await.expect("acked");
    let rows = store.run(|conn: &mut DbConnection| messages::list(conn, "s", 20_000, 0)).await.expect("list");
    assert_eq!(rows.len(), 10_001, "everything queued before the ack is stored");
    assert!(rows.iter().enumerate().all(|(i, r)| r.content == format!("{{\"n\":{i}}}")), "in order");
    assert_eq!(writer.stats.stored.load(Ordering::Relaxed), 10_001);
    assert_eq!(writer.stats.unstored.load(Ordering::Relaxed), 0);
}

#[actix_web::test]
async fn a_failing_database_is_counted_not_fatal() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = store_with_session(dir.path()).await;
    let (writer, _thread) = Writer::start(store.clone());
    // Every insert now fails (as on a full disk): the writer must count, report and go on.
    store
        .run(|conn| {
            conn.batch_execute(
                "CREATE TRIGGER refuse BEFORE INSERT ON messages BEGIN SELECT RAISE(FAIL, 'disk full'); END;",
            )
            .map_err(StoreError::from)
        })
        .await
        .expect("trigger");
    for n in 0..5 {
        writer.persist(line("s", n));
    }
    assert!(writer.persist_acked(line("s", 5)).await.is_err(), "an acknowledged write reports the failure");
    assert_eq!(writer.stats.unstored.load(Ordering::Relaxed), 6);
    assert!(writer.stats.failing.load(Ordering::Relaxed));

    store.run(|conn| conn.batch_execute("DROP TRIGGER refuse").map_err(StoreError::from)).await.expect("drop");
    writer.persist_acked(line("s", 6)).await.expect("recovers");
    assert!(!writer.stats.failing.load(Ordering::Relaxed), "health recovers once writes succeed");
}
