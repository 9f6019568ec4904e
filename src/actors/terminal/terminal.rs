//! `Terminal`: one shell in a PTY. It owns the shell's life (one enum), the scrollback, the
//! attached clients' queues, and the idle clock; see the module above for the data paths.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use actix::prelude::*;
use actix_web::web::Bytes;
use tokio::sync::{mpsc, oneshot};

use super::pty_io::{read_from_pty, write_to_pty, Output, OutputEnded, ToPty};
use super::registry::TerminalGone;
use super::TerminalView;
use crate::actors::bus::{Event, Publish};
use crate::domain::terminal::{EndReason, ServerControl, Size, TerminalStatus};
use crate::process::tree::ProcessTree;
use crate::supervisor::process::ProcessGone;
use crate::terminal::scrollback::Scrollback;
use crate::terminal::spawn::{ShellExit, Started};

/// Chunks a client may have waiting (each at most 64 KiB: 4 MiB at most per client).
pub const CLIENT_QUEUE: usize = 64;
/// How long output waits for room in a full client queue before that client is detached: the
/// longest a client that stopped reading can hold the terminal (and the other clients) back.
pub const SLOW_CLIENT_WAIT: Duration = Duration::from_secs(2);
/// Writes waiting for the shell to read its input.
const INPUT_QUEUE: usize = 64;
/// Between the SIGHUP that asks a shell to end and the SIGKILL that makes it.
const HANGUP_GRACE: Duration = Duration::from_secs(2);
/// After the shell exited, how long its last output may take to arrive (a background job
/// may keep the PTY open; it is ended with the tree).
const DRAIN_GRACE: Duration = Duration::from_millis(300);

/// What goes to an attached client, in order.
#[derive(Debug)]
pub enum Outgoing {
    Output(Bytes),
    /// The terminal ended (a `ServerControl::Exit` frame); the connection closes next.
    Exit(String),
}

/// A client's queue, and the flag that tells its connection why the queue ended.
#[derive(Clone)]
pub struct ClientQueue {
    pub sender: mpsc::Sender<Outgoing>,
    /// Set when the client was detached for falling behind.
    pub overflowed: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

/// Attaches a client: its queue from now on, and the scrollback up to now (nothing between
/// them is lost or repeated: both happen in one handler).
#[derive(Message)]
#[rtype(result = "Option<Attached>")]
pub struct Attach(pub ClientQueue);

pub struct Attached {
    pub client: u64,
    pub scrollback: Vec<u8>,
}

#[derive(Message)]
#[rtype(result = "()")]
pub struct Detach(pub u64);

/// Keyboard bytes for the shell; answers once they are queued for the PTY (false: it ended).
#[derive(Message)]
#[rtype(result = "bool")]
pub struct Input(pub Bytes);

/// Answers false once the terminal is ending.
#[derive(Message)]
#[rtype(result = "bool")]
pub struct Resize(pub Size);

#[derive(Message)]
#[rtype(result = "TerminalView")]
pub struct Describe;

/// Ends the terminal; answers when its processes are gone.
#[derive(Message)]
#[rtype(result = "()")]
pub struct End(pub EndReason);

/// The shell's life.
enum Life {
    Running {
        input: mpsc::Sender<ToPty>,
    },
    /// SIGHUP sent, the master closed; waiting for the shell to exit.
    Ending {
        reason: EndReason,
    },
    /// The shell exited: its last output drains, then the tree is ended and the actor stops.
    Exited {
        exit: ShellExit,
        reason: EndReason,
    },
}

/// Where the terminal reports.
pub struct Peers {
    pub registry: Recipient<TerminalGone>,
    pub bus: Recipient<Publish>,
    /// The session registry forgets the shell's pid (it leaves tokio's pids to tokio).
    pub children: Recipient<ProcessGone>,
}

pub struct Terminal {
    view: TerminalView,
    life: Life,
    tree: ProcessTree,
    /// Taken when the actor starts.
    started: Option<Started>,
    reading: Option<tokio::task::JoinHandle<()>>,
    output_done: bool,
    scrollback: Scrollback,
    clients: HashMap<u64, ClientQueue>,
    next_client: u64,
    /// The last input, or when the last client left.
    last_activity: Instant,
    idle_timeout: Duration,
    peers: Peers,
    waiters: Vec<oneshot::Sender<()>>,
    finishing: bool,
}

impl Terminal {
    pub fn new(view: TerminalView, started: Started, scrollback: usize, idle_timeout: Duration, peers: Peers) -> Self {
        // Replaced by the writer's sender when the actor starts.
        let (input, _) = mpsc::channel(1);
        Terminal {
            view,
            life: Life::Running { input },
            tree: started.tree.clone(),
            started: Some(started),
            reading: None,
            output_done: false,
            scrollback: Scrollback::new(scrollback),
            clients: HashMap::new(),
            next_client: 0,
            last_activity: Instant::now(),
            idle_timeout,
            peers,
            waiters: Vec::new(),
            finishing: false,
        }
    }

    /// Keeps `chunk` and queues it for every client; a client whose queue stays full for
    /// [`SLOW_CLIENT_WAIT`] is detached. Resolves when every client took it (or was detached):
    /// only then is the PTY read again.
    fn output(&mut self, chunk: Bytes) -> ResponseActFuture<Self, ()> {
        self.scrollback.push(&chunk);
        let mut waiting = Vec::new();
        for (id, client) in &self.clients {
            match client.sender.try_send(Outgoing::Output(chunk.clone())) {
                Ok(()) => {}
                Err(mpsc::error::TrySendError::Full(item)) => {
                    let sender = client.sender.clone();
                    let id = *id;
                    waiting.push(async move { sender.send_timeout(item, SLOW_CLIENT_WAIT).await.err().map(|_| id) });
                }
                // Gone: its connection detaches it.
                Err(mpsc::error::TrySendError::Closed(_)) => {}
            }
        }
        if waiting.is_empty() {
            return Box::pin(actix::fut::ready(()));
        }
        let waited = futures_util::future::join_all(waiting);
        Box::pin(waited.into_actor(self).map(|slow, act, _| {
            for id in slow.into_iter().flatten() {
                if let Some(client) = act.clients.remove(&id) {
                    tracing::debug!(terminal = %act.view.id, client = id, "a client fell behind and was detached");
                    client.overflowed.store(true, std::sync::atomic::Ordering::SeqCst);
                }
            }
            act.view.clients = act.clients.len();
            if act.clients.is_empty() {
                act.last_activity = Instant::now();
            }
        }))
    }

    /// Asks the shell to end: SIGHUP to its tree and the master closed, SIGKILL after a grace.
    fn end(&mut self, reason: EndReason, ctx: &mut Context<Self>) {
        if !matches!(self.life, Life::Running { .. }) {
            return;
        }
        tracing::debug!(terminal = %self.view.id, %reason, "ending a terminal");
        // Dropping the input sender ends the writer task and its half of the master; cancelling
        // the reader drops the other: the shell's session gets a hangup.
        self.life = Life::Ending { reason };
        self.view.status = TerminalStatus::Ending;
        if let Some(reading) = self.reading.take() {
            reading.abort();
        }
        self.output_done = true;
        let tree = self.tree.clone();
        tokio::task::spawn_blocking(move || tree.signal(libc::SIGHUP));
        ctx.run_later(HANGUP_GRACE, |act, _| {
            if matches!(act.life, Life::Ending { .. }) {
                let tree = act.tree.clone();
                // The shell's wait resolves once the kill lands.
                tokio::task::spawn_blocking(move || tree.end(Duration::from_secs(2)));
            }
        });
    }

    fn exited(&mut self, exit: ShellExit, ctx: &mut Context<Self>) {
        let reason = match self.life {
            Life::Ending { reason } => reason,
            _ => EndReason::Exited,
        };
        tracing::debug!(terminal = %self.view.id, how = %exit.how, "a terminal's shell exited");
        self.life = Life::Exited { exit, reason };
        if self.output_done {
            self.finish(ctx);
        } else {
            ctx.run_later(DRAIN_GRACE, |act, ctx| act.finish(ctx));
        }
    }

    /// Ends whatever the shell left (its cgroup, group and marked processes), then tells
    /// everyone and stops.
    fn finish(&mut self, ctx: &mut Context<Self>) {
        let Life::Exited { exit, reason } = &self.life else { return };
        if std::mem::replace(&mut self.finishing, true) {
            return;
        }
        let (exit, reason) = (exit.clone(), *reason);
        if let Some(reading) = self.reading.take() {
            reading.abort();
        }
        let tree = self.tree.clone();
        let cleanup = tokio::task::spawn_blocking(move || tree.end(Duration::from_secs(2)));
        ctx.spawn(cleanup.into_actor(self).map(move |left, act, ctx| {
            if let Some(left) = left.ok().filter(|l| !l.is_empty()) {
                tracing::warn!(terminal = %act.view.id, pids = ?left, "processes of a terminal outlived it");
            }
            act.report(exit, reason);
            ctx.stop();
        }));
    }

    fn report(&mut self, exit: ShellExit, reason: EndReason) {
        let signal = exit.signal;
        let frame = ServerControl::Exit { code: exit.code, signal, reason };
        let frame = serde_json::to_string(&frame).unwrap_or_default();
        for (_, client) in self.clients.drain() {
            let frame = frame.clone();
            // After whatever output is still queued for it, if it reads within the wait.
            actix::spawn(async move {
                let _ = client.sender.send_timeout(Outgoing::Exit(frame), SLOW_CLIENT_WAIT).await;
            });
        }
        let data = serde_json::json!({
            "terminal": self.view, "reason": reason, "code": exit.code, "signal": signal, "how": exit.how,
        });
        let event = Event::json("terminal.exited", "terminal_exited", None, &data);
        self.peers.bus.do_send(Publish(event.in_project(Some(self.view.project_id.clone()))));
        self.peers.registry.do_send(TerminalGone(self.view.id.clone()));
        self.peers.children.do_send(ProcessGone { id: self.view.id.to_string(), pid: self.view.pid, reason: None });
        for waiter in self.waiters.drain(..) {
            let _ = waiter.send(());
        }
    }

    fn check_idle(&mut self, ctx: &mut Context<Self>) {
        let idle = self.clients.is_empty() && self.last_activity.elapsed() >= self.idle_timeout;
        if idle && matches!(self.life, Life::Running { .. }) {
            self.end(EndReason::IdleTimeout, ctx);
        }
    }
}

impl Actor for Terminal {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        let Some(Started { reader, writer, mut child, .. }) = self.started.take() else { return };
        let (input, queue) = mpsc::channel(INPUT_QUEUE);
        self.life = Life::Running { input };
        actix::spawn(write_to_pty(writer, queue));
        self.reading = Some(actix::spawn(read_from_pty(reader, ctx.address())));
        let sandboxed = self.view.sandboxed;
        let wait = async move {
            match child.wait().await {
                Ok(status) => ShellExit::of(status, sandboxed),
                // Reaped by someone else (an orphan sweep): the status is lost, not the end.
                Err(e) => ShellExit { how: format!("could not be waited for: {e}"), code: None, signal: None },
            }
        };
        ctx.spawn(wait.into_actor(self).map(|exit, act, ctx| act.exited(exit, ctx)));
        let every = (self.idle_timeout / 5).clamp(Duration::from_millis(50), Duration::from_secs(10));
        ctx.run_interval(every, |act, ctx| act.check_idle(ctx));
    }
}

impl Handler<Output> for Terminal {
    type Result = ResponseActFuture<Self, ()>;

    fn handle(&mut self, msg: Output, _ctx: &mut Context<Self>) -> Self::Result {
        self.output(msg.0)
    }
}

impl Handler<OutputEnded> for Terminal {
    type Result = ();

    fn handle(&mut self, _msg: OutputEnded, ctx: &mut Context<Self>) {
        self.output_done = true;
        if matches!(self.life, Life::Exited { .. }) {
            self.finish(ctx);
        }
    }
}

impl Handler<Attach> for Terminal {
    type Result = Option<Attached>;

    fn handle(&mut self, msg: Attach, _ctx: &mut Context<Self>) -> Option<Attached> {
        if !matches!(self.life, Life::Running { .. }) {
            return None;
        }
        self.next_client += 1;
        self.clients.insert(self.next_client, msg.0);
        self.view.clients = self.clients.len();
        Some(Attached { client: self.next_client, scrollback: self.scrollback.snapshot() })
    }
}

impl Handler<Detach> for Terminal {
    type Result = ();

    fn handle(&mut self, msg: Detach, _ctx: &mut Context<Self>) {
        if self.clients.remove(&msg.0).is_some() && self.clients.is_empty() {
            // The idle clock starts when the last client leaves.
            self.last_activity = Instant::now();
        }
        self.view.clients = self.clients.len();
    }
}

impl Handler<Input> for Terminal {
    type Result = ResponseFuture<bool>;

    fn handle(&mut self, msg: Input, _ctx: &mut Context<Self>) -> Self::Result {
        let Life::Running { input } = &self.life else { return Box::pin(async { false }) };
        self.last_activity = Instant::now();
        let input = input.clone();
        // Waits while the shell does not read its input: the client's socket waits with it.
        Box::pin(async move { input.send(ToPty::Bytes(msg.0)).await.is_ok() })
    }
}

impl Handler<Resize> for Terminal {
    type Result = ResponseFuture<bool>;

    fn handle(&mut self, msg: Resize, _ctx: &mut Context<Self>) -> Self::Result {
        let Life::Running { input } = &self.life else { return Box::pin(async { false }) };
        (self.view.cols, self.view.rows) = (msg.0.cols, msg.0.rows);
        let input = input.clone();
        Box::pin(async move { input.send(ToPty::Resize(msg.0)).await.is_ok() })
    }
}

impl Handler<Describe> for Terminal {
    type Result = MessageResult<Describe>;

    fn handle(&mut self, _msg: Describe, _ctx: &mut Context<Self>) -> Self::Result {
        MessageResult(self.view.clone())
    }
}

impl Handler<End> for Terminal {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, msg: End, ctx: &mut Context<Self>) -> Self::Result {
        let (tell, told) = oneshot::channel();
        self.waiters.push(tell);
        self.end(msg.0, ctx);
        // A closed channel means the actor is gone: ended all the same.
        Box::pin(async move {
            let _ = told.await;
        })
    }
}
