//! Background processes against the real application: kill (with a `setsid` child), logs
//! replayed from an offset and followed live, kill-all, cleanup, the end of their session,
//! and an exec output capped without the service holding it.

use std::time::Duration;

use serde_json::{json, Value};

use crate::exec::{project, sse_events, unique, Leftovers};
use crate::helpers::{error_code, spawn_app, spawn_app_with, TestApp};
use crate::support::service::{fake_cli, ServiceConfig, TestService};

async fn start(app: &TestApp, scope: &str, body: Value) -> Value {
    let res = app.post_json(&format!("{scope}/processes"), &body).await;
    assert_eq!(res.status().as_u16(), 202, "start {body}");
    assert!(res.headers().contains_key("location"));
    res.json().await.expect("json")
}

/// Polls the process until it has ended; returns its row.
async fn ended(app: &TestApp, scope: &str, id: &str) -> Value {
    for _ in 0..200 {
        let row: Value = app.get(&format!("{scope}/processes/{id}")).await.json().await.expect("row");
        if row["status"] != "running" {
            return row;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("process {id} did not end");
}

async fn none_left(guard: &Leftovers) {
    for _ in 0..100 {
        if guard.pids().is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("left running: {:?}", guard.pids());
}

#[actix_web::test]
async fn a_killed_process_takes_its_setsid_child_with_it() {
    let app = spawn_app().await;
    let scope = format!("/api/projects/{}", project(&app).await);
    let (a, b) = (format!("310.{}", unique()), format!("311.{}", unique()));
    let guard = Leftovers(vec![vec!["sleep".into(), a.clone()], vec!["sleep".into(), b.clone()]]);
    let row = start(&app, &scope, json!({"command": format!("setsid sleep {a} & echo started; sleep {b}")})).await;
    assert_eq!((row["status"].as_str(), row["kind"].as_str()), (Some("running"), Some("background")));
    let id = row["id"].as_str().expect("id");
    for _ in 0..100 {
        if guard.pids().len() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(guard.pids().len(), 2, "both sleeps run");
    let listed: Value = app.get(&format!("{scope}/processes?status=running")).await.json().await.expect("list");
    assert_eq!(listed.as_array().map(Vec::len), Some(1));

    let res =
        app.post_json(&format!("{scope}/processes/{id}/kill"), &json!({"signal": "SIGTERM", "grace_ms": 300})).await;
    assert_eq!(res.status().as_u16(), 202);
    let row = ended(&app, &scope, id).await;
    assert_eq!((row["status"].as_str(), row["end_reason"].as_str()), (Some("killed"), Some("requested")), "{row}");
    none_left(&guard).await;
    let res = app.post_json(&format!("{scope}/processes/{id}/kill"), &json!({})).await;
    assert_eq!(error_code(res, 409).await, "not_running");
    let res = app.post_json(&format!("{scope}/processes/{id}/kill"), &json!({"signal": "SIGNOPE"})).await;
    error_code(res, 422).await;
}

#[actix_web::test]
async fn logs_page_by_offset_and_stream_live_with_replay() {
    let app = spawn_app().await;
    let scope = format!("/api/projects/{}", project(&app).await);
    let command = "for i in 1 2 3 4 5; do echo line$i; sleep 0.1; done; echo oops >&2";
    let row = start(&app, &scope, json!({"command": command})).await;
    let id = row["id"].as_str().expect("id");

    // Followed live from the start: every byte once, in order, then the end.
    let body = app.get(&format!("{scope}/processes/{id}/logs/stream")).await.text().await.expect("stream");
    let events = sse_events(&body);
    let (last, data) = events.last().expect("events");
    assert_eq!(last, "exit", "{body}");
    assert_eq!(data["status"], "exited");
    let text: String =
        events.iter().filter(|(e, _)| e == "stdout").map(|(_, d)| d["data"].as_str().unwrap_or("")).collect();
    assert_eq!(text, "line1\nline2\nline3\nline4\nline5\n");

    // Replayed from an offset, as a stream and as pages.
    let body = app.get(&format!("{scope}/processes/{id}/logs/stream?offset=12")).await.text().await.expect("stream");
    let text: String = sse_events(&body)
        .iter()
        .filter(|(e, _)| e == "stdout")
        .map(|(_, d)| d["data"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(text, "line3\nline4\nline5\n");
    let page: Value =
        app.get(&format!("{scope}/processes/{id}/logs?offset=6&limit=12")).await.json().await.expect("page");
    assert_eq!(
        (page["data"].as_str(), page["next_offset"].as_u64(), page["size"].as_u64()),
        (Some("line2\nline3\n"), Some(18), Some(30))
    );
    assert_eq!(page["complete"], false);
    let page: Value = app.get(&format!("{scope}/processes/{id}/logs?offset=18")).await.json().await.expect("page");
    assert_eq!((page["data"].as_str(), page["complete"].as_bool()), (Some("line4\nline5\n"), Some(true)));
    let page: Value = app.get(&format!("{scope}/processes/{id}/logs?stream=stderr")).await.json().await.expect("page");
    assert_eq!(page["data"], "oops\n");
    let res = app.get(&format!("{scope}/processes/{id}/logs?limit=0")).await;
    error_code(res, 422).await;
}

#[actix_web::test]
async fn kill_all_then_cleanup_removes_rows_and_logs() {
    let app = spawn_app().await;
    let scope = format!("/api/projects/{}", project(&app).await);
    let n = unique();
    let guard = Leftovers(vec![vec!["sleep".into(), format!("320.{n}")]]);
    let mut ids = Vec::new();
    for _ in 0..3 {
        let row = start(&app, &scope, json!({"argv": ["sleep", format!("320.{n}")]})).await;
        ids.push(row["id"].as_str().expect("id").to_string());
    }
    let res = app.post_json(&format!("{scope}/processes/kill-all"), &json!({"grace_ms": 0})).await;
    assert_eq!(res.status().as_u16(), 202);
    assert_eq!(res.json::<Value>().await.expect("count")["count"], 3);
    for id in &ids {
        ended(&app, &scope, id).await;
    }
    none_left(&guard).await;
    let logs = app.dir.path().join("data").join("processes").join("logs");
    assert!(logs.join(format!("{}.stdout", ids[0])).exists(), "a log was kept");

    let res = app.post_json(&format!("{scope}/processes/cleanup"), &json!({})).await;
    assert_eq!(res.status().as_u16(), 200);
    assert_eq!(res.json::<Value>().await.expect("count")["count"], 3);
    let listed: Value = app.get(&format!("{scope}/processes")).await.json().await.expect("list");
    assert_eq!(listed, json!([]));
    assert!(!logs.join(format!("{}.stdout", ids[0])).exists(), "its logs went too");
    let res = app.get(&format!("{scope}/processes/{}", ids[0])).await;
    error_code(res, 404).await;
}

#[actix_web::test]
async fn a_process_ends_when_its_session_ends() {
    let app = spawn_app_with(|s| s.cli_path = fake_cli().display().to_string()).await;
    let p = project(&app).await;
    let res = app.post_json(&format!("/api/projects/{p}/sessions"), &json!({})).await;
    assert_eq!(res.status().as_u16(), 201);
    let session: Value = res.json().await.expect("session");
    let scope = format!("/api/sessions/{}", session["id"].as_str().expect("id"));
    let n = unique();
    let guard = Leftovers(vec![vec!["sleep".into(), format!("340.{n}")]]);

    let r: Value =
        app.post_json(&format!("{scope}/exec"), &json!({"command": "pwd"})).await.json().await.expect("exec");
    assert_eq!(r["stdout"], format!("{}\n", app.root.join("exec-project").display()), "the session's workspace");
    let row = start(&app, &scope, json!({"argv": ["sleep", format!("340.{n}")]})).await;
    let id = row["id"].as_str().expect("id");
    assert_eq!(row["session_id"], session["id"]);

    assert_eq!(app.delete(&scope).await.status().as_u16(), 200);
    let row = ended(&app, &scope, id).await;
    assert_eq!((row["status"].as_str(), row["end_reason"].as_str()), (Some("killed"), Some("owner_ended")), "{row}");
    none_left(&guard).await;
    let res = app.post_json(&format!("{scope}/exec"), &json!({"command": "true"})).await;
    assert_eq!(error_code(res, 409).await, "session_not_live");
}

/// The service's peak resident memory so far, in MiB.
fn peak_mib(pid: i32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    kib / 1024.0
}

#[actix_web::test]
async fn a_200_mb_output_is_capped_without_the_service_holding_it() {
    let service = TestService::start(ServiceConfig::new(fake_cli()));
    let project = service.project("big").await;
    let before = peak_mib(service.pid());
    let res = service
        .post(
            &format!("/api/projects/{project}/exec"),
            json!({"command": "head -c 200000000 /dev/zero; echo done >&2"}),
        )
        .await;
    assert_eq!(res.status().as_u16(), 200);
    let r: Value = res.json().await.expect("json");
    assert_eq!(
        (r["exit_code"].as_i64(), r["stdout_bytes"].as_u64()),
        (Some(0), Some(200_000_000)),
        "every byte was read"
    );
    assert_eq!((r["stdout_truncated"].as_bool(), r["stdout"].as_str().map(str::len)), (Some(true), Some(1 << 20)));
    assert_eq!((r["stderr"].as_str(), r["stderr_truncated"].as_bool()), (Some("done\n"), Some(false)));
    let after = peak_mib(service.pid());
    assert!(after - before < 64.0, "the service's peak grew from {before:.0} to {after:.0} MiB");
}
