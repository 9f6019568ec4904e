//! Codex and Gemini CLI end to end, each the real pinned CLI against a fake model API on
//! 127.0.0.1: streamed text, the permission engine deciding their shell commands, interrupt,
//! resume after a restart, kill, and a scheduled run. The same stream reader reads every
//! agent's normalized events (Claude Code's too).

use std::time::Duration;

use serde_json::{json, Value};

use crate::support::agent_clis::{normalized_events, results, start, Cli};
use crate::support::fake_api::{FakeApi, Reply as ClaudeReply};
use crate::support::fake_models::Reply;
use crate::support::procs::gone_within;
use crate::support::service::{real_cli, ServiceConfig, TestService};

const WITHIN: Duration = Duration::from_secs(90);

async fn launch(service: &TestService, project: &str, cli: Cli) -> String {
    let session = service.launch(project, cli.launch()).await;
    assert_eq!(session["agent"], cli.name());
    let id = session["id"].as_str().expect("id").to_string();
    service.wait_status(&id, "idle", WITHIN).await;
    id
}

async fn say(service: &TestService, session: &str, content: &str) {
    let res = service.post(&format!("/api/sessions/{session}/message"), json!({"content": content})).await;
    assert_eq!(res.status().as_u16(), 202, "message");
}

/// Waits until the session has `turns` turn results on its stream and is idle again.
async fn turns(service: &TestService, session: &str, turns: usize) -> Vec<(String, Value)> {
    let events = normalized_events(service, session, WITHIN, |e| results(e).len() >= turns).await;
    service.wait_for(session, WITHIN, |r| r["status"] == "idle" && r["num_turns"] == turns as i64).await;
    events
}

async fn a_turn_streams_text(cli: Cli) {
    let (service, model) = start(cli).await;
    let project = service.project("talk").await;
    let session = launch(&service, &project, cli).await;
    model.on("Say hello", Reply::Text("Hello from the fake model".into()));
    say(&service, &session, "Say hello").await;
    let events = turns(&service, &session, 1).await;
    let deltas: String = events
        .iter()
        .filter(|(name, _)| name == "assistant_delta")
        .map(|(_, d)| d["text"].as_str().expect("delta text"))
        .collect();
    assert_eq!(deltas, "Hello from the fake model", "the text arrived as deltas: {events:?}");
    assert!(events.iter().all(|(_, d)| d["agent"] == cli.name()), "every event names the agent: {events:?}");
    let result = results(&events)[0];
    assert_eq!((result["status"].as_str(), result["is_error"].as_bool()), (Some("completed"), Some(false)), "{result}");
    assert!(result["input_tokens"].as_i64().unwrap_or(0) > 0, "tokens reported: {result}");
    let row = service.get_json(&format!("/api/sessions/{session}")).await;
    assert!(row["total_input_tokens"].as_i64().unwrap_or(0) > 0, "{row}");
    assert!(row["session_id"].is_string(), "the CLI's own session id is kept for resume: {row}");
    let health = service.get_json("/api/health").await;
    let agents = health["checks"]["agents"].as_array().cloned().unwrap_or_default();
    let listed = agents.iter().find(|a| a["agent"] == cli.name()).expect("listed in health");
    assert_eq!(listed["available"], true, "{listed}");
    let version = match cli {
        Cli::Codex => "0.169.0",
        Cli::Gemini => "0.61.0",
    };
    // Codex's native build reports its platform package's version (`0.169.0-linux-x64`).
    assert!(listed["version"].as_str().is_some_and(|v| v.starts_with(version)), "{listed}");
    if cli == Cli::Codex {
        // The native binary, not the npm package's node wrapper.
        let path = listed["path"].as_str().unwrap_or("");
        assert!(path.ends_with("/bin/codex") && path.contains("codex-linux-"), "{listed}");
    }
}

#[actix_web::test]
async fn codex_a_turn_streams_text() {
    a_turn_streams_text(Cli::Codex).await;
}

#[actix_web::test]
async fn gemini_a_turn_streams_text() {
    a_turn_streams_text(Cli::Gemini).await;
}

async fn decisions(service: &TestService, session: &str, count: usize) -> Vec<Value> {
    for _ in 0..200 {
        let log = service.get_json(&format!("/api/permissions/log?session_id={session}&limit=1000")).await;
        let rows = log.as_array().cloned().unwrap_or_default();
        if rows.len() >= count {
            return rows;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("fewer than {count} decisions were audited for {session}")
}

async fn a_deny_rule_stops_rm_and_an_allowed_command_runs(cli: Cli) {
    let (service, model) = start(cli).await;
    let project = service.project("guarded").await;
    let victim = service.root.join("guarded/victim.txt");
    std::fs::write(&victim, "keep me").expect("victim");
    let res = service
        .post("/api/rules/global", json!({"tool_name": "Bash", "rule_content": "rm:*", "behavior": "deny"}))
        .await;
    assert_eq!(res.status().as_u16(), 201, "rule");
    let session = launch(&service, &project, cli).await;

    model.on("remove the file", Reply::Shell { command: "rm victim.txt".into(), escalated: false });
    say(&service, &session, "remove the file").await;
    turns(&service, &session, 1).await;
    let mut expected = 1;
    if cli == Cli::Codex {
        // Asking to run outside Codex's own sandbox changes nothing: the rule decides.
        model.on("escalate and remove", Reply::Shell { command: "rm -f victim.txt".into(), escalated: true });
        say(&service, &session, "escalate and remove").await;
        turns(&service, &session, 2).await;
        expected = 2;
    }
    assert!(victim.exists(), "the denied rm did not run");
    let rows = decisions(&service, &session, expected).await;
    for row in &rows {
        assert_eq!((row["decision"].as_str(), row["agent"].as_str()), (Some("deny"), Some(cli.name())), "{row}");
        assert_eq!(row["decision_point"], cli.decision_point(), "{row}");
        assert_eq!(row["tool_name"], "Bash", "{row}");
    }
    let told = model.requests().iter().filter(|body| body.contains(cli.refusal())).count();
    assert!(told >= expected, "the model heard of every refusal ({told} of {expected})");

    model.on("make a file", Reply::Shell { command: "touch made.txt".into(), escalated: false });
    say(&service, &session, "make a file").await;
    turns(&service, &session, expected + 1).await;
    assert!(service.root.join("guarded/made.txt").exists(), "the allowed command ran");
    let rows = decisions(&service, &session, expected + 1).await;
    assert!(rows.iter().any(|r| r["decision"] == "allow" && r["agent"] == cli.name()), "{rows:?}");
}

#[actix_web::test]
async fn codex_a_deny_rule_stops_rm_and_an_allowed_command_runs() {
    a_deny_rule_stops_rm_and_an_allowed_command_runs(Cli::Codex).await;
}

#[actix_web::test]
async fn gemini_a_deny_rule_stops_rm_and_an_allowed_command_runs() {
    a_deny_rule_stops_rm_and_an_allowed_command_runs(Cli::Gemini).await;
}

async fn interrupt_then_kill(cli: Cli) {
    let (service, model) = start(cli).await;
    let project = service.project("long").await;
    let session = launch(&service, &project, cli).await;
    model.on("tell a long story", Reply::Slow { text: "once".into(), chunks: 300, delay: Duration::from_millis(100) });
    say(&service, &session, "tell a long story").await;
    normalized_events(&service, &session, WITHIN, |e| e.iter().any(|(n, _)| n == "assistant_delta")).await;
    let res = service.post(&format!("/api/sessions/{session}/interrupt"), json!({})).await;
    assert!(res.status().is_success(), "interrupt: {}", res.status());
    let events = normalized_events(&service, &session, WITHIN, |e| !results(e).is_empty()).await;
    assert_eq!(results(&events)[0]["status"], "interrupted", "{events:?}");
    let row = service.wait_status(&session, "idle", WITHIN).await;
    let pid = i32::try_from(row["cli_pid"].as_i64().expect("pid")).expect("pid");

    // A model switch works (Codex: from its next turn; Gemini: `session/set_model`); a
    // permission mode the agent does not have is a 409 that says why.
    let other = if cli == Cli::Codex { "gpt-5.5" } else { "gemini-2.5-pro" };
    let res = service.post(&format!("/api/sessions/{session}/model"), json!({"model": other})).await;
    assert_eq!(res.status().as_u16(), 200, "model switch: {}", res.text().await.unwrap_or_default());
    if cli == Cli::Gemini {
        // Gemini CLI names its models: one it does not offer is refused, saying which it has.
        let res = service.post(&format!("/api/sessions/{session}/model"), json!({"model": "no-such-model"})).await;
        assert_eq!(res.status().as_u16(), 409, "unknown model");
    }
    let res = service.post(&format!("/api/sessions/{session}/permission-mode"), json!({"mode": "acceptEdits"})).await;
    assert_eq!(res.status().as_u16(), 409, "permission mode");
    let body: Value = res.json().await.expect("json");
    assert_eq!(body["error"]["code"], "unsupported_by_agent", "{body}");

    // Kill: the process group ends, the session is closed.
    let res = service.delete(&format!("/api/sessions/{session}")).await;
    assert!(res.status().is_success(), "close: {}", res.status());
    assert!(gone_within(pid, WITHIN).await, "the CLI ended");
    service.wait_status(&session, "closed", WITHIN).await;
}

#[actix_web::test]
async fn codex_interrupt_then_kill() {
    interrupt_then_kill(Cli::Codex).await;
}

#[actix_web::test]
async fn gemini_interrupt_then_kill() {
    interrupt_then_kill(Cli::Gemini).await;
}

/// A turn, a restart of the service, then a message: the session goes on in the same CLI (its
/// keeper kept it through the restart, and the adapter's thread or session came back with the
/// session), and the model sees the earlier turn. Then a stop in `stop` mode and a message: the
/// session resumes by itself in a new CLI, in the CLI's own session (Gemini within the same
/// minute too), history intact.
async fn resume_after_restart(cli: Cli) {
    let (mut service, model) = start(cli).await;
    let project = service.project("memory").await;
    let session = launch(&service, &project, cli).await;
    model.on("remember PELICAN", Reply::Text("I will remember.".into()));
    say(&service, &session, "remember PELICAN").await;
    turns(&service, &session, 1).await;
    let pid = service.get_json(&format!("/api/sessions/{session}")).await["cli_pid"].clone();
    let (_, status) = service.terminate();
    assert!(status.success(), "clean shutdown");
    let stopping = crate::support::agent_clis::config(&model).env("CONDUIT_ON_SHUTDOWN", "stop");
    let mut service = TestService::start_in(service.into_dir(), stopping);
    let row = service.wait_status(&session, "idle", WITHIN).await;
    assert_eq!(row["cli_pid"], pid, "the same CLI, attached again: {row}");
    model.on("what was the word", Reply::Text("PELICAN it was.".into()));
    say(&service, &session, "what was the word").await;
    service.wait_for(&session, WITHIN, |r| r["status"] == "idle" && r["num_turns"] == 2).await;
    let asked = model.requests().into_iter().rev().find(|b| b.contains("what was the word")).expect("asked");
    assert!(asked.contains("remember PELICAN"), "the same conversation after the restart");

    let (_, status) = service.terminate();
    assert!(status.success(), "clean shutdown");
    let service = TestService::start_in(service.into_dir(), crate::support::agent_clis::config(&model));
    let row = service.wait_for(&session, WITHIN, |r| r["status"] == "closed").await;
    assert_eq!(row["closed_reason"], "shutdown", "{row}");
    model.on("and again", Reply::Text("Still PELICAN.".into()));
    say(&service, &session, "and again").await;
    let row = service.wait_for(&session, WITHIN, |r| r["status"] == "idle" && r["num_turns"] == 3).await;
    assert_ne!(row["cli_pid"], pid, "a new CLI, resumed: {row}");
    let asked = model.requests().into_iter().rev().find(|b| b.contains("and again")).expect("asked");
    assert!(asked.contains("remember PELICAN"), "the history came back with the session");
}

#[actix_web::test]
async fn codex_resume_after_restart() {
    resume_after_restart(Cli::Codex).await;
}

#[actix_web::test]
async fn gemini_resume_after_restart() {
    resume_after_restart(Cli::Gemini).await;
}

#[actix_web::test]
async fn a_scheduled_codex_agent_runs_its_objective() {
    let (service, model) = start(Cli::Codex).await;
    let project = service.project("scheduled").await;
    model.on("write the report", Reply::Text("Report written.".into()));
    let body = json!({"name": "reporter", "objective": "write the report", "schedule": "0 0 1 1 *",
        "project_id": project, "agent": "codex"});
    let res = service.post("/api/agents", body).await;
    assert_eq!(res.status().as_u16(), 201, "create agent");
    let agent: Value = res.json().await.expect("json");
    assert_eq!(agent["agent"], "codex");
    let id = agent["id"].as_str().expect("id").to_string();
    let res = service.post(&format!("/api/agents/{id}/trigger"), json!({})).await;
    assert!(res.status().is_success(), "trigger: {}", res.status());
    let deadline = std::time::Instant::now() + WITHIN;
    loop {
        let runs = service.get_json(&format!("/api/agents/{id}/executions")).await;
        let run = runs.as_array().and_then(|r| r.first()).cloned().unwrap_or(Value::Null);
        if run["status"] == "success" {
            let full = service.get_json(&format!("/api/executions/{}", run["id"].as_str().expect("id"))).await;
            assert_eq!(full["output"], "Report written.", "{full}");
            assert!(full["input_tokens"].as_i64().unwrap_or(0) > 0, "{full}");
            break;
        }
        assert!(!["failure", "timeout", "cancelled"].contains(&run["status"].as_str().unwrap_or("")), "{run}");
        assert!(std::time::Instant::now() < deadline, "the run never ended: {run}\n{}", service.log());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[actix_web::test]
async fn unknown_and_missing_agents_are_refused_naming_the_setting() {
    let api = FakeApi::start().await;
    let service = TestService::start(
        ServiceConfig::new(real_cli()).api(&api.base_url).env("CONDUIT_CODEX_PATH", "/nonexistent/codex"),
    );
    let project = service.project("refused").await;
    let res = service.post(&format!("/api/projects/{project}/sessions"), json!({"agent": "nope"})).await;
    assert_eq!(res.status().as_u16(), 422);
    let body: Value = res.json().await.expect("json");
    assert_eq!(body["error"]["code"], "unknown_agent", "{body}");
    let res = service.post(&format!("/api/projects/{project}/sessions"), json!({"agent": "codex"})).await;
    assert_eq!(res.status().as_u16(), 503);
    let body: Value = res.json().await.expect("json");
    assert!(body.to_string().contains("CONDUIT_CODEX_PATH"), "names the setting: {body}");
    let res = service
        .post(&format!("/api/projects/{project}/sessions"), json!({"agent": "gemini", "permission_mode": "plan"}))
        .await;
    assert_eq!(res.status().as_u16(), 422, "gemini takes no permission mode at launch");
    let health = service.get_json("/api/health").await;
    let agents = health["checks"]["agents"].as_array().cloned().unwrap_or_default();
    let codex = agents.iter().find(|a| a["agent"] == "codex").expect("codex in health");
    assert_eq!((codex["available"].as_bool(), codex["setting"].as_str()), (Some(false), Some("CONDUIT_CODEX_PATH")));
}

/// Claude Code's normalized events, read by the same code as the others'.
#[actix_web::test]
async fn claude_normalized_events_read_like_the_others() {
    let api = FakeApi::start().await;
    let service = TestService::start(ServiceConfig::new(real_cli()).api(&api.base_url));
    let project = service.project("claude").await;
    let session = service.launch(&project, json!({})).await;
    let id = session["id"].as_str().expect("id").to_string();
    assert_eq!(session["agent"], "claude");
    service.wait_status(&id, "idle", WITHIN).await;
    api.on("Say hello", ClaudeReply::Text("Hello from Claude's fake".into()));
    say(&service, &id, "Say hello").await;
    let events = normalized_events(&service, &id, WITHIN, |e| !results(e).is_empty()).await;
    let message = events.iter().find(|(n, _)| n == "assistant_message").expect("assistant message");
    assert_eq!(
        (message.1["agent"].as_str(), message.1["text"].as_str()),
        (Some("claude"), Some("Hello from Claude's fake"))
    );
    assert_eq!(results(&events)[0]["status"], "completed");
}
