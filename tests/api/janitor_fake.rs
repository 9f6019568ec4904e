//! The janitor against the fake CLI (examples/fake_cli.rs), for what the real CLI will not do on
//! demand: a background task that outlives its turn.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::service::{fake_cli, ServiceConfig, TestService};

const READY: Duration = Duration::from_secs(20);

#[actix_web::test]
async fn a_session_with_an_unfinished_background_task_is_not_idle() {
    let service = TestService::start(
        ServiceConfig::new(fake_cli())
            .env("CONDUIT_SESSION_IDLE_TIMEOUT_MS", "1000")
            .env("CONDUIT_JANITOR_INTERVAL_MS", "100"),
    );
    let project = service.project("tasks").await;
    let mut ids = Vec::new();
    for model in ["fake-background", "fake-plain"] {
        let session = service.launch(&project, json!({ "model": model })).await;
        let id = session["id"].as_str().expect("id").to_string();
        service.wait_status(&id, "idle", READY).await;
        let res = service.post(&format!("/api/sessions/{id}/message"), json!({"content": "work"})).await;
        assert_eq!(res.status().as_u16(), 202);
        ids.push(id);
    }
    let (background, plain) = (&ids[0], &ids[1]);
    service.wait_for(background, READY, |r| r["num_turns"] == 1).await;
    let turn_ended = Instant::now();

    let closed = service.wait_status(plain, "closed", Duration::from_secs(10)).await;
    assert_eq!(closed["closed_reason"], "idle_timeout", "the control case: {closed}");
    // Quiet for longer than the timeout, but its task runs until 4 s after the turn.
    let until = turn_ended + Duration::from_millis(3000);
    if let Some(wait) = until.checked_duration_since(Instant::now()) {
        tokio::time::sleep(wait).await;
    }
    let row = service.get_json(&format!("/api/sessions/{background}")).await;
    assert_eq!(row["status"], "idle", "kept while its background task runs: {row}");

    let closed = service.wait_status(background, "closed", Duration::from_secs(10)).await;
    assert_eq!(closed["closed_reason"], "idle_timeout");
    assert!(turn_ended.elapsed() >= Duration::from_millis(4900), "closed only a timeout after the task ended");
    let lines = service.get_json(&format!("/api/sessions/{background}/messages?limit=1000")).await;
    let subtypes: Vec<Value> = lines.as_array().expect("array").iter().map(|m| m["message_subtype"].clone()).collect();
    assert!(subtypes.contains(&json!("task_started")) && subtypes.contains(&json!("task_notification")));
}
