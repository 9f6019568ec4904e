//! The WebSocket bridge transport, for CLIs started with `--sdk-url ws://127.0.0.1:<port>/<secret>`
//! (older CLIs; current ones refuse local hosts for that flag).
//!
//! Each session on this transport gets its own small actix-web server on a port from the
//! configured range, bound to 127.0.0.1 only. It accepts exactly one WebSocket connection, on
//! the session's secret path: the CLI's. The connection then carries the same NDJSON as stdio,
//! inside text frames: a frame may hold several lines or part of one, so inbound bytes go
//! through the same [`LineFramer`], which is flushed when the socket closes (the last line is
//! never lost). Outbound lines are sent one per frame, each ending in a newline.
//!
//! The socket lives on the bridge server's worker thread (actix-web payloads are not `Send`);
//! lines cross to the session through a bounded channel, whose back-pressure slows the socket
//! reads rather than growing memory. The [`BridgeSocket`](crate::actors::bridge::BridgeSocket)
//! actor owns the server and the connection deadline.

use std::net::{Ipv4Addr, TcpListener};
use std::sync::{Arc, Mutex};

use actix_web::dev::Server;
use actix_web::{web, App, HttpRequest, HttpResponse, HttpServer};
use actix_ws::{Item, Message as WsMessage, MessageStream, Session as WsSession};
use tokio::sync::mpsc;

use super::{CliOutput, OutLine};
use crate::protocol::framing::{LineFramer, MAX_LINE_BYTES};

/// Lines read from the socket waiting for the session, at most.
const OUTPUT_QUEUE: usize = 256;
/// The largest frame accepted: a whole line at the framer's cap, plus room for its newline.
const MAX_FRAME_BYTES: usize = MAX_LINE_BYTES + 1024;

/// Binds the first free port of `start..=end` on 127.0.0.1. Ports other programs hold are
/// skipped (their bind fails); a port stays ours for as long as its listener lives.
pub fn allocate_port(start: u16, end: u16) -> Result<(TcpListener, u16), String> {
    for port in start..=end {
        if let Ok(listener) = TcpListener::bind((Ipv4Addr::LOCALHOST, port)) {
            return Ok((listener, port));
        }
    }
    Err(format!(
        "no free port for a WebSocket bridge: all {} ports of {start}-{end} (CONDUIT_WS_PORT_RANGE_START/_END) are in use; end a websocket session or widen the range",
        u32::from(end) - u32::from(start) + 1
    ))
}

/// A random path segment: only a process told the URL can connect.
pub fn new_secret() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// What the one accepted connection takes over: the session's outbound lines, and the sender
/// of what the session reads.
pub struct Handoff {
    pub outbound: mpsc::Receiver<OutLine>,
    pub outputs: mpsc::Sender<CliOutput>,
}

/// The session's ends of a new bridge: where it writes lines, what it reads, and the
/// [`Handoff`] the connection (or the bridge, if none comes) takes.
pub fn channels(
    outbound_capacity: usize,
) -> (mpsc::Sender<OutLine>, impl futures_util::Stream<Item = CliOutput>, Handoff) {
    let (outbound_tx, outbound) = mpsc::channel(outbound_capacity);
    let (outputs, mut outputs_rx) = mpsc::channel(OUTPUT_QUEUE);
    let stream = futures_util::stream::poll_fn(move |cx| outputs_rx.poll_recv(cx));
    (outbound_tx, stream, Handoff { outbound, outputs })
}

/// Shared by the bridge's actor and its HTTP handler.
pub struct Bridge {
    /// `/<secret>`: the only path that is answered.
    path: String,
    slot: Mutex<Option<Handoff>>,
    on_connect: Box<dyn Fn() + Send + Sync>,
}

impl Bridge {
    pub fn new(secret: &str, handoff: Handoff, on_connect: impl Fn() + Send + Sync + 'static) -> Bridge {
        Bridge { path: format!("/{secret}"), slot: Mutex::new(Some(handoff)), on_connect: Box::new(on_connect) }
    }

    /// The handoff, once: whoever takes it owns the session's lines.
    pub fn take(&self) -> Option<Handoff> {
        self.slot.lock().unwrap_or_else(|p| p.into_inner()).take()
    }

    fn put_back(&self, handoff: Handoff) {
        *self.slot.lock().unwrap_or_else(|p| p.into_inner()) = Some(handoff);
    }
}

/// Starts the bridge's server on `listener`: one worker, no signal handling (the service
/// handles signals), nothing but the WebSocket endpoint.
pub fn serve(listener: TcpListener, bridge: Arc<Bridge>) -> std::io::Result<Server> {
    let data = web::Data::from(bridge);
    Ok(HttpServer::new(move || App::new().app_data(data.clone()).default_service(web::to(accept)))
        .workers(1)
        .disable_signals()
        .shutdown_timeout(1)
        .tcp_nodelay(true)
        .listen(listener)?
        .run())
}

fn refuse(status: actix_web::http::StatusCode, code: &str, message: &str) -> HttpResponse {
    HttpResponse::build(status).json(serde_json::json!({"error": {"code": code, "message": message}}))
}

/// The one connection: the CLI's. Anything else is refused.
async fn accept(req: HttpRequest, body: web::Payload, bridge: web::Data<Bridge>) -> HttpResponse {
    use actix_web::http::StatusCode;
    if req.path() != bridge.path {
        return refuse(StatusCode::NOT_FOUND, "not_found", "This is a session's private bridge.");
    }
    let Some(handoff) = bridge.take() else {
        return refuse(StatusCode::CONFLICT, "already_connected", "This bridge already serves its CLI.");
    };
    match actix_ws::handle(&req, body) {
        Err(e) => {
            // Not a WebSocket upgrade: keep the bridge for the real CLI.
            bridge.put_back(handoff);
            refuse(StatusCode::BAD_REQUEST, "not_a_websocket", &e.to_string())
        }
        Ok((response, socket, frames)) => {
            (bridge.on_connect)();
            let frames = frames.max_frame_size(MAX_FRAME_BYTES);
            actix_web::rt::spawn(write_lines(socket.clone(), handoff.outbound));
            actix_web::rt::spawn(read_lines(socket, frames, handoff.outputs));
            response
        }
    }
}

/// Session to CLI: a line per text frame, newline-terminated as on stdin.
async fn write_lines(mut socket: WsSession, mut outbound: mpsc::Receiver<OutLine>) {
    while let Some(out) = outbound.recv().await {
        let mut line = out.line;
        line.push('\n');
        if socket.text(line).await.is_err() {
            return;
        }
        if let Some(written) = out.written {
            let _ = written.send(());
        }
    }
    // The session closed its input, as it closes stdin: the CLI's cue to finish.
    let _ = socket.close(None).await;
}

/// CLI to session: frames to lines, the partial last line flushed at close, then the end.
async fn read_lines(mut socket: WsSession, mut frames: MessageStream, outputs: mpsc::Sender<CliOutput>) {
    let mut framer = LineFramer::default();
    let mut lines = Vec::new();
    while let Some(message) = frames.recv().await {
        match message {
            Ok(WsMessage::Text(text)) => framer.push(text.as_bytes(), &mut lines),
            Ok(WsMessage::Binary(bytes)) => framer.push(&bytes, &mut lines),
            Ok(WsMessage::Continuation(
                Item::FirstText(bytes) | Item::FirstBinary(bytes) | Item::Continue(bytes) | Item::Last(bytes),
            )) => framer.push(&bytes, &mut lines),
            Ok(WsMessage::Ping(bytes)) => {
                let _ = socket.pong(&bytes).await;
            }
            Ok(WsMessage::Close(_)) => break,
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(error = %e, "the CLI's bridge connection failed");
                break;
            }
        }
        for line in lines.drain(..) {
            if outputs.send(CliOutput::Stdout(line)).await.is_err() {
                return;
            }
        }
    }
    framer.finish(&mut lines);
    for line in lines.drain(..) {
        let _ = outputs.send(CliOutput::Stdout(line)).await;
    }
    let _ = outputs.send(CliOutput::StdoutEnd).await;
    let _ = socket.close(None).await;
}

/// The bridge gives up before any connection: the session reads why, then the end.
pub fn fail(handoff: Handoff, reason: String) {
    let _ = handoff.outputs.try_send(CliOutput::Failed(reason));
    let _ = handoff.outputs.try_send(CliOutput::StdoutEnd);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::framing::Frame;
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;

    #[actix_rt::test]
    async fn one_connection_on_the_secret_path_and_the_last_partial_line_is_flushed_at_close() {
        let (listener, port) = allocate_port(20_000, 40_000).expect("a free port");
        let (outbound, inbound, handoff) = channels(16);
        let connected = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let seen = connected.clone();
        let bridge =
            Arc::new(Bridge::new("s3cret", handoff, move || seen.store(true, std::sync::atomic::Ordering::SeqCst)));
        let server = serve(listener, bridge).expect("serve");
        let handle = server.handle();
        actix_rt::spawn(server);

        let url = format!("ws://127.0.0.1:{port}");
        assert!(tokio_tungstenite::connect_async(format!("{url}/guess")).await.is_err(), "another path is refused");
        assert!(!connected.load(std::sync::atomic::Ordering::SeqCst));
        let (mut cli, _) = tokio_tungstenite::connect_async(format!("{url}/s3cret")).await.expect("the CLI connects");
        assert!(connected.load(std::sync::atomic::Ordering::SeqCst));
        assert!(
            tokio_tungstenite::connect_async(format!("{url}/s3cret")).await.is_err(),
            "a second connection is refused"
        );

        outbound.send(OutLine::new("{\"type\":\"user\"}".to_string())).await.expect("queue a line");
        let got = cli.next().await.expect("a frame").expect("ok");
        assert_eq!(got, Message::Text("{\"type\":\"user\"}\n".to_string()), "one line per frame, newline-terminated");

        // Two lines and a half in one frame, the rest of the half in the next, then close.
        cli.send(Message::Text("{\"a\":1}\n{\"b\":2}\n{\"c\"".into())).await.expect("send");
        cli.send(Message::Text(":3}".into())).await.expect("send");
        cli.close(None).await.expect("close");
        let outputs: Vec<CliOutput> =
            tokio::time::timeout(std::time::Duration::from_secs(5), inbound.collect()).await.expect("the stream ends");
        let lines: Vec<String> = outputs
            .iter()
            .filter_map(|o| match o {
                CliOutput::Stdout(Frame::Line(l)) => Some(l.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(lines, ["{\"a\":1}", "{\"b\":2}", "{\"c\":3}"]);
        assert!(matches!(outputs.last(), Some(CliOutput::StdoutEnd)), "{outputs:?}");
        handle.stop(false).await;
    }

    #[test]
    fn ports_in_use_are_skipped_and_exhaustion_is_explained() {
        // A port the system picks, not the start of the default range: other tests allocate
        // from there and could take it between the release and the second allocation below.
        let port = std::net::TcpListener::bind(("127.0.0.1", 0)).and_then(|l| l.local_addr()).expect("a port").port();
        let (held, port) = allocate_port(port, port).expect("a free port");
        // Only `port` in range, and it is held: exhausted.
        let err = allocate_port(port, port).expect_err("held");
        assert!(err.contains("all 1 ports") && err.contains("CONDUIT_WS_PORT_RANGE_START"), "{err}");
        drop(held);
        let (_again, same) = allocate_port(port, port).expect("released");
        assert_eq!(same, port);
    }
}
