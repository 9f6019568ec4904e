//! Terminals end to end, how they end: idle, with their session, with their whole process
//! tree, at shutdown (the helpers are in `terminals.rs`).

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::helpers::{error_code, spawn_app, spawn_app_with};
use crate::support::procs::alive;
use crate::terminals::{connect, control, gone, id_of, marked, project, read_until, start, type_in, Reap, WITHIN};

/// Reads Server-Sent Events until one holds every one of `needles`; returns its line.
async fn sse_until(res: &mut reqwest::Response, needles: &[&str]) -> String {
    let deadline = Instant::now() + WITHIN;
    let mut buffer = String::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let chunk = tokio::time::timeout(left, res.chunk()).await;
        let Ok(Ok(Some(chunk))) = chunk else { panic!("no event with {needles:?}; read: {buffer}") };
        buffer.push_str(&String::from_utf8_lossy(&chunk));
        if let Some(line) = buffer.lines().find(|l| l.starts_with("data:") && needles.iter().all(|n| l.contains(n))) {
            return line.to_string();
        }
    }
}

#[actix_web::test]
async fn an_idle_terminal_ends_and_says_so_on_the_bus() {
    let app = spawn_app_with(|s| s.terminal.idle_timeout = Duration::from_millis(1000)).await;
    let project = project(&app, "idle", "off").await;
    let mut events = app.get("/api/events/stream").await;
    assert_eq!(events.status().as_u16(), 200);
    let terminal = start(&app, &format!("/api/projects/{project}/terminals"), json!({})).await;
    let id = id_of(&terminal);
    let _reap = Reap(id.clone());
    let pid = i32::try_from(terminal["pid"].as_i64().expect("pid")).expect("pid fits");
    let started = sse_until(&mut events, &["terminal_started", &id]).await;
    assert!(started.contains("terminal.started"), "{started}");
    let ended = sse_until(&mut events, &["terminal_exited", &id]).await;
    assert!(ended.contains("\"reason\":\"idle_timeout\""), "{ended}");
    gone(&app, &id).await;
    assert!(!alive(pid), "the shell is gone");
    assert!(marked(&id).is_empty(), "nothing of it is left");
}

#[actix_web::test]
async fn a_terminal_ends_with_its_session() {
    let fake = crate::support::service::fake_cli();
    let app = spawn_app_with(|s| s.cli_path = fake.display().to_string()).await;
    let project = project(&app, "session", "workspace").await;
    let res = app.post_json(&format!("/api/projects/{project}/sessions"), &json!({"model": "fake-plain"})).await;
    assert_eq!(res.status().as_u16(), 201);
    let session: Value = res.json().await.expect("json");
    let session = session["id"].as_str().expect("id").to_string();
    let terminal = start(&app, &format!("/api/sessions/{session}/terminals"), json!({})).await;
    let id = id_of(&terminal);
    let _reap = Reap(id.clone());
    assert_eq!(terminal["session_id"], session.as_str());
    let listed: Value = app.get(&format!("/api/terminals?session_id={session}")).await.json().await.expect("json");
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{listed}");
    let mut socket = connect(&app, &id).await;
    type_in(&mut socket, "echo in-session-$((2*5))\r").await;
    read_until(&mut socket, "in-session-10", &mut Vec::new()).await;

    assert_eq!(app.delete(&format!("/api/sessions/{session}")).await.status().as_u16(), 200);
    let exit = control(&mut socket, "exit").await;
    assert_eq!(exit["reason"], "session_ended", "{exit}");
    gone(&app, &id).await;
    assert!(marked(&id).is_empty(), "nothing of it is left");
    // A session that is not live takes no new terminal.
    let res = app.post_json(&format!("/api/sessions/{session}/terminals"), &json!({})).await;
    assert_eq!(error_code(res, 409).await, "session_not_live");
}

#[actix_web::test]
async fn its_whole_process_tree_is_gone_once_it_ends() {
    let app = spawn_app().await;
    for sandbox in ["workspace", "off"] {
        let project = project(&app, &format!("tree-{sandbox}"), sandbox).await;
        let body = json!({"shell": "/bin/bash"});
        let id = id_of(&start(&app, &format!("/api/projects/{project}/terminals"), body).await);
        let _reap = Reap(id.clone());
        let mut socket = connect(&app, &id).await;
        // A background job, one that ignores hangups, and one in a session of its own.
        type_in(&mut socket, "sleep 7777 & nohup sleep 7778 >/dev/null 2>&1 & setsid sleep 7779 & echo bg-$((4+4))\r")
            .await;
        read_until(&mut socket, "bg-8", &mut Vec::new()).await;
        let deadline = Instant::now() + WITHIN;
        while marked(&id).len() < 4 {
            assert!(Instant::now() < deadline, "{sandbox}: the jobs carry the marker: {:?}", marked(&id));
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let res = app.delete(&format!("/api/terminals/{id}")).await;
        assert_eq!(res.status().as_u16(), 204, "{sandbox}");
        assert_eq!(marked(&id), Vec::<i32>::new(), "{sandbox}: DELETE answers once every process is gone");
        let exit = control(&mut socket, "exit").await;
        assert_eq!(exit["reason"], "closed", "{sandbox}: {exit}");
        assert_eq!(app.get(&format!("/api/terminals/{id}")).await.status().as_u16(), 404);
    }
}

#[actix_web::test]
async fn shutdown_ends_every_terminal_and_what_it_started() {
    use crate::support::service::{fake_cli, ServiceConfig, TestService};
    let mut service = TestService::start(ServiceConfig::new(fake_cli()));
    let project = service.project("shutdown").await;
    let res = service.post(&format!("/api/projects/{project}/terminals"), json!({"shell": "/bin/bash"})).await;
    assert_eq!(res.status().as_u16(), 201);
    let id = id_of(&res.json().await.expect("json"));
    let _reap = Reap(id.clone());
    let url = format!("{}/api/terminals/{id}/ws", service.address.replacen("http://", "ws://", 1));
    let (mut socket, _) = tokio_tungstenite::connect_async(url).await.expect("the WebSocket connects");
    type_in(&mut socket, "sleep 7780 & echo bg-$((5+5))\r").await;
    read_until(&mut socket, "bg-10", &mut Vec::new()).await;
    assert!(marked(&id).len() >= 2, "the shell and its job run: {:?}", marked(&id));
    let (took, status) = service.terminate();
    assert!(status.success(), "a clean shutdown: {status:?}\n{}", service.log());
    assert!(took < Duration::from_secs(15), "shut down within 15 s: {took:?}");
    assert_eq!(marked(&id), Vec::<i32>::new(), "nothing of the terminal outlives the service");
    // Ended by the terminal registry (not only by the cgroup sweep that follows it).
    assert!(service.log().contains("ending every terminal"), "{}", service.log());
}
