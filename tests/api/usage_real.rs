//! The cost ledger end to end with the real Claude Code CLI (2.1.330) and the fake Messages
//! API: what each turn cost, summed, across a crash-and-resume and a service restart; and a
//! scheduled agent's run counted.

use std::time::Duration;

use serde_json::{json, Value};

use crate::support::fake_api::{FakeApi, Reply};
use crate::support::service::{real_cli, ServiceConfig, TestService};

const READY: Duration = Duration::from_secs(60);

async fn say(service: &TestService, id: &str, content: &str) {
    let res = service.post(&format!("/api/sessions/{id}/message"), json!({ "content": content })).await;
    assert_eq!(res.status().as_u16(), 202);
}

/// The `total_cost_usd` of the session's last stored `result` line: cumulative for the CLI
/// process that wrote it.
async fn last_result_cost(service: &TestService, id: &str) -> f64 {
    let lines = service.get_json(&format!("/api/sessions/{id}/messages?tail=true&limit=50")).await;
    let results: Vec<Value> = lines
        .as_array()
        .expect("lines")
        .iter()
        .filter(|m| m["message_type"] == "result")
        .filter_map(|m| serde_json::from_str(m["content"].as_str()?).ok())
        .collect();
    results.last().and_then(|r| r["total_cost_usd"].as_f64()).expect("a result with a cost")
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[actix_web::test]
async fn the_ledger_sums_each_turn_once_across_a_resume_and_a_restart() {
    let api = FakeApi::start().await;
    let config = || ServiceConfig::new(real_cli()).api(&api.base_url);
    let service = TestService::start(config());
    let project = service.project("ledger").await;
    let session = service.launch(&project, json!({})).await;
    let id = session["id"].as_str().expect("id").to_string();
    service.wait_status(&id, "idle", READY).await;

    // Two turns in the first process: its results' costs are cumulative, so what the process
    // cost is its last result's figure.
    api.on("ledger turn one", Reply::Text("one".into()));
    say(&service, &id, "ledger turn one").await;
    service.wait_for(&id, READY, |r| r["num_turns"] == 1 && r["status"] == "idle").await;
    api.on("ledger turn two", Reply::Text("two".into()));
    say(&service, &id, "ledger turn two").await;
    let row = service.wait_for(&id, READY, |r| r["num_turns"] == 2 && r["status"] == "idle").await;
    let first_process = last_result_cost(&service, &id).await;
    assert!(first_process > 0.0);

    // The CLI killed, the session resumed: a new process counts from zero again.
    // SAFETY: signalling the CLI the test's own service started.
    unsafe { libc::kill(row["cli_pid"].as_i64().expect("pid") as i32, libc::SIGKILL) };
    service.wait_status(&id, "error", Duration::from_secs(10)).await;
    assert_eq!(service.post(&format!("/api/sessions/{id}/resume"), json!({})).await.status().as_u16(), 200);
    service.wait_status(&id, "idle", READY).await;
    api.on("ledger turn three", Reply::Text("three".into()));
    say(&service, &id, "ledger turn three").await;
    let row = service.wait_for(&id, READY, |r| r["num_turns"] == 3 && r["status"] == "idle").await;

    // The service crashes: the CLI runs on under its keeper, and the next service attaches to
    // it again; its next result is still cumulative for the same process, so the totals must
    // not count what the process cost before the crash twice.
    let stopping = || config().env("CONDUIT_ON_SHUTDOWN", "stop");
    let mut service = TestService::start_in(service.into_dir(), stopping());
    let reattached = service.wait_status(&id, "idle", READY).await;
    assert_eq!(reattached["cli_pid"], row["cli_pid"], "the same CLI: {reattached}");
    api.on("ledger turn four", Reply::Text("four".into()));
    say(&service, &id, "ledger turn four").await;
    service.wait_for(&id, READY, |r| r["num_turns"] == 4 && r["status"] == "idle").await;
    let second_process = last_result_cost(&service, &id).await;

    // Stopped (in `stop` mode the session ends), started again, the session resumed once more.
    let (_, status) = service.terminate();
    assert!(status.success(), "{status:?}");
    let service = TestService::start_in(service.into_dir(), config());
    assert_eq!(service.post(&format!("/api/sessions/{id}/resume"), json!({})).await.status().as_u16(), 200);
    service.wait_status(&id, "idle", READY).await;
    api.on("ledger turn five", Reply::Text("five".into()));
    say(&service, &id, "ledger turn five").await;
    let row = service.wait_for(&id, READY, |r| r["num_turns"] == 5 && r["status"] == "idle").await;
    let third_process = last_result_cost(&service, &id).await;

    let spent = first_process + second_process + third_process;
    assert!(close(row["total_cost_usd"].as_f64().expect("total"), spent), "{row} vs {spent}");
    for group in ["session", "project", "agent_kind", "model", "day"] {
        let report = service.get_json(&format!("/api/usage?group_by={group}")).await;
        assert!(close(report["total"]["cost_usd"].as_f64().expect("total"), spent), "{group}: {report} vs {spent}");
        assert_eq!(report["total"]["turns"], 5, "one ledger row per result: {report}");
        // Tokens as the session's totals count them (every model call, titles included).
        let tokens = |v: &Value, k: &str| v[k].as_i64();
        assert_eq!(
            (tokens(&report["total"], "input_tokens"), tokens(&report["total"], "output_tokens")),
            (tokens(&row, "total_input_tokens"), tokens(&row, "total_output_tokens")),
            "{report} vs {row}"
        );
        assert_eq!(report["groups"].as_array().map(Vec::len), Some(1), "{group}: {report}");
    }
    let by_session = service.get_json("/api/usage?group_by=session").await;
    assert_eq!(by_session["groups"][0]["key"], id.as_str());
    let by_kind = service.get_json("/api/usage?group_by=agent_kind").await;
    assert_eq!(by_kind["groups"][0]["key"], "claude");

    // A window that ends before the turns sums nothing; a window around now sums them all,
    // partly from whole hours and partly from the ledger's rows at its edges.
    let early = service.get_json("/api/usage?to=2020-01-01").await;
    assert_eq!((early["total"]["turns"].as_i64(), early["groups"].as_array().map(Vec::len)), (Some(0), Some(0)));
    let now = chrono::Utc::now();
    let from = (now - chrono::Duration::minutes(90)).to_rfc3339();
    let to = (now + chrono::Duration::minutes(1)).to_rfc3339();
    let url = format!("/api/usage?group_by=project&project_id={project}&from={}&to={}", enc(&from), enc(&to));
    let around = service.get_json(&url).await;
    assert!(close(around["total"]["cost_usd"].as_f64().expect("total"), spent), "{around}");
    assert_eq!(around["groups"][0]["key"], project.as_str());
}

fn enc(text: &str) -> String {
    text.replace('+', "%2B").replace(':', "%3A")
}

#[actix_web::test]
async fn a_scheduled_agents_run_is_in_the_ledger_under_its_agent() {
    let api = FakeApi::start().await;
    let service = TestService::start(ServiceConfig::new(real_cli()).api(&api.base_url));
    let project = service.project("ledger-agent").await;
    api.on("count the ledger rows", Reply::Text("counted".into()));
    let res = service
        .post(
            "/api/agents",
            json!({"name": "counter", "objective": "count the ledger rows", "schedule": "0 0 1 1 *", "project_id": project}),
        )
        .await;
    assert_eq!(res.status().as_u16(), 201);
    let agent: Value = res.json().await.expect("json");
    let agent_id = agent["id"].as_str().expect("id").to_string();
    let res = service.post(&format!("/api/agents/{agent_id}/trigger"), json!({})).await;
    assert_eq!(res.status().as_u16(), 202);
    let run: Value = res.json().await.expect("json");
    let run_id = run["id"].as_str().expect("run id").to_string();
    let deadline = std::time::Instant::now() + Duration::from_secs(90);
    let run = loop {
        let run = service.get_json(&format!("/api/executions/{run_id}")).await;
        if run["finished_at"].is_string() {
            break run;
        }
        assert!(std::time::Instant::now() < deadline, "the run did not end: {run}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(run["status"], "success", "{run}");
    let cost = run["cost_usd"].as_f64().expect("cost");
    let report = service.get_json("/api/usage?group_by=agent").await;
    assert_eq!(report["groups"].as_array().map(Vec::len), Some(1), "{report}");
    assert_eq!(report["groups"][0]["key"], agent_id.as_str());
    assert!(close(report["groups"][0]["cost_usd"].as_f64().expect("cost"), cost), "{report} vs {run}");
    let by_project = service.get_json("/api/usage?group_by=project").await;
    assert_eq!(by_project["groups"][0]["key"], project.as_str(), "a project's agents count in its costs");
}

#[actix_web::test]
async fn bad_usage_queries_are_422() {
    let service = TestService::start(ServiceConfig::new(real_cli()));
    for query in [
        "group_by=week",
        "from=yesterday",
        "to=2026-13-01",
        "from=2026-11-02&to=2026-11-01",
        "from=2026-11-01&to=2026-11-01",
        "project_id=not-a-uuid",
    ] {
        let res = service.get(&format!("/api/usage?{query}")).await;
        assert_eq!(res.status().as_u16(), 422, "{query}");
        let body: Value = res.json().await.expect("json");
        assert_eq!(body["error"]["code"], "validation_failed", "{query}: {body}");
    }
    let empty = service.get_json("/api/usage").await;
    assert_eq!((empty["group_by"].as_str(), empty["total"]["turns"].as_i64()), (Some("project"), Some(0)));
}
