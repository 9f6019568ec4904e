//! Live streams end to end: Server-Sent Events per session and for everything, replay after a
//! reconnect, the WebSocket per session (events out, actions in), and subscribers that cannot
//! keep up. Each test runs its own `conduit` process, with the real CLI (talking to the fake
//! Messages API) or the fake CLI (examples/fake_cli.rs) where volume or speed matters.

use std::time::Duration;

use awc::error::{WsClientError, WsProtocolError};
use awc::ws::{CloseCode, Frame, Message};
use futures_util::{Sink, SinkExt, Stream, StreamExt};
use serde_json::{json, Value};
use tokio::time::Instant;

use crate::support::fake_api::{FakeApi, Reply};
use crate::support::service::{fake_cli, real_cli, ServiceConfig, TestService};

/// The real CLI starts slowly when many run in parallel.
const REAL_READY: Duration = Duration::from_secs(60);
const FAKE_READY: Duration = Duration::from_secs(20);
/// How long a stream may take to deliver what the test waits for.
const STREAM_WAIT: Duration = Duration::from_secs(60);
/// How long a stream must stay silent to count as "nothing more is coming".
const QUIET: Duration = Duration::from_millis(700);

async fn real_rig() -> (FakeApi, TestService) {
    let api = FakeApi::start().await;
    let service = TestService::start(ServiceConfig::new(real_cli()).api(&api.base_url));
    (api, service)
}

fn fake_service() -> TestService {
    TestService::start(ServiceConfig::new(fake_cli()))
}

/// Launches a session and waits until it is idle; returns its id.
async fn idle_session(service: &TestService, project: &str, body: Value, within: Duration) -> String {
    let session = service.launch(project, body).await;
    let id = session["id"].as_str().expect("the session has an id").to_string();
    service.wait_status(&id, "idle", within).await;
    id
}

async fn send_message(service: &TestService, id: &str, content: &str) {
    let res = service.post(&format!("/api/sessions/{id}/message"), json!({ "content": content })).await;
    assert_eq!(res.status().as_u16(), 202, "POST message: {}", res.text().await.unwrap_or_default());
}

async fn event_subscribers(service: &TestService) -> u64 {
    let health = service.get_json("/api/health").await;
    health["event_subscribers"].as_u64().expect("health has event_subscribers")
}

// ---------------------------------------------------------------------------------------------
// Server-Sent Events

/// One SSE message.
#[derive(Debug, Clone)]
struct SseEvent {
    name: String,
    id: Option<u64>,
    data: String,
}

impl SseEvent {
    /// The `data:` JSON.
    fn json(&self) -> Value {
        serde_json::from_str(&self.data).unwrap_or_else(|e| panic!("data is not JSON ({e}): {:?}", self.data))
    }

    /// The `data:` frame, checked against the SSE fields: its `event` is the SSE event name and
    /// its `seq` the SSE id.
    fn frame(&self) -> Value {
        let frame = self.json();
        assert_eq!(frame["event"].as_str(), Some(self.name.as_str()), "the frame names its event: {frame}");
        let id = self.id.unwrap_or_else(|| panic!("a {} event without an id: {self:?}", self.name));
        assert_eq!(frame["seq"].as_u64(), Some(id), "the frame's seq is the SSE id: {frame}");
        frame
    }

    fn id(&self) -> u64 {
        self.id.unwrap_or_else(|| panic!("a {} event without an id: {self:?}", self.name))
    }
}

enum Next {
    Event(SseEvent),
    End,
    Quiet,
}

/// An open SSE response, parsed incrementally from its body chunks.
struct Sse {
    res: reqwest::Response,
    buf: Vec<u8>,
}

impl Sse {
    async fn open(service: &TestService, path: &str, last_event_id: Option<&str>) -> Sse {
        let mut req = service.client.get(service.url(path));
        if let Some(v) = last_event_id {
            req = req.header("Last-Event-ID", v);
        }
        let res = tokio::time::timeout(Duration::from_secs(10), req.send())
            .await
            .expect("the stream's headers arrive within 10 s")
            .expect("the stream request is sent");
        assert_eq!(res.status().as_u16(), 200, "GET {path}");
        let content_type = res.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("");
        assert!(content_type.starts_with("text/event-stream"), "GET {path}: content-type {content_type:?}");
        Sse { res, buf: Vec::new() }
    }

    /// A complete message from the buffer, skipping comment-only blocks (keep-alives).
    fn take_block(&mut self) -> Option<SseEvent> {
        loop {
            let end = self.buf.windows(2).position(|w| w == b"\n\n")?;
            let block: Vec<u8> = self.buf.drain(..end + 2).collect();
            let block = String::from_utf8(block).expect("an SSE message is UTF-8");
            let (mut name, mut id, mut data, mut fields) = (None, None, None::<String>, 0);
            for line in block.lines() {
                if line.is_empty() || line.starts_with(':') {
                    continue;
                }
                fields += 1;
                let (field, value) = line.split_once(':').unwrap_or((line, ""));
                let value = value.strip_prefix(' ').unwrap_or(value);
                match field {
                    "event" => name = Some(value.to_string()),
                    "id" => id = Some(value.parse::<u64>().unwrap_or_else(|_| panic!("a numeric id: {line:?}"))),
                    "data" => {
                        data = Some(match data {
                            Some(d) => format!("{d}\n{value}"),
                            None => value.to_string(),
                        })
                    }
                    other => panic!("unexpected SSE field {other:?} in {block:?}"),
                }
            }
            if fields == 0 {
                continue;
            }
            return Some(SseEvent {
                name: name.unwrap_or_else(|| "message".to_string()),
                id,
                data: data.unwrap_or_default(),
            });
        }
    }

    async fn poll(&mut self, within: Duration) -> Next {
        let deadline = Instant::now() + within;
        loop {
            if let Some(event) = self.take_block() {
                return Next::Event(event);
            }
            match tokio::time::timeout_at(deadline, self.res.chunk()).await {
                Err(_) => return Next::Quiet,
                Ok(Err(e)) => panic!("the stream failed: {e}"),
                Ok(Ok(None)) => return Next::End,
                Ok(Ok(Some(bytes))) => self.buf.extend_from_slice(&bytes),
            }
        }
    }

    /// Reads events until `stop` holds for one (included); fails after `within`.
    async fn until(&mut self, within: Duration, stop: impl Fn(&SseEvent) -> bool) -> Vec<SseEvent> {
        let deadline = Instant::now() + within;
        let mut seen = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.poll(left).await {
                Next::Event(event) => {
                    let done = stop(&event);
                    seen.push(event);
                    if done {
                        return seen;
                    }
                }
                Next::End => panic!("the stream ended early; seen: {}", summary(&seen)),
                Next::Quiet => panic!("the awaited event did not arrive within {within:?}; seen: {}", summary(&seen)),
            }
        }
    }

    /// Reads exactly `n` events; fails after `within`.
    async fn take(&mut self, n: usize, within: Duration) -> Vec<SseEvent> {
        if n == 0 {
            return Vec::new();
        }
        let counter = std::cell::Cell::new(0usize);
        self.until(within, |_| {
            counter.set(counter.get() + 1);
            counter.get() == n
        })
        .await
    }

    /// Asserts nothing more arrives for a while.
    async fn assert_quiet(&mut self, what: &str) {
        match self.poll(QUIET).await {
            Next::Quiet => {}
            Next::End => panic!("{what}: the stream ended"),
            Next::Event(e) => panic!("{what}: an unexpected extra event {e:?}"),
        }
    }
}

fn summary(events: &[SseEvent]) -> String {
    let names: Vec<String> = events.iter().map(|e| format!("{}#{:?}", e.name, e.id)).collect();
    let shown = if names.len() > 40 { names[names.len() - 40..].to_vec() } else { names.clone() };
    format!("{} events, last: {}", names.len(), shown.join(" "))
}

fn is_status(event: &SseEvent, status: &str) -> bool {
    event.name == "session_status" && event.json()["data"]["status"] == status
}

fn assert_strictly_increasing(events: &[SseEvent]) {
    let ids: Vec<u64> = events.iter().map(SseEvent::id).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "ids strictly increase: {ids:?}");
}

fn assert_consecutive(events: &[SseEvent]) {
    let ids: Vec<u64> = events.iter().map(SseEvent::id).collect();
    assert!(ids.windows(2).all(|w| w[0] + 1 == w[1]), "ids follow one another with no gap: {ids:?}");
}

#[actix_web::test]
async fn session_sse_carries_a_turn_as_framed_events() {
    let (api, service) = real_rig().await;
    let project = service.project("sse").await;
    let id = idle_session(&service, &project, json!({}), REAL_READY).await;
    let mut stream = Sse::open(&service, &format!("/api/sessions/{id}/stream"), None).await;

    api.on("stream this question", Reply::Text("the streamed answer from the fake api".into()));
    send_message(&service, &id, "stream this question").await;
    let events = stream.until(STREAM_WAIT, |e| e.name == "result").await;

    let names: Vec<&str> = events.iter().map(|e| e.name.as_str()).collect();
    for wanted in ["system_init", "assistant", "result", "session_status"] {
        assert!(names.contains(&wanted), "a {wanted} event arrived: {names:?}");
    }
    assert_strictly_increasing(&events);
    assert_consecutive(&events);
    for event in &events {
        let frame = event.frame();
        assert_eq!(frame["session_id"], id.as_str(), "{frame}");
        assert!(frame["type"].is_string() && frame["timestamp"].is_string(), "{frame}");
    }
    assert_eq!(events[0].name, "user", "the turn starts with the user's line, as accepted: {}", summary(&events));
    assert_eq!(events[0].frame()["data"]["message"]["content"], "stream this question");
    assert!(is_status(&events[1], "active"), "then status active: {:?}", events[1]);
    let assistant = events.iter().find(|e| e.name == "assistant").expect("an assistant event").frame();
    let message = assistant["data"]["message"].to_string();
    assert!(message.contains("the streamed answer from the fake api"), "the reply text: {assistant}");
    let result = events.last().expect("a result").frame();
    assert_eq!(result["data"]["type"], "result", "{result}");

    // The session goes back to idle on the same stream.
    let rest = stream.until(STREAM_WAIT, |e| is_status(e, "idle")).await;
    assert_eq!(rest.first().map(SseEvent::id), Some(events.last().expect("result").id() + 1), "{}", summary(&rest));
}

#[actix_web::test]
async fn session_sse_replays_after_last_event_id_or_since() {
    let service = fake_service();
    let project = service.project("replay").await;
    let id = idle_session(&service, &project, json!({}), FAKE_READY).await;
    let path = format!("/api/sessions/{id}/stream");

    let mut live = Sse::open(&service, &path, None).await;
    send_message(&service, &id, "replay me").await;
    let events = live.until(STREAM_WAIT, |e| is_status(e, "idle")).await;
    live.assert_quiet("after the turn").await;
    assert!(events.iter().any(|e| e.name == "result"), "{}", summary(&events));
    assert!(events.len() >= 4, "status, init, assistant, result, status: {}", summary(&events));
    assert_consecutive(&events);
    let mid = events[events.len() / 2 - 1].id();
    let expected: Vec<(String, u64)> =
        events.iter().filter(|e| e.id() > mid).map(|e| (e.name.clone(), e.id())).collect();

    let mid_text = mid.to_string();
    for (how, path, header) in
        [("Last-Event-ID", path.clone(), Some(mid_text.as_str())), ("?since=", format!("{path}?since={mid}"), None)]
    {
        let mut replay = Sse::open(&service, &path, header).await;
        let got = replay.take(expected.len(), STREAM_WAIT).await;
        let got_ids: Vec<(String, u64)> = got.iter().map(|e| (e.name.clone(), e.id())).collect();
        assert_eq!(got_ids, expected, "{how} {mid}: exactly the events after it, in order");
        for (replayed, original) in got.iter().zip(events.iter().filter(|e| e.id() > mid)) {
            assert_eq!(replayed.frame(), original.frame(), "{how}: the same frame as live");
        }
        replay.assert_quiet(how).await;
    }

    let res = service.client.get(service.url(&path)).header("Last-Event-ID", "abc").send().await.expect("request");
    assert_eq!(res.status().as_u16(), 400, "Last-Event-ID: abc");
    let body: Value = res.json().await.expect("a JSON error body");
    assert_eq!(body["error"]["code"], "invalid_last_event_id", "{body}");
    assert!(body["error"]["message"].is_string(), "{body}");

    let unknown = "6f1c2b8e-3d4a-4f5b-9c6d-7e8f9a0b1c2d";
    for path in [format!("/api/sessions/{unknown}/stream"), "/api/sessions/not-a-session-id/stream".to_string()] {
        let res = service.get(&path).await;
        assert_eq!(res.status().as_u16(), 404, "GET {path}");
        let body: Value = res.json().await.expect("a JSON error body");
        assert_eq!(body["error"]["code"], "not_found", "{body}");
    }
}

#[actix_web::test]
async fn the_global_stream_sees_every_session_with_its_own_sequence() {
    let service = fake_service();
    let project = service.project("global").await;
    let mut global = Sse::open(&service, "/api/events/stream", None).await;

    let a = idle_session(&service, &project, json!({}), FAKE_READY).await;
    let b = idle_session(&service, &project, json!({}), FAKE_READY).await;
    send_message(&service, &a, "to a").await;
    send_message(&service, &b, "to b").await;

    let results = std::cell::RefCell::new(std::collections::BTreeSet::new());
    let events = global
        .until(STREAM_WAIT, |e| {
            if e.name == "result" {
                results.borrow_mut().insert(e.json()["session_id"].as_str().unwrap_or_default().to_string());
            }
            results.borrow().len() == 2
        })
        .await;
    assert_strictly_increasing(&events);
    assert_consecutive(&events);
    let frames: Vec<Value> = events.iter().map(SseEvent::frame).collect();
    for session in [&a, &b] {
        let created = frames
            .iter()
            .find(|f| f["event"] == "session_created" && f["session_id"] == session.as_str())
            .unwrap_or_else(|| panic!("session_created for {session}: {}", summary(&events)));
        assert_eq!(created["data"]["id"], session.as_str(), "{created}");
        for name in ["system_init", "assistant", "result", "session_status"] {
            assert!(
                frames.iter().any(|f| f["event"] == name && f["session_id"] == session.as_str()),
                "a {name} event of {session} on the global stream: {}",
                summary(&events)
            );
        }
    }
    let first_of_b =
        events.iter().position(|e| e.json()["session_id"] == b.as_str()).expect("an event of the second session");
    assert!(events[first_of_b].id() > 1, "the global sequence counts the first session's events too");
}

// ---------------------------------------------------------------------------------------------
// WebSocket

pub(crate) async fn ws_connect(
    service: &TestService,
    id: &str,
) -> impl Stream<Item = Result<Frame, WsProtocolError>> + Sink<Message, Error = WsProtocolError> + Unpin {
    let url = service.url(&format!("/api/sessions/{id}/ws")).replacen("http://", "ws://", 1);
    let connect = awc::Client::new().ws(url.as_str()).max_frame_size(16 * 1024 * 1024).connect();
    let (res, ws) = tokio::time::timeout(Duration::from_secs(10), connect)
        .await
        .expect("the WebSocket handshake completes within 10 s")
        .unwrap_or_else(|e| panic!("WebSocket connect to {url}: {e:?}"));
    assert_eq!(res.status().as_u16(), 101, "switching protocols");
    ws
}

/// The next JSON text frame (pings skipped); fails on close, end or timeout.
pub(crate) async fn ws_next<S>(ws: &mut S, within: Duration) -> Value
where
    S: Stream<Item = Result<Frame, WsProtocolError>> + Unpin,
{
    let deadline = Instant::now() + within;
    loop {
        let frame = tokio::time::timeout_at(deadline, ws.next())
            .await
            .unwrap_or_else(|_| panic!("no WebSocket frame within {within:?}"));
        match frame {
            Some(Ok(Frame::Text(bytes))) => {
                return serde_json::from_slice(&bytes)
                    .unwrap_or_else(|e| panic!("a text frame that is not JSON ({e}): {bytes:?}"))
            }
            Some(Ok(Frame::Ping(_) | Frame::Pong(_))) => continue,
            Some(Ok(other)) => panic!("an unexpected WebSocket frame: {other:?}"),
            Some(Err(e)) => panic!("the WebSocket failed: {e}"),
            None => panic!("the WebSocket ended"),
        }
    }
}

/// A reply to an action (`ack`, or `error` without a `seq`), and the events that came first.
pub(crate) async fn ws_reply<S>(ws: &mut S, within: Duration) -> (Value, Vec<Value>)
where
    S: Stream<Item = Result<Frame, WsProtocolError>> + Unpin,
{
    let deadline = Instant::now() + within;
    let mut events = Vec::new();
    loop {
        let frame = ws_next(ws, deadline.saturating_duration_since(Instant::now())).await;
        let is_reply = frame["event"] == "ack" || (frame["event"] == "error" && frame.get("seq").is_none());
        if is_reply {
            return (frame, events);
        }
        events.push(frame);
    }
}

pub(crate) async fn ws_send<S>(ws: &mut S, text: impl Into<String>)
where
    S: Sink<Message, Error = WsProtocolError> + Unpin,
{
    let text: String = text.into();
    ws.send(Message::Text(text.into())).await.expect("send a WebSocket text frame");
}

fn assert_ack(reply: &Value, action: &str) {
    assert_eq!(reply["event"], "ack", "an ack for {action}: {reply}");
    assert_eq!(reply["action"], action, "{reply}");
}

fn assert_error(reply: &Value, what: &str) {
    assert_eq!(reply["event"], "error", "an error for {what}: {reply}");
    assert!(reply["message"].as_str().is_some_and(|m| !m.is_empty()), "an error message for {what}: {reply}");
}

#[actix_web::test]
async fn websocket_carries_events_out_and_actions_in() {
    let (api, service) = real_rig().await;
    let project = service.project("ws").await;
    let id = idle_session(&service, &project, json!({"model": "claude-sonnet-4-5"}), REAL_READY).await;
    let mut ws = ws_connect(&service, &id).await;
    let hello = ws_next(&mut ws, Duration::from_secs(10)).await;
    assert_eq!(hello, json!({"event": "connected", "session_id": id}));

    api.on("websocket question", Reply::Text("the websocket answer".into()));
    ws_send(&mut ws, json!({"action": "message", "content": "websocket question"}).to_string()).await;
    let mut frames = Vec::new();
    let mut ack = None;
    let deadline = Instant::now() + STREAM_WAIT;
    while ack.is_none() || !frames.iter().any(|f: &Value| f["event"] == "result") {
        let frame = ws_next(&mut ws, deadline.saturating_duration_since(Instant::now())).await;
        match frame["event"].as_str() {
            Some("ack") => ack = Some(frame),
            Some("error") if frame.get("seq").is_none() => panic!("the message was refused: {frame}"),
            _ => frames.push(frame),
        }
    }
    let ack = ack.expect("an ack");
    assert_ack(&ack, "message");
    assert_eq!(ack["data"]["queued"], false, "the session was idle: {ack}");
    let assistant = frames.iter().find(|f| f["event"] == "assistant").expect("an assistant event frame");
    assert!(assistant["data"]["message"].to_string().contains("the websocket answer"), "{assistant}");
    let seqs: Vec<u64> = frames.iter().map(|f| f["seq"].as_u64().expect("event frames have a seq")).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "event frames in order: {seqs:?}");
    assert!(frames.iter().all(|f| f["session_id"] == id.as_str()), "only this session's events");
    service.wait_status(&id, "idle", REAL_READY).await;

    ws_send(&mut ws, "this is not JSON").await;
    let (reply, _) = ws_reply(&mut ws, Duration::from_secs(10)).await;
    assert_error(&reply, "a non-JSON frame");

    ws_send(&mut ws, json!({"action": "bogus"}).to_string()).await;
    let (reply, _) = ws_reply(&mut ws, Duration::from_secs(10)).await;
    assert_error(&reply, "an unknown action");

    // The connection survived the bad frames: a valid action still works.
    ws_send(&mut ws, json!({"action": "set_model", "model": "claude-haiku-4-5"}).to_string()).await;
    let (reply, _) = ws_reply(&mut ws, Duration::from_secs(40)).await;
    assert_ack(&reply, "set_model");
    assert_eq!(service.get_json(&format!("/api/sessions/{id}")).await["model"], "claude-haiku-4-5");

    ws_send(&mut ws, json!({"action": "set_permission_mode", "mode": "plan"}).to_string()).await;
    let (reply, _) = ws_reply(&mut ws, Duration::from_secs(40)).await;
    assert_ack(&reply, "set_permission_mode");
    let row = service.get_json(&format!("/api/sessions/{id}")).await;
    assert_eq!(row["permission_mode"], "plan", "{row}");

    ws_send(&mut ws, json!({"action": "set_model", "model": "-x"}).to_string()).await;
    let (reply, _) = ws_reply(&mut ws, Duration::from_secs(10)).await;
    assert_error(&reply, "an invalid model");
    assert_eq!(service.get_json(&format!("/api/sessions/{id}")).await["model"], "claude-haiku-4-5", "unchanged");

    ws_send(&mut ws, json!({"action": "interrupt"}).to_string()).await;
    let (reply, _) = ws_reply(&mut ws, Duration::from_secs(40)).await;
    assert!(reply["event"] == "ack" || reply["event"] == "error", "interrupt gets an answer: {reply}");
    if reply["event"] == "ack" {
        assert_eq!(reply["action"], "interrupt", "{reply}");
    }

    ws.send(Message::Close(Some(CloseCode::Normal.into()))).await.expect("close");
}

#[actix_web::test]
async fn an_oversized_websocket_frame_closes_with_1009() {
    let service = fake_service();
    let project = service.project("big").await;
    let id = idle_session(&service, &project, json!({}), FAKE_READY).await;
    let mut ws = ws_connect(&service, &id).await;
    let hello = ws_next(&mut ws, Duration::from_secs(10)).await;
    assert_eq!(hello["event"], "connected");

    let big = format!("{{\"action\":\"message\",\"content\":\"{}\"}}", "x".repeat(1024 * 1024 + 100));
    // The server may close before the whole frame is written; what matters is what comes back.
    let sent = ws.send(Message::Text(big.into())).await;
    let deadline = Instant::now() + Duration::from_secs(15);
    let close = loop {
        let frame = tokio::time::timeout_at(deadline, ws.next())
            .await
            .unwrap_or_else(|_| panic!("no Close frame within 15 s (send: {sent:?})"));
        match frame {
            Some(Ok(Frame::Close(reason))) => break reason,
            Some(Ok(_)) => continue,
            Some(Err(e)) => panic!("the WebSocket failed before a Close frame: {e} (send: {sent:?})"),
            None => panic!("the connection ended without a Close frame (send: {sent:?})"),
        }
    };
    let close = close.expect("the Close frame has a reason");
    assert_eq!(close.code, CloseCode::Size, "close code 1009: {close:?}");

    let health = service.get_json("/api/health").await;
    assert_eq!(health["status"], "healthy", "{health}");
    assert_eq!(service.get_json(&format!("/api/sessions/{id}")).await["status"], "idle");
}

#[actix_web::test]
async fn websocket_upgrades_only_for_known_sessions_and_real_upgrades() {
    let service = fake_service();
    let project = service.project("upgrade").await;
    let id = idle_session(&service, &project, json!({}), FAKE_READY).await;
    let before = event_subscribers(&service).await;

    for unknown in ["6f1c2b8e-3d4a-4f5b-9c6d-7e8f9a0b1c2d", "not-a-session-id"] {
        let url = service.url(&format!("/api/sessions/{unknown}/ws")).replacen("http://", "ws://", 1);
        let outcome = tokio::time::timeout(Duration::from_secs(10), awc::Client::new().ws(url.as_str()).connect())
            .await
            .expect("the handshake is answered within 10 s");
        match outcome {
            Err(WsClientError::InvalidResponseStatus(status)) => assert_eq!(status.as_u16(), 404, "{url}"),
            Err(other) => panic!("{url}: refused, but not with a status: {other:?}"),
            Ok((res, _)) => panic!("{url}: upgraded with {}", res.status()),
        }
    }

    let res = service.get(&format!("/api/sessions/{id}/ws")).await;
    assert_eq!(res.status().as_u16(), 400, "a GET without upgrade headers");
    let body: Value = res.json().await.expect("a JSON error body");
    assert!(body["error"]["code"].is_string(), "{body}");
    assert_eq!(event_subscribers(&service).await, before, "refused upgrades leave no subscriber behind");
}

// ---------------------------------------------------------------------------------------------
// Slow subscribers and the subscriber count

#[actix_web::test]
async fn a_stalled_sse_client_misses_nothing_and_never_slows_the_fast_one() {
    const FLOOD: usize = 20_000;
    let service = fake_service();
    let project = service.project("flood").await;
    // Paced at 5,000 lines/s: a client that reads promptly keeps up even on a loaded machine,
    // while one that does not read falls behind once its socket buffers and its 1,000-event
    // outbox are full: it must then catch up, not lose anything.
    let model = format!("fake-rate-5000-{FLOOD}");
    let id = idle_session(&service, &project, json!({ "model": model }), FAKE_READY).await;
    let path = format!("/api/sessions/{id}/stream");
    let baseline = event_subscribers(&service).await;

    let mut fast = Sse::open(&service, &path, None).await;
    // Connected, but its body is not read until the turn is over.
    let mut stalled = Sse::open(&service, &path, None).await;
    let open = event_subscribers(&service).await;
    assert!(open >= 2 && open >= baseline + 2, "both streams are counted: {open} (before: {baseline})");

    send_message(&service, &id, "flood me").await;
    let events = fast.until(Duration::from_secs(120), |e| is_status(e, "idle")).await;
    assert!(event_subscribers(&service).await >= open, "both streams are still counted");
    assert!(events.iter().all(|e| e.name != "warning"), "the fast client never fell behind: {}", summary(&events));
    assert_consecutive(&events);
    let flood: Vec<&SseEvent> = events.iter().filter(|e| e.name == "stream_event").collect();
    assert_eq!(flood.len(), FLOOD, "every stream_event reached the fast client");
    for (i, event) in flood.iter().enumerate() {
        let frame = event.frame();
        assert_eq!(frame["data"]["event"]["delta"]["text"], format!("t{i}"), "in the CLI's order");
    }
    let result = events.iter().position(|e| e.name == "result").expect("a result");
    assert!(result > events.iter().rposition(|e| e.name == "stream_event").expect("stream events"));

    tokio::time::sleep(Duration::from_secs(1)).await;
    let seen = stalled.until(Duration::from_secs(120), |e| is_status(e, "idle")).await;
    assert!(seen.iter().all(|e| e.name != "warning"), "the stalled client missed nothing: {}", summary(&seen));
    assert_eq!(
        seen.iter().map(SseEvent::id).collect::<Vec<_>>(),
        events.iter().map(SseEvent::id).collect::<Vec<_>>(),
        "the stalled client got every event the fast one did, once and in order"
    );
    assert!(seen.iter().zip(&events).all(|(a, b)| a.data == b.data), "the very same frames");
}

#[actix_web::test]
async fn health_counts_a_websocket_subscriber_until_it_closes() {
    let service = fake_service();
    let project = service.project("count").await;
    let id = idle_session(&service, &project, json!({}), FAKE_READY).await;
    // No client is connected yet: the README says health counts open streams.
    let baseline = event_subscribers(&service).await;

    let mut ws = ws_connect(&service, &id).await;
    let hello = ws_next(&mut ws, Duration::from_secs(10)).await;
    assert_eq!(hello["event"], "connected");
    let open = event_subscribers(&service).await;
    assert!(open >= 1 && open > baseline, "the open WebSocket is counted: {open} (before it opened: {baseline})");

    ws.send(Message::Close(Some(CloseCode::Normal.into()))).await.expect("send Close");
    // Wait for the server's Close (or the end), then let the connection go.
    let _ = tokio::time::timeout(Duration::from_secs(5), async {
        while let Some(Ok(frame)) = ws.next().await {
            if matches!(frame, Frame::Close(_)) {
                break;
            }
        }
    })
    .await;
    drop(ws);

    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let count = event_subscribers(&service).await;
        if count == 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "event_subscribers is still {count} 20 s after the only client closed \
             (before it opened: {baseline}, while open: {open})"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
