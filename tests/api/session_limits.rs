//! Kernel limits per session and what a session uses, against the fake CLI
//! (examples/fake_cli.rs) from the attacker's side: a tool that forks hundreds of processes
//! meets `pids_max`, a tool that allocates past `memory_max_mb` is OOM-killed while the session
//! answers on, the CLI itself OOM-killed ends the session `out_of_memory`; readings in the
//! session's view and `/metrics`. These need the cgroup controllers (v2, or v1 on a hybrid
//! host): a machine without them fails here, saying so.

use std::time::Duration;

use serde_json::{json, Value};

use crate::changes::read_until;
use crate::support::service::{fake_cli, ServiceConfig, TestService};

const READY: Duration = Duration::from_secs(20);

/// A service whose machine can apply every limit (the test fails otherwise, saying why).
async fn limited_service(config: ServiceConfig) -> TestService {
    let service = TestService::start(config);
    let health = service.get_json("/api/health").await;
    let limits = &health["checks"]["session_limits"];
    let all = limits["controllers"].as_array().is_some_and(|c| c.len() == 3);
    assert!(all && limits["mechanism"] != "none", "this machine cannot apply session limits: {limits}");
    service
}

async fn idle(service: &TestService, project: &str, body: Value) -> String {
    let session = service.launch(project, body).await;
    let id = session["id"].as_str().expect("id").to_string();
    service.wait_status(&id, "idle", READY).await;
    id
}

async fn say(service: &TestService, id: &str, content: &str) {
    let res = service.post(&format!("/api/sessions/{id}/message"), json!({ "content": content })).await;
    assert_eq!(res.status().as_u16(), 202);
}

/// The text of the session's assistant lines, in order.
async fn answers(service: &TestService, id: &str) -> Vec<String> {
    let lines = service.get_json(&format!("/api/sessions/{id}/messages?limit=1000")).await;
    lines
        .as_array()
        .expect("lines")
        .iter()
        .filter(|l| l["message_type"] == "assistant")
        .filter_map(|l| serde_json::from_str::<Value>(l["content"].as_str()?).ok())
        .filter_map(|c| c["message"]["content"][0]["text"].as_str().map(String::from))
        .collect()
}

#[actix_web::test]
async fn bad_limits_are_refused_with_the_field_and_why_and_project_defaults_are_kept() {
    let service = TestService::start(ServiceConfig::new(fake_cli()));
    let project = service.project("limits-checked").await;
    for (limits, named) in [
        (json!({"memory_max_mb": 8}), "memory_max_mb"),
        (json!({"pids_max": 4}), "the CLI itself needs"),
        (json!({"cpu_weight": 0}), "cpu_weight"),
        (json!({"cpu_weight": 10001}), "cpu_weight"),
        (json!({"swap": 1}), "swap"),
    ] {
        let res = service.post(&format!("/api/projects/{project}/sessions"), json!({ "limits": limits })).await;
        let status = res.status().as_u16();
        let body: Value = res.json().await.expect("a JSON error");
        let message = body["error"]["message"].as_str().unwrap_or_default();
        assert!((status == 422 || status == 400) && message.contains(named), "{limits}: {status} {body}");
    }
    let put = |body: Value| service.client.put(service.url(&format!("/api/projects/{project}"))).json(&body).send();
    let res = put(json!({"session_limits": {"memory_max_mb": 512, "cpu_weight": 50}})).await.expect("put");
    assert_eq!(res.status().as_u16(), 200);
    let row: Value = res.json().await.expect("project");
    assert_eq!(row["session_limits"], json!({"memory_max_mb": 512, "pids_max": null, "cpu_weight": 50}), "{row}");
    let res = put(json!({"session_limits": {"pids_max": 2}})).await.expect("put");
    assert_eq!(res.status().as_u16(), 422);
    let again = service.get_json(&format!("/api/projects/{project}")).await;
    assert_eq!(again["session_limits"]["memory_max_mb"], 512, "a refused update changes nothing");
    let res = put(json!({"session_limits": null})).await.expect("put");
    let row: Value = res.json().await.expect("project");
    assert_eq!(row["session_limits"], Value::Null, "null clears: {row}");
}

#[actix_web::test]
async fn a_tool_forking_hundreds_of_processes_stops_at_pids_max_and_the_session_goes_on() {
    let service = limited_service(ServiceConfig::new(fake_cli())).await;
    let project = service.project("fork-bomb").await;
    let id = idle(&service, &project, json!({"model": "fake-fork-300", "limits": {"pids_max": 40}})).await;
    assert_eq!(service.get_json(&format!("/api/sessions/{id}")).await["limits"]["pids_max"], 40);
    say(&service, &id, "fork").await;
    service.wait_for(&id, READY, |r| r["num_turns"] == 1 && r["status"] == "idle").await;
    let said = answers(&service, &id).await;
    let forked: Option<u64> = said.iter().find_map(|t| t.strip_prefix("forked ")?.split(' ').next()?.parse().ok());
    let forked = forked.unwrap_or_else(|| panic!("the tool said how many it forked: {said:?}"));
    assert!(forked < 40, "pids_max held: the tool forked {forked} of 300 ({said:?})");
    // The CLI still takes turns: the limit stopped the tool, not the session.
    say(&service, &id, "and again").await;
    let row = service.wait_for(&id, READY, |r| r["num_turns"] == 2 && r["status"] == "idle").await;
    assert_eq!(row["closed_reason"], Value::Null, "{row}");
}

#[actix_web::test]
async fn a_tool_over_memory_max_is_oom_killed_while_the_session_answers_its_next_turn() {
    // The setting's limit, taken by a launch and a project that set none.
    let service = limited_service(ServiceConfig::new(fake_cli()).env("CONDUIT_SESSION_MEMORY_MAX_MB", "64")).await;
    let project = service.project("oom-tool").await;
    let id = idle(&service, &project, json!({"model": "fake-alloc-256"})).await;
    let mut events = service.get(&format!("/api/sessions/{id}/stream")).await;
    assert_eq!(events.status().as_u16(), 200);
    say(&service, &id, "allocate").await;
    let frames = read_until(&mut events, &["session.resource"]).await;
    let told = frames.iter().find(|f| f["type"] == "session.resource").expect("session.resource");
    assert!(told["data"]["oom_kills"].as_u64().is_some_and(|n| n >= 1), "{told}");
    service.wait_for(&id, READY, |r| r["num_turns"] == 1 && r["status"] == "idle").await;
    let said = answers(&service, &id).await;
    assert!(said.iter().any(|t| t == "tool was killed by signal 9"), "the kernel killed the tool: {said:?}");
    // The session answers its next turn, and its readings count the kill.
    say(&service, &id, "still there?").await;
    let row = service.wait_for(&id, READY, |r| r["num_turns"] == 2 && r["status"] == "idle").await;
    assert!(row["resources"]["oom_kills"].as_u64().is_some_and(|n| n >= 1), "{row}");
    let limit = 64u64 << 20;
    assert!(row["resources"]["memory_peak_bytes"].as_u64().is_some_and(|b| b <= limit), "{row}");
}

#[actix_web::test]
async fn the_cli_itself_over_memory_max_ends_the_session_out_of_memory() {
    let service = limited_service(ServiceConfig::new(fake_cli())).await;
    let project = service.project("oom-cli").await;
    // The project's default, taken by a launch that sets none.
    let res = service
        .client
        .put(service.url(&format!("/api/projects/{project}")))
        .json(&json!({"session_limits": {"memory_max_mb": 64}}))
        .send()
        .await
        .expect("put");
    assert_eq!(res.status().as_u16(), 200);
    let id = idle(&service, &project, json!({"model": "fake-oom-256"})).await;
    say(&service, &id, "allocate yourself").await;
    let row = service.wait_for(&id, READY, |r| r["status"] == "error" || r["status"] == "closed").await;
    assert_eq!(row["closed_reason"], "out_of_memory", "{row}");
    assert!(row["error_message"].as_str().is_some_and(|m| m.contains("OOM killer")), "{row}");
}

#[actix_web::test]
async fn readings_appear_in_the_session_and_in_metrics_behind_the_apis_auth() {
    let token = "limits-metrics-token-0123456789";
    let service = limited_service(ServiceConfig::new(fake_cli()).authorized(token)).await;
    let project = service.project("readings").await;
    let id = idle(&service, &project, json!({})).await;
    say(&service, &id, "hello").await;
    let row = service
        .wait_for(&id, READY, |r| r["num_turns"] == 1 && r["resources"]["memory_bytes"].as_u64().is_some_and(|b| b > 0))
        .await;
    let r = &row["resources"];
    assert!(r["pids"].as_u64().is_some_and(|n| n >= 1), "{r}");
    assert!(r["cpu_usec"].as_u64().is_some(), "{r}");
    assert!(r["memory_peak_bytes"].as_u64() >= r["memory_bytes"].as_u64(), "{r}");
    assert_eq!(r["oom_kills"], 0, "{r}");
    let active = service.get_json("/api/sessions/active").await;
    assert!(active[0]["resources"]["memory_bytes"].as_u64().is_some(), "{active}");

    let anonymous = reqwest::get(service.url("/metrics")).await.expect("request");
    assert_eq!(anonymous.status().as_u16(), 401, "the API's auth guards /metrics");
    let res = service.get("/metrics").await;
    assert_eq!(res.status().as_u16(), 200);
    assert!(res.headers()["content-type"].to_str().is_ok_and(|t| t.starts_with("text/plain")));
    let text = res.text().await.expect("text");
    for expected in [
        "conduit_sessions{status=\"idle\"} 1".to_string(),
        "conduit_session_turns 1".to_string(),
        "# TYPE conduit_lines_stored_total counter".to_string(),
        "conduit_write_queue_depth ".to_string(),
        format!("conduit_session_memory_bytes{{session=\"{id}\",project=\"{project}\"}} "),
        format!("conduit_session_cpu_seconds_total{{session=\"{id}\",project=\"{project}\"}} "),
        "conduit_http_requests_total{method=\"GET\",route=\"/api/sessions/{id}\",status=\"200\"} ".to_string(),
        "conduit_http_requests_total{method=\"GET\",route=\"/metrics\",status=\"401\"} 1".to_string(),
    ] {
        assert!(text.contains(&expected), "/metrics lacks {expected:?}:\n{text}");
    }
    let relayed = text.lines().find_map(|l| l.strip_prefix("conduit_lines_relayed_total ")?.parse::<u64>().ok());
    assert!(relayed.is_some_and(|n| n >= 3), "a turn's lines were relayed:\n{text}");
}
