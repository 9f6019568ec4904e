//! The turn watchdog against the fake CLI (examples/fake_cli.rs): a turn that goes silent is
//! stalled, told, ended and resumed by the next message; a turn that prints as it works is not.

use std::time::Duration;

use serde_json::{json, Value};

use crate::changes::read_until;
use crate::support::service::{fake_cli, ServiceConfig, TestService};

const READY: Duration = Duration::from_secs(20);

async fn project_with_timeout(service: &TestService, name: &str, ms: i64) -> String {
    let project = service.project(name).await;
    let res = service
        .client
        .put(service.url(&format!("/api/projects/{project}")))
        .json(&json!({"turn_inactivity_timeout_ms": ms}))
        .send()
        .await
        .expect("put");
    assert_eq!(res.status().as_u16(), 200);
    let row: Value = res.json().await.expect("project");
    assert_eq!(row["turn_inactivity_timeout_ms"], ms);
    project
}

async fn idle_session(service: &TestService, project: &str, model: &str) -> String {
    let session = service.launch(project, json!({ "model": model })).await;
    let id = session["id"].as_str().expect("id").to_string();
    service.wait_status(&id, "idle", READY).await;
    id
}

async fn say(service: &TestService, id: &str, content: &str) -> u16 {
    service.post(&format!("/api/sessions/{id}/message"), json!({ "content": content })).await.status().as_u16()
}

#[actix_web::test]
async fn a_silent_turn_is_stalled_told_ended_and_resumed_by_the_next_message() {
    // The global setting is off: the project's own value is what stalls the turn.
    let service = TestService::start(ServiceConfig::new(fake_cli()).env("CONDUIT_TURN_INACTIVITY_TIMEOUT_MS", "0"));
    let project = project_with_timeout(&service, "stalls", 1000).await;
    let id = idle_session(&service, &project, "fake-stall-later").await;
    assert_eq!(say(&service, &id, "first, answered").await, 202);
    let first = service.wait_for(&id, READY, |r| r["num_turns"] == 1 && r["status"] == "idle").await;

    let mut events = service.get("/api/events/stream").await;
    assert_eq!(events.status().as_u16(), 200);
    assert_eq!(say(&service, &id, "second, never answered").await, 202);
    let frames = read_until(&mut events, &["session.stalled", "session.closed"]).await;
    let stalled = frames.iter().find(|f| f["type"] == "session.stalled").expect("stalled");
    assert_eq!(stalled["data"]["turn_inactivity_timeout_ms"], 1000, "{stalled}");
    assert!(stalled["data"]["quiet_ms"].as_u64().is_some_and(|ms| ms >= 1000), "{stalled}");
    let row = service.wait_status(&id, "closed", READY).await;
    assert_eq!(row["closed_reason"], "stalled", "{row}");
    let lines = service.get_json(&format!("/api/sessions/{id}/messages?limit=1000")).await;
    let interrupted = lines
        .as_array()
        .expect("lines")
        .iter()
        .any(|l| l["direction"] == "to_cli" && l["message_subtype"] == "interrupt");
    assert!(interrupted, "the CLI was asked to interrupt before it was stopped: {lines}");

    // A message resumes it (a new CLI, which answers its first turn), same conversation.
    assert_eq!(say(&service, &id, "third, after the stall").await, 202);
    let after = service.wait_for(&id, READY, |r| r["num_turns"] == 2 && r["status"] == "idle").await;
    assert_eq!(after["closed_reason"], Value::Null, "{after}");
    assert_ne!(after["cli_pid"], first["cli_pid"], "a new CLI");
}

#[actix_web::test]
async fn a_turn_that_prints_as_it_works_is_never_stalled() {
    let service = TestService::start(ServiceConfig::new(fake_cli()).env("CONDUIT_TURN_INACTIVITY_TIMEOUT_MS", "1000"));
    let project = service.project("prints").await;
    // 40 lines at 10 a second: a 4 s turn, never quiet for 1 s.
    let id = idle_session(&service, &project, "fake-rate-10-40").await;
    assert_eq!(say(&service, &id, "work for a while").await, 202);
    let row = service.wait_for(&id, READY, |r| r["num_turns"] == 1 || r["closed_reason"] != Value::Null).await;
    assert_eq!((row["status"].as_str(), row["closed_reason"].as_str()), (Some("idle"), None), "{row}");
}

#[actix_web::test]
async fn a_timeout_out_of_range_is_refused_on_the_project() {
    let service = TestService::start(ServiceConfig::new(fake_cli()));
    let project = service.project("bad-timeout").await;
    for bad in [json!(50), json!(-1), json!("soon")] {
        let res = service
            .client
            .put(service.url(&format!("/api/projects/{project}")))
            .json(&json!({"turn_inactivity_timeout_ms": bad}))
            .send()
            .await
            .expect("put");
        assert_eq!(res.status().as_u16(), 422, "{bad}");
        let body: Value = res.json().await.expect("json");
        // A value of the wrong type is refused by the body's reader (which says what it got);
        // a number out of range by the field's own check, which names it.
        let named = body["error"]["message"].as_str().is_some_and(|m| m.contains("turn_inactivity_timeout_ms"));
        assert!(named || !bad.is_number(), "{body}");
    }
}
