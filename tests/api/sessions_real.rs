//! Sessions end to end through the REST API, against the real Claude Code CLI (2.1.330) talking
//! to the fake Messages API.

use std::time::Duration;

use serde_json::{json, Value};

use crate::support::fake_api::{FakeApi, Reply};
use crate::support::procs::running;
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

async fn idle_session(service: &TestService, project: &str, body: Value) -> String {
    let session = service.launch(project, body).await;
    let id = session["id"].as_str().expect("id").to_string();
    service.wait_status(&id, "idle", READY).await;
    id
}

fn alive(pid: i64) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let state = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().next()).unwrap_or("");
    !stat.is_empty() && state != "Z"
}

#[actix_web::test]
async fn concurrent_launches_with_one_external_key_start_one_cli() {
    let (_api, service) = rig().await;
    let project = service.project("keyed").await;
    let url = service.url(&format!("/api/projects/{project}/sessions"));
    let launches = (0..20).map(|_| service.client.post(&url).json(&json!({"external_key": "ticket-42"})).send());
    let mut created = 0;
    let mut ids = std::collections::BTreeSet::new();
    for res in futures_util::future::join_all(launches).await {
        let res = res.expect("request");
        match res.status().as_u16() {
            201 => created += 1,
            200 => {}
            other => panic!("unexpected status {other}"),
        }
        let body: Value = res.json().await.expect("json");
        ids.insert(body["id"].as_str().expect("id").to_string());
    }
    assert_eq!((created, ids.len()), (1, 1), "one CLI for one key");
    let id = ids.into_iter().next().expect("id");
    service.wait_status(&id, "idle", READY).await;
    let live = service.get_json("/api/sessions/active").await;
    assert_eq!(live.as_array().map(Vec::len), Some(1));
}

#[actix_web::test]
async fn queued_messages_run_in_order_after_the_running_turn() {
    let (api, service) = rig().await;
    let project = service.project("queue").await;
    let id = idle_session(&service, &project, json!({})).await;
    api.on("q-one", Reply::Slow { text: "slow".into(), chunks: 10, delay: Duration::from_millis(100) });
    let mut positions = Vec::new();
    for q in ["q-one", "q-two", "q-three"] {
        let res = service.post(&format!("/api/sessions/{id}/message"), json!({"content": q})).await;
        assert_eq!(res.status().as_u16(), 202);
        let body: Value = res.json().await.expect("json");
        positions.push((body["queued"].as_bool(), body["position"].as_u64()));
    }
    assert_eq!(positions, [(Some(false), Some(0)), (Some(true), Some(1)), (Some(true), Some(2))]);
    service.wait_for(&id, READY, |r| r["num_turns"] == 3 && r["status"] == "idle").await;
    let order: Vec<usize> = ["q-one", "q-two", "q-three"]
        .iter()
        .map(|q| api.requests().iter().position(|r| r.contains(q)).expect("the API saw the turn"))
        .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "turns reached the API in order: {order:?}");
}

#[actix_web::test]
async fn interrupt_mid_stream_returns_to_idle() {
    let (api, service) = rig().await;
    let project = service.project("interrupt").await;
    let id = idle_session(&service, &project, json!({})).await;
    api.on("long story", Reply::Slow { text: "tick".into(), chunks: 100, delay: Duration::from_millis(100) });
    service.post(&format!("/api/sessions/{id}/message"), json!({"content": "long story"})).await;
    service.wait_status(&id, "active", READY).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let started = std::time::Instant::now();
    let res = service.post(&format!("/api/sessions/{id}/interrupt"), json!({})).await;
    assert_eq!(res.status().as_u16(), 200, "{}", res.text().await.unwrap_or_default());
    let row = service.wait_for(&id, READY, |r| r["status"] == "idle" && r["num_turns"] == 1).await;
    assert!(started.elapsed() < Duration::from_secs(5), "the 10 s stream was cut short");
    let lines = service.get_json(&format!("/api/sessions/{id}/messages?limit=1000")).await;
    let results = messages_of(&lines, "result");
    assert_eq!(results.last().and_then(|r| r["message_subtype"].as_str()), Some("error_during_execution"), "{row}");
}

#[actix_web::test]
async fn set_model_and_mode_follow_the_cli() {
    let (api, service) = rig().await;
    let project = service.project("switch").await;
    let id =
        idle_session(&service, &project, json!({"model": "claude-sonnet-4-5", "permission_mode": "default"})).await;
    let res = service.post(&format!("/api/sessions/{id}/model"), json!({"model": "claude-haiku-4-5"})).await;
    assert_eq!(res.status().as_u16(), 200);
    let row: Value = res.json().await.expect("json");
    assert_eq!(row["model"], "claude-haiku-4-5");
    let res = service.post(&format!("/api/sessions/{id}/permission-mode"), json!({"mode": "plan"})).await;
    assert_eq!(res.status().as_u16(), 200);
    let row: Value = res.json().await.expect("json");
    assert_eq!(row["permission_mode"], "plan");

    api.on("which model", Reply::Text("this one".into()));
    service.post(&format!("/api/sessions/{id}/message"), json!({"content": "which model"})).await;
    service.wait_for(&id, READY, |r| r["num_turns"] == 1).await;
    let request = api.requests().into_iter().find(|r| r.contains("which model")).expect("the turn reached the API");
    assert!(request.contains("claude-haiku-4-5"), "the new model is used");

    for (path, body) in [("model", json!({"model": "-x"})), ("permission-mode", json!({"mode": "ask"}))] {
        let res = service.post(&format!("/api/sessions/{id}/{path}"), body).await;
        assert_eq!(res.status().as_u16(), 422, "{path}");
    }
}

#[actix_web::test]
async fn delete_ends_the_cli_and_a_grandchild_that_left_its_group() {
    let (api, service) = rig().await;
    let project = service.project("tree").await;
    let id = idle_session(&service, &project, json!({})).await;
    // Found by a command line of its own: a sandboxed CLI's pids are those of its pid
    // namespace, so the pid the daemon could write down is not the host's.
    let nap = format!("600.{}", std::process::id());
    let command = format!("setsid sh -c 'exec sleep {nap}' > /dev/null 2>&1 < /dev/null &");
    api.on(
        "start a daemon",
        Reply::ToolUse { name: "Bash".into(), input: json!({"command": command, "description": "daemon"}) },
    );
    api.on("tool_result", Reply::Text("started".into()));
    service.post(&format!("/api/sessions/{id}/message"), json!({"content": "start a daemon"})).await;
    service.wait_for(&id, READY, |r| r["num_turns"] == 1 && r["status"] == "idle").await;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let escapee = loop {
        if let Some(pid) = running(&["sleep", &nap]).first() {
            break i64::from(*pid);
        }
        assert!(std::time::Instant::now() < deadline, "the Bash tool never ran: {}", service.log());
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let cli_pid = service.get_json(&format!("/api/sessions/{id}")).await["cli_pid"].as_i64().expect("pid");

    let closed: Value = service.delete(&format!("/api/sessions/{id}")).await.json().await.expect("json");
    assert_eq!(closed["status"], "closed", "{closed}");
    assert!(!alive(cli_pid), "the CLI is gone");
    assert!(!alive(escapee), "the daemon that left the process group is gone too");
    let again = service.delete(&format!("/api/sessions/{id}")).await;
    assert_eq!(again.status().as_u16(), 200, "idempotent");
}

#[actix_web::test]
async fn a_cli_killed_with_sigkill_turns_the_session_to_error() {
    let (_api, service) = rig().await;
    let project = service.project("crash").await;
    let victim = idle_session(&service, &project, json!({})).await;
    let bystander = idle_session(&service, &project, json!({})).await;
    let pid = service.get_json(&format!("/api/sessions/{victim}")).await["cli_pid"].as_i64().expect("pid");
    // SAFETY: signalling the CLI the test's own service started.
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    let started = std::time::Instant::now();
    let row = service.wait_status(&victim, "error", Duration::from_secs(5)).await;
    assert!(started.elapsed() < Duration::from_millis(1500), "noticed within a second or so");
    assert!(row["error_message"].as_str().is_some_and(|m| m.contains("signal 9")), "{row}");
    let res = service.post(&format!("/api/sessions/{victim}/message"), json!({"content": "hello?"})).await;
    assert_eq!(res.status().as_u16(), 409);
    let res = service.post(&format!("/api/sessions/{bystander}/message"), json!({"content": "still there?"})).await;
    assert_eq!(res.status().as_u16(), 202);
    service.wait_for(&bystander, READY, |r| r["num_turns"] == 1).await;
}

#[actix_web::test]
async fn sigterm_ends_every_cli_and_keeps_the_last_results() {
    // `stop` mode: the CLIs end with the service (keepers_real tests `detach`, the default).
    let api = FakeApi::start().await;
    let mut service =
        TestService::start(ServiceConfig::new(real_cli()).api(&api.base_url).env("CONDUIT_ON_SHUTDOWN", "stop"));
    let project = service.project("shutdown").await;
    let mut ids = Vec::new();
    for _ in 0..3 {
        ids.push(idle_session(&service, &project, json!({})).await);
    }
    api.on("before shutdown", Reply::Text("answered".into()));
    service.post(&format!("/api/sessions/{}/message", ids[0]), json!({"content": "before shutdown"})).await;
    service.wait_for(&ids[0], READY, |r| r["num_turns"] == 1).await;
    let mut pids = Vec::new();
    for id in &ids {
        pids.push(service.get_json(&format!("/api/sessions/{id}")).await["cli_pid"].as_i64().expect("pid"));
    }
    let (took, status) = service.terminate();
    assert!(status.success(), "exit 0: {status:?}\n{}", service.log());
    assert!(took < Duration::from_millis(5500), "within grace + 0.5 s: {took:?}");
    for pid in pids {
        assert!(!alive(pid), "CLI {pid} outlived the service");
    }
    let dir = service.into_dir();
    let db = dir.path().join("data/conduit.db");
    let restarted = TestService::start_in(dir, ServiceConfig::new(real_cli()));
    for id in &ids {
        let row = restarted.get_json(&format!("/api/sessions/{id}")).await;
        assert_eq!(row["status"], "closed", "ended by the shutdown, not by a crash: {row}");
    }
    let lines = restarted.get_json(&format!("/api/sessions/{}/messages?limit=1000", ids[0])).await;
    assert_eq!(messages_of(&lines, "result").len(), 1, "the last result is stored ({})", db.display());
}

#[actix_web::test]
async fn deleting_a_project_ends_its_live_sessions_first() {
    let (_api, service) = rig().await;
    let project = service.project("doomed").await;
    let id = idle_session(&service, &project, json!({})).await;
    let pid = service.get_json(&format!("/api/sessions/{id}")).await["cli_pid"].as_i64().expect("pid");
    let res = service.delete(&format!("/api/projects/{project}")).await;
    assert_eq!(res.status().as_u16(), 204);
    assert!(!alive(pid), "the project's CLI was ended");
    assert_eq!(service.get(&format!("/api/sessions/{id}")).await.status().as_u16(), 404, "rows cascade");
    let health = service.get_json("/api/health").await;
    assert_eq!(health["active_sessions"], 0);
}

#[actix_web::test]
async fn an_api_error_is_retried_by_the_cli_and_the_turn_completes() {
    let (api, service) = rig().await;
    let project = service.project("flaky").await;
    let id = idle_session(&service, &project, json!({})).await;
    api.on("flaky question", Reply::ServerError);
    api.on("flaky question", Reply::Text("second try worked".into()));
    service.post(&format!("/api/sessions/{id}/message"), json!({"content": "flaky question"})).await;
    let row = service.wait_for(&id, READY, |r| r["num_turns"] == 1).await;
    assert_eq!(row["status"], "idle");
    let attempts = api.requests().iter().filter(|r| r.contains("flaky question")).count();
    assert!(attempts >= 2, "the 500 was retried ({attempts} attempts)");
    let lines = service.get_json(&format!("/api/sessions/{id}/messages?limit=1000")).await;
    let result = messages_of(&lines, "result").pop().expect("a result");
    assert!(result["content"].as_str().is_some_and(|c| c.contains("second try worked")), "{result}");
}
