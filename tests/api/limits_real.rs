//! Usage limits end to end with the real Claude Code CLI (2.1.330) in gateway mode and the fake
//! Messages API answering 429 with a reset a few seconds ahead: the session parks, keeps its
//! turns, and carries on by itself after the reset.

use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use crate::changes::read_until;
use crate::support::fake_api::{FakeApi, Reply, GATEWAY_TOKEN};
use crate::support::service::{real_cli, ServiceConfig, TestService};

const READY: Duration = Duration::from_secs(60);

fn config(api: &FakeApi) -> ServiceConfig {
    ServiceConfig::new(real_cli())
        .api(&api.base_url)
        .env("ANTHROPIC_AUTH_TOKEN", GATEWAY_TOKEN)
        .env("CONDUIT_LIMIT_JITTER_MS", "300")
}

async fn say(service: &TestService, id: &str, content: &str) -> Value {
    let res = service.post(&format!("/api/sessions/{id}/message"), json!({ "content": content })).await;
    assert_eq!(res.status().as_u16(), 202);
    res.json().await.expect("json")
}

fn at(v: &Value) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(v.as_str().expect("a time")).expect("RFC 3339").with_timezone(&Utc)
}

#[actix_web::test]
async fn a_session_at_a_usage_limit_waits_for_the_reset_and_delivers_its_turns_in_order() {
    let api = FakeApi::start().await;
    let service = TestService::start(config(&api));
    let project = service.project("limits").await;
    let session = service.launch(&project, json!({})).await;
    let id = session["id"].as_str().expect("id").to_string();
    service.wait_status(&id, "idle", READY).await;

    api.on("the limited question", Reply::UsageLimit { resets_in: Duration::from_secs(3) });
    api.on("the limited question", Reply::Text("the answer after the reset".into()));
    api.on("sent while parked", Reply::Text("the queued answer".into()));
    say(&service, &id, "the limited question").await;
    let parked = service.wait_status(&id, "waiting_for_limit", READY).await;
    let parked_at = Instant::now();
    let resumes_at = at(&parked["resumes_at"]);
    assert!(resumes_at > Utc::now(), "{parked}");
    assert!(resumes_at < Utc::now() + chrono::Duration::seconds(5), "the reset plus a little jitter: {parked}");
    let reason = parked["status_reason"].as_str().unwrap_or_default();
    assert!(reason.contains("usage limit") && reason.contains("hit your"), "{parked}");

    let limits = service.get_json("/api/usage/limits").await;
    let claude = limits.as_array().and_then(|l| l.iter().find(|e| e["agent"] == "claude")).expect("claude's entry");
    assert_eq!(
        (claude["status"].as_str(), claude["limit_type"].as_str()),
        (Some("limited"), Some("five_hour")),
        "{limits}"
    );
    assert!(claude["resets_at"].is_string());

    // Accepted and queued while parked.
    let outcome = say(&service, &id, "sent while parked").await;
    assert_eq!(outcome["queued"], true, "{outcome}");
    assert_eq!(service.get_json(&format!("/api/sessions/{id}")).await["status"], "waiting_for_limit");

    // After the reset the stopped turn goes again, then the queued one: three results.
    let done = service.wait_for(&id, READY, |r| r["num_turns"] == 3 && r["status"] == "idle").await;
    assert!(Utc::now() >= resumes_at, "not before the reset");
    assert!(parked_at.elapsed() >= Duration::from_millis(1500), "it waited");
    assert!(done["resumes_at"].is_null() && done["status_reason"].is_null(), "{done}");
    let results = results(&service, &id).await;
    assert_eq!(results.len(), 3, "{results:?}");
    assert!(results[0].contains("hit your"), "{results:?}");
    assert_eq!(results[1..], ["the answer after the reset".to_string(), "the queued answer".to_string()]);

    // The limit and its end went out as events, and the board reads allowed again.
    let mut stream = reqwest::Client::new()
        .get(service.url(&format!("/api/sessions/{id}/stream")))
        .header("Last-Event-ID", "0")
        .send()
        .await
        .expect("stream");
    let frames = read_until(&mut stream, &["usage.limit_reached", "usage.limit_reset"]).await;
    let reached = frames.iter().find(|f| f["type"] == "usage.limit_reached").expect("reached");
    assert_eq!(reached["data"]["kind"], "usage_limit", "{reached}");
    assert_eq!(reached["data"]["queued_turns"], 1, "the stopped turn waits: {reached}");
    let limits = service.get_json("/api/usage/limits").await;
    assert_eq!(limits[0]["status"], "allowed", "{limits}");
}

/// The results' texts of session `id`, in order.
async fn results(service: &TestService, id: &str) -> Vec<String> {
    let lines = service.get_json(&format!("/api/sessions/{id}/messages?limit=1000&partial=false")).await;
    lines
        .as_array()
        .expect("lines")
        .iter()
        .filter(|m| m["message_type"] == "result")
        .filter_map(|m| serde_json::from_str::<Value>(m["content"].as_str()?).ok())
        .map(|r| r["result"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// Parks a session at a limit resetting 20 s ahead (room for a restart under load), with one more turn accepted while
/// parked; then stops the service (cleanly or by a crash) and starts it again on the same
/// database. The session comes back parked, waits out the same reset, and delivers both turns.
async fn parked_across_a_restart(clean_stop: bool) {
    let api = FakeApi::start().await;
    let mut service = TestService::start(config(&api));
    let project = service.project("limits").await;
    let session = service.launch(&project, json!({})).await;
    let id = session["id"].as_str().expect("id").to_string();
    service.wait_status(&id, "idle", READY).await;

    api.on("the question before the restart", Reply::UsageLimit { resets_in: Duration::from_secs(20) });
    api.on("the question before the restart", Reply::Text("answered after the restart".into()));
    api.on("queued before the restart", Reply::Text("the queued one, answered too".into()));
    say(&service, &id, "the question before the restart").await;
    let parked = service.wait_status(&id, "waiting_for_limit", READY).await;
    let resumes_at = at(&parked["resumes_at"]);
    assert_eq!(say(&service, &id, "queued before the restart").await["queued"], true);

    if clean_stop {
        let (_, status) = service.terminate();
        assert!(status.success(), "{status:?}");
    }
    let service = TestService::start_in(service.into_dir(), config(&api));
    // Back, parked until the same moment, before the reset.
    let back = service.wait_status(&id, "waiting_for_limit", READY).await;
    assert_eq!(at(&back["resumes_at"]), resumes_at, "{back}");
    assert!(back["status_reason"].as_str().unwrap_or_default().contains("usage limit"), "{back}");

    // After the reset: the stopped turn, then the queued one, each answered once.
    let done = service.wait_for(&id, READY, |r| r["status"] == "idle" && r["resumes_at"].is_null()).await;
    assert!(Utc::now() >= resumes_at, "not before the reset: {done}");
    let wanted = ["answered after the restart", "the queued one, answered too"];
    let deadline = Instant::now() + READY;
    let mut seen = results(&service, &id).await;
    while seen.len() < 3 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(200)).await;
        seen = results(&service, &id).await;
    }
    assert_eq!(seen.len(), 3, "{seen:?}");
    assert!(seen[0].contains("hit your"), "{seen:?}");
    assert_eq!(seen[1..], wanted.map(String::from), "{seen:?}");
    // Both turns read as delivered, each stored once.
    let lines = service.get_json(&format!("/api/sessions/{id}/messages?limit=1000&partial=false")).await;
    let turns: Vec<&Value> = lines
        .as_array()
        .expect("lines")
        .iter()
        .filter(|m| m["direction"] == "to_cli" && m["message_type"] == "user")
        .collect();
    assert_eq!(turns.len(), 2, "{turns:?}");
    assert!(turns.iter().all(|t| t["delivered_at"].is_string()), "{turns:?}");
}

#[actix_web::test]
async fn a_session_parked_at_a_limit_carries_on_after_a_clean_restart() {
    parked_across_a_restart(true).await;
}

#[actix_web::test]
async fn a_session_parked_at_a_limit_carries_on_after_a_crash() {
    parked_across_a_restart(false).await;
}
