//! The WebSocket bridge transport end to end: the real CLI 2.1.39 (which still accepts a local
//! `--sdk-url`) connecting to a session's bridge, and the current CLI 2.1.330 (which refuses
//! it) failing cleanly, both against the fake Messages API.

use std::net::TcpListener;
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::fake_api::{FakeApi, Reply};
use crate::support::service::{bridge_cli, real_cli, ServiceConfig, TestService};

const READY: Duration = Duration::from_secs(60);

/// `n` consecutive free ports on 127.0.0.1 (checked, then released for the service to take).
fn free_range(n: u16) -> u16 {
    for _ in 0..200 {
        let start = 20_000 + (rand_u16() % 20_000);
        let held: Vec<_> = (start..start + n).filter_map(|p| TcpListener::bind(("127.0.0.1", p)).ok()).collect();
        if held.len() == usize::from(n) {
            return start;
        }
    }
    panic!("no {n} consecutive free ports");
}

fn rand_u16() -> u16 {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.subsec_nanos());
    (nanos.unwrap_or(0) ^ std::process::id().wrapping_mul(2_654_435_761)) as u16
}

fn port_is_free(port: i64) -> bool {
    TcpListener::bind(("127.0.0.1", port as u16)).is_ok()
}

/// Waits (briefly) for the bridge's port to be released after the session ended.
async fn released(port: i64) -> bool {
    for _ in 0..50 {
        if port_is_free(port) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

async fn rig(cli: std::path::PathBuf, ports: Option<(u16, u16)>) -> (FakeApi, TestService) {
    let api = FakeApi::start().await;
    let mut config = ServiceConfig::new(cli).api(&api.base_url);
    if let Some((start, end)) = ports {
        config = config
            .env("CONDUIT_WS_PORT_RANGE_START", &start.to_string())
            .env("CONDUIT_WS_PORT_RANGE_END", &end.to_string());
    }
    (api, TestService::start(config))
}

async fn idle(service: &TestService, project: &str, body: Value) -> Value {
    let session = service.launch(project, body).await;
    let id = session["id"].as_str().expect("id").to_string();
    service.wait_status(&id, "idle", READY).await
}

fn messages_of(rows: &Value, kind: &str) -> Vec<Value> {
    rows.as_array().expect("array").iter().filter(|m| m["message_type"] == kind).cloned().collect()
}

#[actix_web::test]
async fn a_bridge_session_runs_turns_denies_a_tool_is_interrupted_and_ends() {
    let (api, service) = rig(bridge_cli(), None).await;
    let project = service.project("bridged").await;
    let victim = service.root.join("bridged/victim.txt");
    std::fs::write(&victim, "keep me").expect("write");
    let res = service
        .post("/api/rules/global", json!({"tool_name": "Bash", "rule_content": "rm:*", "behavior": "deny"}))
        .await;
    assert_eq!(res.status().as_u16(), 201);

    // `auto` picks the bridge for 2.1.39.
    let session = service.launch(&project, json!({"transport": "auto"})).await;
    assert_eq!(session["transport"], "websocket", "{session}");
    let port = session["ws_port"].as_i64().expect("a bridge port");
    assert!((9000..=9100).contains(&port), "from the default range: {port}");
    let id = session["id"].as_str().expect("id").to_string();
    service.wait_status(&id, "idle", READY).await;

    // Two turns over the socket.
    api.on("bridge question one", Reply::Text("bridge answer one".into()));
    let res = service.post(&format!("/api/sessions/{id}/message"), json!({"content": "bridge question one"})).await;
    assert_eq!(res.status().as_u16(), 202);
    let one = service.wait_for(&id, READY, |r| r["num_turns"] == 1 && r["status"] == "idle").await;
    assert!(one["total_cost_usd"].as_f64().is_some_and(|c| c > 0.0), "{one}");
    api.on("bridge question two", Reply::Text("bridge answer two".into()));
    service.post(&format!("/api/sessions/{id}/message"), json!({"content": "bridge question two"})).await;
    service.wait_for(&id, READY, |r| r["num_turns"] == 2 && r["status"] == "idle").await;
    assert!(
        api.requests().iter().any(|r| r.contains("bridge question two") && r.contains("bridge answer one")),
        "the conversation continued over the bridge"
    );

    // A denied tool call: the command never runs, the audit says why.
    api.on("clean up please", Reply::ToolUse { name: "Bash".into(), input: json!({"command": "rm -f victim.txt"}) });
    api.on("tool_result", Reply::Text("could not".into()));
    service.post(&format!("/api/sessions/{id}/message"), json!({"content": "clean up please"})).await;
    service.wait_for(&id, READY, |r| r["num_turns"] == 3 && r["status"] == "idle").await;
    assert!(victim.exists(), "the denied rm did not run");
    let log = service.get_json(&format!("/api/permissions/log?session_id={id}&decision=deny")).await;
    assert!(log.as_array().is_some_and(|rows| rows.iter().any(|r| r["tool_name"] == "Bash")), "{log}");

    // Interrupt a long answer.
    api.on("long bridge story", Reply::Slow { text: "tick".into(), chunks: 100, delay: Duration::from_millis(100) });
    service.post(&format!("/api/sessions/{id}/message"), json!({"content": "long bridge story"})).await;
    service.wait_status(&id, "active", READY).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let res = service.post(&format!("/api/sessions/{id}/interrupt"), json!({})).await;
    assert_eq!(res.status().as_u16(), 200, "{}", res.text().await.unwrap_or_default());
    service.wait_for(&id, READY, |r| r["status"] == "idle" && r["num_turns"] == 4).await;
    let lines = service.get_json(&format!("/api/sessions/{id}/messages?limit=1000")).await;
    let results = messages_of(&lines, "result");
    assert_eq!(results.last().and_then(|r| r["message_subtype"].as_str()), Some("error_during_execution"));

    // Kill: the session ends and its port is released.
    let closed: Value = service.delete(&format!("/api/sessions/{id}")).await.json().await.expect("json");
    assert_eq!(closed["status"], "closed", "{closed}");
    assert!(released(port).await, "port {port} released");
}

#[actix_web::test]
async fn a_bridge_cli_killed_with_sigkill_turns_the_session_to_error_and_frees_its_port() {
    let (_api, service) = rig(bridge_cli(), None).await;
    let project = service.project("killed").await;
    let row = idle(&service, &project, json!({"transport": "websocket"})).await;
    let (id, pid, port) = (
        row["id"].as_str().expect("id").to_string(),
        row["cli_pid"].as_i64().expect("pid"),
        row["ws_port"].as_i64().expect("port"),
    );
    // SAFETY: signalling the CLI the test's own service started.
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    let row = service.wait_status(&id, "error", Duration::from_secs(10)).await;
    assert!(row["error_message"].as_str().is_some_and(|m| m.contains("signal 9")), "{row}");
    assert!(released(port).await, "port {port} released");
}

#[actix_web::test]
async fn a_cli_that_refuses_the_bridge_fails_with_its_reason_and_auto_chooses_stdio() {
    let (api, service) = rig(real_cli(), None).await;
    let project = service.project("refused").await;
    let session = service.launch(&project, json!({"transport": "websocket"})).await;
    let (id, port) = (session["id"].as_str().expect("id").to_string(), session["ws_port"].as_i64().expect("port"));
    let row = service.wait_status(&id, "error", Duration::from_secs(30)).await;
    let message = row["error_message"].as_str().unwrap_or_default();
    assert!(message.contains("not an approved Anthropic endpoint"), "the CLI's own reason: {row}");
    assert!(released(port).await, "port {port} released");

    let auto = service.launch(&project, json!({"transport": "auto"})).await;
    assert_eq!(auto["transport"], "stdio", "{auto}");
    assert!(auto["ws_port"].is_null());
    let id = auto["id"].as_str().expect("id").to_string();
    service.wait_status(&id, "idle", READY).await;
    api.on("stdio after all", Reply::Text("fine".into()));
    service.post(&format!("/api/sessions/{id}/message"), json!({"content": "stdio after all"})).await;
    service.wait_for(&id, READY, |r| r["num_turns"] == 1).await;
}

#[actix_web::test]
async fn ports_in_use_are_skipped_and_an_exhausted_range_answers_503_until_one_is_released() {
    let start = free_range(3);
    // Another program holds the first port of the range.
    let squatter = TcpListener::bind(("127.0.0.1", start)).expect("hold the first port");
    let (_api, service) = rig(bridge_cli(), Some((start, start + 2))).await;
    let project = service.project("ports").await;

    let a = idle(&service, &project, json!({"transport": "websocket"})).await;
    let b = idle(&service, &project, json!({"transport": "websocket"})).await;
    let mut ports = [a["ws_port"].as_i64().expect("port"), b["ws_port"].as_i64().expect("port")];
    ports.sort();
    assert_eq!(ports, [i64::from(start) + 1, i64::from(start) + 2], "the held port was skipped");

    let res = service.post(&format!("/api/projects/{project}/sessions"), json!({"transport": "websocket"})).await;
    assert_eq!(res.status().as_u16(), 503);
    let body: Value = res.json().await.expect("json");
    assert_eq!(body["error"]["code"], "ports_exhausted", "{body}");
    assert!(body["error"]["message"].as_str().is_some_and(|m| m.contains("CONDUIT_WS_PORT_RANGE_START")), "{body}");
    // A stdio launch does not need a port.
    let stdio = service.launch(&project, json!({"transport": "stdio"})).await;
    assert_eq!(stdio["transport"], "stdio");

    let a_id = a["id"].as_str().expect("id");
    let closed = service.delete(&format!("/api/sessions/{a_id}")).await;
    assert_eq!(closed.status().as_u16(), 200);
    let again = idle(&service, &project, json!({"transport": "websocket"})).await;
    assert_eq!(again["ws_port"], a["ws_port"], "the released port is used again");
    drop(squatter);
}
