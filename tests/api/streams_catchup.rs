//! Subscribers lose nothing: clients that keep reading get every event once and in order however
//! far behind they fall (from the history, then from the store), a replay reaches back to a
//! session's first event, and a client that stops reading is disconnected instead of holding
//! the server's memory.

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;

use crate::support::service::{fake_cli, ServiceConfig, TestService};

const READY: Duration = Duration::from_secs(30);

async fn idle(service: &TestService, project: &str, model: &str) -> String {
    let session = service.launch(project, json!({ "model": model })).await;
    let id = session["id"].as_str().expect("id").to_string();
    service.wait_status(&id, "idle", READY).await;
    id
}

type Ws = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn ws(service: &TestService, id: &str) -> Ws {
    let url = service.url(&format!("/api/sessions/{id}/ws")).replacen("http://", "ws://", 1);
    let (ws, _) = tokio_tungstenite::connect_async(url).await.expect("connect");
    ws
}

/// Reads frames until the session is idle again after a turn; returns them (the `connected`
/// hello excluded).
async fn read_turn(mut ws: Ws) -> Vec<Value> {
    let mut frames = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let next = tokio::time::timeout_at(deadline.into(), ws.next()).await.expect("the turn ends in time");
        let Some(Ok(Message::Text(text))) = next else { continue };
        let frame: Value = serde_json::from_str(&text).expect("JSON frame");
        if frame["event"] == "connected" {
            continue;
        }
        let done =
            frame["event"] == "session_status" && frame["data"]["status"] == "idle" && frame["data"]["num_turns"] == 1;
        frames.push(frame);
        if done {
            return frames;
        }
    }
}

fn assert_complete(frames: &[Value], flood: usize, who: &str) {
    assert!(frames.iter().all(|f| f["event"] != "warning"), "{who} was told it missed events");
    let seqs: Vec<u64> = frames.iter().map(|f| f["seq"].as_u64().expect("seq")).collect();
    assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "{who}: sequence numbers are consecutive");
    let texts: Vec<&str> = frames
        .iter()
        .filter(|f| f["event"] == "stream_event")
        .map(|f| f["data"]["event"]["delta"]["text"].as_str().expect("text"))
        .collect();
    assert_eq!(texts.len(), flood, "{who} got every stream_event");
    assert!(texts.iter().enumerate().all(|(i, t)| *t == format!("t{i}")), "{who}: in the CLI's order");
}

#[actix_web::test]
async fn websocket_clients_that_keep_reading_get_every_event_of_a_full_speed_flood() {
    const FLOOD: usize = 50_000;
    // A tiny outbox: every client overflows it again and again and must catch up each time.
    let service = TestService::start(ServiceConfig::new(fake_cli()).env("CONDUIT_SUBSCRIBER_OUTBOX", "8"));
    let project = service.project("lossless").await;
    let id = idle(&service, &project, &format!("fake-flood-{FLOOD}")).await;
    let mut readers = Vec::new();
    for _ in 0..10 {
        readers.push(tokio::spawn(read_turn(ws(&service, &id).await)));
    }
    let res = service.post(&format!("/api/sessions/{id}/message"), json!({"content": "flood"})).await;
    assert_eq!(res.status().as_u16(), 202);
    for (n, reader) in readers.into_iter().enumerate() {
        assert_complete(&reader.await.expect("reader"), FLOOD, &format!("client {n}"));
    }
}

#[actix_web::test]
async fn a_replay_past_the_history_comes_from_the_store_from_the_first_event() {
    const FLOOD: usize = 20_000;
    // 1 MiB of history for everything: most of the flood is only in the database.
    let service = TestService::start(ServiceConfig::new(fake_cli()).env("CONDUIT_STREAM_HISTORY_BYTES", "1048576"));
    let project = service.project("replay").await;
    let id = idle(&service, &project, &format!("fake-flood-{FLOOD}")).await;
    let live = tokio::spawn(read_turn(ws(&service, &id).await));
    service.post(&format!("/api/sessions/{id}/message"), json!({"content": "flood"})).await;
    let live = live.await.expect("live reader");
    assert_complete(&live, FLOOD, "the live client");

    // A client that comes later and asks for everything since the beginning.
    let url = service.url(&format!("/api/sessions/{id}/ws?since=0")).replacen("http://", "ws://", 1);
    let (replay, _) = tokio_tungstenite::connect_async(url).await.expect("connect");
    let replayed = read_turn(replay).await;
    assert_eq!(replayed.first().map(|f| f["seq"].as_u64()), Some(Some(1)), "from the session's first event");
    assert_eq!(replayed.first().map(|f| f["event"].clone()), Some(json!("session_created")));
    assert_complete(&replayed, FLOOD, "the replaying client");
    let tail = &replayed[replayed.len() - live.len()..];
    assert_eq!(tail, &live[..], "a replayed event is exactly the live one");
}

#[actix_web::test]
async fn a_websocket_client_that_stops_reading_is_disconnected() {
    let service = TestService::start(ServiceConfig::new(fake_cli()));
    let project = service.project("stuck").await;
    let id = idle(&service, &project, "fake-rate-2000-400000").await;
    let mut stuck = ws(&service, &id).await;
    service.post(&format!("/api/sessions/{id}/message"), json!({"content": "go"})).await;
    // Not a byte read (so no pong either) for longer than the 75 s silence limit.
    tokio::time::sleep(Duration::from_secs(85)).await;
    let health = service.get_json("/api/health").await;
    assert_eq!(health["event_subscribers"], 0, "the stuck client is no longer a subscriber: {health}");
    // What was buffered drains, then the connection ends (it does not hang). How soon the rest
    // comes is TCP's business, not the service's: after 85 s of a zero window the server's
    // kernel probes that window only about once a minute (the probe interval doubles up to
    // TCP_RTO_MAX, 120 s), and when the window this client reopens by reading stays under the
    // server's segment size (half the largest window it ever saw), the kernel sends nothing
    // (sender-side silly window avoidance) and the client advertises no more (it only does
    // when its window at least doubles) until that probe. So a silence is a hang only when it
    // outlasts the longest probe interval.
    const TCP_PROBE_MAX: Duration = Duration::from_secs(130);
    let deadline = Instant::now() + TCP_PROBE_MAX + Duration::from_secs(60);
    loop {
        match tokio::time::timeout(TCP_PROBE_MAX, stuck.next()).await {
            Err(_) => panic!("the server neither sends nor closes: the connection hangs"),
            Ok(None | Some(Err(_)) | Some(Ok(Message::Close(_)))) => break,
            Ok(Some(Ok(_))) => assert!(Instant::now() < deadline, "frames keep coming to a client the server dropped"),
        }
    }
    let _ = stuck.close(None).await;
}

#[actix_web::test]
async fn turns_waiting_behind_a_running_one_are_not_recorded_as_delivered() {
    let service = TestService::start(ServiceConfig::new(fake_cli()));
    let project = service.project("queued").await;
    let id = idle(&service, &project, "fake-stall").await;
    for n in 0..3 {
        let res = service.post(&format!("/api/sessions/{id}/message"), json!({"content": format!("m{n}")})).await;
        assert_eq!(res.status().as_u16(), 202);
    }
    let res = service.delete(&format!("/api/sessions/{id}")).await;
    assert_eq!(res.status().as_u16(), 200);
    let rows = service.get_json(&format!("/api/sessions/{id}/messages")).await;
    let turns: Vec<&Value> = rows
        .as_array()
        .expect("rows")
        .iter()
        .filter(|r| r["message_type"] == "user" && r["direction"] == "to_cli")
        .collect();
    assert_eq!(turns.len(), 3, "every accepted turn is stored");
    assert!(turns[0]["delivered_at"].is_string(), "the first was written to the CLI: {}", turns[0]);
    assert!(
        turns[1]["delivered_at"].is_null() && turns[2]["delivered_at"].is_null(),
        "the others never were: {turns:?}"
    );
}

#[actix_web::test]
async fn without_webhooks_nothing_follows_the_bus() {
    let service = TestService::start(ServiceConfig::new(fake_cli()));
    let project = service.project("quiet").await;
    let id = idle(&service, &project, "fake-flood-50000").await;
    service.post(&format!("/api/sessions/{id}/message"), json!({"content": "flood"})).await;
    service.wait_for(&id, Duration::from_secs(120), |r| r["num_turns"] == 1 && r["status"] == "idle").await;
    let log = service.log();
    assert!(!log.contains("fell behind"), "{log}");
    let health = service.get_json("/api/health").await;
    assert_eq!(health["event_subscribers"], 0);
}
