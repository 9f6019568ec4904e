//! Keepers against the fake CLI (examples/fake_cli.rs), for what the real one will not do on
//! demand: a flood through a crash with the keeper's buffer full (the CLI waits, nothing is
//! dropped), a keeper killed (its CLI goes with it; the session crashed, and resumes), the
//! `stop` mode (sessions end, and come back by themselves on their next message).

use std::time::Duration;

use serde_json::{json, Value};

use crate::keepers_real::all_lines;
use crate::support::procs::{alive, gone_within};
use crate::support::service::{fake_cli, ServiceConfig, TestService};

const READY: Duration = Duration::from_secs(30);

async fn idle(service: &TestService, project: &str, model: &str) -> (String, i64) {
    let session = service.launch(project, json!({ "model": model })).await;
    let id = session["id"].as_str().expect("id").to_string();
    let row = service.wait_status(&id, "idle", READY).await;
    (id, row["cli_pid"].as_i64().expect("pid"))
}

async fn say(service: &TestService, id: &str, content: &str) -> u16 {
    service.post(&format!("/api/sessions/{id}/message"), json!({ "content": content })).await.status().as_u16()
}

/// The numbers of the flood's lines (`t<i>`), in stored order.
fn flood(lines: &[Value]) -> Vec<u64> {
    lines
        .iter()
        .filter(|l| l["message_type"] == "stream_event")
        .filter_map(|l| {
            let raw: Value = serde_json::from_str(l["content"].as_str()?).ok()?;
            raw.pointer("/event/delta/text")?.as_str()?.strip_prefix('t')?.parse().ok()
        })
        .collect()
}

fn keeper_of(cli: i32) -> i32 {
    let stat = std::fs::read_to_string(format!("/proc/{cli}/stat")).expect("the CLI runs");
    let after = &stat[stat.rfind(')').expect("a stat line") + 2..];
    after.split_whitespace().nth(1).and_then(|p| p.parse().ok()).expect("a parent")
}

#[actix_web::test]
async fn a_flood_through_a_crash_with_a_full_keeper_arrives_whole_and_in_order() {
    // 64 KiB of keeper buffer: the flood fills it (and the pipe behind it) while the service
    // is away, and the CLI waits.
    let config = || ServiceConfig::new(fake_cli()).env("CONDUIT_KEEPER_BUFFER_BYTES", "65536");
    let mut service = TestService::start(config());
    let project = service.project("flood").await;
    let (id, pid) = idle(&service, &project, "fake-rate-2000-6000").await;
    assert_eq!(say(&service, &id, "flood").await, 202);
    tokio::time::sleep(Duration::from_millis(700)).await;
    service.crash();
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(alive(pid as i32), "the CLI outlives the crash");

    let service = TestService::start_in(service.into_dir(), config());
    let row = service.wait_for(&id, READY, |r| r["num_turns"] == 1 && r["status"] == "idle").await;
    assert_eq!(row["cli_pid"].as_i64(), Some(pid), "{row}");
    let numbers = flood(&all_lines(&service, &id).await);
    assert_eq!(numbers, (0..6000).collect::<Vec<u64>>(), "every line once, in order ({} stored)", numbers.len());
}

#[actix_web::test]
async fn a_keeper_killed_takes_its_cli_with_it_and_the_session_resumes_on_its_next_message() {
    let service = TestService::start(ServiceConfig::new(fake_cli()));
    let project = service.project("lost").await;
    let (id, pid) = idle(&service, &project, "fake-default").await;
    assert_eq!(say(&service, &id, "one").await, 202);
    service.wait_for(&id, READY, |r| r["num_turns"] == 1 && r["status"] == "idle").await;

    let keeper = keeper_of(pid as i32);
    assert_ne!(keeper, service.pid(), "the CLI's parent is its keeper, not the service");
    // SAFETY: SIGKILL to the keeper this test's session runs under.
    unsafe { libc::kill(keeper, libc::SIGKILL) };
    let row = service.wait_status(&id, "error", READY).await;
    assert_eq!(row["closed_reason"], "crashed", "{row}");
    assert!(gone_within(pid as i32, Duration::from_secs(5)).await, "the CLI went with its keeper");

    assert_eq!(say(&service, &id, "two").await, 202, "a crashed session resumes by itself");
    let row = service.wait_for(&id, READY, |r| r["num_turns"] == 2 && r["status"] == "idle").await;
    assert_ne!(row["cli_pid"].as_i64(), Some(pid), "a new CLI: {row}");
}

#[actix_web::test]
async fn in_stop_mode_a_restart_ends_sessions_and_their_next_message_resumes_them() {
    let config = || ServiceConfig::new(fake_cli()).env("CONDUIT_ON_SHUTDOWN", "stop");
    let mut service = TestService::start(config());
    let project = service.project("stopped").await;
    let (id, pid) = idle(&service, &project, "fake-default").await;
    assert_eq!(say(&service, &id, "one").await, 202);
    service.wait_for(&id, READY, |r| r["num_turns"] == 1 && r["status"] == "idle").await;
    let (_, status) = service.terminate();
    assert!(status.success(), "{status:?}");
    assert!(!alive(pid as i32), "stop mode ends the CLI");

    let service = TestService::start_in(service.into_dir(), config());
    let row = service.get_json(&format!("/api/sessions/{id}")).await;
    assert_eq!((row["status"].as_str(), row["closed_reason"].as_str()), (Some("closed"), Some("shutdown")), "{row}");
    assert_eq!(say(&service, &id, "two").await, 202, "not a 409: it resumes by itself");
    let row = service.wait_for(&id, READY, |r| r["num_turns"] == 2 && r["status"] == "idle").await;
    assert_ne!(row["cli_pid"].as_i64(), Some(pid), "{row}");
}

#[actix_web::test]
async fn a_cli_that_ended_while_the_service_was_away_is_recorded_as_ended() {
    let mut service = TestService::start(ServiceConfig::new(fake_cli()));
    let project = service.project("gone").await;
    let (id, pid) = idle(&service, &project, "fake-exit-mid-turn").await;
    let (_, status) = service.terminate();
    assert!(status.success(), "{status:?}");
    assert!(alive(pid as i32), "left running");
    // SAFETY: a polite end to the test's own CLI, while no service is attached.
    unsafe { libc::kill(pid as i32, libc::SIGTERM) };
    assert!(gone_within(pid as i32, Duration::from_secs(5)).await);

    let service = TestService::start_in(service.into_dir(), ServiceConfig::new(fake_cli()));
    let row = service.wait_status(&id, "error", READY).await;
    assert_eq!(row["closed_reason"], "cli_exited", "its keeper told the end: {row}");
}
