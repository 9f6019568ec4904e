//! `BridgeSocket`: one actor per session on the WebSocket transport.
//!
//! It owns the session's bridge server (and so its port) and the connection deadline: a CLI
//! that does not connect within [`CONNECT_TIMEOUT`], or exits first, makes the session read
//! why. The connection itself is served by [`crate::transport::websocket`]. The session holds a
//! [`BridgeHandle`]; when it finishes it shuts the bridge down before reporting its end, so the
//! port is free by the time anyone can launch again, and dropping the handle on any other path
//! stops the bridge too.

use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use actix_web::dev::ServerHandle;

use crate::transport::websocket::{self, Bridge, Handoff};

/// How long a CLI may take to connect to its bridge.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);

// ---------------------------------------------------------------------------------------------
// Messages

/// The CLI connected (sent from the bridge server's thread).
#[derive(Message)]
#[rtype(result = "()")]
struct Connected;

/// The CLI process ended; if it never connected, nobody will.
#[derive(Message)]
#[rtype(result = "()")]
struct CliExited;

/// Stop the server and release the port; answers once the listener is closed.
#[derive(Message)]
#[rtype(result = "()")]
struct Shutdown;

// ---------------------------------------------------------------------------------------------
// State

pub struct BridgeSocket {
    session_id: String,
    port: u16,
    bridge: Arc<Bridge>,
    server: Option<ServerHandle>,
    connected: bool,
}

/// The session's hold on its bridge.
pub struct BridgeHandle {
    addr: Addr<BridgeSocket>,
}

impl BridgeHandle {
    pub fn cli_exited(&self) {
        self.addr.do_send(CliExited);
    }

    /// Stops the bridge; resolves once its port is released.
    pub async fn shutdown(&self) {
        let _ = self.addr.send(Shutdown).await;
    }
}

impl Drop for BridgeHandle {
    fn drop(&mut self) {
        self.addr.do_send(Shutdown);
    }
}

impl BridgeSocket {
    /// Serves `listener` (bound to `port`) for the CLI that will be given `secret`.
    pub fn start(
        session_id: &str,
        listener: TcpListener,
        port: u16,
        secret: &str,
        handoff: Handoff,
    ) -> std::io::Result<BridgeHandle> {
        let mut failed = None;
        let addr = BridgeSocket::create(|ctx| {
            let me = ctx.address();
            let bridge = Arc::new(Bridge::new(secret, handoff, move || me.do_send(Connected)));
            let server = match websocket::serve(listener, bridge.clone()) {
                Ok(server) => {
                    let handle = server.handle();
                    actix::spawn(server);
                    Some(handle)
                }
                Err(e) => {
                    failed = Some(e);
                    None
                }
            };
            BridgeSocket { session_id: session_id.to_string(), port, bridge, server, connected: false }
        });
        match failed {
            Some(e) => {
                addr.do_send(Shutdown);
                Err(e)
            }
            None => Ok(BridgeHandle { addr }),
        }
    }

    /// No connection will come: the session reads `reason` and the end of its stream.
    fn give_up(&mut self, reason: String) {
        if let Some(handoff) = self.bridge.take() {
            tracing::warn!(session = %self.session_id, port = self.port, %reason, "the CLI never connected to its bridge");
            websocket::fail(handoff, reason);
        }
    }

    fn stop_server(&mut self) -> impl std::future::Future<Output = ()> {
        let server = self.server.take();
        async move {
            if let Some(server) = server {
                server.stop(false).await;
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Handlers

impl Actor for BridgeSocket {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.run_later(CONNECT_TIMEOUT, |act, _| {
            if !act.connected {
                let reason = format!(
                    "the CLI did not connect to its bridge on 127.0.0.1:{} within {} s",
                    act.port,
                    CONNECT_TIMEOUT.as_secs()
                );
                act.give_up(reason);
            }
        });
    }

    fn stopped(&mut self, _ctx: &mut Context<Self>) {
        self.give_up("the bridge was shut down before the CLI connected".to_string());
        actix::spawn(self.stop_server());
    }
}

impl Handler<Connected> for BridgeSocket {
    type Result = ();

    fn handle(&mut self, _msg: Connected, _ctx: &mut Context<Self>) {
        tracing::info!(session = %self.session_id, port = self.port, "the CLI connected to its bridge");
        self.connected = true;
    }
}

impl Handler<CliExited> for BridgeSocket {
    type Result = ();

    fn handle(&mut self, _msg: CliExited, _ctx: &mut Context<Self>) {
        if !self.connected {
            self.give_up("the CLI exited before connecting to its bridge".to_string());
        }
    }
}

impl Handler<Shutdown> for BridgeSocket {
    type Result = ResponseActFuture<Self, ()>;

    fn handle(&mut self, _msg: Shutdown, _ctx: &mut Context<Self>) -> Self::Result {
        let stopping = self.stop_server();
        Box::pin(stopping.into_actor(self).map(|_, act, ctx| {
            act.give_up("the bridge was shut down before the CLI connected".to_string());
            ctx.stop();
        }))
    }
}
