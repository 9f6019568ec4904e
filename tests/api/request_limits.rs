//! Limits on what one client may ask: state-changing requests per address (sliding minute,
//! 429 `too_many_writes` with `Retry-After`; loopback clients only when asked), and live
//! streams (WebSocket connections and SSE streams together) per credential (429
//! `too_many_streams`; a closed stream gives its place back).

use std::time::{Duration, Instant};

use conduit::config::RequestLimitSettings;
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};

use crate::helpers::{error_code, spawn_app_with, TestApp};
use crate::support::service::fake_cli;

const ADMIN: &str = "the-configured-admin-token";

async fn spawn(limits: RequestLimitSettings) -> TestApp {
    spawn_app_with(|s| {
        s.auth_token = Some(ADMIN.into());
        s.cli_path = fake_cli().display().to_string();
        s.request_limits = limits;
    })
    .await
}

async fn post(app: &TestApp, token: &str, path: &str, body: Value) -> reqwest::Response {
    app.client.post(app.url(path)).bearer_auth(token).json(&body).send().await.expect("request")
}

async fn events(app: &TestApp, token: &str) -> reqwest::Response {
    app.client.get(app.url("/api/events/stream")).bearer_auth(token).send().await.expect("request")
}

#[actix_web::test]
async fn writes_beyond_the_minute_s_limit_are_refused_with_retry_after_and_reads_go_on() {
    let app =
        spawn(RequestLimitSettings { writes_per_minute: 5, streams_per_credential: 0, limit_loopback: true }).await;
    for i in 0..5 {
        // Refused by validation, but a write all the same: every state-changing request counts.
        let res = post(&app, ADMIN, "/api/projects", json!({})).await;
        assert_eq!(res.status().as_u16(), 422, "write {i} is let through");
    }
    let res = post(&app, ADMIN, "/api/projects", json!({})).await;
    let wait: u64 = res
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .expect("a Retry-After in seconds");
    assert!((1..=60).contains(&wait), "within the minute: {wait}");
    assert_eq!(error_code(res, 429).await, "too_many_writes");
    let read = app.client.get(app.url("/api/projects")).bearer_auth(ADMIN).send().await.expect("request");
    assert_eq!(read.status().as_u16(), 200, "reads are not limited");
    let anonymous = app.client.post(app.url("/api/projects")).json(&json!({})).send().await.expect("request");
    assert_eq!(error_code(anonymous, 429).await, "too_many_writes", "counted by address, whoever sends it");
}

#[actix_web::test]
async fn loopback_clients_write_freely_unless_asked() {
    let app =
        spawn(RequestLimitSettings { writes_per_minute: 2, streams_per_credential: 0, limit_loopback: false }).await;
    for i in 0..10 {
        let res = post(&app, ADMIN, "/api/projects", json!({})).await;
        assert_eq!(res.status().as_u16(), 422, "write {i} from loopback");
    }
}

/// Tries to open one more event stream with `token` until it is let through or `within` passes.
async fn opens_again(app: &TestApp, token: &str, within: Duration) -> reqwest::Response {
    let deadline = Instant::now() + within;
    loop {
        let res = events(app, token).await;
        if res.status().as_u16() == 200 || Instant::now() > deadline {
            return res;
        }
        assert_eq!(error_code(res, 429).await, "too_many_streams");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[actix_web::test]
async fn a_credential_holds_at_most_its_streams_and_a_closed_one_gives_its_place_back() {
    let app =
        spawn(RequestLimitSettings { writes_per_minute: 0, streams_per_credential: 2, limit_loopback: true }).await;
    let folder = app.mkdir("streams");
    let project: Value = post(&app, ADMIN, "/api/projects", json!({"name": "streams", "folder_path": folder}))
        .await
        .json()
        .await
        .expect("json");
    let project = project["id"].as_str().expect("id");
    let session: Value =
        post(&app, ADMIN, &format!("/api/projects/{project}/sessions"), json!({})).await.json().await.expect("json");
    let session = session["id"].as_str().expect("id");

    // One SSE stream and one WebSocket: the credential's two.
    let sse = events(&app, ADMIN).await;
    assert_eq!(sse.status().as_u16(), 200);
    let ws_url = app.url(&format!("/api/sessions/{session}/ws?token={ADMIN}")).replacen("http://", "ws://", 1);
    let (mut ws, _) = tokio_tungstenite::connect_async(ws_url.as_str()).await.expect("the WebSocket connects");
    assert_eq!(error_code(events(&app, ADMIN).await, 429).await, "too_many_streams", "a third stream");
    match tokio_tungstenite::connect_async(ws_url.as_str()).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(res)) => assert_eq!(res.status().as_u16(), 429),
        other => panic!("a third stream as a WebSocket is refused too: {:?}", other.map(|(_, r)| r.status())),
    }

    // Another credential has its own count.
    let made: Value =
        post(&app, ADMIN, "/api/tokens", json!({"name": "viewer", "scope": "read"})).await.json().await.expect("json");
    let viewer = made["token"].as_str().expect("the secret");
    assert_eq!(events(&app, viewer).await.status().as_u16(), 200, "another credential's stream");

    // A WebSocket closed by its client gives its place back at once.
    ws.send(tokio_tungstenite::tungstenite::Message::Close(None)).await.expect("close sent");
    while ws.next().await.is_some() {}
    let again = opens_again(&app, ADMIN, Duration::from_secs(10)).await;
    assert_eq!(again.status().as_u16(), 200, "the closed WebSocket's place");

    // So does an SSE stream whose client left (seen at the latest by its next keep-alive).
    drop(sse);
    let last = opens_again(&app, ADMIN, Duration::from_secs(45)).await;
    assert_eq!(last.status().as_u16(), 200, "the dropped SSE stream's place");
}
