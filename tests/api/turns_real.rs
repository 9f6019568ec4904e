//! The work-in-progress limit with the real Claude Code CLI and the fake Messages API: a
//! project that may run two turns at once holds a third back, first in line, until one of the
//! two ends; the line is visible in the API and on the waiting session's stream.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use crate::changes::read_until;
use crate::support::fake_api::{FakeApi, Reply};
use crate::support::service::{real_cli, ServiceConfig, TestService};

const READY: Duration = Duration::from_secs(60);

fn time(v: &Value) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(v.as_str().expect("a time")).expect("RFC 3339").with_timezone(&Utc)
}

async fn lines(service: &TestService, id: &str) -> Vec<Value> {
    let all = service.get_json(&format!("/api/sessions/{id}/messages?limit=1000&partial=false")).await;
    all.as_array().expect("lines").clone()
}

/// When session `id`'s turn was written to its CLI.
async fn delivered_at(service: &TestService, id: &str) -> DateTime<Utc> {
    let lines = lines(service, id).await;
    let turn = lines.iter().find(|m| m["direction"] == "to_cli" && m["message_type"] == "user").expect("the turn");
    time(&turn["delivered_at"])
}

/// When session `id`'s turn's result was read.
async fn result_at(service: &TestService, id: &str) -> DateTime<Utc> {
    let lines = lines(service, id).await;
    time(&lines.iter().find(|m| m["message_type"] == "result").expect("the result")["timestamp"])
}

#[actix_web::test]
async fn a_third_concurrent_turn_waits_until_one_of_two_finishes() {
    let api = FakeApi::start().await;
    let service = TestService::start(ServiceConfig::new(real_cli()).api(&api.base_url));
    let project = service.project("wip").await;
    let res = reqwest::Client::new()
        .put(service.url(&format!("/api/projects/{project}")))
        .json(&json!({"max_running_turns": 2}))
        .send()
        .await
        .expect("put");
    assert_eq!(res.status().as_u16(), 200);
    assert_eq!(res.json::<Value>().await.expect("json")["max_running_turns"], 2);
    let mut ids = Vec::new();
    for _ in 0..3 {
        ids.push(service.launch(&project, json!({})).await["id"].as_str().expect("id").to_string());
    }
    for id in &ids {
        service.wait_status(id, "idle", READY).await;
    }

    let slow = |text: &str, chunks| Reply::Slow { text: text.into(), chunks, delay: Duration::from_millis(100) };
    api.on("the first long task", slow("first done", 40));
    api.on("the second long task", slow("second done", 150));
    api.on("the third task", Reply::Text("third done".into()));
    for (id, content) in ids.iter().zip(["the first long task", "the second long task", "the third task"]) {
        let res = service.post(&format!("/api/sessions/{id}/message"), json!({ "content": content })).await;
        assert_eq!(res.status().as_u16(), 202);
    }

    // Two run, the third waits first in line, and its session has not started it.
    let line = service.get_json(&format!("/api/projects/{project}/turns")).await;
    assert_eq!(line["max_running_turns"], 2, "{line}");
    let running: Vec<&str> =
        line["running"].as_array().expect("running").iter().filter_map(|s| s["session_id"].as_str()).collect();
    assert_eq!(running, [ids[0].as_str(), ids[1].as_str()], "{line}");
    assert_eq!(
        line["waiting"],
        json!([{"session_id": ids[2], "position": 1, "since": line["waiting"][0]["since"]}]),
        "{line}"
    );
    assert_eq!(service.get_json(&format!("/api/sessions/{}", ids[2])).await["status"], "idle");

    // It runs once the first ends, while the second still runs.
    service.wait_for(&ids[2], READY, |r| r["num_turns"] == 1 && r["status"] == "idle").await;
    let third_sent = delivered_at(&service, &ids[2]).await;
    assert!(third_sent >= result_at(&service, &ids[0]).await, "not before the first ended");
    service.wait_for(&ids[1], READY, |r| r["num_turns"] == 1 && r["status"] == "idle").await;
    assert!(third_sent < result_at(&service, &ids[1]).await, "not after the second ended: it took the first's slot");
    let line = service.get_json(&format!("/api/projects/{project}/turns")).await;
    assert_eq!(
        (line["running"].as_array().map(Vec::len), line["waiting"].as_array().map(Vec::len)),
        (Some(0), Some(0)),
        "{line}"
    );

    // The wait was on the third session's stream.
    let mut stream = reqwest::Client::new()
        .get(service.url(&format!("/api/sessions/{}/stream", ids[2])))
        .header("Last-Event-ID", "0")
        .send()
        .await
        .expect("stream");
    let frames = read_until(&mut stream, &["session.turn_waiting"]).await;
    let waiting = frames.iter().find(|f| f["type"] == "session.turn_waiting").expect("turn_waiting");
    assert_eq!(waiting["data"]["position"], 1, "{waiting}");

    // A bad limit is refused.
    let res = reqwest::Client::new()
        .put(service.url(&format!("/api/projects/{project}")))
        .json(&json!({"max_running_turns": 0}))
        .send()
        .await
        .expect("put");
    assert_eq!(res.status().as_u16(), 422);
}
