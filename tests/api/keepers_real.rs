//! Sessions outlive the service: each CLI runs under its keeper, a stop (SIGTERM) leaves it
//! running, a crash (SIGKILL) too, and the next start attaches again: same CLI, same status,
//! the lines written meanwhile stored once and in order, the next turn answered. With the real
//! Claude Code CLI (2.1.330, in its sandbox) and the fake Messages API.

use std::time::Duration;

use serde_json::{json, Value};

use crate::support::fake_api::{FakeApi, Reply};
use crate::support::procs::alive;
use crate::support::service::{real_cli, ServiceConfig, TestService};

const READY: Duration = Duration::from_secs(60);
/// The slow answer: this many pieces, this far apart (a 6 s turn).
const PIECES: usize = 60;
const APART: Duration = Duration::from_millis(100);

async fn say(service: &TestService, id: &str, content: &str) {
    let res = service.post(&format!("/api/sessions/{id}/message"), json!({ "content": content })).await;
    assert_eq!(res.status().as_u16(), 202, "message to {id}");
}

/// Every stored line of a session, in order.
pub async fn all_lines(service: &TestService, id: &str) -> Vec<Value> {
    let mut lines = Vec::new();
    loop {
        let page = service.get_json(&format!("/api/sessions/{id}/messages?limit=1000&offset={}", lines.len())).await;
        let page = page.as_array().expect("a page of lines").clone();
        let done = page.len() < 1000;
        lines.extend(page);
        if done {
            return lines;
        }
    }
}

/// The text deltas the CLI streamed, in stored order.
fn deltas(lines: &[Value]) -> Vec<String> {
    lines
        .iter()
        .filter(|l| l["message_type"] == "stream_event")
        .filter_map(|l| {
            let raw: Value = serde_json::from_str(l["content"].as_str()?).ok()?;
            raw.pointer("/event/delta/text").and_then(Value::as_str).map(str::to_string)
        })
        .collect()
}

/// The slow answer's pieces, as the fake API streams them: numbered, so a piece stored twice
/// or lost shows.
fn slow_pieces() -> Vec<String> {
    (0..PIECES).map(|i| format!("piece {i} ")).collect()
}

async fn idle_with_a_turn(service: &TestService, api: &FakeApi, project: &str, word: &str) -> (String, i64) {
    let session = service.launch(project, json!({})).await;
    let id = session["id"].as_str().expect("id").to_string();
    service.wait_status(&id, "idle", READY).await;
    api.on(word, Reply::Text(format!("{word} answered")));
    say(service, &id, word).await;
    let row = service.wait_for(&id, READY, |r| r["num_turns"] == 1 && r["status"] == "idle").await;
    (id, row["cli_pid"].as_i64().expect("pid"))
}

/// Starts the slow turn and waits until its first pieces are stored.
async fn working(service: &TestService, api: &FakeApi, id: &str) {
    api.on("take your time", Reply::Slow { text: "piece".into(), chunks: PIECES, delay: APART });
    say(service, id, "take your time").await;
    let deadline = std::time::Instant::now() + READY;
    while deltas(&all_lines(service, id).await).len() < 5 {
        assert!(std::time::Instant::now() < deadline, "the slow turn never streamed\n{}", service.log());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// After the restart: the same CLI, the turn finished with every piece stored once, in order.
async fn finished_whole(service: &TestService, id: &str, pid: i64) {
    let row = service.wait_for(id, READY, |r| r["num_turns"] == 2 && r["status"] == "idle").await;
    assert_eq!(row["cli_pid"].as_i64(), Some(pid), "the same CLI: {row}");
    assert!(row["closed_reason"].is_null(), "{row}");
    let pieces: Vec<String> =
        deltas(&all_lines(service, id).await).into_iter().filter(|d| d.starts_with("piece")).collect();
    assert_eq!(pieces, slow_pieces(), "every piece once, in order");
    let results = all_lines(service, id).await.iter().filter(|l| l["message_type"] == "result").count();
    assert_eq!(results, 2, "each result once");
}

#[actix_web::test]
async fn a_stop_leaves_idle_and_working_sessions_running_and_the_next_start_takes_them_back() {
    let api = FakeApi::start().await;
    let config = || ServiceConfig::new(real_cli()).api(&api.base_url);
    let mut service = TestService::start(config());
    let project = service.project("kept").await;
    let (resting, resting_pid) = idle_with_a_turn(&service, &api, &project, "first").await;
    let (busy, busy_pid) = idle_with_a_turn(&service, &api, &project, "second").await;
    working(&service, &api, &busy).await;

    let (took, status) = service.terminate();
    assert!(status.success(), "a clean stop: {status:?}\n{}", service.log());
    assert!(took < Duration::from_secs(5), "a detach is quick: {took:?}");
    assert!(alive(resting_pid as i32) && alive(busy_pid as i32), "the CLIs outlive the service");
    // The turn goes on while nobody listens.
    tokio::time::sleep(APART * 10).await;

    let service = TestService::start_in(service.into_dir(), config());
    let row = service.get_json(&format!("/api/sessions/{resting}")).await;
    assert_eq!((row["status"].as_str(), row["cli_pid"].as_i64()), (Some("idle"), Some(resting_pid)), "{row}");
    finished_whole(&service, &busy, busy_pid).await;

    api.on("third", Reply::Text("third answered".into()));
    say(&service, &resting, "third").await;
    let row = service.wait_for(&resting, READY, |r| r["num_turns"] == 2 && r["status"] == "idle").await;
    assert_eq!(row["cli_pid"].as_i64(), Some(resting_pid), "the next turn in the same CLI: {row}");
    assert!(
        api.requests().iter().any(|r| r.contains("third") && r.contains("first answered")),
        "the same conversation"
    );
}

#[actix_web::test]
async fn a_crash_of_the_service_mid_turn_loses_no_line_and_repeats_none() {
    let api = FakeApi::start().await;
    let config = || ServiceConfig::new(real_cli()).api(&api.base_url);
    let mut service = TestService::start(config());
    let project = service.project("crash").await;
    let (busy, busy_pid) = idle_with_a_turn(&service, &api, &project, "before").await;
    working(&service, &api, &busy).await;

    service.crash();
    assert!(alive(busy_pid as i32), "the CLI outlives the crash");
    tokio::time::sleep(APART * 10).await;

    let service = TestService::start_in(service.into_dir(), config());
    finished_whole(&service, &busy, busy_pid).await;
    api.on("after", Reply::Text("after answered".into()));
    say(&service, &busy, "after").await;
    service.wait_for(&busy, READY, |r| r["num_turns"] == 3 && r["status"] == "idle").await;
}

#[actix_web::test]
async fn a_paused_session_stops_streaming_and_finishes_whole_when_unpaused() {
    let api = FakeApi::start().await;
    let service = TestService::start(ServiceConfig::new(real_cli()).api(&api.base_url));
    let project = service.project("paused").await;
    let (id, pid) = idle_with_a_turn(&service, &api, &project, "before").await;
    working(&service, &api, &id).await;
    let res = service.post(&format!("/api/sessions/{id}/pause"), json!({})).await;
    assert_eq!(res.status().as_u16(), 200);
    // Frozen: its CLI writes nothing more (a piece already on its way may still land).
    tokio::time::sleep(Duration::from_millis(300)).await;
    let frozen = deltas(&all_lines(&service, &id).await).len();
    tokio::time::sleep(APART * 10).await;
    assert_eq!(deltas(&all_lines(&service, &id).await).len(), frozen, "nothing streamed while paused");
    let res = service.post(&format!("/api/sessions/{id}/unpause"), json!({})).await;
    assert_eq!(res.status().as_u16(), 200);
    finished_whole(&service, &id, pid).await;
}
