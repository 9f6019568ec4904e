//! Terminals end to end: a real shell in a real PTY (in the real sandbox unless the project turns
//! it off), over a real WebSocket. Every wait reads until the expected text appears, with a
//! generous deadline; typed commands compute their answer (`$((6*7))`) so the echo of what was
//! typed never passes for the answer.

use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;

use crate::helpers::{error_code, spawn_app, spawn_app_with, TestApp};
use crate::support::procs::{alive, kill_all};

/// Generous: shells start in sandboxes while many tests run in parallel.
pub(crate) const WITHIN: Duration = Duration::from_secs(20);

pub(crate) type Socket = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// Processes carrying the terminal's marker (the id), wherever they are.
pub(crate) fn marked(id: &str) -> Vec<i32> {
    let wanted = format!("CONDUIT_SESSION_MARKER={id}");
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()))
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|var| var == wanted.as_bytes()))
                && alive(*pid)
        })
        .collect()
}

/// Kills what a terminal left if the test fails before it ends it.
pub(crate) struct Reap(pub(crate) String);

impl Drop for Reap {
    fn drop(&mut self) {
        kill_all(&marked(&self.0));
    }
}

pub(crate) async fn project(app: &TestApp, name: &str, sandbox: &str) -> String {
    let folder = app.mkdir(name);
    let body = json!({"name": name, "folder_path": folder, "sandbox": sandbox});
    let res = app.post_json("/api/projects", &body).await;
    assert_eq!(res.status().as_u16(), 201, "create project");
    let project: Value = res.json().await.expect("json");
    project["id"].as_str().expect("id").to_string()
}

/// Starts a terminal (201 expected); returns its JSON.
pub(crate) async fn start(app: &TestApp, path: &str, body: Value) -> Value {
    let res = app.post_json(path, &body).await;
    let status = res.status().as_u16();
    let text = res.text().await.unwrap_or_default();
    assert_eq!(status, 201, "start a terminal: {text}");
    serde_json::from_str(&text).expect("json")
}

pub(crate) fn id_of(terminal: &Value) -> String {
    terminal["id"].as_str().expect("id").to_string()
}

pub(crate) async fn connect(app: &TestApp, id: &str) -> Socket {
    let url = format!("ws://127.0.0.1:{}/api/terminals/{id}/ws", app.port);
    let (socket, _) = tokio_tungstenite::connect_async(url).await.expect("the WebSocket connects");
    socket
}

pub(crate) async fn type_in(socket: &mut Socket, keys: &str) {
    socket.send(Message::Binary(keys.as_bytes().to_vec())).await.expect("send keys");
}

/// Reads binary frames until their text holds `needle`; returns everything read. Text frames
/// (control messages) are collected separately into `controls`.
pub(crate) async fn read_until(socket: &mut Socket, needle: &str, controls: &mut Vec<Value>) -> String {
    let deadline = Instant::now() + WITHIN;
    let mut seen = String::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, socket.next()).await {
            Ok(Some(Ok(Message::Binary(bytes)))) => seen.push_str(&String::from_utf8_lossy(&bytes)),
            Ok(Some(Ok(Message::Text(text)))) => {
                controls.push(serde_json::from_str(&text).unwrap_or_else(|e| panic!("a control frame ({e}): {text}")))
            }
            Ok(Some(Ok(_))) => {}
            Ok(Some(Err(e))) => panic!("the WebSocket failed ({e}) before {needle:?} came; read: {seen:?}"),
            Ok(None) => panic!("the WebSocket ended before {needle:?} came; read: {seen:?}"),
            Err(_) => panic!("no {needle:?} within {WITHIN:?}; read: {seen:?}"),
        }
        if seen.contains(needle) {
            return seen;
        }
    }
}

/// Reads until a control frame of `kind` arrives; returns it.
pub(crate) async fn control(socket: &mut Socket, kind: &str) -> Value {
    let deadline = Instant::now() + WITHIN;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, socket.next()).await {
            Ok(Some(Ok(Message::Text(text)))) => {
                let frame: Value = serde_json::from_str(&text).expect("a JSON control frame");
                if frame["type"] == kind {
                    return frame;
                }
            }
            Ok(Some(Ok(_))) => {}
            other => panic!("no {kind:?} control frame: {other:?}"),
        }
    }
}

/// Polls until the terminal is no longer listed (404).
pub(crate) async fn gone(app: &TestApp, id: &str) {
    let deadline = Instant::now() + WITHIN;
    while app.get(&format!("/api/terminals/{id}")).await.status().as_u16() != 404 {
        assert!(Instant::now() < deadline, "the terminal {id} did not end");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[actix_web::test]
async fn typing_echo_hi_over_the_websocket_reads_it_back() {
    let app = spawn_app().await;
    let project = project(&app, "echo", "workspace").await;
    let terminal = start(&app, &format!("/api/projects/{project}/terminals"), json!({})).await;
    let id = id_of(&terminal);
    let _reap = Reap(id.clone());
    assert_eq!((terminal["status"].as_str(), terminal["sandboxed"].as_bool()), (Some("running"), Some(true)));
    assert_eq!((terminal["cols"].as_u64(), terminal["rows"].as_u64()), (Some(80), Some(24)));
    let mut socket = connect(&app, &id).await;
    type_in(&mut socket, "echo hi-$((6*7))\r").await;
    read_until(&mut socket, "hi-42", &mut Vec::new()).await;
    let listed: Value = app.get(&format!("/api/terminals?project_id={project}")).await.json().await.expect("json");
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{listed}");
    assert_eq!(listed[0]["clients"], 1);
    // Deleting the project ends it.
    assert_eq!(app.delete(&format!("/api/projects/{project}")).await.status().as_u16(), 204);
    let exit = control(&mut socket, "exit").await;
    assert_eq!(exit["reason"], "project_deleted", "{exit}");
    gone(&app, &id).await;
}

#[actix_web::test]
async fn the_sandboxed_shell_has_job_control_and_ctrl_c_reaches_its_foreground_job() {
    let app = spawn_app().await;
    let project = project(&app, "jobs", "workspace").await;
    let body = json!({"shell": "/bin/bash", "env": {"GREETING": "hello"}});
    let id = id_of(&start(&app, &format!("/api/projects/{project}/terminals"), body).await);
    let _reap = Reap(id.clone());
    let mut socket = connect(&app, &id).await;
    let mut controls = Vec::new();
    let probe =
        "case $- in *m*) echo job-control-$((40+2));; esac; test -t 0 && echo tty-$((3+3)); echo $GREETING-$((1+1))";
    type_in(&mut socket, &format!("{probe}\r")).await;
    let seen = read_until(&mut socket, "hello-2", &mut controls).await;
    assert!(seen.contains("job-control-42"), "monitor mode is on: {seen:?}");
    assert!(seen.contains("tty-6"), "the shell's input is a terminal: {seen:?}");
    // A foreground job that would run for minutes ends on Ctrl-C, so the next command answers.
    type_in(&mut socket, "sleep 300\r").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    type_in(&mut socket, "\x03").await;
    type_in(&mut socket, "echo after-$((2+2))\r").await;
    read_until(&mut socket, "after-4", &mut controls).await;
}

#[actix_web::test]
async fn a_resize_is_what_stty_size_answers() {
    let app = spawn_app().await;
    let project = project(&app, "resize", "workspace").await;
    let body = json!({"shell": "/bin/bash", "cols": 100, "rows": 30});
    let id = id_of(&start(&app, &format!("/api/projects/{project}/terminals"), body).await);
    let _reap = Reap(id.clone());
    let mut socket = connect(&app, &id).await;
    let mut controls = Vec::new();
    type_in(&mut socket, "echo size-$((1+1)) $(stty size)\r").await;
    read_until(&mut socket, "size-2 30 100", &mut controls).await;
    socket.send(Message::Text(r#"{"type":"resize","cols":120,"rows":40}"#.into())).await.expect("resize");
    type_in(&mut socket, "echo size-$((1+2)) $(stty size)\r").await;
    read_until(&mut socket, "size-3 40 120", &mut controls).await;
    assert!(controls.is_empty(), "no error: {controls:?}");
    let row: Value = app.get(&format!("/api/terminals/{id}")).await.json().await.expect("json");
    assert_eq!((row["cols"].as_u64(), row["rows"].as_u64()), (Some(120), Some(40)), "{row}");
}

#[actix_web::test]
async fn a_new_connection_gets_the_scrollback_first() {
    let app = spawn_app().await;
    let project = project(&app, "repaint", "workspace").await;
    let id = id_of(&start(&app, &format!("/api/projects/{project}/terminals"), json!({"shell": "/bin/bash"})).await);
    let _reap = Reap(id.clone());
    let mut first = connect(&app, &id).await;
    type_in(&mut first, "echo painted-$((3*3))\r").await;
    read_until(&mut first, "painted-9", &mut Vec::new()).await;
    first.close(None).await.expect("close");
    drop(first);
    // Nothing is typed on the new connection: what it reads first is the scrollback.
    let mut second = connect(&app, &id).await;
    let seen = read_until(&mut second, "painted-9", &mut Vec::new()).await;
    assert!(seen.contains("echo painted-$((3*3))"), "the command line is repainted too: {seen:?}");
    // And it is live after that.
    type_in(&mut second, "echo live-$((5*5))\r").await;
    read_until(&mut second, "live-25", &mut Vec::new()).await;
}

#[actix_web::test]
async fn an_attached_client_keeps_a_terminal_from_idling_and_sees_its_end() {
    let app = spawn_app_with(|s| s.terminal.idle_timeout = Duration::from_millis(1000)).await;
    let project = project(&app, "watched", "workspace").await;
    let id = id_of(&start(&app, &format!("/api/projects/{project}/terminals"), json!({})).await);
    let _reap = Reap(id.clone());
    let mut socket = connect(&app, &id).await;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    type_in(&mut socket, "echo still-$((7*7))\r").await;
    read_until(&mut socket, "still-49", &mut Vec::new()).await;
    // The shell exits on its own: the client hears how, then the close.
    type_in(&mut socket, "exit 3\r").await;
    let exit = control(&mut socket, "exit").await;
    assert_eq!((exit["code"].as_i64(), exit["reason"].as_str()), (Some(3), Some("exited")), "{exit}");
    gone(&app, &id).await;
}

#[actix_web::test]
async fn bad_input_is_refused_with_the_usual_errors() {
    let app = spawn_app_with(|s| s.terminal.max_per_workspace = 1).await;
    let project = project(&app, "bad", "workspace").await;
    let start_path = format!("/api/projects/{project}/terminals");
    let unknown = "00000000-0000-4000-8000-000000000001";
    for path in [format!("/api/terminals/{unknown}"), "/api/terminals/nope".to_string()] {
        assert_eq!(error_code(app.get(&path).await, 404).await, "not_found");
        assert_eq!(error_code(app.delete(&path).await, 404).await, "not_found");
    }
    assert_eq!(error_code(app.get(&format!("/api/terminals/{unknown}/ws")).await, 404).await, "not_found");
    let url = format!("ws://127.0.0.1:{}/api/terminals/{unknown}/ws", app.port);
    assert!(tokio_tungstenite::connect_async(url).await.is_err(), "no upgrade to an unknown terminal");
    let res = app.post_json(&format!("/api/projects/{unknown}/terminals"), &json!({})).await;
    assert_eq!(error_code(res, 404).await, "not_found");
    let res = app.post_json(&format!("/api/sessions/{unknown}/terminals"), &json!({})).await;
    assert_eq!(error_code(res, 404).await, "not_found");
    assert_eq!(error_code(app.get("/api/terminals?session_id=nope").await, 400).await, "invalid_query");

    let plain = app.dir.path().join("not-executable");
    std::fs::write(&plain, "#!/bin/sh\n").expect("a plain file");
    for body in [
        json!({"cols": 0}),
        json!({"rows": 501}),
        json!({"cols": "wide"}),
        json!({"shell": "bash"}),
        json!({"shell": "/nonexistent/shell"}),
        json!({"shell": plain}),
        json!({"shell": app.dir.path()}),
        json!({"env": {"BAD-NAME": "x"}}),
        json!({"env": {"CONDUIT_SESSION_MARKER": "x"}}),
        json!({"bogus": 1}),
    ] {
        let res = app.post_json(&start_path, &body).await;
        assert_eq!(res.status().as_u16(), 422, "{body}");
        assert_eq!(error_code(res, 422).await, "validation_failed", "{body}");
    }
    let res = app.client.post(app.url(&start_path)).header("content-type", "application/json").body("{").send().await;
    assert_eq!(error_code(res.expect("request"), 400).await, "malformed_json");

    let id = id_of(&start(&app, &start_path, json!({"shell": "/bin/bash"})).await);
    let _reap = Reap(id.clone());
    let res = app.post_json(&start_path, &json!({})).await;
    assert_eq!(error_code(res, 429).await, "terminal_limit_reached");
    assert_eq!(error_code(app.get(&format!("/api/terminals/{id}/ws")).await, 400).await, "not_a_websocket");

    // Bad control messages are answered, and the terminal goes on.
    let mut socket = connect(&app, &id).await;
    for bad in [r#"{"type":"resize","cols":0,"rows":10}"#, r#"{"type":"resize"}"#, "not json", r#"{"type":"dance"}"#] {
        socket.send(Message::Text(bad.into())).await.expect("send");
        let error = control(&mut socket, "error").await;
        assert!(error["message"].as_str().is_some_and(|m| !m.is_empty()), "{bad}: {error}");
    }
    type_in(&mut socket, "echo ok-$((8*8))\r").await;
    read_until(&mut socket, "ok-64", &mut Vec::new()).await;
}

#[actix_web::test]
async fn a_client_that_stops_reading_is_detached_and_the_others_get_everything() {
    let app = spawn_app().await;
    let project = project(&app, "slow", "off").await;
    let id = id_of(&start(&app, &format!("/api/projects/{project}/terminals"), json!({"shell": "/bin/bash"})).await);
    let _reap = Reap(id.clone());
    let mut slow = connect(&app, &id).await;
    let mut fast = connect(&app, &id).await;
    // Far more output than the slow client's queue and its socket's buffers hold.
    type_in(&mut fast, "seq 1 3000000; echo flood-done-$((1+1))\r").await;
    let deadline = Instant::now() + Duration::from_secs(120);
    let (mut tail, mut lines) = (String::new(), 0);
    while !tail.contains("flood-done-2") {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, fast.next()).await {
            Ok(Some(Ok(Message::Binary(bytes)))) => {
                lines += bytes.iter().filter(|b| **b == b'\n').count();
                tail.push_str(&String::from_utf8_lossy(&bytes));
                // Enough for the last number, the marker and the prompt after them (its path
                // is a temporary folder's, its length unknown): they may come in one chunk.
                let keep = tail.len().saturating_sub(4096);
                tail = tail.split_off(tail.floor_char_boundary(keep));
            }
            Ok(Some(Ok(_))) => {}
            other => panic!("the fast client lost its terminal: {other:?}"),
        }
    }
    assert!(tail.contains("3000000\r\nflood-done-2"), "the fast client got the end: {tail:?}");
    assert!(lines > 3_000_000, "the fast client got every line: {lines}");
    let row: Value = app.get(&format!("/api/terminals/{id}")).await.json().await.expect("json");
    assert_eq!((row["status"].as_str(), row["clients"].as_u64()), (Some("running"), Some(1)), "{row}");
    // The slow one finds what was queued for it before it was detached, then a 1013 close.
    let ended = tokio::time::timeout(WITHIN, async {
        loop {
            match slow.next().await {
                Some(Ok(Message::Close(frame))) => return frame.map(|f| u16::from(f.code)),
                Some(Ok(_)) => {}
                Some(Err(_)) | None => return None,
            }
        }
    })
    .await
    .expect("the slow client's connection ends");
    assert_eq!(ended, Some(1013), "closed with 1013 (try again later)");
}
