//! The sessions API's contract: validation on launch, and what no response may reveal.

use serde_json::{json, Value};

use crate::helpers::{error_code, spawn_app};
use crate::support::service::{fake_cli, ServiceConfig, TestService};

#[actix_web::test]
async fn launch_refuses_values_that_could_smuggle_flags() {
    let app = spawn_app().await;
    let project = app.create_project("p", "p").await;
    let url = format!("/api/projects/{}/sessions", project["id"].as_str().expect("id"));
    for body in [
        json!({"model": "-p"}),
        json!({"model": "--dangerously-skip-permissions"}),
        json!({"model": "opus extra"}),
        json!({"model": "a\nb"}),
        json!({"model": "a\u{0}b"}),
        json!({"resume_session_id": "--help"}),
        json!({"resume_session_id": "abc def"}),
        json!({"permission_mode": "ask"}),
        json!({"permission_mode": "--yolo"}),
        json!({"fork_session": true}),
        json!({"name": ""}),
        json!({"external_key": "x".repeat(201)}),
        json!({"system_prompt": "a\u{0}b"}),
        json!({"unknown": 1}),
    ] {
        let res = app.post_json(&url, &body).await;
        assert_eq!(error_code(res, 422).await, "validation_failed", "{body}");
    }
    let missing = app.post_json("/api/projects/00000000-0000-4000-8000-000000000000/sessions", &json!({})).await;
    assert_eq!(error_code(missing, 404).await, "not_found");
}

#[actix_web::test]
async fn prompts_may_start_with_a_dash_and_reach_the_cli_attached_to_their_flag() {
    let service = TestService::start(ServiceConfig::new(fake_cli()));
    let project = service.project("dash").await;
    let session = service
        .launch(&project, json!({"system_prompt": "- be brief\n- be kind", "append_system_prompt": "--not-a-flag"}))
        .await;
    let id = session["id"].as_str().expect("id");
    service.wait_status(id, "idle", std::time::Duration::from_secs(20)).await;
    let lines = service.get_json(&format!("/api/sessions/{id}/messages?limit=100")).await;
    let args = lines
        .as_array()
        .expect("array")
        .iter()
        .filter_map(|m| m["content"].as_str())
        .find(|c| c.starts_with("args: "))
        .expect("the fake CLI printed its arguments")
        .to_string();
    assert!(args.contains(r#""--system-prompt=- be brief\n- be kind""#), "{args}");
    assert!(args.contains(r#""--append-system-prompt=--not-a-flag""#), "{args}");
    assert!(!args.contains(r#", "--not-a-flag""#), "never a free-standing value: {args}");
}

#[actix_web::test]
async fn the_access_token_reaches_the_cli_and_no_response() {
    let secret = "cc-access-token-4f1d9e";
    let service = TestService::start(ServiceConfig::new(fake_cli()).env("CONDUIT_CLI_SESSION_ACCESS_TOKEN", secret));
    let project = service.project("tok").await;
    let session = service.launch(&project, json!({})).await;
    let id = session["id"].as_str().expect("id").to_string();
    service.wait_status(&id, "idle", std::time::Duration::from_secs(20)).await;
    service.post(&format!("/api/sessions/{id}/message"), json!({"content": "hi"})).await;
    service.wait_for(&id, std::time::Duration::from_secs(20), |r| r["num_turns"] == 1).await;

    let mut seen = String::new();
    for path in [
        format!("/api/sessions/{id}"),
        format!("/api/sessions/{id}/messages?limit=1000"),
        format!("/api/projects/{project}/sessions"),
        "/api/sessions/active".to_string(),
        "/api/health".to_string(),
        "/api/openapi.json".to_string(),
        "/api/permissions/log".to_string(),
    ] {
        let body: Value = service.get_json(&path).await;
        seen.push_str(&body.to_string());
    }
    assert!(seen.contains(&format!("access token: present ({} bytes)", secret.len())), "the CLI received the token");
    assert!(!seen.contains(secret), "no endpoint shows the token");
    assert!(!service.log().contains(secret), "the log does not show it either");
}
