//! Cluster mode: a terminal's WebSocket asked of a node that does not run the terminal is
//! carried to the node that does (a PTY cannot move). This node first connects to the owner's
//! `/api/terminals/{id}/ws` with the cluster secret, so a terminal that ended meanwhile is still
//! answered over HTTP (the owner's 404 or 409, as it said it); then it accepts the client's
//! upgrade and copies frames both ways, binary and text as they are.
//!
//! tokio-tungstenite is the client: it runs on the worker's tokio runtime like everything else
//! here, never blocks it, and answers the owner's pings itself. An owner whose address is
//! `https://` is reached over `wss://` with rustls, trusting what the node's other peer
//! clients trust (the public roots and `cluster_ca`; see [`crate::peer_tls`]). Each direction
//! is its own loop awaiting the other end's room (the socket's bounded queue towards the
//! client, TCP towards the owner), so typing never waits for output nor output for typing, and
//! a side that stops reading holds its sender back instead of filling memory. The first side to
//! end ends both: a close from either is passed on with its code; the owner going away closes
//! the client with 1001, a client that does not read for [`SEND_WAIT`] is closed with 1013
//! (reconnecting repaints from the scrollback), like a client of the owner itself.

use std::time::{Duration, Instant};

use actix_web::web::{Bytes, Payload};
use actix_web::{HttpRequest, HttpResponse, ResponseError};
use actix_ws::{CloseCode, CloseReason, Message as Frame, ProtocolError};
use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{FutureExt, SinkExt, StreamExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, WebSocketConfig};
use tokio_tungstenite::tungstenite::{self, Message};
use tokio_tungstenite::{Connector, MaybeTlsStream, WebSocketStream};

use super::peers::{error_chain, FORWARDED_BY, SECRET_HEADER};
use crate::actors::subscriber::{MAX_FRAME_BYTES, PING_EVERY, SILENCE_LIMIT};
use crate::config::ClusterSettings;
use crate::error::AppError;
use crate::peer_tls::PeerClients;

type Upstream = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// How long the connection to the owner may take (its handshake included).
const CONNECT_WAIT: Duration = Duration::from_secs(5);
/// How long a frame may wait for room in the client's send queue.
const SEND_WAIT: Duration = Duration::from_secs(10);
/// How long a closing frame may wait: only offered, the other side may be gone.
const CLOSE_WAIT: Duration = Duration::from_secs(1);

/// Carries the WebSocket upgrade `req` to the terminal's owner at `address`; the answer is the
/// client's 101, or the owner's refusal, or a 503 `owner_unreachable`.
pub(super) async fn proxy(
    cluster: &ClusterSettings,
    peers: &PeerClients,
    req: &HttpRequest,
    payload: Payload,
    owner: &str,
    address: &str,
) -> HttpResponse {
    let upstream = match connect(cluster, peers, address, req.path()).await {
        Ok(upstream) => upstream,
        Err(Refused::Answer(answer)) => return answer,
        Err(Refused::Unreachable(why)) => {
            tracing::warn!(node = %owner, error = %why, "cluster: the terminal's owner could not be reached");
            let message = format!("the terminal runs on node {owner}, which cannot be reached ({why}); try again");
            return AppError::unavailable("owner_unreachable", message).error_response();
        }
    };
    let (response, socket, frames) = match actix_ws::handle(req, payload) {
        Ok(parts) => parts,
        Err(e) => {
            let message = format!("This endpoint speaks WebSocket: {e}");
            return AppError::bad_request("not_a_websocket", message).error_response();
        }
    };
    actix_web::rt::spawn(carry(upstream, socket, frames.max_frame_size(MAX_FRAME_BYTES)));
    response
}

enum Refused {
    /// The owner answered without upgrading: its answer goes back as it was.
    Answer(HttpResponse),
    Unreachable(String),
}

async fn connect(
    cluster: &ClusterSettings,
    peers: &PeerClients,
    address: &str,
    path: &str,
) -> Result<Upstream, Refused> {
    let (url, connector) = match (address.strip_prefix("http://"), address.strip_prefix("https://")) {
        (Some(rest), _) => (format!("ws://{rest}{path}"), Connector::Plain),
        (_, Some(rest)) => (format!("wss://{rest}{path}"), Connector::Rustls(peers.websocket.clone())),
        _ => return Err(Refused::Unreachable(format!("its address {address:?} is not http(s)"))),
    };
    let mut request = url.into_client_request().map_err(|e| Refused::Unreachable(e.to_string()))?;
    for (name, value) in [(SECRET_HEADER, &cluster.secret), (FORWARDED_BY, &cluster.node)] {
        let value = HeaderValue::from_str(value).map_err(|e| Refused::Unreachable(e.to_string()))?;
        request.headers_mut().insert(name, value);
    }
    let config = WebSocketConfig {
        max_message_size: Some(MAX_FRAME_BYTES),
        max_frame_size: Some(MAX_FRAME_BYTES),
        ..Default::default()
    };
    let connecting = tokio_tungstenite::connect_async_tls_with_config(request, Some(config), true, Some(connector));
    match tokio::time::timeout(CONNECT_WAIT, connecting).await {
        Ok(Ok((upstream, _))) => Ok(upstream),
        Ok(Err(tungstenite::Error::Http(answer))) => {
            let status = actix_web::http::StatusCode::from_u16(answer.status().as_u16())
                .unwrap_or(actix_web::http::StatusCode::BAD_GATEWAY);
            let body = answer.body().clone().unwrap_or_default();
            Err(Refused::Answer(HttpResponse::build(status).content_type("application/json").body(body)))
        }
        Ok(Err(e)) => Err(Refused::Unreachable(error_chain(&e))),
        Err(_) => Err(Refused::Unreachable(format!("no WebSocket within {} s", CONNECT_WAIT.as_secs()))),
    }
}

/// How the connection ends: what the client is told, and what the owner is.
struct End {
    client: CloseReason,
    owner: CloseFrame<'static>,
}

impl End {
    fn both(code: CloseCode, why: &str) -> End {
        End { client: CloseReason { code, description: Some(why.to_string()) }, owner: owner_close(code, why) }
    }
}

fn owner_close(code: CloseCode, why: &str) -> CloseFrame<'static> {
    CloseFrame { code: u16::from(code).into(), reason: why.to_string().into() }
}

/// Runs until either side ends, then ends the other.
async fn carry(upstream: Upstream, socket: actix_ws::Session, frames: actix_ws::MessageStream) {
    let (mut to_owner, mut from_owner) = upstream.split();
    let end = tokio::select! {
        end = from_client(&mut to_owner, socket.clone(), frames) => end,
        end = to_client(&mut from_owner, socket.clone()) => end,
    };
    let _ = tokio::time::timeout(CLOSE_WAIT, to_owner.send(Message::Close(Some(end.owner)))).await;
    let _ = tokio::time::timeout(CLOSE_WAIT, socket.close(Some(end.client))).await;
}

/// The client's frames to the owner; pings the client and ends it after a silence, as the
/// owner would (the owner hears this node, which answers its pings, not the client).
async fn from_client(
    to_owner: &mut SplitSink<Upstream, Message>,
    mut socket: actix_ws::Session,
    mut frames: actix_ws::MessageStream,
) -> End {
    let mut last_heard = Instant::now();
    loop {
        let frame = match tokio::time::timeout(PING_EVERY, frames.next()).await {
            Err(_) if last_heard.elapsed() > SILENCE_LIMIT => return End::both(CloseCode::Away, "silent for 75 s"),
            Err(_) => {
                // Only offered: a client that stopped reading is ended by the other direction.
                let _ = tokio::time::timeout(SEND_WAIT, socket.ping(b"")).await;
                continue;
            }
            Ok(None) => return End::both(CloseCode::Away, "the client went away"),
            Ok(Some(frame)) => frame,
        };
        last_heard = Instant::now();
        let passed = match frame {
            Ok(Frame::Binary(bytes)) => Message::Binary(bytes.to_vec()),
            Ok(Frame::Text(text)) => Message::Text(text.to_string()),
            Ok(Frame::Ping(bytes)) => {
                let _ = tokio::time::timeout(SEND_WAIT, socket.pong(&bytes)).await;
                continue;
            }
            Ok(Frame::Close(reason)) => {
                let code = reason.as_ref().map_or(CloseCode::Normal, |r| r.code);
                return End::both(code, "closed by the client");
            }
            Ok(_) => continue,
            Err(ProtocolError::Overflow) => {
                return End::both(CloseCode::Size, &format!("frames are limited to {MAX_FRAME_BYTES} bytes"));
            }
            Err(e) => return End::both(CloseCode::Protocol, &e.to_string()),
        };
        if to_owner.send(passed).await.is_err() {
            return End::both(CloseCode::Away, "the node running the terminal went away");
        }
    }
}

/// The owner's frames to the client, each waiting for room in the client's queue.
async fn to_client(from_owner: &mut SplitStream<Upstream>, mut socket: actix_ws::Session) -> End {
    loop {
        let sending = match from_owner.next().await {
            Some(Ok(Message::Binary(bytes))) => socket.binary(Bytes::from(bytes)).boxed_local(),
            Some(Ok(Message::Text(text))) => socket.text(text).boxed_local(),
            Some(Ok(Message::Close(frame))) => {
                // The owner's own close (the terminal ended, or it closed its client): passed on.
                let (code, why) =
                    frame.map_or((CloseCode::Normal, String::new()), |f| (u16::from(f.code).into(), f.reason.into()));
                return End { client: CloseReason { code, description: Some(why) }, owner: owner_close(code, "") };
            }
            // tungstenite answers the owner's pings itself.
            Some(Ok(_)) => continue,
            Some(Err(_)) | None => return End::both(CloseCode::Away, "the node running the terminal went away"),
        };
        match tokio::time::timeout(SEND_WAIT, sending).await {
            Ok(Ok(())) => {}
            Ok(Err(_)) => return End::both(CloseCode::Away, "the client went away"),
            Err(_) => {
                let why = "did not read the terminal's output for 10 s; reconnect to repaint";
                let client = CloseReason { code: CloseCode::Again, description: Some(why.into()) };
                return End { client, owner: owner_close(CloseCode::Normal, why) };
            }
        }
    }
}
