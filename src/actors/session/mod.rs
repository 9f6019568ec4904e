//! A session: the conversation of one supervised CLI ([`Chat`]), run by the CLI supervisor
//! ([`CliProcess`]). The supervisor owns the process (handshake, requests, the stop ladder, the
//! typed end); the chat owns what is said: the queue of user turns, the status the API shows,
//! cost and token totals across resumes, and the record of every line, each relayed as a
//! numbered event of the session's stream and stored write-behind.
//!
//! - this file: the messages a session answers, and how one starts;
//! - [`chat`]: the conversation's hooks (lines, results, the end);
//! - [`record`]: how lines and events are stored and published;
//! - [`handlers`]: one handler per message.

mod chat;
mod handlers;
pub mod holds;
pub mod kept;
pub mod limits;
pub mod pause;
mod record;
pub mod resources;
pub mod supervision;
mod turn_end;
mod wip;

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use tokio::sync::oneshot;

pub use self::chat::Chat;
use super::bus::Publish;
use crate::db::backlog::Backlog;
use crate::db::sessions::Session;
use crate::db::writer::{WriteError, Writer};
use crate::domain::idleness::Busy;
use crate::domain::session::ClosedReason;
use crate::supervisor::adapter::AgentAdapter;
use crate::supervisor::controls::ControlError;
use crate::supervisor::process::{CliProcess, Peers};
use crate::supervisor::spawn::Spawned;

pub use crate::supervisor::controls::CONTROL_TIMEOUT;

/// A session's actor: the CLI supervisor running a chat.
pub type CliSession = CliProcess<Chat>;

/// Between SIGTERM (or SIGINT) and SIGKILL when closing.
pub const CLOSE_GRACE: Duration = Duration::from_secs(5);
/// User turns waiting behind a running one, at most.
pub const MAX_QUEUED_TURNS: usize = 100;
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
    /// True when the turn waits in the session's own queue: behind a running one, for the CLI
    /// to be ready, or while the session is held or waits for a usage limit. A wait for a slot
    /// under the project's limit of running turns is decided by the gate after this answer:
    /// `session.turn_waiting` and `GET /api/projects/{id}/turns` tell it.
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

/// What the session's CLI offers to switch to (its kind's defaults until its handshake ends).
#[derive(Message, Debug, Clone)]
#[rtype(result = "crate::domain::offers::Offers")]
pub struct GetOffers;

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

/// Hold the session for a spent budget (`Some(why)`), or release it (`None`).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Hold(pub Option<String>);

/// The session row as this actor knows it (fresher than the database).
#[derive(Message)]
#[rtype(result = "Session")]
pub struct Snapshot;

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
    /// The session's agent cannot do what was asked.
    #[error("{0}")]
    Unsupported(String),
    /// The CLI answered the request with an error (an unknown model, a mode it refuses): its
    /// reason, for the client to read.
    #[error("{0}")]
    Refused(String),
    #[error("the message could not be stored: {0}")]
    Storage(WriteError),
    /// A budget covering the session is spent.
    #[error("{}", .0.message())]
    Budget(crate::domain::budget::Exhaustion),
    /// The request does not fit the session's state (pausing a paused one): why.
    #[error("{0}")]
    Conflict(String),
    /// This machine cannot do it (no cgroup to freeze): why.
    #[error("{0}")]
    Unavailable(String),
}

impl From<ControlError> for SessionError {
    fn from(e: ControlError) -> Self {
        match e {
            ControlError::Timeout(what) => SessionError::Timeout(what.to_string()),
            e @ ControlError::Unsupported { .. } => SessionError::Unsupported(e.to_string()),
            e @ ControlError::Refused { .. } => SessionError::Refused(e.to_string()),
            other => SessionError::Cli(other.to_string()),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Starting

/// What a session's CLI needs from the service.
#[derive(Clone)]
pub struct SessionDeps {
    pub writer: Writer,
    pub bus: Recipient<Publish>,
    pub engine: Recipient<crate::actors::permissions::Evaluate>,
    pub registry: Recipient<crate::supervisor::process::ProcessGone>,
    pub limits: limits::LimitPolicy,
    pub budgets: holds::BudgetLink,
    /// The work-in-progress limit's gate, asked before every turn.
    pub gate: Recipient<crate::actors::turn_gate::Slot>,
    /// Where secrets are taken out: the session redacts its lines and events once, for the
    /// store and the bus both.
    pub redaction: crate::secrets::RedactionMode,
}

/// A spawned CLI for `row`, with what the chat continues from.
pub struct Started {
    pub row: Session,
    pub spawned: Spawned,
    /// How its agent kind is spoken to.
    pub adapter: Box<dyn AgentAdapter>,
    /// The last event sequence number already stored for this session (0 for a new one).
    pub last_seq: u64,
    /// The gate the session's readers wait on; its lines are charged against it.
    pub backlog: Arc<Backlog>,
    /// The CLI was started with `--resume` to bring back an ended session.
    pub resumed: bool,
    /// User turns stored before a restart and still to deliver (a session that was parked at
    /// a usage limit): they are queued first, in order.
    pub carried: Vec<crate::db::messages::PendingTurn>,
    /// How it is watched (the turn watchdog).
    pub supervision: supervision::Supervision,
    /// Its CLI ran on under a keeper while the service restarted; `since_seq` and the
    /// background tasks it stored before (see [`kept`]).
    pub reattached: Option<kept::KeptState>,
}

pub fn start(started: Started, deps: &SessionDeps) -> Addr<CliSession> {
    let Started { row, spawned, mut adapter, last_seq, backlog, resumed, carried, supervision, reattached } = started;
    let (since_seq, background_tasks) = match &reattached {
        Some(state) => {
            adapter.restore(&state.adapter);
            (state.since_seq, state.background_tasks.iter().cloned().collect())
        }
        None => (last_seq, HashSet::new()),
    };
    let next_turn = carried.len() as u64;
    let queue: VecDeque<QueuedTurn> = carried
        .into_iter()
        .zip(1..)
        .map(|(t, seq)| QueuedTurn { seq, event_seq: t.seq, content: t.content, message_id: Some(t.message_id) })
        .collect();
    let peers = Peers { engine: deps.engine.clone(), registry: deps.registry.clone() };
    let id = row.id.to_string();
    // A reattached CLI's figures are cumulative since its own start, not since this actor's.
    let base = match reattached.as_ref().and_then(|s| s.base) {
        Some((cost, input, output)) => chat::Totals { cost, input, output },
        None => chat::Totals::of(&row),
    };
    let chat = Chat {
        base,
        row,
        writer: deps.writer.clone(),
        bus: deps.bus.clone(),
        seq: last_seq,
        backlog,
        queue,
        next_turn,
        turn_running: reattached.as_ref().and_then(|s| s.turn_running).unwrap_or(false),
        closers: Vec::new(),
        background_tasks,
        resumed,
        in_flight: None,
        limit_info: None,
        limits: deps.limits.clone(),
        hold_generation: 0,
        budget_hold: None,
        cap_reported: false,
        settling: 0,
        settled: Vec::new(),
        budgets: deps.budgets.clone(),
        gate: deps.gate.clone(),
        redaction: deps.redaction,
        me: None,
        slot: wip::SlotState::Free,
        supervision,
        stalled: false,
        since_seq,
        reattached: reattached.is_some(),
        // Frozen before the restart: still frozen (the janitor counts from now).
        paused_since: reattached.as_ref().filter(|s| s.paused).map(|_| std::time::Instant::now()),
        resources: resources::Watch::new(reattached.is_some()),
    };
    CliProcess::start(&id, spawned, adapter, peers, CLOSE_GRACE, chat, reattached.is_some())
}

/// A user turn stored (or being stored) and waiting for the CLI.
struct QueuedTurn {
    seq: u64,
    /// Its number on the session's stream (and on its stored line).
    event_seq: u64,
    /// What the user said; the agent's line for it is built when it is sent.
    content: String,
    /// The stored row's id, once stored (only then may the turn be sent).
    message_id: Option<i64>,
}

type Closer = oneshot::Sender<Session>;
