//! The exec API against the real application: commands run by bash in the project's sandbox
//! (bubblewrap, the default `workspace` mode), with their exit codes, output, timeouts, caps,
//! contexts, rules and streaming.

use std::time::Duration;

use serde_json::{json, Value};

use crate::helpers::{error_code, spawn_app, TestApp};
use crate::support::procs::{gone_within, kill_all, running};

/// A number no other test's commands use, for command lines found by their arguments.
pub fn unique() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    format!("{}{:03}", std::process::id() % 100_000, NEXT.fetch_add(1, Ordering::Relaxed))
}

/// Kills, when dropped (passed or failed), whatever still runs with these command lines.
pub struct Leftovers(pub Vec<Vec<String>>);

impl Leftovers {
    pub fn pids(&self) -> Vec<i32> {
        self.0.iter().flat_map(|argv| running(&argv.iter().map(String::as_str).collect::<Vec<_>>())).collect()
    }
}

impl Drop for Leftovers {
    fn drop(&mut self) {
        kill_all(&self.pids());
    }
}

pub async fn project(app: &TestApp) -> String {
    let p = app.create_project("exec", "exec-project").await;
    p["id"].as_str().expect("id").to_string()
}

async fn exec(app: &TestApp, project: &str, body: Value) -> Value {
    let res = app.post_json(&format!("/api/projects/{project}/exec"), &body).await;
    let status = res.status().as_u16();
    let answer: Value = res.json().await.expect("json");
    assert_eq!(status, 200, "exec {body}: {answer}");
    answer
}

#[actix_web::test]
async fn exec_answers_with_exit_codes_stdout_stderr_and_argv_quoting() {
    let app = spawn_app().await;
    let p = project(&app).await;
    let r = exec(&app, &p, json!({"command": "echo out; echo err >&2; exit 7"})).await;
    assert_eq!(
        (r["exit_code"].as_i64(), r["signal"].is_null(), r["timed_out"].as_bool()),
        (Some(7), true, Some(false))
    );
    assert_eq!((r["stdout"].as_str(), r["stderr"].as_str()), (Some("out\n"), Some("err\n")));
    assert_eq!((r["stdout_truncated"].as_bool(), r["stdout_bytes"].as_u64()), (Some(false), Some(4)));
    assert!(r["duration_ms"].as_u64().is_some());

    let r = exec(&app, &p, json!({"argv": ["printf", "%s|", "a b", "$(echo no)", "'q'"]})).await;
    assert_eq!(r["stdout"], "a b|$(echo no)|'q'|", "argv runs word for word");
    assert_eq!(r["exit_code"], 0);

    // Its row is listed, ended.
    let id = r["id"].as_str().expect("id");
    let row: Value = app.get(&format!("/api/projects/{p}/processes/{id}")).await.json().await.expect("row");
    assert_eq!((row["kind"].as_str(), row["status"].as_str()), (Some("exec"), Some("exited")), "{row}");
}

#[actix_web::test]
async fn a_timeout_ends_the_whole_group_including_grandchildren() {
    let app = spawn_app().await;
    let p = project(&app).await;
    let (a, b, c) = (format!("300.{}", unique()), format!("301.{}", unique()), format!("302.{}", unique()));
    let guard = Leftovers(vec![
        vec!["sleep".into(), a.clone()],
        vec!["sleep".into(), b.clone()],
        vec!["sleep".into(), c.clone()],
    ]);
    // A child, a grandchild in its own session (setsid: out of the group), and the shell waiting.
    let command = format!("sleep {a} & setsid sleep {b} & (sleep {c}); echo never");
    let r = exec(&app, &p, json!({"command": command, "timeout_ms": 1500})).await;
    assert_eq!(r["timed_out"], true, "{r}");
    assert!(r["exit_code"].is_null() && r["signal"].as_i64().is_some(), "{r}");
    assert_eq!(r["stdout"], "");
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !guard.pids().is_empty() && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(guard.pids(), Vec::<i32>::new(), "every process of the command is gone");
    let id = r["id"].as_str().expect("id");
    let row: Value = app.get(&format!("/api/projects/{p}/processes/{id}")).await.json().await.expect("row");
    assert_eq!((row["status"].as_str(), row["end_reason"].as_str()), (Some("killed"), Some("timeout")), "{row}");
}

#[actix_web::test]
async fn exec_context_carries_cd_and_export_within_a_context_and_not_across() {
    let app = spawn_app().await;
    let p = project(&app).await;
    let folder = app.root.join("exec-project");
    let first =
        exec(&app, &p, json!({"command": "mkdir -p 'sub dir' && cd 'sub dir' && export FOO='a b'", "context": "one"}))
            .await;
    assert_eq!(first["exit_code"], 0, "{first}");
    let same = exec(&app, &p, json!({"command": "pwd; echo \"$FOO\"", "context": "one"})).await;
    assert_eq!(same["stdout"], format!("{}\na b\n", folder.join("sub dir").display()));
    let other = exec(&app, &p, json!({"command": "pwd; echo \"${FOO-unset}\"", "context": "two"})).await;
    assert_eq!(other["stdout"], format!("{}\nunset\n", folder.display()), "another context starts afresh");
    let none = exec(&app, &p, json!({"command": "pwd; echo \"${FOO-unset}\""})).await;
    assert_eq!(none["stdout"], format!("{}\nunset\n", folder.display()), "no context: afresh");
    // `unset` carries over too, and the request's env is exported into the context.
    exec(&app, &p, json!({"command": "unset FOO", "context": "one", "env": {"BAR": "x"}})).await;
    let after = exec(&app, &p, json!({"command": "echo \"${FOO-unset} $BAR\"", "context": "one"})).await;
    assert_eq!(after["stdout"], "unset x\n");
}

#[actix_web::test]
async fn a_deny_rule_stops_an_exec_command_and_the_audit_says_exec() {
    let app = spawn_app().await;
    let p = project(&app).await;
    let rule = json!({"tool_name": "Bash", "rule_content": "rm:*", "behavior": "deny"});
    assert_eq!(app.post_json(&format!("/api/projects/{p}/rules"), &rule).await.status().as_u16(), 201);
    let victim = app.root.join("exec-project").join("keep.txt");
    std::fs::write(&victim, "x").expect("victim");

    let res = app.post_json(&format!("/api/projects/{p}/exec"), &json!({"command": "echo hi && rm -f keep.txt"})).await;
    assert_eq!(error_code(res, 403).await, "permission_denied");
    let res = app.post_json(&format!("/api/projects/{p}/exec/stream"), &json!({"argv": ["rm", "keep.txt"]})).await;
    assert_eq!(error_code(res, 403).await, "permission_denied");
    let res = app.post_json(&format!("/api/projects/{p}/processes"), &json!({"command": "rm keep.txt"})).await;
    assert_eq!(error_code(res, 403).await, "permission_denied");
    assert!(victim.exists(), "nothing ran");

    let mut rows = Vec::new();
    for _ in 0..100 {
        let log: Value = app.get(&format!("/api/permissions/log?project_id={p}")).await.json().await.expect("log");
        rows = log.as_array().cloned().unwrap_or_default();
        if rows.len() >= 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(rows.len(), 3, "{rows:?}");
    for row in &rows {
        assert_eq!((row["decision_point"].as_str(), row["decision"].as_str()), (Some("exec"), Some("deny")), "{row}");
        assert_eq!(row["tool_name"], "Bash");
    }
    // An allowed command is audited too, and runs.
    let ok = exec(&app, &p, json!({"command": "echo fine"})).await;
    assert_eq!(ok["stdout"], "fine\n");
}

/// The events of an SSE body, in order: (event, data).
pub fn sse_events(body: &str) -> Vec<(String, Value)> {
    body.split("\n\n")
        .filter_map(|frame| {
            let event = frame.lines().find_map(|l| l.strip_prefix("event: "))?;
            let data = frame.lines().find_map(|l| l.strip_prefix("data: "))?;
            Some((event.to_string(), serde_json::from_str(data).expect("data is JSON")))
        })
        .collect()
}

#[actix_web::test]
async fn exec_stream_sends_start_output_in_order_then_exit() {
    let app = spawn_app().await;
    let p = project(&app).await;
    let command = "echo a; sleep 0.2; echo b >&2; sleep 0.2; echo c; exit 3";
    let res = app.post_json(&format!("/api/projects/{p}/exec/stream"), &json!({"command": command})).await;
    assert_eq!(res.status().as_u16(), 200);
    assert!(res.headers()["content-type"].to_str().expect("ct").starts_with("text/event-stream"));
    let body = res.text().await.expect("body");
    let events = sse_events(&body);
    let names: Vec<&str> = events.iter().map(|(e, _)| e.as_str()).collect();
    assert_eq!(names, ["start", "stdout", "stderr", "stdout", "exit"], "{body}");
    assert!(events[0].1["id"].as_str().is_some() && events[0].1["pid"].as_i64().is_some());
    let texts: Vec<&str> = events[1..4].iter().map(|(_, d)| d["data"].as_str().expect("data")).collect();
    assert_eq!(texts, ["a\n", "b\n", "c\n"]);
    assert_eq!(events[4].1["exit_code"], 3);
}

#[actix_web::test]
async fn bad_exec_requests_get_json_errors() {
    let app = spawn_app().await;
    let p = project(&app).await;
    let url = format!("/api/projects/{p}/exec");
    for (body, status) in [
        (json!({}), 422),
        (json!({"command": "true", "argv": ["true"]}), 422),
        (json!({"command": "  "}), 422),
        (json!({"argv": []}), 422),
        (json!({"command": "true", "bogus": 1}), 422),
        (json!({"command": "true", "cwd": "/etc"}), 422),
        (json!({"command": "true", "cwd": "../.."}), 422),
        (json!({"command": "true", "cwd": "missing"}), 422),
        (json!({"command": "true", "timeout_ms": 0}), 422),
        (json!({"command": "true", "timeout_ms": 999_999_999_999u64}), 422),
        (json!({"command": "true", "context": "../x"}), 422),
        (json!({"command": "true", "env": {"A-B": "x"}}), 422),
    ] {
        let res = app.post_json(&url, &body).await;
        error_code(res, status).await;
    }
    let res =
        app.post_json("/api/projects/00000000-0000-4000-8000-000000000000/exec", &json!({"command": "true"})).await;
    assert_eq!(error_code(res, 404).await, "not_found");
    let res =
        app.post_json("/api/sessions/00000000-0000-4000-8000-000000000000/exec", &json!({"command": "true"})).await;
    assert_eq!(error_code(res, 404).await, "not_found");
    let r = exec(&app, &p, json!({"command": "pwd", "cwd": "."})).await;
    assert_eq!(r["stdout"], format!("{}\n", app.root.join("exec-project").display()));
}

#[actix_web::test]
async fn limits_answer_429() {
    let app = crate::helpers::spawn_app_with(|s| {
        s.processes.max_per_project = 2;
        s.processes.max_contexts = 1;
    })
    .await;
    let p = project(&app).await;
    let n = unique();
    let guard = Leftovers(vec![vec!["sleep".into(), format!("330.{n}")]]);
    for _ in 0..2 {
        let res = app
            .post_json(&format!("/api/projects/{p}/processes"), &json!({"argv": ["sleep", format!("330.{n}")]}))
            .await;
        assert_eq!(res.status().as_u16(), 202);
    }
    let res = app.post_json(&format!("/api/projects/{p}/processes"), &json!({"command": "true"})).await;
    assert_eq!(error_code(res, 429).await, "too_many_processes");
    let res = app.post_json(&format!("/api/projects/{p}/exec"), &json!({"command": "true"})).await;
    assert_eq!(error_code(res, 429).await, "too_many_processes");
    let killed: Value = app
        .post_json(&format!("/api/projects/{p}/processes/kill-all"), &json!({"signal": "SIGKILL"}))
        .await
        .json()
        .await
        .expect("count");
    assert_eq!(killed["count"], 2);
    for pid in guard.pids() {
        assert!(gone_within(pid, Duration::from_secs(5)).await);
    }
    // Places come back as the processes end.
    let mut answered = 0;
    for _ in 0..100 {
        let res = app.post_json(&format!("/api/projects/{p}/exec"), &json!({"command": "true", "context": "a"})).await;
        answered = res.status().as_u16();
        if answered == 200 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(answered, 200);
    let res = app.post_json(&format!("/api/projects/{p}/exec"), &json!({"command": "true", "context": "b"})).await;
    assert_eq!(error_code(res, 429).await, "too_many_contexts");
}
