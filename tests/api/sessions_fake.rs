//! Sessions end to end against the fake CLI (examples/fake_cli.rs): the edge cases the real CLI
//! will not produce on demand. Each test runs its own `conduit` process; the scenario is chosen
//! per session with `"model": "fake-<scenario>"`.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::procs::running;
use crate::support::service::{fake_cli, ServiceConfig, TestService};

/// Generous: many services and CLIs run in parallel.
const READY: Duration = Duration::from_secs(20);

fn start() -> TestService {
    TestService::start(ServiceConfig::new(fake_cli()))
}

fn id_of(session: &Value) -> String {
    session["id"].as_str().expect("the session has an id").to_string()
}

fn pid_of(session: &Value) -> i32 {
    let pid = session["cli_pid"].as_i64().expect("the session has a cli_pid");
    i32::try_from(pid).expect("the pid fits an i32")
}

/// Alive: signalable and not a zombie.
fn alive(pid: i32) -> bool {
    assert!(pid > 1, "refusing to probe pid {pid}");
    // SAFETY: signal 0 only checks that the process exists; pid > 1.
    if unsafe { libc::kill(pid, 0) } != 0 {
        return false;
    }
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(text) => {
            let state = text.rfind(')').and_then(|i| text[i + 1..].split_whitespace().next());
            state != Some("Z")
        }
        Err(_) => false,
    }
}

/// Polls until `pid` is gone; true if it went within `within`.
async fn gone_within(pid: i32, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    loop {
        if !alive(pid) {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn send(service: &TestService, id: &str, content: &str) -> reqwest::Response {
    service.post(&format!("/api/sessions/{id}/message"), json!({ "content": content })).await
}

async fn body_of(res: reqwest::Response) -> Value {
    res.json().await.expect("a JSON body")
}

/// Every stored line of a session, oldest first, paging 1000 at a time.
async fn all_messages(service: &TestService, id: &str) -> Vec<Value> {
    let mut rows = Vec::new();
    loop {
        let page = service.get_json(&format!("/api/sessions/{id}/messages?limit=1000&offset={}", rows.len())).await;
        let page = page.as_array().expect("an array of messages").clone();
        let n = page.len();
        rows.extend(page);
        if n < 1000 {
            return rows;
        }
    }
}

/// Lines are written behind: polls the stored lines until `done` holds.
async fn wait_messages(
    service: &TestService,
    id: &str,
    within: Duration,
    done: impl Fn(&[Value]) -> bool,
) -> Vec<Value> {
    let deadline = Instant::now() + within;
    loop {
        let rows = all_messages(service, id).await;
        if done(&rows) {
            return rows;
        }
        assert!(
            Instant::now() < deadline,
            "the stored lines never reached the expected state ({} rows; last: {:?})\n{}",
            rows.len(),
            rows.last(),
            service.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn of_type<'a>(rows: &'a [Value], kind: &str) -> Vec<&'a Value> {
    rows.iter().filter(|m| m["message_type"] == kind).collect()
}

fn content(row: &Value) -> &str {
    row["content"].as_str().expect("a message has content")
}

async fn active_sessions(service: &TestService) -> i64 {
    service.get_json("/api/health").await["active_sessions"].as_i64().expect("active_sessions")
}

async fn wait_active_sessions(service: &TestService, expected: i64, within: Duration) {
    let deadline = Instant::now() + within;
    loop {
        let n = active_sessions(service).await;
        if n == expected {
            return;
        }
        assert!(Instant::now() < deadline, "active_sessions stayed {n}, expected {expected}\n{}", service.log());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Launches a session with the fake scenario `model` (None: the default) and waits for idle.
async fn idle_session(service: &TestService, project: &str, model: Option<&str>) -> Value {
    let body = match model {
        Some(m) => json!({ "model": m }),
        None => json!({}),
    };
    let session = service.launch(project, body).await;
    service.wait_status(&id_of(&session), "idle", READY).await
}

/// Sends one message and waits for the turn to finish (`num_turns` reaching `turns`).
async fn one_turn(service: &TestService, id: &str, text: &str, turns: i64) -> Value {
    let res = send(service, id, text).await;
    assert_eq!(res.status().as_u16(), 202, "send {text:?}");
    service.wait_for(id, READY, |r| r["num_turns"] == turns && r["status"] == "idle").await
}

#[actix_web::test]
async fn garbage_lines_are_recorded_as_invalid_and_the_session_goes_on() {
    let service = start();
    let project = service.project("garbage").await;
    let session = idle_session(&service, &project, Some("fake-garbage")).await;
    let id = id_of(&session);

    let after = one_turn(&service, &id, "hello", 1).await;
    assert_eq!(after["status"], "idle");
    assert!(after["error_message"].is_null(), "{after}");

    let rows = wait_messages(&service, &id, READY, |rows| !of_type(rows, "result").is_empty()).await;
    let invalid: Vec<&str> = of_type(&rows, "invalid").into_iter().map(content).collect();
    assert!(invalid.contains(&"this is not json"), "invalid rows: {invalid:?}");
    assert!(invalid.contains(&"[1,2,3]"), "invalid rows: {invalid:?}");
    let assistant: Vec<&str> = of_type(&rows, "assistant").into_iter().map(content).collect();
    assert!(
        assistant.contains(&r#"{"type":"assistant","split":true}"#),
        "the split line is joined and its CRLF stripped: {assistant:?}"
    );
    assert!(of_type(&rows, "invalid").iter().all(|r| r["direction"] == "from_cli"));

    // Still live: a second turn works.
    let again = one_turn(&service, &id, "again", 2).await;
    assert_eq!(again["status"], "idle");
}

#[actix_web::test]
async fn a_16_mib_line_is_kept_whole() {
    let service = start();
    let project = service.project("huge").await;
    let id = id_of(&idle_session(&service, &project, Some("fake-huge")).await);

    let after = one_turn(&service, &id, "big", 1).await;
    assert_eq!(after["status"], "idle");

    let deadline = Instant::now() + READY;
    loop {
        let rows = service.get_json(&format!("/api/sessions/{id}/messages?limit=10")).await;
        let rows = rows.as_array().expect("array");
        if rows.iter().any(|r| r["message_type"] == "result") {
            let longest = of_type(rows, "assistant").iter().map(|r| content(r).len()).max().unwrap_or(0);
            assert!(longest > 16 * 1024 * 1024, "the longest assistant line is {longest} bytes");
            let big = of_type(rows, "assistant")
                .into_iter()
                .find(|r| content(r).len() > 16 * 1024 * 1024)
                .expect("the big line");
            let parsed: Value = serde_json::from_str(content(big)).expect("the big line is the CLI's JSON");
            let text = parsed["message"]["content"][0]["text"].as_str().expect("text");
            assert_eq!(text.len(), 16 * 1024 * 1024);
            break;
        }
        assert!(Instant::now() < deadline, "the result line was never stored\n{}", service.log());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let session = service.get_json(&format!("/api/sessions/{id}")).await;
    assert_eq!(session["status"], "idle", "{session}");
}

#[actix_web::test]
async fn a_flood_of_20000_lines_is_stored_in_order() {
    let service = start();
    let project = service.project("flood").await;
    let id = id_of(&idle_session(&service, &project, Some("fake-flood-20000")).await);

    let after = one_turn(&service, &id, "flood", 1).await;
    assert_eq!(after["status"], "idle");

    let rows = wait_messages(&service, &id, READY, |rows| !of_type(rows, "result").is_empty()).await;
    let events = of_type(&rows, "stream_event");
    assert_eq!(events.len(), 20000, "stream_event rows");
    let text_of = |row: &Value| -> String {
        let v: Value = serde_json::from_str(content(row)).expect("a stream_event line is JSON");
        v["event"]["delta"]["text"].as_str().expect("delta text").to_string()
    };
    assert_eq!(text_of(events[0]), "t0");
    assert_eq!(text_of(events[19999]), "t19999");
    for (i, row) in events.iter().enumerate() {
        assert_eq!(text_of(row), format!("t{i}"), "line {i} out of order");
    }
    let ids: Vec<i64> = rows.iter().map(|r| r["id"].as_i64().expect("id")).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "pages are ordered and do not overlap");
}

#[actix_web::test]
async fn a_cli_exiting_mid_turn_errors_the_session() {
    let service = start();
    let project = service.project("exit").await;
    let id = id_of(&idle_session(&service, &project, Some("fake-exit-mid-turn")).await);

    let res = send(&service, &id, "boom").await;
    assert_eq!(res.status().as_u16(), 202);
    let failed = service.wait_status(&id, "error", Duration::from_secs(5)).await;
    let message = failed["error_message"].as_str().expect("an error message");
    assert!(message.contains("exited with status 3"), "{message}");
    assert!(message.contains("crashing mid-turn"), "{message}");

    let res = send(&service, &id, "anyone there?").await;
    assert_eq!(res.status().as_u16(), 409);
    let body = body_of(res).await;
    assert_eq!(body["error"]["code"], "session_not_live", "{body}");
}

#[actix_web::test]
async fn a_cli_exiting_before_initialize_errors_the_session() {
    let service = start();
    let project = service.project("noinit").await;
    let session = service.launch(&project, json!({"model": "fake-no-init"})).await;
    let id = id_of(&session);

    let failed = service.wait_status(&id, "error", READY).await;
    let message = failed["error_message"].as_str().expect("an error message");
    assert!(message.contains("exited with status 1"), "{message}");
    assert!(message.contains("refuses to start"), "{message}");
    wait_active_sessions(&service, 0, Duration::from_secs(5)).await;
}

#[actix_web::test]
async fn a_missing_cli_errors_the_launch() {
    let service = TestService::start(ServiceConfig::new("/nonexistent/claude".into()));
    let project = service.project("nocli").await;
    let res = service.post(&format!("/api/projects/{project}/sessions"), json!({})).await;
    assert_eq!(res.status().as_u16(), 503, "a missing CLI is refused before anything starts");
    let body = body_of(res).await;
    assert_eq!(body["error"]["code"], "agent_unavailable", "{body}");
    let message = body["error"]["message"].as_str().expect("an error message");
    assert!(message.contains("/nonexistent/claude") && message.contains("CONDUIT_CLI_PATH"), "{message}");
    assert_eq!(active_sessions(&service).await, 0);
    let sessions = service.get_json(&format!("/api/projects/{project}/sessions")).await;
    assert_eq!(sessions.as_array().map(Vec::len), Some(0), "no session was recorded: {sessions}");
}

#[actix_web::test]
async fn closing_a_cli_that_ignores_sigterm_kills_it_after_the_grace() {
    let service = start();
    let project = service.project("stubborn").await;
    let session = idle_session(&service, &project, Some("fake-ignore-term")).await;
    let (id, pid) = (id_of(&session), pid_of(&session));
    assert!(alive(pid));

    let started = Instant::now();
    let res = service.delete(&format!("/api/sessions/{id}")).await;
    let took = started.elapsed();
    assert_eq!(res.status().as_u16(), 200);
    let closed = body_of(res).await;
    assert_eq!(closed["status"], "closed", "{closed}");
    assert!(took >= Duration::from_secs(5), "closed after {took:?}: before the grace ended");
    assert!(took < Duration::from_secs(6), "closed after {took:?}");
    assert!(!alive(pid), "the CLI {pid} is still alive");
}

#[actix_web::test]
async fn closing_kills_grandchildren_including_a_setsid_escapee() {
    let service = start();
    let project = service.project("family").await;
    let session = idle_session(&service, &project, Some("fake-grandchild")).await;
    let (id, pid) = (id_of(&session), pid_of(&session));

    let rows = wait_messages(&service, &id, READY, |rows| {
        of_type(rows, "stderr").iter().any(|r| content(r).starts_with("grandchildren "))
    })
    .await;
    let line = of_type(&rows, "stderr")
        .into_iter()
        .map(content)
        .find(|c| c.starts_with("grandchildren "))
        .expect("the grandchildren line");
    let pids: Vec<i32> =
        line["grandchildren ".len()..].split_whitespace().flat_map(|nap| running(&["sleep", nap])).collect();
    assert_eq!(pids.len(), 2, "{line}");
    for p in &pids {
        assert!(alive(*p), "grandchild {p} is alive before the close");
    }

    let res = service.delete(&format!("/api/sessions/{id}")).await;
    assert_eq!(res.status().as_u16(), 200);
    let closed = body_of(res).await;
    assert_eq!(closed["status"], "closed", "{closed}");
    for p in &pids {
        assert!(!alive(*p), "grandchild {p} outlived its session");
    }
    assert!(!alive(pid), "the CLI {pid} outlived its session");
}

#[actix_web::test]
async fn a_cli_killed_with_sigkill_errors_only_its_session() {
    let service = start();
    let project = service.project("kill9").await;
    let victim = idle_session(&service, &project, None).await;
    let others = [idle_session(&service, &project, None).await, idle_session(&service, &project, None).await];
    let (id, pid) = (id_of(&victim), pid_of(&victim));

    assert!(pid > 1);
    // SAFETY: SIGKILL to one CLI process this test's service started (pid > 1).
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
    let failed = service.wait_status(&id, "error", Duration::from_millis(1500)).await;
    let message = failed["error_message"].as_str().expect("an error message");
    assert!(message.contains("signal 9"), "{message}");

    for (n, other) in others.iter().enumerate() {
        let oid = id_of(other);
        let row = service.get_json(&format!("/api/sessions/{oid}")).await;
        assert_eq!(row["status"], "idle", "{row}");
        let after = one_turn(&service, &oid, &format!("still here {n}"), 1).await;
        assert_eq!(after["status"], "idle");
    }
}

#[actix_web::test]
async fn capacity_limits_answer_429() {
    let service = start();
    let project = service.project("narrow").await;
    let res =
        service.client.put(service.url(&format!("/api/projects/{project}"))).json(&json!({"max_sessions": 1})).send();
    let res = res.await.expect("request");
    assert_eq!(res.status().as_u16(), 200);

    let first = service.launch(&project, json!({})).await;
    let res = service.post(&format!("/api/projects/{project}/sessions"), json!({})).await;
    assert_eq!(res.status().as_u16(), 429);
    let body = body_of(res).await;
    assert_eq!(body["error"]["code"], "capacity_reached", "{body}");
    let message = body["error"]["message"].as_str().expect("message");
    assert!(message.contains("narrow") && message.contains("limit of 1"), "{message}");

    let res = service.delete(&format!("/api/sessions/{}", id_of(&first))).await;
    assert_eq!(res.status().as_u16(), 200);
    let res = service.post(&format!("/api/projects/{project}/sessions"), json!({})).await;
    assert_eq!(res.status().as_u16(), 201, "a launch after closing the first: {}", body_of(res).await);

    // The global limit.
    let service = TestService::start(ServiceConfig::new(fake_cli()).env("CONDUIT_MAX_SESSIONS_GLOBAL", "2"));
    let a = service.project("a").await;
    let b = service.project("b").await;
    service.launch(&a, json!({})).await;
    service.launch(&b, json!({})).await;
    let res = service.post(&format!("/api/projects/{a}/sessions"), json!({})).await;
    assert_eq!(res.status().as_u16(), 429);
    let body = body_of(res).await;
    assert_eq!(body["error"]["code"], "capacity_reached", "{body}");
    let message = body["error"]["message"].as_str().expect("message");
    assert!(message.contains("CONDUIT_MAX_SESSIONS_GLOBAL"), "{message}");
}

#[actix_web::test]
async fn external_key_is_idempotent_under_concurrency() {
    let service = start();
    let project = service.project("keys").await;
    let path = format!("/api/projects/{project}/sessions");

    let launches = (0..20).map(|_| service.post(&path, json!({"external_key": "k1"})));
    let responses = futures_util::future::join_all(launches).await;
    let mut created = 0;
    let mut existing = 0;
    let mut ids = Vec::new();
    for res in responses {
        match res.status().as_u16() {
            201 => created += 1,
            200 => existing += 1,
            other => panic!("unexpected status {other}: {}", body_of(res).await),
        }
        ids.push(id_of(&body_of(res).await));
    }
    assert_eq!((created, existing), (1, 19));
    let first = ids[0].clone();
    assert!(ids.iter().all(|i| *i == first), "one session for the key: {ids:?}");

    let res = service.post(&path, json!({"external_key": "k2"})).await;
    assert_eq!(res.status().as_u16(), 201);
    let other = id_of(&body_of(res).await);
    assert_ne!(other, first);

    let res = service.delete(&format!("/api/sessions/{first}")).await;
    assert_eq!(res.status().as_u16(), 200);
    assert_eq!(body_of(res).await["status"], "closed");
    let res = service.post(&path, json!({"external_key": "k1"})).await;
    assert_eq!(res.status().as_u16(), 201, "k1 is free once its session is closed");
    let again = id_of(&body_of(res).await);
    assert_ne!(again, first);
    assert_ne!(again, other);
}

#[actix_web::test]
async fn turns_queue_behind_a_running_one_up_to_100() {
    let service = start();
    let project = service.project("stall").await;
    let id = id_of(&idle_session(&service, &project, Some("fake-stall")).await);

    let res = send(&service, &id, "q0").await;
    assert_eq!(res.status().as_u16(), 202);
    assert_eq!(body_of(res).await, json!({"queued": false, "position": 0}));
    for i in 1..=100 {
        let res = send(&service, &id, &format!("q{i}")).await;
        assert_eq!(res.status().as_u16(), 202, "message {i}");
        assert_eq!(body_of(res).await, json!({"queued": true, "position": i}), "message {i}");
    }
    let res = send(&service, &id, "q101").await;
    assert_eq!(res.status().as_u16(), 429);
    let body = body_of(res).await;
    assert_eq!(body["error"]["code"], "queue_full", "{body}");

    let rows = all_messages(&service, &id).await;
    let users: Vec<String> = rows
        .iter()
        .filter(|r| r["message_type"] == "user" && r["direction"] == "to_cli")
        .map(|r| {
            let v: Value = serde_json::from_str(content(r)).expect("a user line is JSON");
            v["message"]["content"].as_str().expect("content").to_string()
        })
        .collect();
    let expected: Vec<String> = (0..=100).map(|i| format!("q{i}")).collect();
    assert_eq!(users, expected, "every accepted message is stored, in order; the refused one is not");
    let row = service.get_json(&format!("/api/sessions/{id}")).await;
    assert_eq!(row["status"], "active", "{row}");
}

#[actix_web::test]
async fn turns_sent_quickly_run_in_order() {
    let service = start();
    let project = service.project("order").await;
    let id = id_of(&idle_session(&service, &project, None).await);

    for i in 0..5 {
        let res = send(&service, &id, &format!("m{i}")).await;
        assert_eq!(res.status().as_u16(), 202, "m{i}");
    }
    let done = service.wait_for(&id, READY, |r| r["num_turns"] == 5 && r["status"] == "idle").await;
    assert_eq!(done["num_turns"], 5);

    let rows = wait_messages(&service, &id, READY, |rows| of_type(rows, "result").len() == 5).await;
    let results: Vec<String> = of_type(&rows, "result")
        .into_iter()
        .map(|r| {
            let v: Value = serde_json::from_str(content(r)).expect("a result line is JSON");
            v["result"].as_str().expect("result").to_string()
        })
        .collect();
    let expected: Vec<String> = (0..5).map(|i| format!("echo: m{i}")).collect();
    assert_eq!(results, expected);
}

#[actix_web::test]
async fn a_restart_after_a_crash_errors_live_sessions_and_ends_their_cli() {
    // Without keepers (the CLI is the service's own child): what a crash leaves is ended at the
    // next start (with keepers, keepers_* test that the session is attached to again).
    let unkept = || ServiceConfig::new(fake_cli()).env("CONDUIT_KEEPERS", "false");
    let service = TestService::start(unkept());
    let project = service.project("crash").await;
    let session = idle_session(&service, &project, Some("fake-ignore-term")).await;
    let (id, pid) = (id_of(&session), pid_of(&session));

    let dir = service.into_dir();
    assert!(alive(pid), "the CLI {pid} survives the service's crash");

    let service = TestService::start_in(dir, unkept());
    let row = service.get_json(&format!("/api/sessions/{id}")).await;
    assert_eq!(row["status"], "error", "{row}");
    assert_eq!(row["error_message"], "service restarted", "{row}");
    assert_eq!(row["closed_reason"], "service_restarted", "{row}");
    assert!(gone_within(pid, Duration::from_secs(5)).await, "the leftover CLI {pid} is still alive\n{}", service.log());
    assert_eq!(active_sessions(&service).await, 0);
}

#[actix_web::test]
async fn sigterm_ends_every_session_and_records_them_closed() {
    // `stop` mode: the sessions end with the service (keepers_* test `detach`, the default).
    let mut service = TestService::start(ServiceConfig::new(fake_cli()).env("CONDUIT_ON_SHUTDOWN", "stop"));
    let project = service.project("shutdown").await;
    let mut sessions = Vec::new();
    for _ in 0..3 {
        sessions.push(service.launch(&project, json!({})).await);
    }
    sessions.push(service.launch(&project, json!({"model": "fake-ignore-term"})).await);
    let mut pids = Vec::new();
    for s in &sessions {
        let idle = service.wait_status(&id_of(s), "idle", READY).await;
        pids.push(pid_of(&idle));
    }
    let answered = id_of(&sessions[0]);
    one_turn(&service, &answered, "before the end", 1).await;

    let (took, status) = service.terminate();
    assert!(status.success(), "the service exited with {status}\n{}", service.log());
    assert!(took < Duration::from_millis(6500), "shutdown took {took:?}\n{}", service.log());
    for pid in &pids {
        assert!(!alive(*pid), "the CLI {pid} outlived the service");
    }

    let dir = service.into_dir();
    let service = TestService::start_in(dir, ServiceConfig::new(fake_cli()));
    for s in &sessions {
        let row = service.get_json(&format!("/api/sessions/{}", id_of(s))).await;
        assert_eq!(row["status"], "closed", "{row}");
        assert!(row["error_message"].is_null(), "{row}");
        assert_eq!(row["closed_reason"], "shutdown", "{row}");
    }
    let row = service.get_json(&format!("/api/sessions/{answered}")).await;
    assert_eq!(row["num_turns"], 1, "{row}");
    let rows = all_messages(&service, &answered).await;
    let results = of_type(&rows, "result");
    assert_eq!(results.len(), 1, "the answered turn's result is stored");
    let v: Value = serde_json::from_str(content(results[0])).expect("a result line is JSON");
    assert_eq!(v["result"], "echo: before the end");
}
