//! Scheduled agents end to end with the real CLI and the fake Messages API: schedules,
//! triggers, directory locks, timeouts, failures, permission rules, and a restart.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::fake_api::{FakeApi, Reply};
use crate::support::service::{fake_cli, real_cli, ServiceConfig, TestService};

const RUN: Duration = Duration::from_secs(90);

async fn rig() -> (FakeApi, TestService) {
    let api = FakeApi::start().await;
    let service = TestService::start(ServiceConfig::new(real_cli()).api(&api.base_url));
    (api, service)
}

async fn create_agent(service: &TestService, body: Value) -> Value {
    let res = service.post("/api/agents", body).await;
    let status = res.status().as_u16();
    let agent: Value = res.json().await.expect("json");
    assert_eq!(status, 201, "{agent}");
    agent
}

fn id(v: &Value) -> String {
    v["id"].as_str().expect("id").to_string()
}

async fn executions(service: &TestService, agent: &str) -> Vec<Value> {
    let list = service.get_json(&format!("/api/agents/{agent}/executions?limit=100")).await;
    list.as_array().cloned().unwrap_or_default()
}

/// Waits for an execution to reach one of the ended statuses; returns it whole.
async fn ended(service: &TestService, execution: &str, within: Duration) -> Value {
    let deadline = Instant::now() + within;
    loop {
        let e = service.get_json(&format!("/api/executions/{execution}")).await;
        if !matches!(e["status"].as_str(), Some("queued" | "running")) {
            return e;
        }
        assert!(Instant::now() < deadline, "the run never ended: {e}\n{}", service.log());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn trigger(service: &TestService, agent: &str) -> String {
    let res = service.post(&format!("/api/agents/{agent}/trigger"), json!({})).await;
    assert_eq!(res.status().as_u16(), 202);
    id(&res.json::<Value>().await.expect("json"))
}

/// Processes still carrying the run's marker.
fn marked_processes(marker: &str) -> Vec<i32> {
    let needle = format!("CONDUIT_SESSION_MARKER={marker}");
    std::fs::read_dir("/proc")
        .map(|dir| {
            dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
                .filter(|pid| {
                    std::fs::read(format!("/proc/{pid}/environ"))
                        .map(|env| env.split(|b| *b == 0).any(|kv| kv == needle.as_bytes()))
                        .unwrap_or(false)
                })
                .collect()
        })
        .unwrap_or_default()
}

#[actix_web::test]
async fn an_agent_on_a_one_second_schedule_runs_and_records_its_output() {
    let (api, service) = rig().await;
    let project = service.project("scheduled").await;
    api.on("report the weather", Reply::Text("sunny today".into()));
    let agent = create_agent(
        &service,
        json!({"name": "weather", "objective": "report the weather", "schedule": "* * * * * *", "project_id": project}),
    )
    .await;
    assert_eq!(agent["status"], "active");
    assert_eq!(agent["timeout_ms"], 300000);
    assert!(agent["cwd"].as_str().is_some_and(|c| c.ends_with("/scheduled")), "{agent}");
    assert_eq!(agent["next_fire_times"].as_array().map(Vec::len), Some(3), "{agent}");
    let agent_id = id(&agent);

    let deadline = Instant::now() + RUN;
    let first = loop {
        let runs = executions(&service, &agent_id).await;
        if let Some(done) = runs.iter().rev().find(|e| e["status"] != "queued" && e["status"] != "running") {
            break done.clone();
        }
        assert!(Instant::now() < deadline, "no run finished: {runs:?}\n{}", service.log());
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let run = service.get_json(&format!("/api/executions/{}", id(&first))).await;
    assert_eq!(run["status"], "success", "{run}");
    assert_eq!(run["trigger"], "cron");
    assert_eq!(run["exit_code"], 0);
    assert!(run["output"].as_str().is_some_and(|o| o.contains("sunny today")), "{run}");
    assert!(run["raw_output"].as_str().is_some_and(|o| o.contains(r#""type":"result""#)), "{run}");
    assert!(run["cost_usd"].as_f64().is_some_and(|c| c > 0.0), "{run}");
    assert!(run["started_at"].as_str() <= run["finished_at"].as_str());

    let paused = service.post(&format!("/api/agents/{agent_id}/pause"), json!({})).await;
    let paused: Value = paused.json().await.expect("json");
    assert_eq!(paused["status"], "paused");
    assert!(paused["next_run_at"].is_null(), "{paused}");
    // Whatever was in flight ends; then nothing new starts.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let settled = executions(&service, &agent_id).await.len();
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(executions(&service, &agent_id).await.len(), settled, "a paused agent does not fire");
}

#[actix_web::test]
async fn a_trigger_on_a_paused_agent_runs_once_and_a_deny_rule_governs_it() {
    let (api, service) = rig().await;
    let project = service.project("guarded-agent").await;
    let victim = service.root.join("guarded-agent/victim.txt");
    std::fs::write(&victim, "keep me").expect("write");
    let res = service
        .post("/api/rules/global", json!({"tool_name": "Bash", "rule_content": "rm:*", "behavior": "deny"}))
        .await;
    assert_eq!(res.status().as_u16(), 201);
    api.on("tidy the folder", Reply::ToolUse { name: "Bash".into(), input: json!({"command": "rm -f victim.txt"}) });
    api.on("tool_result", Reply::Text("could not tidy".into()));
    let agent = create_agent(
        &service,
        json!({"name": "tidy", "objective": "tidy the folder", "schedule": "0 0 1 1 *", "project_id": project}),
    )
    .await;
    let agent_id = id(&agent);
    service.post(&format!("/api/agents/{agent_id}/pause"), json!({})).await;

    let run = trigger(&service, &agent_id).await;
    let run = ended(&service, &run, RUN).await;
    assert_eq!(run["status"], "success", "{run}");
    assert_eq!(run["trigger"], "manual");
    assert!(victim.exists(), "the denied rm did not run");
    let log = service.get_json(&format!("/api/permissions/log?project_id={project}&decision=deny")).await;
    let rows = log.as_array().cloned().unwrap_or_default();
    assert!(rows.iter().any(|r| r["tool_name"] == "Bash" && r["session_id"].is_null()), "{log}");

    let after = service.get_json(&format!("/api/agents/{agent_id}")).await;
    assert_eq!(after["status"], "paused", "a trigger does not change the stored status");
    assert_eq!(executions(&service, &agent_id).await.len(), 1, "it ran once");
}

#[actix_web::test]
async fn runs_on_one_folder_never_overlap_while_runs_on_two_folders_do() {
    let (api, service) = rig().await;
    let shared = service.project("shared").await;
    let other = service.project("other").await;
    let slow = |text: &str| Reply::Slow { text: text.into(), chunks: 15, delay: Duration::from_millis(100) };
    for objective in ["objective alpha one", "objective alpha two", "objective beta"] {
        api.on(objective, slow("working"));
    }
    let never = "0 0 1 1 *";
    let a1 = create_agent(
        &service,
        json!({"name": "a1", "objective": "objective alpha one", "schedule": never, "project_id": shared}),
    )
    .await;
    let a2 = create_agent(
        &service,
        json!({"name": "a2", "objective": "objective alpha two", "schedule": never, "project_id": shared}),
    )
    .await;
    let b = create_agent(
        &service,
        json!({"name": "b", "objective": "objective beta", "schedule": never, "project_id": other}),
    )
    .await;

    let runs = [trigger(&service, &id(&a1)).await, trigger(&service, &id(&a2)).await, trigger(&service, &id(&b)).await];
    // While the first alpha run holds the shared folder, the second waits in line.
    let deadline = Instant::now() + RUN;
    loop {
        let locks = service.get_json("/api/locks").await;
        let held = locks.as_array().cloned().unwrap_or_default();
        let shared_lock = held.iter().find(|l| l["path"].as_str().is_some_and(|p| p.ends_with("/shared")));
        if let Some(lock) = shared_lock.filter(|l| l["waiters"].as_array().is_some_and(|w| w.len() == 1)) {
            assert!(lock["holder"]["holder"].as_str().is_some_and(|h| h.contains("a1") || h.contains("a2")), "{lock}");
            break;
        }
        assert!(Instant::now() < deadline, "never saw a waiter: {locks}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut done = Vec::new();
    for run in &runs {
        let e = ended(&service, run, RUN).await;
        assert_eq!(e["status"], "success", "{e}");
        done.push(e);
    }
    let span = |e: &Value| {
        (e["started_at"].as_str().unwrap_or("").to_string(), e["finished_at"].as_str().unwrap_or("").to_string())
    };
    let (a1, a2, b) = (span(&done[0]), span(&done[1]), span(&done[2]));
    let overlap = |x: &(String, String), y: &(String, String)| x.0 < y.1 && y.0 < x.1;
    assert!(!overlap(&a1, &a2), "one folder, one run at a time: {a1:?} {a2:?}");
    assert!(overlap(&a1, &b) || overlap(&a2, &b), "two folders run at once: {a1:?} {a2:?} {b:?}");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(service.get_json("/api/locks").await, json!([]), "empty queues are dropped");
}

#[actix_web::test]
async fn a_timeout_ends_the_process_group_and_is_recorded() {
    let (api, service) = rig().await;
    let project = service.project("slowpoke").await;
    api.on("take forever", Reply::Slow { text: "tick".into(), chunks: 60, delay: Duration::from_millis(500) });
    let agent = create_agent(
        &service,
        json!({"name": "slow", "objective": "take forever", "schedule": "0 0 1 1 *", "project_id": project, "timeout_ms": 3000}),
    )
    .await;
    let started = Instant::now();
    let run = trigger(&service, &id(&agent)).await;
    let e = ended(&service, &run, RUN).await;
    assert_eq!(e["status"], "timeout", "{e}");
    assert!(e["error"].as_str().is_some_and(|m| m.contains("3000 ms")), "{e}");
    assert!(started.elapsed() < Duration::from_secs(25), "ended within the timeout plus the grace");
    assert!(marked_processes(&run).is_empty(), "nothing of the run is left");
    let agent = service.get_json(&format!("/api/agents/{}", id(&agent))).await;
    assert_eq!(agent["consecutive_failures"], 1, "{agent}");
}

#[actix_web::test]
async fn a_running_execution_can_be_cancelled() {
    let (api, service) = rig().await;
    let project = service.project("cancel").await;
    api.on("a long job", Reply::Slow { text: "tick".into(), chunks: 60, delay: Duration::from_millis(500) });
    let agent = create_agent(
        &service,
        json!({"name": "long", "objective": "a long job", "schedule": "0 0 1 1 *", "project_id": project}),
    )
    .await;
    let run = trigger(&service, &id(&agent)).await;
    let deadline = Instant::now() + RUN;
    while service.get_json(&format!("/api/executions/{run}")).await["status"] != "running" {
        assert!(Instant::now() < deadline, "never ran");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let res = service.post(&format!("/api/executions/{run}/cancel"), json!({})).await;
    assert_eq!(res.status().as_u16(), 202);
    let e = ended(&service, &run, Duration::from_secs(30)).await;
    assert_eq!(e["status"], "cancelled", "{e}");
    assert!(marked_processes(&run).is_empty());
    let again = service.post(&format!("/api/executions/{run}/cancel"), json!({})).await;
    assert_eq!(again.status().as_u16(), 409);
}

#[actix_web::test]
async fn five_failures_in_a_row_put_an_agent_in_error() {
    let service = TestService::start(ServiceConfig::new(fake_cli()));
    let project = service.project("failing").await;
    let agent = create_agent(
        &service,
        json!({"name": "doomed", "objective": "fail", "schedule": "* * * * * *", "project_id": project, "model": "fake-no-init"}),
    )
    .await;
    let agent_id = id(&agent);
    let deadline = Instant::now() + Duration::from_secs(30);
    let errored = loop {
        let a = service.get_json(&format!("/api/agents/{agent_id}")).await;
        if a["status"] == "error" {
            break a;
        }
        assert!(Instant::now() < deadline, "never errored: {a}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(errored["consecutive_failures"], 5);
    assert!(errored["next_run_at"].is_null());
    let runs = executions(&service, &agent_id).await;
    assert_eq!(runs.len(), 5, "{runs:?}");
    assert!(runs.iter().all(|r| r["status"] == "failure" && r["exit_code"] == 1), "{runs:?}");
    let one = service.get_json(&format!("/api/executions/{}", id(&runs[0]))).await;
    assert!(one["error"].as_str().is_some_and(|e| e.contains("refuses to start")), "the CLI's reason: {one}");
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(executions(&service, &agent_id).await.len(), 5, "no more fires");

    let resumed: Value =
        service.post(&format!("/api/agents/{agent_id}/resume"), json!({})).await.json().await.expect("json");
    assert_eq!((resumed["status"].as_str(), resumed["consecutive_failures"].as_i64()), (Some("active"), Some(0)));
}

#[actix_web::test]
async fn a_restart_restores_schedules_and_fails_runs_it_interrupted() {
    let (api, service) = rig().await;
    let project = service.project("restart").await;
    api.on("a very long job", Reply::Slow { text: "tick".into(), chunks: 120, delay: Duration::from_millis(500) });
    let ticker = create_agent(
        &service,
        json!({"name": "ticker", "objective": "tick", "schedule": "*/2 * * * * *", "project_id": project}),
    )
    .await;
    service.post(&format!("/api/agents/{}/pause", id(&ticker)), json!({})).await;
    let cwd = service.root.join("elsewhere");
    std::fs::create_dir_all(&cwd).expect("cwd");
    let long = create_agent(
        &service,
        json!({"name": "long", "objective": "a very long job", "schedule": "0 0 1 1 *", "cwd": "elsewhere"}),
    )
    .await;
    let run = trigger(&service, &id(&long)).await;
    let deadline = Instant::now() + RUN;
    while service.get_json(&format!("/api/executions/{run}")).await["status"] != "running" {
        assert!(Instant::now() < deadline, "never ran");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    service.post(&format!("/api/agents/{}/resume", id(&ticker)), json!({})).await;

    let dir = service.into_dir();
    let restarted_at = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let service = TestService::start_in(dir, ServiceConfig::new(real_cli()).api(&api.base_url));
    let interrupted = service.get_json(&format!("/api/executions/{run}")).await;
    assert_eq!(interrupted["status"], "failure", "{interrupted}");
    assert_eq!(interrupted["error"], "service restarted");
    assert!(marked_processes(&run).is_empty(), "its CLI was ended at startup");
    let agents = service.get_json("/api/agents").await;
    assert_eq!(agents.as_array().map(Vec::len), Some(2), "{agents}");
    let deadline = Instant::now() + RUN;
    loop {
        let runs = executions(&service, &id(&ticker)).await;
        if runs.iter().any(|r| r["status"] == "success" && r["created_at"].as_str() > Some(restarted_at.as_str())) {
            break;
        }
        assert!(Instant::now() < deadline, "the schedule did not come back: {runs:?}\n{}", service.log());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
