//! The agents API: validation, limits, updates, errors. Runs use the fake CLI.

use serde_json::{json, Value};

use crate::support::service::{fake_cli, ServiceConfig, TestService};

fn start(max_agents: u32) -> TestService {
    TestService::start(ServiceConfig::new(fake_cli()).env("CONDUIT_MAX_AGENTS", &max_agents.to_string()))
}

async fn error_of(res: reqwest::Response) -> (u16, Value) {
    let status = res.status().as_u16();
    (status, res.json().await.expect("json"))
}

#[actix_web::test]
async fn creation_is_validated_and_explains_schedules() {
    let service = start(10);
    let project = service.project("p").await;
    let base = json!({"name": "n", "objective": "do it", "schedule": "*/5 * * * *", "project_id": project});
    let with = |k: &str, v: Value| {
        let mut b = base.clone();
        b[k] = v;
        b
    };

    let (status, body) =
        error_of(service.post("/api/agents", with("schedule", json!("every five minutes"))).await).await;
    assert_eq!(status, 422);
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("expected 5 fields") && message.contains("*/5 * * * *"), "{body}");
    for (field, value) in [
        ("name", json!("")),
        ("objective", json!("   ")),
        ("model", json!("--evil")),
        ("timeout_ms", json!(10)),
        ("timeout_ms", json!(100_000_000_000_i64)),
        ("schedule", json!("61 * * * *")),
    ] {
        let (status, body) = error_of(service.post("/api/agents", with(field, value.clone())).await).await;
        assert_eq!(status, 422, "{field}={value}: {body}");
    }
    let (status, body) = error_of(service.post("/api/agents", with("surprise", json!(1))).await).await;
    assert_eq!(status, 422);
    assert!(body["error"]["message"].as_str().is_some_and(|m| m.contains("surprise")), "{body}");
    let no_place = json!({"name": "n", "objective": "o", "schedule": "* * * * *"});
    assert_eq!(service.post("/api/agents", no_place).await.status().as_u16(), 422);
    let unknown_project = with("project_id", json!(uuid::Uuid::new_v4().to_string()));
    assert_eq!(service.post("/api/agents", unknown_project).await.status().as_u16(), 404);
    let outside = with("cwd", json!("/etc"));
    let (status, body) = error_of(service.post("/api/agents", outside).await).await;
    assert_eq!(status, 403, "{body}");

    let res = service.post("/api/agents", base.clone()).await;
    assert_eq!(res.status().as_u16(), 201);
    let agent: Value = res.json().await.expect("json");
    let times: Vec<&str> =
        agent["next_fire_times"].as_array().expect("times").iter().filter_map(Value::as_str).collect();
    assert_eq!(times.len(), 3);
    assert!(times.windows(2).all(|w| w[0] < w[1]), "{times:?}");
    assert!(agent["next_run_at"].is_string(), "an active agent knows its next run: {agent}");
}

#[actix_web::test]
async fn agents_are_listed_updated_paused_and_deleted() {
    let service = start(2);
    let project = service.project("p").await;
    let make = |name: &str| json!({"name": name, "objective": "o", "schedule": "0 9 * * 1-5", "project_id": project});
    let a: Value = service.post("/api/agents", make("alpha")).await.json().await.expect("json");
    let b: Value = service.post("/api/agents", make("beta")).await.json().await.expect("json");
    let (status, body) = error_of(service.post("/api/agents", make("gamma")).await).await;
    assert_eq!(status, 429, "CONDUIT_MAX_AGENTS: {body}");
    assert_eq!(body["error"]["code"], "agent_limit_reached");

    let list = service.get_json("/api/agents").await;
    let names: Vec<&str> = list.as_array().expect("list").iter().filter_map(|a| a["name"].as_str()).collect();
    assert_eq!(names, ["alpha", "beta"]);

    let a_id = a["id"].as_str().expect("id");
    let url = service.url(&format!("/api/agents/{a_id}"));
    let res =
        service.client.put(&url).json(&json!({"schedule": "*/10 * * * * *", "model": "m1"})).send().await.expect("put");
    assert_eq!(res.status().as_u16(), 200);
    let updated: Value = res.json().await.expect("json");
    assert_eq!((updated["schedule"].as_str(), updated["model"].as_str()), (Some("*/10 * * * * *"), Some("m1")));
    let res = service.client.put(&url).json(&json!({"model": null, "name": "alpha2"})).send().await.expect("put");
    let updated: Value = res.json().await.expect("json");
    assert!(updated["model"].is_null() && updated["name"] == "alpha2", "{updated}");
    for bad in [json!({"schedule": "nope"}), json!({"name": null}), json!({"timeout_ms": 1}), json!({"id": "x"})] {
        let res = service.client.put(&url).json(&bad).send().await.expect("put");
        assert_eq!(res.status().as_u16(), 422, "{bad}");
    }

    let paused: Value = service.post(&format!("/api/agents/{a_id}/pause"), json!({})).await.json().await.expect("json");
    assert_eq!(paused["status"], "paused");
    let resumed: Value =
        service.post(&format!("/api/agents/{a_id}/resume"), json!({})).await.json().await.expect("json");
    assert_eq!(resumed["status"], "active");

    assert_eq!(service.delete(&format!("/api/agents/{a_id}")).await.status().as_u16(), 204);
    assert_eq!(service.get(&format!("/api/agents/{a_id}")).await.status().as_u16(), 404);
    assert_eq!(service.delete(&format!("/api/agents/{a_id}")).await.status().as_u16(), 404);
    let res = service.post("/api/agents", make("gamma")).await;
    assert_eq!(res.status().as_u16(), 201, "room again after a delete");
    let _ = b;
}

#[actix_web::test]
async fn unknown_and_malformed_ids_are_404_and_ended_runs_cannot_be_cancelled() {
    let service = start(10);
    let project = service.project("p").await;
    let unknown = uuid::Uuid::new_v4();
    for path in [
        format!("/api/agents/{unknown}"),
        "/api/agents/not-a-uuid".to_string(),
        format!("/api/agents/{unknown}/executions"),
        format!("/api/executions/{unknown}"),
        format!("/api/executions/{unknown}/stream"),
    ] {
        assert_eq!(service.get(&path).await.status().as_u16(), 404, "{path}");
    }
    for path in [
        format!("/api/agents/{unknown}/trigger"),
        format!("/api/agents/{unknown}/pause"),
        format!("/api/executions/{unknown}/cancel"),
    ] {
        assert_eq!(service.post(&path, json!({})).await.status().as_u16(), 404, "{path}");
    }

    let agent: Value = service
        .post(
            "/api/agents",
            json!({"name": "quick", "objective": "hello", "schedule": "0 0 1 1 *", "project_id": project}),
        )
        .await
        .json()
        .await
        .expect("json");
    let agent_id = agent["id"].as_str().expect("id");
    let res = service.post(&format!("/api/agents/{agent_id}/trigger"), json!({})).await;
    assert_eq!(res.status().as_u16(), 202);
    let run: Value = res.json().await.expect("json");
    let run_id = run["id"].as_str().expect("id");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let done = loop {
        let e = service.get_json(&format!("/api/executions/{run_id}")).await;
        if e["status"] == "success" {
            break e;
        }
        assert!(std::time::Instant::now() < deadline, "{e}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    assert!(done["output"].as_str().is_some_and(|o| o.contains("echo: hello")), "{done}");
    let (status, _) = error_of(service.post(&format!("/api/executions/{run_id}/cancel"), json!({})).await).await;
    assert_eq!(status, 409);
    for bad in ["0", "101", "x"] {
        let status = service.get(&format!("/api/agents/{agent_id}/executions?limit={bad}")).await.status().as_u16();
        assert!(status == 422 || status == 400, "limit={bad}: {status}");
    }
    assert_eq!(service.get_json("/api/locks").await, json!([]));
}
