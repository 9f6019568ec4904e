//! Nothing lost on the way to storage: a flood slows its own CLI instead of dropping lines (and
//! never refuses another session's message), and a full or read-only disk keeps what waits,
//! retries it, says so in health and answers 503, until space returns and everything is stored.

use std::path::Path;
use std::time::{Duration, Instant};

use diesel::prelude::*;
use serde_json::{json, Value};

use crate::support::service::{fake_cli, ServiceConfig, TestService};

const READY: Duration = Duration::from_secs(60);

fn id_of(session: &Value) -> String {
    session["id"].as_str().expect("the session has an id").to_string()
}

/// Stored lines of `message_type` per session, read straight from the database.
fn stored_per_session(db: &Path, message_type: &str) -> std::collections::HashMap<String, i64> {
    use conduit::db::schema::messages;
    let mut conn = crate::support::database::connect(db);
    messages::table
        .filter(messages::message_type.eq(message_type))
        .group_by(messages::session_id)
        .select((messages::session_id, diesel::dsl::count_star()))
        .load::<(String, i64)>(&mut conn)
        .expect("count")
        .into_iter()
        .collect()
}

async fn idle(service: &TestService, project: &str, model: &str) -> String {
    let session = service.launch(project, json!({ "model": model })).await;
    let id = id_of(&session);
    service.wait_status(&id, "idle", READY).await;
    id
}

#[actix_web::test]
async fn ten_floods_of_300000_lines_store_every_line_and_a_quiet_session_is_answered_throughout() {
    let service = TestService::start(ServiceConfig::new(fake_cli()));
    let project = service.project("flood").await;
    let res = service
        .client
        .put(service.url(&format!("/api/projects/{project}")))
        .json(&json!({"max_sessions": 11}))
        .send()
        .await
        .expect("put");
    assert_eq!(res.status().as_u16(), 200);
    let mut floods = Vec::new();
    for _ in 0..10 {
        floods.push(idle(&service, &project, "fake-flood-300000").await);
    }
    let quiet = idle(&service, &project, "fake-default").await;
    for id in &floods {
        let res = service.post(&format!("/api/sessions/{id}/message"), json!({"content": "flood"})).await;
        assert_eq!(res.status().as_u16(), 202);
    }
    // While the floods run, the quiet session takes a turn at a time and is never refused.
    let deadline = Instant::now() + Duration::from_secs(600);
    let mut quiet_turns = 0;
    loop {
        let res = service.post(&format!("/api/sessions/{quiet}/message"), json!({"content": "hello"})).await;
        assert_eq!(
            res.status().as_u16(),
            202,
            "a quiet session's message during the flood: {}",
            res.text().await.unwrap_or_default()
        );
        quiet_turns += 1;
        service.wait_for(&quiet, READY, |r| r["num_turns"] == quiet_turns && r["status"] == "idle").await;
        let mut done = 0;
        for id in &floods {
            let row = service.get_json(&format!("/api/sessions/{id}")).await;
            assert_ne!(row["status"], "error", "{row}");
            if row["num_turns"] == 1 && row["status"] == "idle" {
                done += 1;
            }
        }
        if done == floods.len() {
            break;
        }
        assert!(Instant::now() < deadline, "the floods did not finish\n{}", service.log());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // The result is the flood's last line: once it is relayed, everything before it was read.
    let health = service.get_json("/api/health").await;
    service.get_json(&format!("/api/sessions/{quiet}/messages?limit=1")).await; // a read flushes the writer
    let counts = stored_per_session(&service.dir.path().join("data/conduit.db"), "stream_event");
    for id in &floods {
        assert_eq!(counts.get(id).copied(), Some(300_000), "every line of {id} is stored");
    }
    assert_eq!(health["checks"]["rejected_writes"], 0, "{health}");
    assert!(quiet_turns >= 1);
    assert!(!service.log().contains("write queue is full"));
}

/// A tmpfs of `mib` MiB mounted on `dir` for the test's life (a real full disk, without filling
/// the machine's).
struct SmallDisk {
    dir: std::path::PathBuf,
}

impl SmallDisk {
    fn mount(dir: &Path, mib: u32) -> Option<SmallDisk> {
        std::fs::create_dir_all(dir).expect("mount point");
        let status = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={mib}m"), "tmpfs"])
            .arg(dir)
            .status()
            .ok()?;
        status.success().then(|| SmallDisk { dir: dir.to_path_buf() })
    }

    /// Fills the disk to the last byte.
    fn fill(&self) {
        let filler = self.dir.join("filler");
        let _ = std::process::Command::new("dd")
            .args(["if=/dev/zero", "bs=1M"])
            .arg(format!("of={}", filler.display()))
            .stderr(std::process::Stdio::null())
            .status();
    }

    fn free(&self) {
        std::fs::remove_file(self.dir.join("filler")).expect("remove the filler");
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg("-l").arg(&self.dir).status();
    }
}

/// A service whose database lives on a small disk of its own (needs root, as CI has).
fn service_on_small_disk() -> Option<(TestService, SmallDisk)> {
    if crate::support::database::on_postgres() {
        eprintln!("SKIPPED on PostgreSQL: a full disk under the SQLite file (PostgreSQL's disk is its server's)");
        return None;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let Some(disk) = SmallDisk::mount(&dir.path().join("data"), 64) else {
        eprintln!("SKIPPED: cannot mount a tmpfs here (not root?); the full-disk tests need it");
        return None;
    };
    Some((TestService::start_in(dir, ServiceConfig::new(fake_cli())), disk))
}

async fn health_until(service: &TestService, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let health = service.get_json("/api/health").await;
        if done(&health) {
            return health;
        }
        assert!(Instant::now() < deadline, "health never showed {what}: {health}\n{}", service.log());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[actix_web::test]
async fn a_full_disk_loses_nothing_acknowledged_and_health_is_degraded_until_the_backlog_is_written() {
    let Some((service, disk)) = service_on_small_disk() else { return };
    let project = service.project("full").await;
    let talker = idle(&service, &project, "fake-default").await;
    let writer = idle(&service, &project, "fake-rate-2000-20000").await;
    let res = service.post(&format!("/api/sessions/{writer}/message"), json!({"content": "write"})).await;
    assert_eq!(res.status().as_u16(), 202);
    tokio::time::sleep(Duration::from_millis(500)).await;

    disk.fill();
    let health = health_until(&service, "failing storage", |h| h["checks"]["storage_writable"] == false).await;
    assert_eq!(health["status"], "degraded", "{health}");
    assert!(health["checks"]["storage_error"].as_str().is_some_and(|e| e.contains("full")), "{health}");
    // Requests that need a write answer 503, never 500, and never hang.
    let res = service.post(&format!("/api/sessions/{talker}/message"), json!({"content": "refused"})).await;
    assert_eq!(res.status().as_u16(), 503);
    let body: Value = res.json().await.expect("json");
    assert_eq!(body["error"]["code"], "storage_unavailable", "{body}");
    // Other writes go straight to the database: when SQLite cannot grow its files they fail,
    // and that is a 503 too (a WAL with room left may still take a small one).
    std::fs::create_dir_all(service.root.join("full-2")).expect("folder");
    for (path, body) in [
        ("/api/projects".to_string(), json!({"name": "more", "folder_path": "full-2"})),
        (format!("/api/projects/{project}/sessions"), json!({})),
    ] {
        let res = service.post(&path, body).await;
        let status = res.status().as_u16();
        let body: Value = res.json().await.expect("json");
        assert!(
            status == 201 || (status == 503 && body["error"]["code"] == "storage_unavailable"),
            "{path}: {status} {body}"
        );
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let waiting = service.get_json("/api/health").await;
    assert_eq!(waiting["status"], "degraded", "still degraded while lines wait: {waiting}");
    let db = disk.dir.join("conduit.db");
    let before_free = stored_per_session(&db, "stream_event").get(&writer).copied().unwrap_or(0);
    let pending = waiting["checks"]["unstored_lines"].as_i64().expect("unstored_lines");
    assert!(pending > 0, "lines wait for the disk: {waiting}");

    disk.free();
    health_until(&service, "recovered storage", |h| h["status"] == "healthy").await;
    let after = stored_per_session(&db, "stream_event").get(&writer).copied().unwrap_or(0);
    assert!(
        after >= before_free + pending,
        "healthy only once what waited is written: {after} < {before_free} + {pending}"
    );
    service.wait_for(&writer, READY, |r| r["num_turns"] == 1 && r["status"] == "idle").await;
    let res = service.post(&format!("/api/sessions/{talker}/message"), json!({"content": "accepted"})).await;
    assert_eq!(res.status().as_u16(), 202);
    service.wait_for(&talker, READY, |r| r["num_turns"] == 1).await;
    service.get_json(&format!("/api/sessions/{talker}/messages?limit=1")).await;

    let counts = stored_per_session(&db, "stream_event");
    assert_eq!(counts.get(&writer).copied(), Some(20_000), "every line the CLI wrote is stored");
    let users = stored_per_session(&db, "user");
    assert_eq!(users.get(&talker).copied(), Some(1), "the refused message was not stored, the accepted one was");
    assert!(service.log().matches("storage is failing").count() < 100, "one summary line per second at most");
}
