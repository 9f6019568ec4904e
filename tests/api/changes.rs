//! Changes to projects, rules, scheduled agents and webhooks are told on the global event
//! stream with their rows, so a dashboard follows them without polling.

use std::time::Duration;

use serde_json::{json, Value};
use tokio::time::Instant;

use crate::support::service::{fake_cli, ServiceConfig, TestService};

/// The `data:` frames of an SSE body read so far.
fn frames(text: &str) -> Vec<Value> {
    text.lines().filter_map(|l| l.strip_prefix("data: ")).filter_map(|d| serde_json::from_str(d).ok()).collect()
}

/// Reads the stream until a frame of each type in `wanted` arrived (in any order).
async fn read_until(res: &mut reqwest::Response, wanted: &[&str]) -> Vec<Value> {
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
