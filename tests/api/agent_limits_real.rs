//! Scheduled agents at a usage limit, end to end with the real Claude Code CLI (2.1.330) in
//! gateway mode and the fake Messages API answering 429 with a reset a few seconds ahead: the
//! run waits (`waiting_for_limit`, not a failure), then the same execution runs again after
//! the reset, also across restarts of the service and in the run's own worktree; a cancel ends
//! a waiting run.

use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use crate::changes::read_until;
use crate::support::fake_api::{FakeApi, Reply, GATEWAY_TOKEN};
use crate::support::service::{real_cli, ServiceConfig, TestService};
use crate::workspaces_real::{git, repo};

const RUN: Duration = Duration::from_secs(90);

fn config(api: &FakeApi) -> ServiceConfig {
    ServiceConfig::new(real_cli())
        .api(&api.base_url)
        .env("ANTHROPIC_AUTH_TOKEN", GATEWAY_TOKEN)
        .env("CONDUIT_LIMIT_JITTER_MS", "300")
}

fn id(v: &Value) -> String {
    v["id"].as_str().expect("id").to_string()
}

fn at(v: &Value) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(v.as_str().expect("a time")).expect("RFC 3339").with_timezone(&Utc)
}

async fn create_agent(service: &TestService, body: Value) -> String {
    let res = service.post("/api/agents", body).await;
    let status = res.status().as_u16();
    let agent: Value = res.json().await.expect("json");
    assert_eq!(status, 201, "{agent}");
    id(&agent)
}

async fn executions(service: &TestService, agent: &str) -> Vec<Value> {
    let list = service.get_json(&format!("/api/agents/{agent}/executions?limit=100")).await;
    list.as_array().cloned().unwrap_or_default()
}

async fn execution(service: &TestService, id: &str) -> Value {
    service.get_json(&format!("/api/executions/{id}")).await
}

/// Polls execution `id` until `done` holds; returns it whole.
async fn until(service: &TestService, id: &str, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + RUN;
    loop {
        let e = execution(service, id).await;
        if done(&e) {
            return e;
        }
        assert!(Instant::now() < deadline, "never {what}: {e}\n{}", service.log());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn ended(service: &TestService, id: &str) -> Value {
    until(service, id, "ended", |e| !matches!(e["status"].as_str(), Some("queued" | "running" | "waiting_for_limit")))
        .await
}

/// What a waiting run shows: the limit in `error`, its reset ahead, no end.
fn assert_waiting(run: &Value, reset_within: chrono::Duration) -> DateTime<Utc> {
    assert_eq!(run["status"], "waiting_for_limit", "{run}");
    let resumes_at = at(&run["resumes_at"]);
    assert!(resumes_at > Utc::now() && resumes_at < Utc::now() + reset_within, "the reset plus jitter: {run}");
    let error = run["error"].as_str().unwrap_or_default();
    assert!(error.contains("usage limit") && error.contains("hit your"), "{run}");
    assert!(run["finished_at"].is_null(), "{run}");
    resumes_at
}

/// The run went again after its reset and ended well, both attempts in its raw lines.
fn assert_ran_again(run: &Value, resumes_at: DateTime<Utc>, answer: &str) {
    assert_eq!(run["status"], "success", "{run}");
    assert!(run["output"].as_str().is_some_and(|o| o.contains(answer)), "{run}");
    assert!(at(&run["started_at"]) >= resumes_at, "not before the reset: {run}");
    assert!(run["resumes_at"].is_null() && run["error"].is_null(), "{run}");
    let raw = run["raw_output"].as_str().unwrap_or_default();
    let results: Vec<&str> = raw.lines().filter(|l| l.contains(r#""type":"result""#)).collect();
    assert_eq!(results.len(), 2, "both attempts' lines are kept: {raw}");
    assert!(results[0].contains("hit your") && results[1].contains(answer), "{results:?}");
    assert_eq!(raw.lines().filter(|l| l.contains(r#""subtype":"init""#)).count(), 2, "two processes: {raw}");
}

async fn consecutive_failures(service: &TestService, agent: &str) -> Value {
    service.get_json(&format!("/api/agents/{agent}")).await["consecutive_failures"].clone()
}

#[actix_web::test]
async fn a_scheduled_run_at_a_usage_limit_waits_for_the_reset_and_runs_again_without_failing() {
    let api = FakeApi::start().await;
    let service = TestService::start(config(&api));
    let project = service.project("agent-limits").await;
    api.on("count the open issues", Reply::UsageLimit { resets_in: Duration::from_secs(3) });
    api.on("count the open issues", Reply::Text("seven open issues".into()));
    let agent = create_agent(
        &service,
        json!({"name": "counter", "objective": "count the open issues", "schedule": "* * * * * *", "project_id": project}),
    )
    .await;

    // The first fire meets the limit: the run waits, and it is no failure.
    let deadline = Instant::now() + RUN;
    let first = loop {
        let runs = executions(&service, &agent).await;
        if let Some(run) = runs.last().filter(|r| r["status"] == "waiting_for_limit") {
            break id(run);
        }
        let ended = runs.iter().find(|r| !matches!(r["status"].as_str(), Some("queued" | "running")));
        assert!(ended.is_none(), "the first run ended instead of waiting: {runs:?}\n{}", service.log());
        assert!(Instant::now() < deadline, "no run met the limit: {runs:?}\n{}", service.log());
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let waiting = execution(&service, &first).await;
    let resumes_at = assert_waiting(&waiting, chrono::Duration::seconds(5));
    assert_eq!(waiting["trigger"], "cron");
    assert_eq!(consecutive_failures(&service, &agent).await, 0);
    let limits = service.get_json("/api/usage/limits").await;
    let claude = limits.as_array().and_then(|l| l.iter().find(|e| e["agent"] == "claude")).expect("claude's entry");
    assert_eq!((claude["status"].as_str(), claude["limit_type"].as_str()), (Some("limited"), Some("five_hour")));

    // While it waits, the schedule's fires are skipped: the scheduled run is still going.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    if Utc::now() < resumes_at {
        assert_eq!(executions(&service, &agent).await.len(), 1, "no new run while one waits");
    }

    // After the reset the same execution runs again and succeeds.
    let run = ended(&service, &first).await;
    assert_ran_again(&run, resumes_at, "seven open issues");
    assert_eq!(run["trigger"], "cron");
    assert_eq!(consecutive_failures(&service, &agent).await, 0);
    let agent_row = service.get_json(&format!("/api/agents/{agent}")).await;
    assert_eq!(agent_row["status"], "active", "{agent_row}");

    // Its own stream told the limit, then the second attempt, and ended once.
    let mut stream = reqwest::Client::new()
        .get(service.url(&format!("/api/executions/{first}/stream")))
        .header("Last-Event-ID", "0")
        .send()
        .await
        .expect("stream");
    let frames = read_until(&mut stream, &["agent.execution.limit_reached", "agent.execution.finished"]).await;
    let kinds: Vec<&str> = frames
        .iter()
        .filter_map(|f| f["type"].as_str())
        .filter(|t| t.starts_with("agent.execution.") && *t != "agent.execution.output")
        .collect();
    assert_eq!(
        kinds,
        [
            "agent.execution.queued",
            "agent.execution.started",
            "agent.execution.limit_reached",
            "agent.execution.queued",
            "agent.execution.started",
            "agent.execution.finished"
        ],
        "{frames:?}"
    );
    let reached = frames.iter().find(|f| f["type"] == "agent.execution.limit_reached").expect("reached");
    assert_eq!(reached["data"]["status"], "waiting_for_limit", "{reached}");
    assert_eq!(reached["data"]["limit"]["kind"], "usage_limit", "{reached}");
    assert_eq!(reached["data"]["limit"]["limit_type"], "five_hour", "{reached}");
    assert!(reached["data"]["resumes_at"].is_string(), "{reached}");
}

#[actix_web::test]
async fn a_run_waiting_for_a_limit_survives_a_shutdown_and_a_crash_and_runs_after_the_reset() {
    let api = FakeApi::start().await;
    let mut service = TestService::start(config(&api));
    let project = service.project("agent-limits-restart").await;
    api.on("summarise the week", Reply::UsageLimit { resets_in: Duration::from_secs(10) });
    api.on("summarise the week", Reply::Text("a quiet week".into()));
    let agent = create_agent(
        &service,
        json!({"name": "weekly", "objective": "summarise the week", "schedule": "0 0 1 1 *", "project_id": project}),
    )
    .await;
    let res = service.post(&format!("/api/agents/{agent}/trigger"), json!({})).await;
    assert_eq!(res.status().as_u16(), 202);
    let run = id(&res.json::<Value>().await.expect("json"));
    let waiting = until(&service, &run, "waiting", |e| e["status"] != "queued" && e["status"] != "running").await;
    let resumes_at = assert_waiting(&waiting, chrono::Duration::seconds(12));

    // A clean shutdown leaves it waiting (not cancelled), and so does a crash (restart
    // recovery fails only what was queued or running).
    service.terminate();
    let service = TestService::start_in(service.into_dir(), config(&api));
    let after_shutdown = execution(&service, &run).await;
    assert_eq!(after_shutdown["status"], "waiting_for_limit", "{after_shutdown}");
    assert_eq!(at(&after_shutdown["resumes_at"]), resumes_at, "{after_shutdown}");
    let service = TestService::start_in(service.into_dir(), config(&api));
    let after_crash = execution(&service, &run).await;
    assert_eq!(after_crash["status"], "waiting_for_limit", "{after_crash}");
    assert!(Utc::now() < resumes_at, "the restarts took too long for this test to mean anything");

    let done = ended(&service, &run).await;
    assert_ran_again(&done, resumes_at, "a quiet week");
    assert_eq!(done["trigger"], "manual");
    assert_eq!(consecutive_failures(&service, &agent).await, 0);
    assert_eq!(executions(&service, &agent).await.len(), 1, "the same execution ran again");
}

#[actix_web::test]
async fn a_cancel_ends_a_run_waiting_for_a_limit_at_once() {
    let api = FakeApi::start().await;
    let service = TestService::start(config(&api));
    let project = service.project("agent-limits-cancel").await;
    api.on("tidy the backlog", Reply::UsageLimit { resets_in: Duration::from_secs(120) });
    let agent = create_agent(
        &service,
        json!({"name": "tidy", "objective": "tidy the backlog", "schedule": "0 0 1 1 *", "project_id": project}),
    )
    .await;
    let res = service.post(&format!("/api/agents/{agent}/trigger"), json!({})).await;
    let run = id(&res.json::<Value>().await.expect("json"));
    let waiting = until(&service, &run, "waiting", |e| e["status"] != "queued" && e["status"] != "running").await;
    assert_waiting(&waiting, chrono::Duration::seconds(125));

    let asked = || api.requests().iter().filter(|r| r.contains("tidy the backlog")).count();
    let before = asked();
    let res = service.post(&format!("/api/executions/{run}/cancel"), json!({})).await;
    assert_eq!(res.status().as_u16(), 202);
    let cancelled = until(&service, &run, "cancelled", |e| e["status"] == "cancelled").await;
    assert!(cancelled["finished_at"].is_string() && cancelled["resumes_at"].is_null(), "{cancelled}");
    assert_eq!(cancelled["error"], "cancelled on request");
    assert_eq!(consecutive_failures(&service, &agent).await, 0);
    let again = service.post(&format!("/api/executions/{run}/cancel"), json!({})).await;
    assert_eq!(again.status().as_u16(), 409, "it has ended");
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(asked(), before, "it did not run again");
}

#[actix_web::test]
async fn a_run_in_its_own_worktree_goes_again_on_the_same_branch() {
    let api = FakeApi::start().await;
    let service = TestService::start(config(&api));
    let folder = service.root.join("agent-limits-worktree");
    repo(&folder, &[("README.md", "a repository\n")]);
    let project = service.project("agent-limits-worktree").await;
    api.on("review the readme", Reply::UsageLimit { resets_in: Duration::from_secs(2) });
    api.on("review the readme", Reply::Text("the readme is short".into()));
    let agent = create_agent(
        &service,
        json!({"name": "reviewer", "objective": "review the readme", "schedule": "0 0 1 1 *", "project_id": project,
               "workspace_mode": "worktree"}),
    )
    .await;
    let res = service.post(&format!("/api/agents/{agent}/trigger"), json!({})).await;
    let run = id(&res.json::<Value>().await.expect("json"));
    let waiting = until(&service, &run, "waiting", |e| e["status"] != "queued" && e["status"] != "running").await;
    let resumes_at = assert_waiting(&waiting, chrono::Duration::seconds(4));

    let done = ended(&service, &run).await;
    assert_ran_again(&done, resumes_at, "the readme is short");
    // Both attempts worked on one branch: the second took up the first's.
    let branches = git(&folder, &["branch", "--list", "conduit/agent-*", "--format=%(refname:short)"]);
    let branches: Vec<&str> = branches.lines().collect();
    assert_eq!(branches, [format!("conduit/agent-reviewer-{}", &run[..8])], "{branches:?}");
}
