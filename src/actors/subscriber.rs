//! `Subscriber`: one actor per WebSocket or SSE client. It owns the bus subscription (its
//! bounded outbox lives on the bus side of the link) and ends it when the client goes away.
//! For WebSocket clients it also runs the connection: pings every 30 s, closes after 75 s of
//! silence, refuses frames over 1 MiB, and turns client actions into session messages.

use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use actix_ws::{CloseCode, CloseReason, Message as WsMessage, ProtocolError};
use serde_json::{json, Value};

use super::bus::{EventBus, Outbox, Unsubscribe};
use super::registry::{Find, SessionRegistry};
use super::session::{Control, SendUser};
use crate::domain::validate;

pub const PING_EVERY: Duration = Duration::from_secs(30);
pub const SILENCE_LIMIT: Duration = Duration::from_secs(75);
pub const MAX_FRAME_BYTES: usize = 1024 * 1024;

/// A WebSocket client's link: its socket and the session it follows.
pub struct WsLink {
    pub socket: actix_ws::Session,
    pub session_id: String,
    pub registry: Addr<SessionRegistry>,
}

pub struct Subscriber {
    bus: Addr<EventBus>,
    sub_id: u64,
    outbox: Arc<Outbox>,
    ws: Option<WsLink>,
    last_heard: Instant,
}

#[derive(Message)]
#[rtype(result = "()")]
struct Incoming(Result<WsMessage, ProtocolError>);

impl Subscriber {
    /// An SSE client: the actor lives as long as the response stream holds its address.
    pub fn for_sse(bus: Addr<EventBus>, sub_id: u64, outbox: Arc<Outbox>) -> Addr<Subscriber> {
        Subscriber { bus, sub_id, outbox, ws: None, last_heard: Instant::now() }.start()
    }

    /// A WebSocket client: the actor runs the connection until either side closes it.
    pub fn for_ws(
        bus: Addr<EventBus>,
        sub_id: u64,
        outbox: Arc<Outbox>,
        link: WsLink,
        frames: actix_ws::MessageStream,
    ) -> Addr<Subscriber> {
        Subscriber::create(move |ctx| {
            ctx.add_stream(futures_util::StreamExt::map(frames, Incoming));
            Subscriber { bus, sub_id, outbox, ws: Some(link), last_heard: Instant::now() }
        })
    }

    fn reply(&self, frame: Value) {
        if let Some(link) = &self.ws {
            let mut socket = link.socket.clone();
            let text = frame.to_string();
            actix::spawn(async move {
                let _ = socket.text(text).await;
            });
        }
    }

    fn error(&self, message: impl Into<String>) {
        self.reply(json!({"event": "error", "message": message.into()}));
    }

    fn close(&mut self, ctx: &mut Context<Self>, reason: Option<CloseReason>) {
        if let Some(link) = self.ws.take() {
            actix::spawn(async move {
                let _ = link.socket.close(reason).await;
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
            let Ok(Some(session)) = registry.send(Find(session_id)).await else {
                return Err("the session is not live".to_string());
            };
            let outcome = match command {
                Command::Send(content) => session.send(SendUser { content }).await.map(|r| r.map(|o| json!(o))),
                Command::Control(c) => session.send(c).await.map(|r| r.map(|row| json!({"status": row.status}))),
            };
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
        let Some(link) = &self.ws else { return };
        // Drain the outbox into the socket for as long as both last.
        let (mut socket, outbox) = (link.socket.clone(), self.outbox.clone());
        let hello = json!({"event": "connected", "session_id": link.session_id}).to_string();
        let pump = async move {
            if socket.text(hello).await.is_err() {
                return;
            }
            while let Some(batch) = outbox.next(256, Duration::from_secs(3600)).await {
                if batch.dropped > 0 {
                    let warning = json!({"event": "warning", "dropped": batch.dropped}).to_string();
                    if socket.text(warning).await.is_err() {
                        return;
                    }
                }
                for d in batch.events {
                    if socket.text(d.frame).await.is_err() {
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
                actix::spawn(async move {
                    let _ = socket.ping(b"").await;
                });
            }
        });
    }

    fn stopped(&mut self, _ctx: &mut Context<Self>) {
        self.bus.do_send(Unsubscribe(self.sub_id));
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
                        let _ = socket.pong(&bytes).await;
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
