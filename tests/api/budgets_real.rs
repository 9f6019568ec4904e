//! Budgets end to end with the real Claude Code CLI (2.1.330) and the fake Messages API
//! reporting large usage: a project's daily budget smaller than one turn pauses its sessions
//! and refuses further work with 402 until raised; a session's own cap reaches the CLI as
//! `--max-budget-usd` and its `error_max_budget_usd` result is told as such; an agent whose CLI
//! reports tokens but no cost (Gemini CLI 0.61.0) costs its tokens at its model's price, and
//! Conduit enforces its session cap.

use std::time::Duration;

use serde_json::{json, Value};

use crate::changes::read_until;
use crate::support::agent_clis::{start_with, Cli};
use crate::support::fake_api::{FakeApi, Reply};
use crate::support::fake_models::Reply as ModelReply;
use crate::support::service::{real_cli, ServiceConfig, TestService};

const READY: Duration = Duration::from_secs(60);

async fn say(service: &TestService, id: &str, content: &str) -> reqwest::Response {
    service.post(&format!("/api/sessions/{id}/message"), json!({ "content": content })).await
}

async fn put(service: &TestService, path: &str, body: Value) -> reqwest::Response {
    reqwest::Client::new().put(service.url(path)).json(&body).send().await.expect("PUT")
}

async fn refused(res: reqwest::Response) -> (Option<String>, Value) {
    assert_eq!(res.status().as_u16(), 402);
    let retry = res.headers().get("retry-after").and_then(|v| v.to_str().ok()).map(str::to_string);
    let body: Value = res.json().await.expect("json");
    assert_eq!(body["error"]["code"], "budget_exhausted", "{body}");
    (retry, body)
}

#[actix_web::test]
async fn a_spent_project_budget_pauses_its_sessions_until_it_is_raised() {
    let api = FakeApi::start().await;
    let service = TestService::start(ServiceConfig::new(real_cli()).api(&api.base_url));
    let mut events = service.get("/api/events/stream").await;
    let project = service.project("budget").await;
    let res = put(&service, &format!("/api/projects/{project}"), json!({"budget_daily_usd": 0.5})).await;
    assert_eq!(res.status().as_u16(), 200);
    let session = service.launch(&project, json!({})).await;
    let id = session["id"].as_str().expect("id").to_string();
    service.wait_status(&id, "idle", READY).await;

    // One turn costs more than the whole day's budget: it completes, then the session rests
    // as paused.
    api.on("the expensive question", Reply::Expensive { text: "a costly answer".into(), output_tokens: 200_000 });
    assert_eq!(say(&service, &id, "the expensive question").await.status().as_u16(), 202);
    let paused = service.wait_for(&id, READY, |r| r["num_turns"] == 1 && r["status"] == "paused").await;
    assert!(paused["total_cost_usd"].as_f64().expect("cost") > 0.5, "{paused}");
    let reason = paused["status_reason"].as_str().unwrap_or_default();
    assert!(reason.contains("daily budget") && reason.contains("$0.50"), "{paused}");

    // Further work is refused, naming the budget and when it resets.
    let (retry, body) = refused(say(&service, &id, "one more?").await).await;
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("daily budget") && message.contains("resets at"), "{body}");
    assert!(retry.and_then(|r| r.parse::<i64>().ok()).is_some_and(|s| s > 0 && s <= 86_400), "Retry-After");
    refused(service.post(&format!("/api/projects/{project}/sessions"), json!({})).await).await;
    let usage = service.get_json(&format!("/api/usage?project_id={project}")).await;
    assert!(usage["total"]["cost_usd"].as_f64().expect("cost") > 0.5, "{usage}");

    // Raised: the session is idle again and the next turn runs.
    let res = put(&service, &format!("/api/projects/{project}"), json!({"budget_daily_usd": 1000})).await;
    assert_eq!(res.status().as_u16(), 200);
    let resumed = service.get_json(&format!("/api/sessions/{id}")).await;
    assert_eq!(resumed["status"], "idle", "released before the update answered: {resumed}");
    assert!(resumed["status_reason"].is_null(), "{resumed}");
    api.on("after the raise", Reply::Text("running again".into()));
    assert_eq!(say(&service, &id, "after the raise").await.status().as_u16(), 202);
    service.wait_for(&id, READY, |r| r["num_turns"] == 2 && r["status"] == "idle").await;

    let frames = read_until(&mut events, &["budget.exhausted", "budget.resumed"]).await;
    let spent = frames.iter().find(|f| f["type"] == "budget.exhausted").expect("exhausted");
    assert_eq!(
        (spent["data"]["budget"].as_str(), spent["data"]["project_id"].as_str()),
        (Some("project_daily"), Some(project.as_str()))
    );
    assert_eq!(spent["data"]["limit_usd"], 0.5);
}

#[actix_web::test]
async fn a_session_cap_reaches_the_cli_and_its_budget_result_is_told_as_such() {
    let api = FakeApi::start().await;
    let service = TestService::start(ServiceConfig::new(real_cli()).api(&api.base_url));
    let project = service.project("capped").await;
    let session = service.launch(&project, json!({"max_budget_usd": 0.01})).await;
    assert_eq!(session["max_budget_usd"], 0.01);
    let id = session["id"].as_str().expect("id").to_string();
    let idle = service.wait_status(&id, "idle", READY).await;
    let pid = idle["cli_pid"].as_i64().expect("pid");
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).expect("cmdline");
    let args: Vec<String> = cmdline.split(|b| *b == 0).map(|a| String::from_utf8_lossy(a).into_owned()).collect();
    assert!(args.iter().any(|a| a == "--max-budget-usd=0.01"), "{args:?}");

    api.on("spend it all", Reply::Expensive { text: "too dear".into(), output_tokens: 200_000 });
    assert_eq!(say(&service, &id, "spend it all").await.status().as_u16(), 202);
    let paused = service.wait_for(&id, READY, |r| r["num_turns"] == 1 && r["status"] == "paused").await;
    assert!(paused["status_reason"].as_str().unwrap_or_default().contains("session's budget"), "{paused}");
    let lines = service.get_json(&format!("/api/sessions/{id}/messages?limit=1000&partial=false")).await;
    let result = lines
        .as_array()
        .expect("lines")
        .iter()
        .filter(|m| m["message_type"] == "result")
        .find_map(|m| serde_json::from_str::<Value>(m["content"].as_str()?).ok())
        .expect("a result");
    assert_eq!(result["subtype"], "error_max_budget_usd", "{result}");
    let (_, body) = refused(say(&service, &id, "and more").await).await;
    assert!(body["error"]["message"].as_str().unwrap_or_default().contains("session's budget"), "{body}");
}

#[actix_web::test]
async fn a_cli_without_costs_pays_its_model_s_price_and_meets_its_session_cap() {
    // The built-in price of gemini-2.5-flash, overridden from the environment: 1,000 USD per
    // million tokens either way, so the fake's 100 input and 20 output tokens a request cost
    // 0.12 USD.
    let prices = r#"{ "gemini-2.5-flash" = { input = 1000, output = 1000 } }"#;
    let (service, model) = start_with(Cli::Gemini, &[("CONDUIT_MODEL_PRICES", prices)]).await;
    let project = service.project("priced").await;
    let mut launch = Cli::Gemini.launch();
    launch["max_budget_usd"] = json!(0.1);
    let session = service.launch(&project, launch).await;
    let id = session["id"].as_str().expect("id").to_string();
    service.wait_status(&id, "idle", READY).await;

    model.on("what does this cost", ModelReply::Text("a priced answer".into()));
    assert_eq!(say(&service, &id, "what does this cost").await.status().as_u16(), 202);
    let paused = service.wait_for(&id, READY, |r| r["num_turns"] == 1 && r["status"] == "paused").await;
    let tokens =
        paused["total_input_tokens"].as_i64().unwrap_or(0) + paused["total_output_tokens"].as_i64().unwrap_or(0);
    let cost = paused["total_cost_usd"].as_f64().expect("cost");
    assert!(tokens > 0, "{paused}");
    assert!((cost - tokens as f64 * 1000.0 / 1e6).abs() < 1e-9, "tokens at the configured price: {paused}");
    assert!(paused["status_reason"].as_str().unwrap_or_default().contains("session's budget"), "{paused}");
    let usage = service.get_json(&format!("/api/usage?group_by=session&project_id={project}")).await;
    assert!((usage["total"]["cost_usd"].as_f64().unwrap_or(0.0) - cost).abs() < 1e-9, "the ledger has it: {usage}");
    let (_, body) = refused(say(&service, &id, "and more").await).await;
    assert!(body["error"]["message"].as_str().unwrap_or_default().contains("session's budget"), "{body}");
}
