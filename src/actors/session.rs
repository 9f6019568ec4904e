//! `CliSession`: one actor per CLI process.
//!
//! It owns the session's state machine (`starting -> idle -> active -> idle ... -> closed |
//! error`, `compacting` while the CLI compacts), the transport's outbound queue, the control
//! requests waiting for an answer, the queue of user turns, and the in-memory session row, which
//! the database follows through the write-behind [`Writer`]. Every line in both directions is
//! recorded. When the CLI is gone (asked to close, or died) the actor ends whatever is left of
//! its process group and marked escapees, writes the final row, and stops; the registry hears
//! about it through [`SessionTerminated`].

use std::collections::{HashMap, HashSet, VecDeque};
use std::time::{Duration, Instant};

use actix::prelude::*;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use super::bridge::BridgeHandle;
use super::bus::{Event, Publish};
use super::permissions::Evaluate;
use crate::db::backlog::Backlog;
use crate::db::messages::{NewMessage, NewSessionEvent};
use crate::db::sessions::{Session, SessionPatch};
use crate::db::writer::{WriteError, WriteOp, Writer};
use crate::domain::events;
use crate::domain::idleness::{self, Activity, Busy};
use crate::domain::ids::SessionId;
use crate::domain::session::{ClosedReason, SessionStatus};
use crate::domain::time;
use crate::process::tree::ProcessTree;
use crate::protocol::framing::{Frame, MAX_LINE_BYTES};
use crate::protocol::incoming::{self, Kind, TurnResult};
use crate::protocol::outgoing;
use crate::protocol::requests::{self, CliRequest};
use crate::transport::{stdio, CliOutput, OutLine};

/// How long a control request Conduit sends may wait for the CLI's answer.
pub const CONTROL_TIMEOUT: Duration = Duration::from_secs(30);
/// Between SIGTERM (or SIGINT) and SIGKILL when closing.
pub const CLOSE_GRACE: Duration = Duration::from_secs(5);
/// User turns waiting behind a running one, at most.
pub const MAX_QUEUED_TURNS: usize = 100;
/// The end of stderr kept for error messages.
const STDERR_TAIL_BYTES: usize = 4096;
/// After the CLI exits, how long its stdout and stderr may stay open (held by a descendant)
/// before the session stops waiting for them.
const STDOUT_DRAIN: Duration = Duration::from_secs(2);
/// A resumed CLI that exits sooner than this refused the resume: its error says so.
pub const RESUME_GRACE: Duration = Duration::from_secs(5);

// ---------------------------------------------------------------------------------------------
// Messages

/// Queue a user turn. Answers once the line is stored (a 2xx means it survives a crash).
#[derive(Message)]
#[rtype(result = "Result<SendOutcome, SessionError>")]
pub struct SendUser {
    pub content: String,
}

#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct SendOutcome {
    /// True when the turn waits behind a running one (or for the CLI to be ready).
    pub queued: bool,
    /// Turns ahead of this one, the running turn included.
    pub position: usize,
}

/// A control request to the CLI; answers with the session row after the CLI's answer.
#[derive(Message, Debug, Clone)]
#[rtype(result = "Result<Session, SessionError>")]
pub enum Control {
    Interrupt,
    SetModel(String),
    SetPermissionMode(String),
}

/// End the CLI: close stdin, send `signal` to the group, SIGKILL after the grace period.
/// Answers with the final row once the processes are confirmed gone. The first close's
/// `reason` is the one recorded.
#[derive(Message)]
#[rtype(result = "Result<Session, SessionError>")]
pub struct Close {
    pub signal: i32,
    pub reason: ClosedReason,
}

/// The janitor's question: close this session if it has been truly idle for `timeout`
/// (`watchers` is what the bus counts). Decided here, where the state lives, so nothing can
/// slip in between the check and the close. Answers at once; the close runs on its own.
#[derive(Message)]
#[rtype(result = "Result<(), Busy>")]
pub struct CloseIfIdle {
    pub timeout: Duration,
    pub watchers: usize,
}

/// Answers with the final row once an ending session has ended (it does not end it); at once
/// with an error when the session is live.
#[derive(Message)]
#[rtype(result = "Result<Session, SessionError>")]
pub struct AwaitEnd;

/// The session row as this actor knows it (fresher than the database).
#[derive(Message)]
#[rtype(result = "Session")]
pub struct Snapshot;

/// Sent to the registry when the actor stops.
#[derive(Message, Debug)]
#[rtype(result = "()")]
pub struct SessionTerminated {
    pub id: SessionId,
    pub pid: i32,
}

#[derive(Message)]
#[rtype(result = "()")]
struct ProcessExited(String);

#[derive(Debug, Clone, thiserror::Error)]
pub enum SessionError {
    #[error("the session is {0}")]
    NotLive(String),
    #[error("{MAX_QUEUED_TURNS} messages are already waiting for this session")]
    QueueFull,
    #[error("the CLI did not answer {0} within {CONTROL_TIMEOUT:?}")]
    Timeout(String),
    #[error("{0}")]
    Cli(String),
    #[error("the message could not be stored: {0}")]
    Storage(WriteError),
}

// ---------------------------------------------------------------------------------------------
// State

enum Pending {
    Initialize,
    Command { what: String, reply: oneshot::Sender<Result<Value, SessionError>> },
}

/// Builds a control request line from its request id.
type LineFor = Box<dyn FnOnce(&str) -> String>;

struct QueuedTurn {
    seq: u64,
    line: String,
    /// The stored row's id, once stored (only then may the turn be sent).
    message_id: Option<i64>,
}

/// Totals the session had when this process started (non-zero after a resume); the CLI's
/// figures are cumulative per process and are added to these.
#[derive(Debug, Clone, Copy, Default)]
struct Base {
    cost: f64,
    input: i64,
    output: i64,
}

pub struct CliSession {
    row: Session,
    pid: i32,
    /// Everything the CLI started: its cgroup, process group and marker.
    tree: ProcessTree,
    writer: Writer,
    registry: Recipient<SessionTerminated>,
    engine: Recipient<Evaluate>,
    bus: Recipient<Publish>,
    stdin: Option<mpsc::Sender<OutLine>>,
    /// The last sequence number of this session's event stream. The session numbers its own
    /// events and stores them with their numbers, so its stream can be replayed from storage.
    seq: u64,
    /// Bytes of this session's lines read but not yet stored; its readers wait when full.
    backlog: std::sync::Arc<Backlog>,
    /// Requests from the CLI being decided; a `control_cancel_request` removes its id, and then
    /// no answer is sent.
    inflight: std::collections::HashSet<String>,
    pending: HashMap<String, Pending>,
    next_id: u64,
    queue: VecDeque<QueuedTurn>,
    turn_running: bool,
    stderr_tail: String,
    base: Base,
    stdout_done: bool,
    stderr_done: bool,
    exit: Option<String>,
    close_requested: bool,
    closers: Vec<oneshot::Sender<Session>>,
    finishing: bool,
    registry_notified: bool,
    /// The WebSocket bridge this session's CLI talks through, if it uses that transport.
    bridge: Option<BridgeHandle>,
    close_reason: Option<ClosedReason>,
    /// The last line in either direction, message or control traffic. The row's
    /// `last_active_at` follows it only at status changes, results and the janitor's asks.
    last_activity: Instant,
    /// Background tasks the CLI reported as started and not yet finished.
    background_tasks: HashSet<String>,
    started_at: Instant,
    /// This process continues an earlier one (`--resume`).
    resumed: bool,
}

/// What the registry hands over after spawning the CLI.
pub struct Spawned {
    pub row: Session,
    pub pid: i32,
    pub tree: ProcessTree,
    pub stdin: mpsc::Sender<OutLine>,
    /// The last event sequence number already stored for this session (0 for a new one).
    pub last_seq: u64,
    /// The gate the session's readers wait on; its lines are charged against it.
    pub backlog: std::sync::Arc<Backlog>,
    pub outputs: Vec<std::pin::Pin<Box<dyn futures_util::Stream<Item = CliOutput>>>>,
    /// Resolves with a description of how the process ended.
    pub exited: std::pin::Pin<Box<dyn std::future::Future<Output = String>>>,
    /// Set on the WebSocket transport: the bridge the CLI connects to.
    pub bridge: Option<BridgeHandle>,
    /// The CLI was started with `--resume` to bring back an ended session.
    pub resumed: bool,
}

impl CliSession {
    pub fn start(
        spawned: Spawned,
        writer: Writer,
        registry: Recipient<SessionTerminated>,
        engine: Recipient<Evaluate>,
        bus: Recipient<Publish>,
    ) -> Addr<CliSession> {
        CliSession::create(move |ctx| {
            for stream in spawned.outputs {
                ctx.add_stream(stream);
            }
            let addr = ctx.address();
            let exited = spawned.exited;
            actix::spawn(async move {
                let how = exited.await;
                addr.do_send(ProcessExited(how));
            });
            let base = Base {
                cost: spawned.row.total_cost_usd,
                input: spawned.row.total_input_tokens,
                output: spawned.row.total_output_tokens,
            };
            CliSession {
                row: spawned.row,
                pid: spawned.pid,
                tree: spawned.tree,
                writer,
                registry,
                engine,
                bus,
                stdin: Some(spawned.stdin),
                seq: spawned.last_seq,
                backlog: spawned.backlog,
                inflight: Default::default(),
                pending: HashMap::new(),
                next_id: 0,
                queue: VecDeque::new(),
                turn_running: false,
                stderr_tail: String::new(),
                base,
                stdout_done: false,
                stderr_done: false,
                exit: None,
                close_requested: false,
                closers: Vec::new(),
                finishing: false,
                registry_notified: false,
                bridge: spawned.bridge,
                close_reason: None,
                last_activity: Instant::now(),
                background_tasks: HashSet::new(),
                started_at: Instant::now(),
                resumed: spawned.resumed,
            }
        })
    }

    fn notify_registry(&mut self) {
        if !self.registry_notified {
            self.registry_notified = true;
            self.registry.do_send(SessionTerminated { id: self.row.id.clone(), pid: self.pid });
        }
    }

    fn is_live(&self) -> bool {
        !self.close_requested && !self.finishing && self.row.status.is_live()
    }

    fn request_id(&mut self) -> String {
        self.next_id += 1;
        format!("conduit-{}-{}", &self.row.id.as_str()[..8], self.next_id)
    }

    /// Records a line in the messages table (write-behind), charged to the session's backlog
    /// until it is stored. `event` is the stream event that relayed it: its number and time.
    fn record(
        &self,
        direction: &'static str,
        message_type: &str,
        subtype: Option<String>,
        content: String,
        event: Option<(u64, String)>,
    ) {
        let credit = self.backlog.charge(content.len() + 128);
        let (seq, timestamp) = match event {
            Some((seq, timestamp)) => (Some(seq as i64), timestamp),
            None => (None, time::now()),
        };
        let line = NewMessage {
            session_id: self.row.id.to_string(),
            direction,
            message_type: message_type.to_string(),
            message_subtype: subtype,
            content,
            timestamp,
            seq,
        };
        self.writer.persist_charged(WriteOp::Message(line), credit);
    }

    /// Writes a line to the CLI (already recorded, or recorded here when `record` is set).
    fn write(&mut self, line: String, record: Option<(&str, Option<String>)>) -> Result<(), SessionError> {
        self.last_activity = Instant::now();
        let tx = self.stdin.as_ref().ok_or_else(|| SessionError::Cli("the CLI's input is closed".to_string()))?;
        let queued = tx.try_send(OutLine::new(line.clone()));
        // Recorded only once handed to the transport: a line refused here was never sent.
        if let (Ok(()), Some((kind, subtype))) = (&queued, record) {
            self.record("to_cli", kind, subtype, line, None);
        }
        queued.map_err(|e| match e {
            mpsc::error::TrySendError::Full(_) => SessionError::Cli("the CLI is not reading its input".to_string()),
            mpsc::error::TrySendError::Closed(_) => SessionError::Cli("the CLI's input is closed".to_string()),
        })
    }

    /// Numbers an event of this session's stream and hands it to the bus; returns its number
    /// and time (a relayed line is stored with them).
    fn publish_numbered(&mut self, kind: &'static str, name: &str, data: String) -> (u64, String) {
        self.seq += 1;
        let mut event = Event::new(kind, name, Some(self.row.id.to_string()), data);
        event.topic_seq = Some(self.seq);
        let numbered = (self.seq, event.timestamp.clone());
        self.bus.do_send(Publish(event));
        numbered
    }

    /// An event that is not a line (status, created, closed, a decision): published, and
    /// stored in the session's event log so its stream replays it.
    fn publish(&mut self, kind: &'static str, name: &str, data: String) {
        let stored = data.clone();
        let (seq, timestamp) = self.publish_numbered(kind, name, data);
        self.writer.persist(WriteOp::Event(NewSessionEvent {
            session_id: self.row.id.to_string(),
            seq: seq as i64,
            kind: kind.to_string(),
            name: name.to_string(),
            data: stored,
            timestamp,
        }));
    }

    /// `session.status`, with the whole row so a client can redraw from one event.
    fn publish_row(&mut self, kind: &'static str, name: &str) {
        let data = serde_json::to_string(&self.row).unwrap_or_else(|_| "null".to_string());
        self.publish(kind, name, data);
    }

    fn patch(&mut self, patch: SessionPatch) {
        self.writer.persist(WriteOp::Session { id: self.row.id.clone(), patch });
    }

    fn set_status(&mut self, status: SessionStatus) {
        if self.row.status != status {
            self.row.status = status;
            self.row.last_active_at = time::now();
            let patch = SessionPatch {
                status: Some(status),
                last_active_at: Some(self.row.last_active_at.clone()),
                ..Default::default()
            };
            self.patch(patch);
            self.publish_row("session.status", "session_status");
        }
    }

    /// Sends a control request and arranges its timeout.
    fn control(
        &mut self,
        ctx: &mut Context<Self>,
        line_for: impl FnOnce(&str) -> String,
        pending: Pending,
    ) -> Result<(), SessionError> {
        let id = self.request_id();
        let line = line_for(&id);
        let subtype = incoming::parse(&line).message_subtype;
        self.write(line, Some(("control_request", subtype)))?;
        self.pending.insert(id.clone(), pending);
        ctx.run_later(CONTROL_TIMEOUT, move |act, ctx| act.control_timed_out(&id, ctx));
        Ok(())
    }

    fn control_timed_out(&mut self, id: &str, ctx: &mut Context<Self>) {
        match self.pending.remove(id) {
            Some(Pending::Initialize) => {
                tracing::warn!(session = %self.row.id, "the CLI did not answer initialize in time");
                self.fail(ctx, format!("the CLI did not answer initialize within {CONTROL_TIMEOUT:?}"));
            }
            Some(Pending::Command { what, reply }) => {
                tracing::warn!(session = %self.row.id, %what, "the CLI did not answer a control request in time");
                let _ = reply.send(Err(SessionError::Timeout(what)));
            }
            None => {}
        }
    }

    /// Starts the next queued turn when the CLI is ready for one. Its stored row records when
    /// the transport actually wrote it (`delivered_at`).
    fn pump(&mut self) {
        if self.turn_running || !self.is_live() || self.row.status != SessionStatus::Idle {
            return;
        }
        let Some(message_id) = self.queue.front().and_then(|t| t.message_id) else { return };
        let Some(turn) = self.queue.pop_front() else { return };
        let Some(tx) = self.stdin.as_ref() else { return };
        let (written, heard) = oneshot::channel();
        match tx.try_send(OutLine { line: turn.line, written: Some(written) }) {
            Ok(()) => {
                self.last_activity = Instant::now();
                self.turn_running = true;
                self.set_status(SessionStatus::Active);
                let writer = self.writer.clone();
                actix::spawn(async move {
                    if heard.await.is_ok() {
                        writer.persist(WriteOp::Delivered { message_id, at: time::now() });
                    }
                });
            }
            Err(e) => tracing::warn!(session = %self.row.id, error = %e, "could not start a turn"),
        }
    }

    fn on_line(&mut self, line: String, ctx: &mut Context<Self>) {
        self.last_activity = Instant::now();
        let msg = incoming::parse(&line);
        // Control traffic is protocol plumbing (decisions are published as their own events).
        let relayed = events::for_line(&msg.message_type, msg.message_subtype.as_deref())
            .map(|(kind, name)| self.publish_numbered(kind, &name, line.clone()));
        self.record("from_cli", &msg.message_type, msg.message_subtype.clone(), line, relayed);
        match msg.kind {
            Kind::SystemInit { session_id, model, permission_mode } => {
                let mut patch = SessionPatch::default();
                if session_id.is_some() && session_id != self.row.session_id {
                    self.row.session_id = session_id.clone();
                    patch.session_id = session_id;
                }
                if model.is_some() && model != self.row.model {
                    self.row.model = model.clone();
                    patch.model = model;
                }
                if permission_mode.is_some() && permission_mode != self.row.permission_mode {
                    self.row.permission_mode = permission_mode.clone();
                    patch.permission_mode = permission_mode;
                }
                self.patch(patch);
            }
            Kind::SystemStatus { status, permission_mode } => {
                if let Some(mode) = permission_mode.filter(|m| Some(m) != self.row.permission_mode.as_ref()) {
                    self.row.permission_mode = Some(mode.clone());
                    self.patch(SessionPatch { permission_mode: Some(mode), ..Default::default() });
                }
                match status.as_deref() {
                    Some("compacting") => self.set_status(SessionStatus::Compacting),
                    _ if self.row.status == SessionStatus::Compacting => {
                        self.set_status(if self.turn_running { SessionStatus::Active } else { SessionStatus::Idle })
                    }
                    _ => {}
                }
            }
            Kind::Result(result) => self.on_result(result),
            Kind::TaskStarted { task_id: Some(id) } => {
                self.background_tasks.insert(id);
            }
            Kind::TaskNotification { task_id: Some(id), finished: true } => {
                self.background_tasks.remove(&id);
            }
            Kind::TaskStarted { task_id: None } | Kind::TaskNotification { task_id: None, .. } => {
                tracing::debug!(session = %self.row.id, "a background task message without a task id");
            }
            Kind::TaskNotification { finished: false, .. } => {}
            Kind::ControlRequest { request_id, subtype, request } => {
                self.answer_cli(request_id, &subtype, &request, ctx)
            }
            Kind::ControlResponse { request_id, outcome } => match self.pending.remove(&request_id) {
                Some(Pending::Initialize) => match outcome {
                    Ok(_) => {
                        self.set_status(SessionStatus::Idle);
                        self.pump();
                    }
                    Err(e) => self.fail(ctx, format!("the CLI refused initialize: {e}")),
                },
                Some(Pending::Command { what, reply }) => {
                    let _ = reply.send(outcome.map_err(|e| SessionError::Cli(format!("the CLI refused {what}: {e}"))));
                }
                None => tracing::debug!(session = %self.row.id, %request_id, "answer to an unknown control request"),
            },
            Kind::ControlCancel { request_id } => {
                if self.inflight.remove(&request_id) {
                    tracing::debug!(session = %self.row.id, %request_id, "the CLI cancelled a request; no answer will be sent");
                }
            }
            Kind::Invalid { error } => {
                tracing::warn!(session = %self.row.id, %error, "the CLI wrote a line that is not a JSON object");
            }
            Kind::Other => {}
        }
    }

    fn on_result(&mut self, r: TurnResult) {
        let now = time::now();
        if let Some(cost) = r.total_cost_usd {
            self.row.total_cost_usd = self.base.cost + cost;
        }
        match r.cumulative_tokens {
            // Cumulative for this process: set, never add.
            Some((input, output)) => {
                self.row.total_input_tokens = self.base.input + input;
                self.row.total_output_tokens = self.base.output + output;
            }
            // Older CLIs only report the turn's usage: add it.
            None => {
                self.row.total_input_tokens += r.input_tokens.unwrap_or(0);
                self.row.total_output_tokens += r.output_tokens.unwrap_or(0);
            }
        }
        // A result no turn asked for that is an error (a refused `--resume` reports one before
        // exiting) is kept and totals follow it, but it is not a turn.
        if self.turn_running || !r.is_error {
            self.row.num_turns += 1;
        }
        self.row.last_active_at = now.clone();
        self.turn_running = false;
        let status = if self.is_live() { SessionStatus::Idle } else { self.row.status };
        self.row.status = status;
        self.patch(SessionPatch {
            status: Some(status),
            total_cost_usd: Some(self.row.total_cost_usd),
            total_input_tokens: Some(self.row.total_input_tokens),
            total_output_tokens: Some(self.row.total_output_tokens),
            num_turns: Some(self.row.num_turns),
            last_active_at: Some(now),
            ..Default::default()
        });
        self.publish_row("session.status", "session_status");
        self.pump();
    }

    /// Answers every request from the CLI (it would wait forever otherwise): tool calls are
    /// decided by the permission engine, anything else Conduit does not serve gets an error.
    fn answer_cli(&mut self, request_id: String, subtype: &str, request: &Value, ctx: &mut Context<Self>) {
        let call = match requests::classify(&request_id, subtype, request) {
            CliRequest::Answer(answer) => {
                if let Err(e) = self.write(answer, Some(("control_response", Some(subtype.to_string())))) {
                    tracing::warn!(session = %self.row.id, error = %e, "could not answer the CLI");
                }
                return;
            }
            CliRequest::Decide(call) => call,
        };
        let evaluate = Evaluate {
            project_id: Some(self.row.project_id.clone()),
            session_id: Some(self.row.id.clone()),
            call: call.clone(),
        };
        self.inflight.insert(request_id.clone());
        let subtype = subtype.to_string();
        let decided = self.engine.send(evaluate);
        ctx.spawn(decided.into_actor(self).map(move |verdict, act, _ctx| {
            if let Some(data) = verdict.as_ref().ok().and_then(|v| v.event.clone()) {
                act.publish("permission.decision", "permission", data);
            }
            if !act.inflight.remove(&request_id) {
                return;
            }
            let answer = requests::answer(&call, verdict.ok());
            if let Err(e) = act.write(answer, Some(("control_response", Some(subtype)))) {
                tracing::warn!(session = %act.row.id, error = %e, "could not answer the CLI");
            }
        }));
    }

    fn on_stderr(&mut self, line: String) {
        self.last_activity = Instant::now();
        stdio::keep_tail(&mut self.stderr_tail, &line, STDERR_TAIL_BYTES);
        self.record("from_cli", "stderr", None, line, None);
    }

    /// Something went wrong while the CLI runs: end it and report `reason`.
    fn fail(&mut self, ctx: &mut Context<Self>, reason: String) {
        if self.finishing {
            return;
        }
        self.row.error_message = Some(reason);
        self.begin_close(libc::SIGTERM, ctx);
    }

    fn begin_close(&mut self, signal: i32, ctx: &mut Context<Self>) {
        self.close_requested = true;
        self.stdin = None;
        if self.exit.is_some() {
            self.maybe_finish(ctx);
            return;
        }
        let tree = self.tree.clone();
        tokio::task::spawn_blocking(move || tree.signal(signal));
        ctx.run_later(CLOSE_GRACE, |act, _ctx| {
            if act.exit.is_none() {
                tracing::warn!(session = %act.row.id, "the CLI outlived the grace period; killing its tree");
                let tree = act.tree.clone();
                tokio::task::spawn_blocking(move || tree.signal(libc::SIGKILL));
            }
        });
    }

    /// Once the process has exited and its output is drained: end leftovers, write the final
    /// row, answer whoever asked to close, stop.
    fn maybe_finish(&mut self, ctx: &mut Context<Self>) {
        if self.finishing || !self.stdout_done || !self.stderr_done || self.exit.is_none() {
            return;
        }
        self.finishing = true;
        self.stdin = None;
        for (_, pending) in self.pending.drain() {
            if let Pending::Command { what, reply } = pending {
                let _ = reply.send(Err(SessionError::Cli(format!("the CLI exited before answering {what}"))));
            }
        }
        let tree = self.tree.clone();
        let cleanup = tokio::task::spawn_blocking(move || tree.end(Duration::from_secs(2)));
        // The bridge's port is released before anyone hears the session ended.
        let bridge = self.bridge.take();
        let cleanup = async move {
            if let Some(bridge) = &bridge {
                bridge.shutdown().await;
            }
            cleanup.await
        };
        ctx.wait(cleanup.into_actor(self).then(|survivors, act, _ctx| {
            let survivors = survivors.unwrap_or_default();
            let exit = act.exit.clone().unwrap_or_default();
            let now = time::now();
            let requested = act.close_reason;
            if !survivors.is_empty() {
                act.row.status = SessionStatus::Error;
                act.row.error_message = Some(format!("could not end processes {survivors:?} of this session"));
                act.row.closed_reason = Some(requested.unwrap_or(ClosedReason::CliExited));
            } else if act.close_requested && act.row.error_message.is_none() {
                act.row.status = SessionStatus::Closed;
                act.row.closed_at = Some(now.clone());
                act.row.closed_reason = Some(requested.unwrap_or(ClosedReason::Requested));
            } else {
                act.row.status = SessionStatus::Error;
                let mut reason = act.row.error_message.take().unwrap_or_else(|| format!("the CLI {exit}"));
                if act.resumed && act.started_at.elapsed() < RESUME_GRACE {
                    reason = format!("the CLI exited within {RESUME_GRACE:?} of resuming: {reason}");
                }
                let tail = act.stderr_tail.trim();
                act.row.error_message =
                    Some(if tail.is_empty() { reason } else { format!("{reason}; stderr: {tail}") });
                act.row.closed_at = Some(now.clone());
                act.row.closed_reason = Some(ClosedReason::CliExited);
            }
            act.row.last_active_at = now.clone();
            act.turn_running = false;
            act.background_tasks.clear();
            let patch = SessionPatch {
                status: Some(act.row.status),
                error_message: Some(act.row.error_message.clone()),
                closed_at: Some(act.row.closed_at.clone()),
                closed_reason: Some(act.row.closed_reason),
                last_active_at: Some(now),
                ..Default::default()
            };
            let id = act.row.id.clone();
            let writer = act.writer.clone();
            async move { writer.persist_acked(WriteOp::Session { id, patch }).await }.into_actor(act).map(
                |stored, act, ctx| {
                    if let Err(e) = stored {
                        tracing::error!(session = %act.row.id, error = %e, "could not store the final session state");
                    }
                    if act.row.status == SessionStatus::Error {
                        let data = serde_json::json!({"message": act.row.error_message}).to_string();
                        act.publish("session.error", "error", data);
                    }
                    act.publish_row("session.closed", "session_closed");
                    // Tell the registry before answering: a client's next launch then queues
                    // behind this notice in the registry's mailbox and sees the freed capacity.
                    act.notify_registry();
                    for closer in act.closers.drain(..) {
                        let _ = closer.send(act.row.clone());
                    }
                    ctx.stop();
                },
            )
        }));
    }
}

// ---------------------------------------------------------------------------------------------
// Handlers

impl Actor for CliSession {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        // The first event of this process on the session's stream: a new session, or the
        // resumed one starting again.
        if self.resumed {
            self.publish_row("session.status", "session_status");
        } else {
            self.publish_row("session.created", "session_created");
        }
        if let Err(e) = self.control(ctx, outgoing::initialize, Pending::Initialize) {
            self.fail(ctx, format!("could not send initialize: {e}"));
        }
    }

    fn stopped(&mut self, _ctx: &mut Context<Self>) {
        self.notify_registry();
    }
}

impl StreamHandler<CliOutput> for CliSession {
    fn handle(&mut self, item: CliOutput, ctx: &mut Context<Self>) {
        match item {
            CliOutput::Stdout(Frame::Line(line)) => self.on_line(line, ctx),
            CliOutput::Stdout(Frame::Oversized { len }) => {
                tracing::warn!(session = %self.row.id, len, "the CLI wrote a line over the cap; it was dropped");
                let note = serde_json::json!({
                    "conduit_error": format!("a line of {len} bytes exceeded the {MAX_LINE_BYTES}-byte cap and was dropped")
                });
                self.record("from_cli", "invalid", None, note.to_string(), None);
            }
            CliOutput::Stderr(Frame::Line(line)) => self.on_stderr(line),
            CliOutput::Stderr(Frame::Oversized { len }) => self.on_stderr(format!("[{len} bytes of stderr dropped]")),
            CliOutput::StdoutEnd => {
                self.stdout_done = true;
                self.maybe_finish(ctx);
            }
            CliOutput::StderrEnd => {
                self.stderr_done = true;
                self.maybe_finish(ctx);
            }
            CliOutput::Failed(reason) => {
                // After the process exited, its exit status and stderr tell the story better.
                if self.exit.is_none() {
                    self.fail(ctx, reason);
                }
            }
        }
    }

    /// Streams end on their own schedule; the session ends when the process does.
    fn finished(&mut self, _ctx: &mut Context<Self>) {}
}

impl Handler<ProcessExited> for CliSession {
    type Result = ();

    fn handle(&mut self, msg: ProcessExited, ctx: &mut Context<Self>) {
        tracing::info!(session = %self.row.id, pid = self.pid, how = %msg.0, "CLI process ended");
        self.exit = Some(msg.0);
        self.stdin = None;
        if let Some(bridge) = &self.bridge {
            bridge.cli_exited();
        }
        ctx.run_later(STDOUT_DRAIN, |act, ctx| {
            act.stdout_done = true;
            act.stderr_done = true;
            act.maybe_finish(ctx);
        });
        self.maybe_finish(ctx);
    }
}

impl Handler<SendUser> for CliSession {
    type Result = ResponseActFuture<Self, Result<SendOutcome, SessionError>>;

    fn handle(&mut self, msg: SendUser, _ctx: &mut Context<Self>) -> Self::Result {
        self.last_activity = Instant::now();
        if !self.is_live() {
            let status = if self.close_requested { "closing".to_string() } else { self.row.status.to_string() };
            return Box::pin(actix::fut::ready(Err(SessionError::NotLive(status))));
        }
        if self.queue.len() >= MAX_QUEUED_TURNS {
            return Box::pin(actix::fut::ready(Err(SessionError::QueueFull)));
        }
        let line = outgoing::user_turn(&msg.content);
        self.next_id += 1;
        let seq = self.next_id;
        let position = self.queue.len() + usize::from(self.turn_running);
        let queued = position > 0 || self.row.status != SessionStatus::Idle;
        self.queue.push_back(QueuedTurn { seq, line: line.clone(), message_id: None });
        let row = NewMessage {
            session_id: self.row.id.to_string(),
            direction: "to_cli",
            message_type: "user".to_string(),
            message_subtype: None,
            content: line,
            timestamp: time::now(),
            seq: None,
        };
        let writer = self.writer.clone();
        let stored = async move { writer.persist_returning_id(row).await };
        Box::pin(stored.into_actor(self).map(move |result, act, _ctx| match result {
            Ok(id) => {
                if let Some(turn) = act.queue.iter_mut().find(|t| t.seq == seq) {
                    turn.message_id = Some(id);
                }
                act.pump();
                Ok(SendOutcome { queued, position })
            }
            Err(e) => {
                act.queue.retain(|t| t.seq != seq);
                Err(SessionError::Storage(e))
            }
        }))
    }
}

impl Handler<Control> for CliSession {
    type Result = ResponseActFuture<Self, Result<Session, SessionError>>;

    fn handle(&mut self, msg: Control, ctx: &mut Context<Self>) -> Self::Result {
        if !self.is_live() || self.row.status == SessionStatus::Starting {
            let status = if self.close_requested { "closing".to_string() } else { self.row.status.to_string() };
            return Box::pin(actix::fut::ready(Err(SessionError::NotLive(status))));
        }
        let (reply, answer) = oneshot::channel();
        let (what, line_for): (String, LineFor) = match msg.clone() {
            Control::Interrupt => ("interrupt".to_string(), Box::new(outgoing::interrupt)),
            Control::SetModel(m) => ("set_model".to_string(), Box::new(move |id| outgoing::set_model(id, &m))),
            Control::SetPermissionMode(m) => {
                ("set_permission_mode".to_string(), Box::new(move |id| outgoing::set_permission_mode(id, &m)))
            }
        };
        if let Err(e) = self.control(ctx, line_for, Pending::Command { what, reply }) {
            return Box::pin(actix::fut::ready(Err(e)));
        }
        Box::pin(
            async move { answer.await.unwrap_or_else(|_| Err(SessionError::Cli("the session ended".to_string()))) }
                .into_actor(self)
                .map(move |outcome, act, _ctx| {
                    outcome?;
                    let mut patch = SessionPatch::default();
                    match msg {
                        Control::SetModel(m) => {
                            act.row.model = Some(m.clone());
                            patch.model = Some(m);
                        }
                        Control::SetPermissionMode(m) => {
                            act.row.permission_mode = Some(m.clone());
                            patch.permission_mode = Some(m);
                        }
                        Control::Interrupt => {}
                    }
                    act.patch(patch);
                    Ok(act.row.clone())
                }),
        )
    }
}

impl Handler<Close> for CliSession {
    type Result = ResponseFuture<Result<Session, SessionError>>;

    fn handle(&mut self, msg: Close, ctx: &mut Context<Self>) -> Self::Result {
        let (tx, rx) = oneshot::channel();
        self.closers.push(tx);
        if !self.close_requested {
            self.close_reason = Some(msg.reason);
            self.begin_close(msg.signal, ctx);
        }
        Box::pin(async move { rx.await.map_err(|_| SessionError::Cli("the session ended while closing".to_string())) })
    }
}

impl Handler<Snapshot> for CliSession {
    type Result = MessageResult<Snapshot>;

    fn handle(&mut self, _msg: Snapshot, _ctx: &mut Context<Self>) -> Self::Result {
        MessageResult(self.row.clone())
    }
}

impl Handler<CloseIfIdle> for CliSession {
    type Result = Result<(), Busy>;

    fn handle(&mut self, msg: CloseIfIdle, ctx: &mut Context<Self>) -> Self::Result {
        let activity = Activity {
            live: self.is_live(),
            turn_running: self.turn_running,
            pending_controls: self.pending.len(),
            inflight_requests: self.inflight.len(),
            queued_turns: self.queue.len(),
            background_tasks: self.background_tasks.len(),
            watchers: msg.watchers,
            quiet_for: self.last_activity.elapsed(),
        };
        match idleness::verdict(&activity, msg.timeout) {
            Ok(()) => {
                tracing::info!(session = %self.row.id, quiet_for = ?activity.quiet_for, "closing an idle session");
                self.close_reason = Some(ClosedReason::IdleTimeout);
                self.begin_close(libc::SIGTERM, ctx);
                Ok(())
            }
            Err(busy) => {
                // The stored time moves on to the real last activity, so the janitor's indexed
                // query stops offering this session until it may really be idle.
                let last = time::ago(activity.quiet_for);
                if busy != Busy::NotLive && last > self.row.last_active_at {
                    self.row.last_active_at = last.clone();
                    self.patch(SessionPatch { last_active_at: Some(last), ..Default::default() });
                }
                Err(busy)
            }
        }
    }
}

impl Handler<AwaitEnd> for CliSession {
    type Result = ResponseFuture<Result<Session, SessionError>>;

    fn handle(&mut self, _msg: AwaitEnd, _ctx: &mut Context<Self>) -> Self::Result {
        if self.is_live() {
            let status = self.row.status;
            return Box::pin(async move { Err(SessionError::Cli(format!("the session is {status}, not ending"))) });
        }
        let (tx, rx) = oneshot::channel();
        self.closers.push(tx);
        Box::pin(async move { rx.await.map_err(|_| SessionError::Cli("the session ended".to_string())) })
    }
}
