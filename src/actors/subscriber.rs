//! `Subscriber`: one actor per WebSocket client. It owns the client's [`Feed`] (its cursor on
//! the session's stream: live through a bounded outbox, catching up from the history and the
//! store when it falls behind), ends it when the client goes away, and runs the connection:
//! pings every 30 s, closes after 75 s of silence, refuses frames over 1 MiB, and turns client
//! actions into session messages. (An SSE client's life is its response stream, which owns its
//! feed directly: it needs no actor.)

use std::time::{Duration, Instant};

use actix::prelude::*;
use actix_ws::{CloseCode, CloseReason, Message as WsMessage, ProtocolError};
use serde_json::{json, Value};

use super::feed::{Feed, FeedItem};
use super::registry::{Deliver, Find, SessionRegistry};
use super::session::Control;
use crate::domain::ids::SessionId;
use crate::domain::validate;

pub const PING_EVERY: Duration = Duration::from_secs(30);
pub const SILENCE_LIMIT: Duration = Duration::from_secs(75);
pub const MAX_FRAME_BYTES: usize = 1024 * 1024;
/// How long a reply, ping or pong may wait for room in the socket's send queue: a client that
/// stopped reading must not keep handles to its socket alive (the socket closes when the last
/// one goes).
const SIDE_SEND_WAIT: Duration = Duration::from_secs(10);

/// A WebSocket client's link: its socket and the session it follows.
pub struct WsLink {
    pub socket: actix_ws::Session,
    pub session_id: SessionId,
    pub registry: Addr<SessionRegistry>,
}

pub struct Subscriber {
    /// Taken by the pump that sends it to the socket when the actor starts.
    feed: Option<Feed>,
    ws: Option<WsLink>,
    last_heard: Instant,
}

#[derive(Message)]
#[rtype(result = "()")]
struct Incoming(Result<WsMessage, ProtocolError>);

impl Subscriber {
    /// A WebSocket client: the actor runs the connection until either side closes it.
    pub fn for_ws(feed: Feed, link: WsLink, frames: actix_ws::MessageStream) -> Addr<Subscriber> {
        Subscriber::create(move |ctx| {
            ctx.add_stream(futures_util::StreamExt::map(frames, Incoming));
            Subscriber { feed: Some(feed), ws: Some(link), last_heard: Instant::now() }
        })
    }

    fn reply(&self, frame: Value) {
        if let Some(link) = &self.ws {
            let mut socket = link.socket.clone();
            let text = frame.to_string();
            actix::spawn(async move {
                let _ = tokio::time::timeout(SIDE_SEND_WAIT, socket.text(text)).await;
            });
        }
    }

    fn error(&self, message: impl Into<String>) {
        self.reply(json!({"event": "error", "message": message.into()}));
    }

    /// Ends the connection. The close frame is only offered: a client that stopped reading
    /// has a full send queue, and waiting for room would keep its socket (and everything queued
    /// for it) forever. Once the actor and its pump are gone, no handle to the socket is left,
    /// and the server ends the response, and with it the connection.
    fn close(&mut self, ctx: &mut Context<Self>, reason: Option<CloseReason>) {
        if let Some(link) = self.ws.take() {
            actix::spawn(async move {
                let _ = tokio::time::timeout(Duration::from_secs(1), link.socket.close(reason)).await;
            });
        }
        ctx.stop();
    }

    /// A client action: `message`, `interrupt`, `set_model`, `set_permission_mode`.
    fn act(&mut self, text: &str, ctx: &mut Context<Self>) {
        let Some(link) = &self.ws else { return };
        let frame: Value = match serde_json::from_str(text) {
            Ok(v @ Value::Object(_)) => v,
            _ => return self.error("frames must be JSON objects such as {\"action\":\"message\",\"content\":\"...\"}"),
        };
        let action = frame.get("action").and_then(Value::as_str).unwrap_or("").to_string();
        let field = |k: &str| frame.get(k).and_then(Value::as_str).map(str::to_string);
        enum Command {
            Send(String),
            Control(Control),
        }
        let command = match action.as_str() {
            "message" => match field("content").filter(|c| !c.trim().is_empty()) {
                Some(content) => Command::Send(content),
                None => return self.error("`message` needs a non-empty `content`"),
            },
            "interrupt" => Command::Control(Control::Interrupt),
            "set_model" => match field("model").map(|m| validate::identifier("model", &m)) {
                Some(Ok(m)) => Command::Control(Control::SetModel(m)),
                Some(Err(e)) => return self.error(e),
                None => return self.error("`set_model` needs `model`"),
            },
            "set_permission_mode" => match field("mode").map(|m| validate::permission_mode("mode", &m)) {
                Some(Ok(m)) => Command::Control(Control::SetPermissionMode(m)),
                Some(Err(e)) => return self.error(e),
                None => return self.error("`set_permission_mode` needs `mode`"),
            },
            other => {
                return self.error(format!(
                    "unknown action {other:?}; use message, interrupt, set_model or set_permission_mode"
                ))
            }
        };
        let (registry, session_id) = (link.registry.clone(), link.session_id.clone());
        let done = async move {
            let control = match command {
                // The same way in as over HTTP: a session closed as idle is resumed for it.
                Command::Send(content) => {
                    let delivered = registry.send(Deliver { id: session_id, content }).await;
                    let outcome = delivered.map_err(|_| "the session registry is unavailable".to_string())?;
                    return outcome.map(|o| json!(o)).map_err(|e| e.to_string());
                }
                Command::Control(control) => control,
            };
            let Ok(Some(session)) = registry.send(Find(session_id)).await else {
                return Err("the session is not live".to_string());
            };
            let outcome = session.send(control).await.map(|r| r.map(|row| json!({"status": row.status})));
            outcome.map_err(|_| "the session ended".to_string())?.map_err(|e| e.to_string())
        };
        ctx.spawn(done.into_actor(self).map(move |outcome, act, _| match outcome {
            Ok(result) => act.reply(json!({"event": "ack", "action": action, "data": result})),
            Err(e) => act.error(e),
        }));
    }
}

impl Actor for Subscriber {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        let (Some(link), Some(mut feed)) = (&self.ws, self.feed.take()) else { return };
        // Send the feed to the socket for as long as both last.
        let mut socket = link.socket.clone();
        let hello = json!({"event": "connected", "session_id": link.session_id}).to_string();
        let pump = async move {
            if socket.text(hello).await.is_err() {
                return;
            }
            while let Some(items) = feed.next(Duration::from_secs(3600)).await {
                for item in items {
                    let text = match item {
                        FeedItem::Event(d) => d.frame,
                        FeedItem::Missed(n) => json!({"event": "warning", "dropped": n}).to_string().into(),
                    };
                    if socket.text(text).await.is_err() {
                        return;
                    }
                }
            }
        };
        ctx.spawn(pump.into_actor(self).map(|_, act, ctx| act.close(ctx, None)));
        ctx.run_interval(PING_EVERY / 6, |act, ctx| {
            if act.last_heard.elapsed() > SILENCE_LIMIT {
                return act.close(
                    ctx,
                    Some(CloseReason { code: CloseCode::Away, description: Some("silent for 75 s".into()) }),
                );
            }
            if let Some(link) = &act.ws {
                let mut socket = link.socket.clone();
                // Spawned into the actor, so a ping waiting for room in a stuck client's queue
                // is dropped with the actor, and with it its handle to the socket: the
                // connection ends as soon as the actor does, not up to SIDE_SEND_WAIT later.
                let ping = async move {
                    let _ = tokio::time::timeout(SIDE_SEND_WAIT, socket.ping(b"")).await;
                };
                ctx.spawn(ping.into_actor(act));
            }
        });
    }
}

impl StreamHandler<Incoming> for Subscriber {
    fn handle(&mut self, msg: Incoming, ctx: &mut Context<Self>) {
        self.last_heard = Instant::now();
        match msg.0 {
            Ok(WsMessage::Text(text)) => self.act(&text, ctx),
            Ok(WsMessage::Binary(_)) => self.error("binary frames are not accepted; send JSON text"),
            Ok(WsMessage::Ping(bytes)) => {
                if let Some(link) = &self.ws {
                    let mut socket = link.socket.clone();
                    actix::spawn(async move {
                        let _ = tokio::time::timeout(SIDE_SEND_WAIT, socket.pong(&bytes)).await;
                    });
                }
            }
            Ok(WsMessage::Close(_)) => self.close(ctx, None),
            Ok(_) => {}
            Err(ProtocolError::Overflow) => self.close(
                ctx,
                Some(CloseReason {
                    code: CloseCode::Size,
                    description: Some(format!("frames are limited to {MAX_FRAME_BYTES} bytes")),
                }),
            ),
            Err(e) => {
                self.close(ctx, Some(CloseReason { code: CloseCode::Protocol, description: Some(e.to_string()) }))
            }
        }
    }

    fn finished(&mut self, ctx: &mut Context<Self>) {
        self.close(ctx, None);
    }
}
