//! The janitor and sessions that come back, end to end with the real Claude Code CLI (2.1.330)
//! talking to the fake Messages API. The service runs with a short idle timeout and sweep
//! interval (settings, never long sleeps).

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::streams::{ws_connect, ws_next, ws_reply, ws_send};
use crate::support::fake_api::{FakeApi, Reply};
use crate::support::service::{real_cli, ServiceConfig, TestService};

const READY: Duration = Duration::from_secs(60);
const IDLE_TIMEOUT_MS: u64 = 1500;

/// The rig with the janitor sweeping every 200 ms and a 1.5 s idle timeout.
async fn janitor_rig() -> (FakeApi, TestService) {
    let api = FakeApi::start().await;
    let config = ServiceConfig::new(real_cli())
        .api(&api.base_url)
        .env("CONDUIT_SESSION_IDLE_TIMEOUT_MS", &IDLE_TIMEOUT_MS.to_string())
        .env("CONDUIT_JANITOR_INTERVAL_MS", "200");
    (api, TestService::start(config))
}

/// The rig with the default (one hour) idle timeout: nothing is closed behind the test's back.
async fn rig() -> (FakeApi, TestService) {
    let api = FakeApi::start().await;
    let service = TestService::start(ServiceConfig::new(real_cli()).api(&api.base_url));
    (api, service)
}

async fn idle_session(service: &TestService, project: &str) -> String {
    let session = service.launch(project, json!({})).await;
    let id = session["id"].as_str().expect("id").to_string();
    service.wait_status(&id, "idle", READY).await;
    id
}

async fn say(service: &TestService, id: &str, content: &str) -> reqwest::Response {
    service.post(&format!("/api/sessions/{id}/message"), json!({ "content": content })).await
}

async fn error_code(res: reqwest::Response) -> (u16, String) {
    let status = res.status().as_u16();
    let body: Value = res.json().await.expect("a JSON error");
    (status, body["error"]["code"].as_str().unwrap_or_default().to_string())
}

#[actix_web::test]
async fn the_janitor_closes_an_idle_session_but_not_a_busy_or_watched_one_and_a_message_resumes_it() {
    let (api, service) = janitor_rig().await;
    let project = service.project("sweep").await;

    // Busy: a reply streaming for 15 s (the CLI prints nothing until it is complete).
    let busy = idle_session(&service, &project).await;
    api.on("tell a long story", Reply::Slow { text: "once".into(), chunks: 150, delay: Duration::from_millis(100) });
    assert_eq!(say(&service, &busy, "tell a long story").await.status().as_u16(), 202);

    // Watched: a WebSocket client follows it from its launch on.
    let watched = service.launch(&project, json!({})).await["id"].as_str().expect("id").to_string();
    let ws_url = service.url(&format!("/api/sessions/{watched}/ws")).replacen("http://", "ws://", 1);
    let (res, ws) = awc::Client::new().ws(ws_url.as_str()).connect().await.expect("WebSocket connects");
    assert_eq!(res.status().as_u16(), 101);

    // Idle: one turn, then nothing.
    let idle = idle_session(&service, &project).await;
    api.on("remember the word pelican", Reply::Text("noted, the pelican-answer".into()));
    assert_eq!(say(&service, &idle, "remember the word pelican").await.status().as_u16(), 202);
    let before = service.wait_for(&idle, READY, |r| r["num_turns"] == 1 && r["status"] == "idle").await;
    let went_idle = Instant::now();

    let closed = service.wait_status(&idle, "closed", Duration::from_secs(15)).await;
    assert_eq!(closed["closed_reason"], "idle_timeout", "{closed}");
    assert!(went_idle.elapsed() >= Duration::from_millis(IDLE_TIMEOUT_MS), "not before the timeout");
    let old_pid = before["cli_pid"].as_i64().expect("pid");

    // The other two have been quiet as long, and are kept: one runs a turn, one is watched.
    tokio::time::sleep(Duration::from_millis(IDLE_TIMEOUT_MS + 500)).await;
    let busy_row = service.get_json(&format!("/api/sessions/{busy}")).await;
    assert_eq!(busy_row["status"], "active", "a running turn is never reaped: {busy_row}");
    let watched_row = service.get_json(&format!("/api/sessions/{watched}")).await;
    assert_eq!(watched_row["status"], "idle", "a watched session is kept: {watched_row}");
    assert!(watched_row["closed_reason"].is_null());
    // Once nobody watches, it goes the same way.
    drop(ws);
    let unwatched = service.wait_status(&watched, "closed", Duration::from_secs(15)).await;
    assert_eq!(unwatched["closed_reason"], "idle_timeout");

    // A message to the session the janitor closed brings it back, same id, same conversation.
    api.on("which word did I ask you to keep", Reply::Text("that was the pelican".into()));
    let res = say(&service, &idle, "which word did I ask you to keep").await;
    assert_eq!(res.status().as_u16(), 202, "resumed and queued");
    let outcome: Value = res.json().await.expect("json");
    assert_eq!(outcome["queued"], true, "it waits for the resumed CLI: {outcome}");
    let after = service.wait_for(&idle, READY, |r| r["num_turns"] == 2 && r["status"] == "idle").await;
    assert_eq!(after["id"], before["id"]);
    assert!(after["closed_reason"].is_null() && after["closed_at"].is_null() && after["error_message"].is_null());
    assert_ne!(after["cli_pid"].as_i64(), Some(old_pid), "a new CLI process");
    assert_eq!(after["session_id"], before["session_id"], "the CLI continued its own session");
    let (cost_before, cost_after) = (before["total_cost_usd"].as_f64(), after["total_cost_usd"].as_f64());
    assert!(cost_after > cost_before, "totals carried on: {cost_before:?} then {cost_after:?}");
    assert!(after["total_input_tokens"].as_i64() > before["total_input_tokens"].as_i64());
    let request = api
        .requests()
        .into_iter()
        .find(|r| r.contains("which word did I ask you to keep"))
        .expect("the new turn reached the API");
    assert!(
        request.contains("remember the word pelican") && request.contains("pelican-answer"),
        "the earlier turn went to the API again"
    );
    // Lines are written behind: give the last result a moment to be stored.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let lines = service.get_json(&format!("/api/sessions/{idle}/messages?limit=1000")).await;
        let results = lines.as_array().expect("array").iter().filter(|m| m["message_type"] == "result").count();
        if results == 2 || Instant::now() > deadline {
            assert_eq!(results, 2, "one history across both processes");
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[actix_web::test]
async fn resume_brings_back_a_crashed_session_and_refuses_what_it_cannot() {
    let (api, service) = rig().await;
    let project = service.project("phoenix").await;
    let id = idle_session(&service, &project).await;
    api.on("remember the colour turquoise", Reply::Text("noted, the turquoise-answer".into()));
    say(&service, &id, "remember the colour turquoise").await;
    let before = service.wait_for(&id, READY, |r| r["num_turns"] == 1 && r["status"] == "idle").await;

    // Live: 409. Unknown: 404.
    let (status, code) = error_code(service.post(&format!("/api/sessions/{id}/resume"), json!({})).await).await;
    assert_eq!((status, code.as_str()), (409, "session_live"));
    let unknown = uuid::Uuid::new_v4();
    for path in [format!("/api/sessions/{unknown}/resume"), "/api/sessions/not-a-uuid/resume".to_string()] {
        let (status, code) = error_code(service.post(&path, json!({})).await).await;
        assert_eq!((status, code.as_str()), (404, "not_found"), "{path}");
    }

    // Crash: the CLI killed; a message does not bring it back, an explicit resume does.
    let pid = before["cli_pid"].as_i64().expect("pid");
    // SAFETY: signalling the CLI the test's own service started.
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    let crashed = service.wait_status(&id, "error", Duration::from_secs(10)).await;
    assert_eq!(crashed["closed_reason"], "cli_exited", "{crashed}");
    assert_eq!(say(&service, &id, "hello?").await.status().as_u16(), 409, "only idle closes resume by themselves");
    let res = service.post(&format!("/api/sessions/{id}/resume"), json!({})).await;
    assert_eq!(res.status().as_u16(), 200);
    let resumed: Value = res.json().await.expect("json");
    assert_eq!((resumed["id"].as_str(), resumed["status"].as_str()), (Some(id.as_str()), Some("starting")));
    assert!(resumed["error_message"].is_null() && resumed["closed_reason"].is_null(), "{resumed}");
    service.wait_status(&id, "idle", READY).await;
    api.on("which colour was it", Reply::Text("turquoise".into()));
    assert_eq!(say(&service, &id, "which colour was it").await.status().as_u16(), 202);
    let after = service.wait_for(&id, READY, |r| r["num_turns"] == 2 && r["status"] == "idle").await;
    assert!(after["total_cost_usd"].as_f64() > before["total_cost_usd"].as_f64(), "{after}");
    let request = api.requests().into_iter().find(|r| r.contains("which colour was it")).expect("the turn");
    assert!(request.contains("turquoise-answer"), "the conversation continued after the crash");

    // Closed on request: recorded as such; a session whose CLI never ran a turn has nothing to
    // resume.
    let fresh = idle_session(&service, &project).await;
    let closed: Value = service.delete(&format!("/api/sessions/{fresh}")).await.json().await.expect("json");
    assert_eq!(closed["closed_reason"], "requested", "{closed}");
    let (status, code) = error_code(service.post(&format!("/api/sessions/{fresh}/resume"), json!({})).await).await;
    assert_eq!((status, code.as_str()), (409, "not_resumable"));

    // A resume the CLI refuses (its transcript is gone) reports the CLI's own reason.
    let closed: Value = service.delete(&format!("/api/sessions/{id}")).await.json().await.expect("json");
    assert_eq!(closed["status"], "closed");
    std::fs::remove_dir_all(service.dir.path().join("home/.claude/projects")).expect("remove the CLI's transcripts");
    let res = service.post(&format!("/api/sessions/{id}/resume"), json!({})).await;
    assert_eq!(res.status().as_u16(), 200);
    let refused = service.wait_status(&id, "error", Duration::from_secs(15)).await;
    let message = refused["error_message"].as_str().unwrap_or_default();
    assert!(message.contains("of resuming") && message.contains("No conversation found"), "{refused}");
    assert_eq!(refused["closed_reason"], "cli_exited");
    assert_eq!(refused["num_turns"], 2, "the refusal is not a turn: {refused}");
}

/// A session left by the service (its crash, then its stop) is not lost: its next message
/// resumes it by itself, same id, same conversation.
#[actix_web::test]
async fn a_session_left_by_a_crash_or_a_stop_of_the_service_resumes_on_its_next_message() {
    let (api, service) = rig().await;
    let project = service.project("restart").await;
    let id = idle_session(&service, &project).await;
    api.on("remember the number forty-two", Reply::Text("noted, the forty-two-answer".into()));
    say(&service, &id, "remember the number forty-two").await;
    let before = service.wait_for(&id, READY, |r| r["num_turns"] == 1 && r["status"] == "idle").await;

    // The service crashes, and the session's keeper is lost while it is away: the next start
    // finds its socket but no keeper.
    let cli = before["cli_pid"].as_i64().expect("pid") as i32;
    let stat = std::fs::read_to_string(format!("/proc/{cli}/stat")).expect("the CLI runs");
    let keeper: i32 = stat[stat.rfind(')').expect("stat") + 2..]
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .expect("ppid");
    let dir = service.into_dir();
    // SAFETY: SIGKILL to the keeper of the test's own session.
    unsafe { libc::kill(keeper, libc::SIGKILL) };
    assert!(crate::support::procs::gone_within(cli, Duration::from_secs(5)).await, "the CLI went with its keeper");
    let stopping = ServiceConfig::new(real_cli()).api(&api.base_url).env("CONDUIT_ON_SHUTDOWN", "stop");
    let mut restarted = TestService::start_in(dir, stopping);
    let row = restarted.get_json(&format!("/api/sessions/{id}")).await;
    assert_eq!((row["status"].as_str(), row["closed_reason"].as_str()), (Some("error"), Some("crashed")), "{row}");
    api.on("which number was it", Reply::Text("forty-two, the restart-answer".into()));
    let res = say(&restarted, &id, "which number was it").await;
    assert_eq!(res.status().as_u16(), 202, "a message resumes a session the crash ended");
    let after = restarted.wait_for(&id, READY, |r| r["num_turns"] == 2 && r["status"] == "idle").await;
    assert_eq!(after["session_id"], before["session_id"]);
    let request = api.requests().into_iter().find(|r| r.contains("which number was it")).expect("the turn");
    assert!(request.contains("forty-two-answer"), "the conversation survived the crash");

    let (_, status) = restarted.terminate();
    assert!(status.success(), "the service exited with {status}\n{}", restarted.log());
    let again = TestService::start_in(restarted.into_dir(), ServiceConfig::new(real_cli()).api(&api.base_url));
    let row = again.get_json(&format!("/api/sessions/{id}")).await;
    assert_eq!((row["status"].as_str(), row["closed_reason"].as_str()), (Some("closed"), Some("shutdown")));
    api.on("and after the stop", Reply::Text("still forty-two".into()));
    assert_eq!(say(&again, &id, "and after the stop").await.status().as_u16(), 202, "a message resumes it");
    again.wait_for(&id, READY, |r| r["num_turns"] == 3 && r["status"] == "idle").await;
    let request = api.requests().into_iter().find(|r| r.contains("and after the stop")).expect("the turn");
    assert!(request.contains("restart-answer"), "the conversation survived the stop");
}

/// The WebSocket `message` action takes the same way in as HTTP: a session the janitor closed
/// as idle is resumed for it, same id, same conversation.
#[actix_web::test]
async fn a_websocket_message_resumes_a_session_closed_as_idle() {
    let (api, service) = janitor_rig().await;
    let project = service.project("ws-resume").await;
    let id = idle_session(&service, &project).await;
    api.on("remember the word heron", Reply::Text("noted, the heron-answer".into()));
    assert_eq!(say(&service, &id, "remember the word heron").await.status().as_u16(), 202);
    let before = service.wait_for(&id, READY, |r| r["num_turns"] == 1 && r["status"] == "idle").await;
    let closed = service.wait_status(&id, "closed", Duration::from_secs(15)).await;
    assert_eq!(closed["closed_reason"], "idle_timeout", "{closed}");

    let mut ws = ws_connect(&service, &id).await;
    assert_eq!(ws_next(&mut ws, Duration::from_secs(10)).await["event"], "connected");
    api.on("which bird did I name", Reply::Text("that was the heron".into()));
    ws_send(&mut ws, json!({"action": "message", "content": "which bird did I name"}).to_string()).await;
    let (reply, _) = ws_reply(&mut ws, READY).await;
    assert_eq!(reply["event"], "ack", "the message was taken: {reply}");
    assert_eq!(reply["data"]["queued"], true, "it waits for the resumed CLI: {reply}");
    let after = service.wait_for(&id, READY, |r| r["num_turns"] == 2 && r["status"] == "idle").await;
    assert!(after["closed_reason"].is_null() && after["error_message"].is_null(), "{after}");
    assert_ne!(after["cli_pid"], before["cli_pid"], "a new CLI process");
    assert_eq!(after["session_id"], before["session_id"], "the CLI continued its own session");
    let request =
        api.requests().into_iter().find(|r| r.contains("which bird did I name")).expect("the turn reached the API");
    assert!(request.contains("heron-answer"), "the earlier turn went to the API again");
}
