//! Sessions end to end through the REST API, against the real Claude Code CLI (2.1.330) talking
//! to the fake Messages API.

use std::time::Duration;

use serde_json::{json, Value};

use crate::support::fake_api::{FakeApi, Reply};
use crate::support::service::{real_cli, ServiceConfig, TestService};

const READY: Duration = Duration::from_secs(60);

async fn rig() -> (FakeApi, TestService) {
    let api = FakeApi::start().await;
    let service = TestService::start(ServiceConfig::new(real_cli()).api(&api.base_url));
    (api, service)
}

fn messages_of(rows: &Value, kind: &str) -> Vec<Value> {
    rows.as_array().expect("array").iter().filter(|m| m["message_type"] == kind).cloned().collect()
}

#[actix_web::test]
async fn launch_reaches_idle_and_two_turns_set_totals() {
    let (api, service) = rig().await;
    let project = service.project("alpha").await;
    let session = service.launch(&project, json!({})).await;
    assert_eq!(session["status"], "starting");
    assert_eq!(session["transport"], "stdio");
    let name = session["name"].as_str().expect("name");
    assert_eq!(name.split(' ').count(), 2, "a friendly two-word name: {name}");
    let id = session["id"].as_str().expect("id").to_string();

    let idle = service.wait_status(&id, "idle", READY).await;
    assert!(idle["cli_pid"].as_i64().is_some());

    api.on("first question", Reply::Text("first answer".into()));
    let res = service.post(&format!("/api/sessions/{id}/message"), json!({"content": "first question"})).await;
    assert_eq!(res.status().as_u16(), 202);
    let after_one = service.wait_for(&id, READY, |r| r["num_turns"] == 1 && r["status"] == "idle").await;
    assert_eq!(after_one["session_id"].as_str().map(str::len), Some(36), "the CLI's session id: {after_one}");

    api.on("second question", Reply::Text("second answer".into()));
    service.post(&format!("/api/sessions/{id}/message"), json!({"content": "second question"})).await;
    let after_two = service.wait_for(&id, READY, |r| r["num_turns"] == 2 && r["status"] == "idle").await;

    let lines = service.get_json(&format!("/api/sessions/{id}/messages?limit=1000")).await;
    let results = messages_of(&lines, "result");
    assert_eq!(results.len(), 2);
    let last: Value = serde_json::from_str(results[1]["content"].as_str().expect("content")).expect("raw line");
    let cost = last["total_cost_usd"].as_f64().expect("cost");
    assert!(
        (after_two["total_cost_usd"].as_f64().expect("total") - cost).abs() < 1e-12,
        "set from the last result, not summed"
    );
    assert!(after_two["total_cost_usd"].as_f64() > after_one["total_cost_usd"].as_f64());
    // The fake API charges 10 input and 5 output tokens a call; `usage` in each result is the
    // turn's, the totals are the conversation's.
    assert_eq!(
        (after_one["total_input_tokens"].as_i64(), after_one["total_output_tokens"].as_i64()),
        (Some(10), Some(5))
    );
    assert_eq!(
        (after_two["total_input_tokens"].as_i64(), after_two["total_output_tokens"].as_i64()),
        (Some(20), Some(10))
    );
    assert!(
        api.requests().iter().any(|r| r.contains("second question") && r.contains("first answer")),
        "the conversation continued"
    );

    let closed = service.delete(&format!("/api/sessions/{id}")).await;
    assert_eq!(closed.status().as_u16(), 200);
    let closed: Value = closed.json().await.expect("json");
    assert_eq!(closed["status"], "closed", "{closed}");
    assert!(closed["closed_at"].is_string());
}
