//! Webhooks against a local receiver: signed deliveries, retries on 5xx, giving up, the API.

use std::time::{Duration, Instant};

use hmac::{Hmac, Mac};
use serde_json::{json, Value};
use sha2::Sha256;

use crate::helpers::{error_code, spawn_app_with, TestApp};
use crate::support::receiver::receiver;

async fn app() -> TestApp {
    spawn_app_with(|s| {
        s.webhook_retry_base_ms = 20;
        // A CLI that exists and fails at once: launches are accepted and end in `error`.
        s.cli_path = "false".to_string();
    })
    .await
}

async fn webhook(app: &TestApp, body: Value) -> String {
    let res = app.post_json("/api/webhooks", &body).await;
    assert_eq!(res.status().as_u16(), 201);
    let hook: Value = res.json().await.expect("json");
    assert!(hook.get("secret").is_none(), "the secret is never shown");
    hook["id"].as_str().expect("id").to_string()
}

/// Something that publishes `session.created`: a launch (the test CLI exits at once, so the
/// session errors right after the event).
async fn cause_an_event(app: &TestApp) {
    let project = app.create_project("hooked", "hooked").await;
    let res =
        app.post_json(&format!("/api/projects/{}/sessions", project["id"].as_str().expect("id")), &json!({})).await;
    assert_eq!(res.status().as_u16(), 201);
}

async fn attempts(app: &TestApp, hook: &str, n: usize) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let rows: Value = app.get(&format!("/api/webhooks/{hook}/deliveries")).await.json().await.expect("json");
        let rows = rows.as_array().cloned().unwrap_or_default();
        if rows.len() >= n {
            return rows;
        }
        assert!(Instant::now() < deadline, "only {} of {n} attempts recorded", rows.len());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[actix_web::test]
async fn deliveries_are_signed_and_verifiable() {
    let rx = receiver(vec![]).await;
    let app = app().await;
    let hook =
        webhook(&app, json!({"name": "ci", "url": rx.url, "events": ["session.created"], "secret": "s3cret"})).await;
    cause_an_event(&app).await;
    let rows = attempts(&app, &hook, 1).await;
    assert_eq!(rows[0]["succeeded"], true);
    assert_eq!(rows[0]["status_code"], 200);

    let got = rx.got.lock().expect("receiver")[0].clone();
    assert_eq!(got.header("x-conduit-event"), Some("session.created"));
    assert_eq!(got.header("content-type"), Some("application/json"));
    assert!(got.header("x-conduit-delivery").is_some_and(|d| uuid::Uuid::try_parse(d).is_ok()));
    let timestamp = got.header("x-conduit-timestamp").expect("timestamp");
    // Verify as a receiver would, with an HMAC written here, not the service's own function.
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(b"s3cret").expect("key");
    mac.update(format!("{timestamp}.{}", got.body).as_bytes());
    let expected: String = mac.finalize().into_bytes().iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(got.header("x-conduit-signature"), Some(format!("sha256={expected}").as_str()));
    let body: Value = serde_json::from_str(&got.body).expect("JSON body");
    assert_eq!(body["type"], "session.created");
    assert_eq!(body["event"], "session_created");
    assert!(body["data"]["id"].is_string());
}

#[actix_web::test]
async fn a_500_is_retried_until_it_succeeds() {
    let rx = receiver(vec![500, 503]).await;
    let app = app().await;
    let hook = webhook(&app, json!({"name": "flaky", "url": rx.url, "events": ["session.created"]})).await;
    cause_an_event(&app).await;
    let rows = attempts(&app, &hook, 3).await;
    let mut by_attempt: Vec<(i64, Option<i64>, bool)> = rows
        .iter()
        .map(|r| (r["attempt"].as_i64().expect("n"), r["status_code"].as_i64(), r["succeeded"] == true))
        .collect();
    by_attempt.sort();
    assert_eq!(by_attempt, [(1, Some(500), false), (2, Some(503), false), (3, Some(200), true)]);
    let ids: std::collections::BTreeSet<_> = rows.iter().map(|r| r["delivery_id"].as_str().expect("id")).collect();
    assert_eq!(ids.len(), 1, "one delivery, three attempts");
    let got = rx.got.lock().expect("receiver").clone();
    assert!(got.iter().all(|r| r.header("x-conduit-signature").is_none()), "no secret anywhere: unsigned");
}

#[actix_web::test]
async fn it_gives_up_after_the_last_retry() {
    let rx = receiver(vec![500; 10]).await;
    let app = app().await;
    let hook = webhook(&app, json!({"name": "dead", "url": rx.url, "events": ["*"]})).await;
    cause_an_event(&app).await;
    let rows = attempts(&app, &hook, 4).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let rows_later: Value = app.get(&format!("/api/webhooks/{hook}/deliveries")).await.json().await.expect("json");
    let first_delivery = rows.last().expect("oldest")["delivery_id"].clone();
    let tries = rows_later.as_array().expect("array").iter().filter(|r| r["delivery_id"] == first_delivery).count();
    assert_eq!(tries, 4, "first try plus three retries, then it gives up");
    assert!(rows_later
        .as_array()
        .expect("array")
        .iter()
        .filter(|r| r["delivery_id"] == first_delivery)
        .all(|r| r["succeeded"] == false));
}

#[actix_web::test]
async fn a_dead_endpoint_is_recorded_as_a_network_error() {
    let app = app().await;
    // Nothing listens on port 9 of loopback.
    let hook =
        webhook(&app, json!({"name": "nobody", "url": "http://127.0.0.1:9/x", "events": ["session.created"]})).await;
    cause_an_event(&app).await;
    let rows = attempts(&app, &hook, 4).await;
    assert!(
        rows.iter()
            .all(|r| r["status_code"].is_null() && r["error"].as_str().is_some_and(|e| e.contains("request failed"))),
        "{rows:?}"
    );
}

#[actix_web::test]
async fn the_webhooks_api_validates_and_lists() {
    let app = app().await;
    for body in [
        json!({"name": "x", "url": "ftp://example.invalid/", "events": ["*"]}),
        json!({"name": "x", "url": "not a url", "events": ["*"]}),
        json!({"name": "x", "url": "http://127.0.0.1/", "events": []}),
        json!({"name": "x", "url": "http://127.0.0.1/", "events": ["session.exploded"]}),
        json!({"name": "", "url": "http://127.0.0.1/", "events": ["*"]}),
        json!({"name": "x", "url": "http://127.0.0.1/", "events": ["*"], "secret": ""}),
        json!({"name": "x", "url": "http://127.0.0.1/", "events": ["*"], "extra": 1}),
    ] {
        assert_eq!(error_code(app.post_json("/api/webhooks", &body).await, 422).await, "validation_failed", "{body}");
    }
    let id =
        webhook(&app, json!({"name": "ok", "url": "http://127.0.0.1:9/", "events": ["session.result"], "secret": "x"}))
            .await;
    let list: Value = app.get("/api/webhooks").await.json().await.expect("json");
    assert_eq!(list[0]["id"], id.as_str());
    assert_eq!(list[0]["signed"], true);
    assert_eq!(list[0]["events"], json!(["session.result"]));
    assert!(!list.to_string().contains("\"secret\""));
    assert_eq!(app.delete(&format!("/api/webhooks/{id}")).await.status().as_u16(), 204);
    assert_eq!(error_code(app.delete(&format!("/api/webhooks/{id}")).await, 404).await, "not_found");
    assert_eq!(error_code(app.get(&format!("/api/webhooks/{id}/deliveries")).await, 404).await, "not_found");
}
