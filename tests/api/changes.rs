//! What the global event stream tells besides CLI lines: changes to projects, rules, scheduled
//! agents and webhooks with their rows, user turns, each session event's own number, and its
//! own end when the service stops: what a dashboard needs to follow everything without polling.

use std::time::Duration;

use serde_json::{json, Value};
use tokio::time::Instant;

use crate::support::service::{fake_cli, ServiceConfig, TestService};

/// The `data:` frames of an SSE body read so far.
pub(crate) fn frames(text: &str) -> Vec<Value> {
    text.lines().filter_map(|l| l.strip_prefix("data: ")).filter_map(|d| serde_json::from_str(d).ok()).collect()
}

/// Reads the stream until a frame of each type in `wanted` arrived (in any order).
pub(crate) async fn read_until(res: &mut reqwest::Response, wanted: &[&str]) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut text = String::new();
    loop {
        let seen = frames(&text);
        if wanted.iter().all(|w| seen.iter().any(|f| f["type"] == *w)) {
            return seen;
        }
        match tokio::time::timeout_at(deadline, res.chunk()).await {
            Ok(Ok(Some(bytes))) => text.push_str(&String::from_utf8_lossy(&bytes)),
            other => panic!("the stream stopped before {wanted:?} ({other:?}); seen: {seen:?}"),
        }
    }
}

fn of_type<'a>(frames: &'a [Value], kind: &str) -> &'a Value {
    frames.iter().find(|f| f["type"] == kind).unwrap_or_else(|| panic!("no {kind} frame"))
}

#[actix_web::test]
async fn configuration_changes_are_told_with_their_rows() {
    let service = TestService::start(ServiceConfig::new(fake_cli()));
    let mut stream = service.get("/api/events/stream").await;
    assert_eq!(stream.status().as_u16(), 200);

    let project = service.project("told").await;
    let res = service.client.put(service.url(&format!("/api/projects/{project}"))).json(&json!({"description": "now"}));
    assert_eq!(res.send().await.expect("put").status().as_u16(), 200);
    let rule = service
        .post("/api/rules/global", json!({"tool_name": "Bash", "behavior": "allow", "rule_content": "ls *"}))
        .await;
    assert_eq!(rule.status().as_u16(), 201);
    let rule: Value = rule.json().await.expect("rule");
    let agent = service
        .post(
            "/api/agents",
            json!({"name": "nightly", "schedule": "0 3 * * *", "objective": "tidy", "project_id": project}),
        )
        .await;
    assert_eq!(agent.status().as_u16(), 201, "{:?}", agent.text().await);
    let hook = service
        .post("/api/webhooks", json!({"name": "hook", "url": "http://127.0.0.1:9/hook", "events": ["session.result"]}))
        .await;
    assert_eq!(hook.status().as_u16(), 201);

    let seen = read_until(
        &mut stream,
        &["project.created", "project.updated", "rule.created", "agent.created", "webhook.created"],
    )
    .await;
    assert_eq!(of_type(&seen, "project.created")["data"]["id"], project.as_str());
    assert_eq!(of_type(&seen, "project.updated")["data"]["description"], "now");
    let told = of_type(&seen, "rule.created");
    assert_eq!((told["data"]["id"].clone(), told["session_id"].clone()), (rule["id"].clone(), Value::Null));
    assert_eq!(of_type(&seen, "agent.created")["data"]["name"], "nightly");
    assert_eq!(of_type(&seen, "webhook.created")["data"]["url"], "http://127.0.0.1:9/hook");
    assert_eq!(of_type(&seen, "project.created")["event"], "project_created");

    let rule_id = rule["id"].as_str().expect("rule id");
    assert_eq!(service.delete(&format!("/api/rules/{rule_id}")).await.status().as_u16(), 204);
    assert_eq!(service.delete(&format!("/api/projects/{project}")).await.status().as_u16(), 204);
    let seen = read_until(&mut stream, &["rule.deleted", "project.deleted"]).await;
    assert_eq!(of_type(&seen, "rule.deleted")["data"], json!({ "id": rule_id }));
    assert_eq!(of_type(&seen, "project.deleted")["data"], json!({ "id": project }));
}

#[actix_web::test]
async fn user_turns_are_relayed_and_global_frames_carry_the_session_number() {
    let service = TestService::start(ServiceConfig::new(fake_cli()));
    let project = service.project("numbers").await;
    let mut stream = service.get("/api/events/stream").await;
    let session = service.launch(&project, json!({})).await;
    let id = session["id"].as_str().expect("id").to_string();
    service.wait_status(&id, "idle", Duration::from_secs(20)).await;
    let res = service.post(&format!("/api/sessions/{id}/message"), json!({ "content": "hello numbers" })).await;
    assert_eq!(res.status().as_u16(), 202);
    let seen = read_until(&mut stream, &["session.result"]).await;

    let user = seen.iter().find(|f| f["event"] == "user").expect("the user turn is relayed");
    assert_eq!(user["data"]["message"]["content"], "hello numbers", "{user}");
    let stored = service.get_json(&format!("/api/sessions/{id}/messages?limit=1000")).await;
    let stored = stored.as_array().expect("lines");
    for line in stored.iter().filter(|l| !l["seq"].is_null()) {
        let frame = seen
            .iter()
            .find(|f| f["session_id"] == id.as_str() && f["session_seq"] == line["seq"])
            .unwrap_or_else(|| panic!("no global frame with session_seq {} ({})", line["seq"], line["message_type"]));
        let content: Value = serde_json::from_str(line["content"].as_str().expect("content")).expect("json line");
        assert_eq!(frame["data"], content, "the frame and the stored line with one number are one line");
    }
    assert!(stored.iter().any(|l| l["message_type"] == "user" && !l["seq"].is_null()), "the user line is numbered");
    assert!(seen.iter().filter(|f| f["session_id"].is_null()).all(|f| f.get("session_seq").is_none()));
}

#[actix_web::test]
async fn streams_end_cleanly_when_the_service_stops() {
    // In `stop` mode, where the sessions end with the service (in `detach` mode they are left
    // running and nothing is told but the stream's end).
    let mut service = TestService::start(ServiceConfig::new(fake_cli()).env("CONDUIT_ON_SHUTDOWN", "stop"));
    let project = service.project("stopping").await;
    let session = service.launch(&project, json!({})).await;
    let id = session["id"].as_str().expect("id").to_string();
    service.wait_status(&id, "idle", Duration::from_secs(20)).await;
    let mut stream = service.get("/api/events/stream").await;
    let reader = tokio::spawn(async move {
        let mut text = String::new();
        loop {
            match stream.chunk().await {
                Ok(Some(bytes)) => text.push_str(&String::from_utf8_lossy(&bytes)),
                // A clean end of the body: the service ended the stream itself, instead of
                // the connection being cut at the HTTP server's shutdown timeout.
                Ok(None) => return Ok(text),
                Err(e) => return Err(format!("{e}; read: {text}")),
            }
        }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    service.terminate();
    let text = reader.await.expect("join").expect("the stream ended cleanly");
    let closed = frames(&text);
    assert!(
        closed.iter().any(|f| f["type"] == "session.closed" && f["data"]["closed_reason"] == "shutdown"),
        "the session's end is told before the stream ends: {closed:?}"
    );
}
