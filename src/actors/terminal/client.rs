//! One WebSocket client of a terminal: the scrollback first, then live output (binary frames),
//! while the client's binary frames go to the shell and its text frames are control messages.
//! Two tasks on the worker that accepted the connection: a pump from the client's bounded queue
//! to the socket, and a loop over the client's frames (pings every 30 s, closes after 75 s of
//! silence, frames over 1 MiB refused), so typing never waits for output nor output for typing.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::Addr;
use actix_web::web::Bytes;
use actix_ws::{CloseCode, CloseReason, Message as WsMessage, ProtocolError};
use futures_util::StreamExt;
use tokio::sync::mpsc;

use super::terminal::{Attach, Attached, ClientQueue, Detach, Input, Outgoing, Resize, Terminal, CLIENT_QUEUE};
use crate::actors::subscriber::{PING_EVERY, SILENCE_LIMIT};
use crate::domain::terminal::{ClientControl, ServerControl, Size};

/// The largest binary frame sent at once (the scrollback goes in pieces of this size).
const SEND_PIECE: usize = 64 * 1024;
/// The longest control message accepted.
const MAX_CONTROL_BYTES: usize = 4096;
/// How long a pong, ping or error reply may wait for room in the socket's send queue.
const SIDE_SEND_WAIT: Duration = Duration::from_secs(10);

/// A client attached to a terminal: what it is sent first, and its queue of what follows.
pub struct Attachment {
    attached: Attached,
    queue: mpsc::Receiver<Outgoing>,
    overflowed: Arc<AtomicBool>,
}

/// Attaches a client to `terminal`; `None` when it is ending or gone.
pub async fn attach(terminal: &Addr<Terminal>) -> Option<Attachment> {
    let (sender, queue) = mpsc::channel(CLIENT_QUEUE);
    let overflowed = Arc::new(AtomicBool::new(false));
    let attached =
        terminal.send(Attach(ClientQueue { sender, overflowed: overflowed.clone() })).await.ok().flatten()?;
    Some(Attachment { attached, queue, overflowed })
}

/// Runs the connection until either side ends it (on the current worker).
pub fn serve(
    terminal: Addr<Terminal>,
    attachment: Attachment,
    socket: actix_ws::Session,
    frames: actix_ws::MessageStream,
) {
    actix_web::rt::spawn(run(terminal, attachment, socket, frames));
}

async fn close(socket: actix_ws::Session, code: CloseCode, why: &str) {
    let reason = CloseReason { code, description: Some(why.to_string()) };
    // Only offered: a client that stopped reading has a full send queue.
    let _ = tokio::time::timeout(Duration::from_secs(1), socket.close(Some(reason))).await;
}

/// The scrollback, then the live queue, to the socket.
async fn pump(
    mut socket: actix_ws::Session,
    scrollback: Vec<u8>,
    mut queue: mpsc::Receiver<Outgoing>,
    overflowed: Arc<AtomicBool>,
) {
    for piece in scrollback.chunks(SEND_PIECE) {
        if socket.binary(Bytes::copy_from_slice(piece)).await.is_err() {
            return;
        }
    }
    while let Some(item) = queue.recv().await {
        match item {
            Outgoing::Output(bytes) => {
                if socket.binary(bytes).await.is_err() {
                    return;
                }
            }
            Outgoing::Exit(frame) => {
                let _ = tokio::time::timeout(SIDE_SEND_WAIT, socket.text(frame)).await;
                return close(socket, CloseCode::Normal, "the terminal ended").await;
            }
        }
    }
    if overflowed.load(Ordering::SeqCst) {
        let why = format!("fell {CLIENT_QUEUE} chunks behind the terminal's output; reconnect to repaint");
        return close(socket, CloseCode::Again, &why).await;
    }
    close(socket, CloseCode::Away, "the terminal is gone").await;
}

/// Sends a side frame (error reply, ping, pong) without holding up the frame loop for long.
fn side(socket: &actix_ws::Session, frame: WsMessage) {
    let mut socket = socket.clone();
    actix_web::rt::spawn(async move {
        let sent = async {
            match frame {
                WsMessage::Text(text) => socket.text(text).await,
                WsMessage::Ping(bytes) => socket.ping(&bytes).await,
                WsMessage::Pong(bytes) => socket.pong(&bytes).await,
                _ => Ok(()),
            }
        };
        let _ = tokio::time::timeout(SIDE_SEND_WAIT, sent).await;
    });
}

fn error_frame(message: String) -> WsMessage {
    let frame = ServerControl::Error { message };
    WsMessage::Text(serde_json::to_string(&frame).unwrap_or_default().into())
}

/// A text frame: a control message, applied; a bad one is answered with an error frame.
async fn control(terminal: &Addr<Terminal>, socket: &actix_ws::Session, text: &str) {
    if text.len() > MAX_CONTROL_BYTES {
        return side(socket, error_frame(format!("control messages are limited to {MAX_CONTROL_BYTES} bytes")));
    }
    let size = match ClientControl::parse(text) {
        Ok(ClientControl::Resize { cols, rows }) => Size::new(cols, rows),
        Err(e) => Err(e),
    };
    match size {
        Ok(size) => {
            if !terminal.send(Resize(size)).await.unwrap_or(false) {
                side(socket, error_frame("the terminal is ending".to_string()));
            }
        }
        Err(e) => side(socket, error_frame(e)),
    }
}

async fn run(
    terminal: Addr<Terminal>,
    attachment: Attachment,
    socket: actix_ws::Session,
    mut frames: actix_ws::MessageStream,
) {
    let Attachment { attached, queue, overflowed } = attachment;
    let mut pumping = actix_web::rt::spawn(pump(socket.clone(), attached.scrollback, queue, overflowed));
    let mut ping = tokio::time::interval_at(tokio::time::Instant::now() + PING_EVERY, PING_EVERY);
    let mut last_heard = Instant::now();
    loop {
        tokio::select! {
            // The pump closed the connection (the terminal ended, or the client fell behind).
            _ = &mut pumping => break,
            frame = frames.next() => {
                let Some(frame) = frame else { break };
                last_heard = Instant::now();
                match frame {
                    Ok(WsMessage::Binary(bytes)) => {
                        // False once the terminal ends: the pump then sends the exit and closes.
                        let _ = terminal.send(Input(bytes)).await;
                    }
                    Ok(WsMessage::Text(text)) => control(&terminal, &socket, &text).await,
                    Ok(WsMessage::Ping(bytes)) => side(&socket, WsMessage::Pong(bytes)),
                    Ok(WsMessage::Close(_)) => {
                        close(socket.clone(), CloseCode::Normal, "closed by the client").await;
                        break;
                    }
                    Ok(_) => {}
                    Err(ProtocolError::Overflow) => {
                        let why = format!("frames are limited to {} bytes", crate::actors::subscriber::MAX_FRAME_BYTES);
                        close(socket.clone(), CloseCode::Size, &why).await;
                        break;
                    }
                    Err(e) => {
                        close(socket.clone(), CloseCode::Protocol, &e.to_string()).await;
                        break;
                    }
                }
            }
            _ = ping.tick() => {
                if last_heard.elapsed() > SILENCE_LIMIT {
                    close(socket.clone(), CloseCode::Away, "silent for 75 s").await;
                    break;
                }
                side(&socket, WsMessage::Ping(Bytes::new()));
            }
        }
    }
    pumping.abort();
    terminal.do_send(Detach(attached.client));
}
