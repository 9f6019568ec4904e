//! What a transcript view reads, against the fake CLI: a session's lines from their end and
//! page by page backwards, without the partial lines; the models and modes its CLI offers; and
//! a control the CLI refuses, answered with the CLI's reason.

use std::time::Duration;

use serde_json::{json, Value};

use crate::support::service::{fake_cli, ServiceConfig, TestService};

const READY: Duration = Duration::from_secs(20);

fn id_of(v: &Value) -> String {
    v["id"].as_str().expect("an id").to_string()
}

fn ids(rows: &[Value]) -> Vec<i64> {
    rows.iter().map(|r| r["id"].as_i64().expect("a message id")).collect()
}

async fn page(service: &TestService, id: &str, query: &str) -> Vec<Value> {
    let res = service.get(&format!("/api/sessions/{id}/messages?{query}")).await;
    assert_eq!(res.status().as_u16(), 200, "{query}");
    res.json::<Value>().await.expect("json").as_array().expect("an array").clone()
}

/// A session of the fake CLI that has run `turns` turns, each with 3 partial lines.
async fn session_with_turns(service: &TestService, turns: i64) -> String {
    let project = service.project("transcript").await;
    let session = service.launch(&project, json!({ "model": "fake-flood-3" })).await;
    let id = id_of(&session);
    service.wait_status(&id, "idle", READY).await;
    for n in 1..=turns {
        let res = service.post(&format!("/api/sessions/{id}/message"), json!({ "content": format!("turn {n}") })).await;
        assert_eq!(res.status().as_u16(), 202);
        service.wait_for(&id, READY, |r| r["num_turns"] == n && r["status"] == "idle").await;
    }
    id
}

#[actix_web::test]
async fn a_transcript_reads_from_its_end_and_pages_backwards() {
    let service = TestService::start(ServiceConfig::new(fake_cli()));
    let id = session_with_turns(&service, 4).await;
    let all = page(&service, &id, "limit=1000").await;
    assert!(all.len() > 20, "four turns with partial lines: {} lines", all.len());
    let n = all.len();

    let tail = page(&service, &id, "tail=true&limit=5").await;
    assert_eq!(ids(&tail), ids(&all[n - 5..]), "the newest five, oldest first");
    let oldest = tail[0]["id"].as_i64().expect("id");
    let before = page(&service, &id, &format!("before={oldest}&limit=5")).await;
    assert_eq!(ids(&before), ids(&all[n - 10..n - 5]), "the five before them");
    let first = all[0]["id"].as_i64().expect("id");
    assert!(page(&service, &id, &format!("before={first}&limit=5")).await.is_empty(), "nothing before the first");

    // Without the partial lines: the same lines but the stream_event ones.
    let whole: Vec<Value> = all.iter().filter(|r| r["message_type"] != "stream_event").cloned().collect();
    assert!(whole.len() < n && whole.len() >= 12, "{} of {n}", whole.len());
    assert_eq!(ids(&page(&service, &id, "partial=false&limit=1000").await), ids(&whole));
    let tail = page(&service, &id, "partial=false&tail=true&limit=3").await;
    assert_eq!(ids(&tail), ids(&whole[whole.len() - 3..]));
    let before = page(&service, &id, &format!("partial=false&before={}&limit=3", tail[0]["id"])).await;
    assert_eq!(ids(&before), ids(&whole[whole.len() - 6..whole.len() - 3]));
}

#[actix_web::test]
async fn contradictory_or_out_of_range_windows_are_422() {
    let service = TestService::start(ServiceConfig::new(fake_cli()));
    let id = session_with_turns(&service, 1).await;
    for query in
        ["tail=true&before=5", "tail=true&offset=1", "before=3&offset=0", "before=0", "before=-2", "limit=0&tail=true"]
    {
        let res = service.get(&format!("/api/sessions/{id}/messages?{query}")).await;
        assert_eq!(res.status().as_u16(), 422, "{query}");
        let body: Value = res.json().await.expect("a JSON error");
        assert_eq!(body["error"]["code"], "validation_failed", "{query}: {body}");
    }
    let res = service.get("/api/sessions/00000000-0000-4000-8000-000000000000/messages?tail=true").await;
    assert_eq!(res.status().as_u16(), 404);
    let res = service.get(&format!("/api/sessions/{id}/messages?tail=maybe")).await;
    assert_eq!(res.status().as_u16(), 400);
}

#[actix_web::test]
async fn the_options_are_what_the_cli_reported_and_refusals_carry_its_reason() {
    let service = TestService::start(ServiceConfig::new(fake_cli()));
    let project = service.project("options").await;
    let session = service.launch(&project, json!({})).await;
    let id = id_of(&session);
    service.wait_status(&id, "idle", READY).await;

    let offers = service.get_json(&format!("/api/sessions/{id}/options")).await;
    assert_eq!(offers["source"], "cli", "{offers}");
    assert_eq!(
        offers["models"],
        json!([{"value": "fake-default", "name": "Fake", "description": "the fake CLI's model"}])
    );
    let modes: Vec<&str> = offers["modes"].as_array().expect("modes").iter().filter_map(Value::as_str).collect();
    assert_eq!(modes, ["acceptEdits", "auto", "bypassPermissions", "default", "dontAsk", "plan"]);

    let res = service.post(&format!("/api/sessions/{id}/model"), json!({ "model": "refused" })).await;
    assert_eq!(res.status().as_u16(), 409);
    let body: Value = res.json().await.expect("a JSON error");
    assert_eq!(body["error"]["code"], "refused_by_cli", "{body}");
    assert!(body["error"]["message"].as_str().is_some_and(|m| m.contains("no such model: refused")), "{body}");
    let row = service.get_json(&format!("/api/sessions/{id}")).await;
    assert_ne!(row["model"], "refused", "a refused switch changes nothing");

    let res = service.post(&format!("/api/sessions/{id}/permission-mode"), json!({ "mode": "delegate" })).await;
    assert_eq!(res.status().as_u16(), 422, "the CLI refuses delegate, so the API does too");
    let res = service.post(&format!("/api/sessions/{id}/permission-mode"), json!({ "mode": "auto" })).await;
    assert_eq!(res.status().as_u16(), 200);

    // Ended: the agent kind's defaults.
    assert_eq!(service.delete(&format!("/api/sessions/{id}")).await.status().as_u16(), 200);
    let offers = service.get_json(&format!("/api/sessions/{id}/options")).await;
    assert_eq!((offers["source"].as_str(), offers["models"].as_array().map(Vec::len)), (Some("defaults"), Some(0)));
    assert_eq!(offers["modes"].as_array().map(Vec::len), Some(6));
    let res = service.get("/api/sessions/00000000-0000-4000-8000-000000000000/options").await;
    assert_eq!(res.status().as_u16(), 404);
}
