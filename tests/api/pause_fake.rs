//! Pausing a session freezes its cgroup: a turn that was streaming stops where it is, a message
//! sent meanwhile waits, unpausing goes on from there; a pause outlasts a restart; the janitor
//! leaves a paused session alone for the idle timeout, counted from the pause.

use std::time::Duration;

use serde_json::{json, Value};

use crate::keepers_real::all_lines;
use crate::support::service::{fake_cli, ServiceConfig, TestService};

const READY: Duration = Duration::from_secs(30);

async fn stream_lines(service: &TestService, id: &str) -> usize {
    all_lines(service, id).await.iter().filter(|l| l["message_type"] == "stream_event").count()
}

async fn act(service: &TestService, id: &str, what: &str) -> (u16, Value) {
    let res = service.post(&format!("/api/sessions/{id}/{what}"), json!({})).await;
    let status = res.status().as_u16();
    (status, res.json().await.expect("json"))
}

#[actix_web::test]
async fn a_paused_session_runs_nothing_queues_messages_and_goes_on_when_unpaused_even_after_a_restart() {
    let config = || ServiceConfig::new(fake_cli()).env("CONDUIT_TURN_INACTIVITY_TIMEOUT_MS", "1000");
    let mut service = TestService::start(config());
    let project = service.project("paused").await;
    // 120 lines at 40 a second: a 3 s turn.
    let session = service.launch(&project, json!({"model": "fake-rate-40-120"})).await;
    let id = session["id"].as_str().expect("id").to_string();
    service.wait_status(&id, "idle", READY).await;
    let res = service.post(&format!("/api/sessions/{id}/message"), json!({"content": "stream"})).await;
    assert_eq!(res.status().as_u16(), 202);
    while stream_lines(&service, &id).await < 10 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let (status, row) = act(&service, &id, "pause").await;
    assert_eq!(status, 200, "{row}");
    assert_eq!((row["status"].as_str(), row["status_reason"].as_str()), (Some("paused"), Some("paused on request")));
    assert_eq!(act(&service, &id, "pause").await.0, 409, "paused already");
    let res = service.post(&format!("/api/sessions/{id}/message"), json!({"content": "after the pause"})).await;
    assert_eq!(res.status().as_u16(), 202);
    let queued: Value = res.json().await.expect("json");
    assert_eq!(queued["queued"], true, "{queued}");
    // Frozen: nothing more is written, and the watchdog (1 s) does not call it stalled.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = stream_lines(&service, &id).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(stream_lines(&service, &id).await, before, "nothing ran while paused");
    assert!(before < 120, "paused mid-turn ({before} lines)");

    // A restart keeps it paused (its keeper and frozen cgroup wait).
    let (_, stopped) = service.terminate();
    assert!(stopped.success());
    let service = TestService::start_in(service.into_dir(), config());
    let row = service.get_json(&format!("/api/sessions/{id}")).await;
    assert_eq!(row["status"], "paused", "{row}");

    let (status, row) = act(&service, &id, "unpause").await;
    assert_eq!(status, 200, "{row}");
    assert_eq!(row["status"], "active", "the turn goes on: {row}");
    let row = service.wait_for(&id, READY, |r| r["num_turns"] == 2 && r["status"] == "idle").await;
    assert!(row["status_reason"].is_null(), "{row}");
    assert_eq!(stream_lines(&service, &id).await, 240, "both turns whole");
    assert_eq!(act(&service, &id, "unpause").await.0, 409, "not paused");
}

#[actix_web::test]
async fn the_janitor_closes_a_paused_session_only_after_the_idle_timeout_from_the_pause() {
    let service = TestService::start(
        ServiceConfig::new(fake_cli())
            .env("CONDUIT_SESSION_IDLE_TIMEOUT_MS", "2000")
            .env("CONDUIT_JANITOR_INTERVAL_MS", "100"),
    );
    let project = service.project("janitor").await;
    let session = service.launch(&project, json!({"model": "fake-stall"})).await;
    let id = session["id"].as_str().expect("id").to_string();
    service.wait_status(&id, "idle", READY).await;
    // A turn that never ends: busy, so never idle, until it is paused for the timeout.
    let res = service.post(&format!("/api/sessions/{id}/message"), json!({"content": "hang"})).await;
    assert_eq!(res.status().as_u16(), 202);
    service.wait_status(&id, "active", READY).await;
    assert_eq!(act(&service, &id, "pause").await.0, 200);
    let paused_at = std::time::Instant::now();
    let row = service.wait_for(&id, READY, |r| r["status"] == "closed").await;
    assert!(paused_at.elapsed() >= Duration::from_millis(1900), "closed {:?} after the pause", paused_at.elapsed());
    assert_eq!(row["closed_reason"], "idle_timeout", "{row}");
}

#[actix_web::test]
async fn pausing_what_cannot_be_paused_is_refused_with_its_reason() {
    let service = TestService::start(ServiceConfig::new(fake_cli()));
    let missing = "6f1c2a9e-1d3b-4c5a-8e7f-0a1b2c3d4e5f";
    assert_eq!(act(&service, missing, "pause").await.0, 404);
    assert_eq!(act(&service, "not-a-uuid", "pause").await.0, 404);
    let project = service.project("refused").await;
    let session = service.launch(&project, json!({})).await;
    let id = session["id"].as_str().expect("id").to_string();
    service.wait_status(&id, "idle", READY).await;
    service.delete(&format!("/api/sessions/{id}")).await;
    let (status, body) = act(&service, &id, "pause").await;
    assert_eq!((status, body["error"]["code"].as_str()), (409, Some("session_not_live")), "{body}");
}
