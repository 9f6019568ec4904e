//! [`Chat`]: a session's conversation on top of its CLI: statuses, the turn queue, totals,
//! and the record of its end.

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;

use actix::prelude::*;
use tokio::sync::oneshot;

use super::record::Said;
use super::{CliSession, Closer, QueuedTurn, RESUME_GRACE};
use crate::actors::bus::Publish;
use crate::db::backlog::Backlog;
use crate::db::sessions::{Session, SessionPatch};
use crate::db::writer::{WriteOp, Writer};
use crate::domain::agent_events::AgentEvent;
use crate::domain::decision::Verdict;
use crate::domain::ids::{ProjectId, SessionId};
use crate::domain::session::{ClosedReason, SessionStatus};
use crate::domain::{events, time};
use crate::protocol::framing::MAX_LINE_BYTES;
use crate::protocol::incoming::{Incoming, Kind};
use crate::secrets::scrub_any;
use crate::supervisor::conversation::{Conversation, Ctx, ProcessEnd, Step};
use crate::transport::OutLine;

/// Totals a session had when this process started (non-zero after a resume): the CLI's
/// figures are cumulative per process and are added to these.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Totals {
    pub(super) cost: f64,
    pub(super) input: i64,
    pub(super) output: i64,
}

impl Totals {
    pub(super) fn of(row: &Session) -> Totals {
        Totals { cost: row.total_cost_usd, input: row.total_input_tokens, output: row.total_output_tokens }
    }
}

pub struct Chat {
    pub(super) row: Session,
    pub(super) writer: Writer,
    pub(super) bus: Recipient<Publish>,
    /// The last sequence number of this session's event stream. The session numbers its own
    /// events and stores them with their numbers, so its stream can be replayed from storage.
    pub(super) seq: u64,
    /// Bytes of this session's lines read but not yet stored; its readers wait when full.
    pub(super) backlog: Arc<Backlog>,
    pub(super) queue: VecDeque<QueuedTurn>,
    pub(super) next_turn: u64,
    pub(super) turn_running: bool,
    pub(super) base: Totals,
    /// Whoever waits for the end (a close, a shutdown, a message racing the janitor).
    pub(super) closers: Vec<Closer>,
    /// Background tasks the CLI reported as started and not yet finished.
    pub(super) background_tasks: HashSet<String>,
    /// This process continues an earlier one (`--resume`).
    pub(super) resumed: bool,
    /// The turn the CLI is working on, kept until its result (a limit sends it back).
    pub(super) in_flight: Option<QueuedTurn>,
    /// The CLI's latest limit state.
    pub(super) limit_info: Option<crate::protocol::incoming::LimitInfo>,
    pub(super) limits: super::limits::LimitPolicy,
    /// Counts parkings, so a wake-up meant for an earlier one does nothing.
    pub(super) hold_generation: u64,
    /// Why a spent budget holds the session (it shows `paused` at rest).
    pub(super) budget_hold: Option<String>,
    /// The CLI said the session's cap was spent (`error_max_budget_usd`).
    pub(super) cap_reported: bool,
    pub(super) budgets: super::holds::BudgetLink,
    /// The work-in-progress limit's gate, and this session as the gate answers it.
    pub(super) gate: Recipient<crate::actors::turn_gate::Slot>,
    /// Lines and events are redacted here, once, for the store and the bus (see record.rs).
    pub(super) redaction: crate::secrets::RedactionMode,
    pub(super) me: Option<Recipient<crate::actors::turn_gate::SlotAnswer>>,
    pub(super) slot: super::wip::SlotState,
    /// Turn results not yet stored (see turn_end.rs): the session reads on meanwhile, but
    /// shows itself at rest, takes its next turn or parks only once the last one is stored.
    pub(super) settling: u32,
    /// Readers of the row waiting for the last result to be stored, so that what they read
    /// is whole: the turn counted and the session at rest together.
    pub(super) settled: Vec<tokio::sync::oneshot::Sender<()>>,
    pub(super) supervision: super::supervision::Supervision,
    /// The watchdog found the turn stalled and is ending the CLI.
    pub(super) stalled: bool,
    /// Where this CLI's part of the session's stream began (see kept.rs).
    pub(super) since_seq: u64,
    /// This actor attached again to a CLI its keeper kept through a restart.
    pub(super) reattached: bool,
    /// Since when its cgroup is frozen (see pause.rs).
    pub(super) paused_since: Option<std::time::Instant>,
    /// What its CLI uses, read from its cgroups (see resources.rs).
    pub(super) resources: super::resources::Watch,
}

impl Chat {
    /// The status a refused request names: `closing` once the end has begun.
    pub(super) fn status_word(&self, cli_live: bool) -> String {
        if !cli_live && self.row.status.is_live() {
            "closing".to_string()
        } else {
            self.row.status.to_string()
        }
    }

    /// Waits for the final row.
    pub(super) fn await_end(&mut self) -> oneshot::Receiver<Session> {
        let (tx, rx) = oneshot::channel();
        self.closers.push(tx);
        rx
    }

    /// The final row, from how the process ended.
    fn conclude(&mut self, end: &ProcessEnd<ClosedReason>) {
        let now = time::now();
        // A session parked at a limit when the service stops stays parked: the next start
        // brings it back, waits out the reset and delivers its turns.
        let stays_parked = self.row.status == SessionStatus::WaitingForLimit
            && end.asked == Some(ClosedReason::Shutdown)
            && end.survivors.is_empty();
        if !end.survivors.is_empty() {
            self.row.status = SessionStatus::Error;
            self.row.error_message = Some(format!("could not end processes {:?} of this session", end.survivors));
            self.row.closed_reason = Some(end.asked.unwrap_or(ClosedReason::CliExited));
        } else if end.asked == Some(ClosedReason::NodeLost) {
            // Fenced: written as the leader writes a lost node's sessions (an error, resumable).
            self.row.status = SessionStatus::Error;
            self.row.error_message = Some("this node lost its cluster lease".to_string());
            self.row.closed_at = Some(now.clone());
            self.row.closed_reason = Some(ClosedReason::NodeLost);
        } else if end.keeper_lost && end.asked.is_none() {
            // Its keeper was killed, and its guardian ended the CLI's tree: resumable.
            self.row.status = SessionStatus::Error;
            self.row.error_message = Some(end.with_stderr("its keeper was killed; the CLI ended with it".to_string()));
            self.row.closed_at = Some(now.clone());
            self.row.closed_reason = Some(ClosedReason::Crashed);
        } else if let (Some(asked), None) = (end.asked, &end.failure) {
            self.row.status = SessionStatus::Closed;
            self.row.closed_at = Some(now.clone());
            self.row.closed_reason = Some(asked);
        } else if self.resources.killed_cli(end) {
            // The session went over its memory limit and the kernel chose the CLI itself.
            self.row.status = SessionStatus::Error;
            self.row.error_message = Some(
                end.with_stderr(
                    "the kernel's OOM killer ended the CLI: the session went over its memory limit (memory_max_mb)"
                        .to_string(),
                ),
            );
            self.row.closed_at = Some(now.clone());
            self.row.closed_reason = Some(ClosedReason::OutOfMemory);
        } else {
            self.row.status = SessionStatus::Error;
            let mut reason = end.failure.clone().unwrap_or_else(|| format!("the CLI {}", end.exit.how));
            if self.resumed && end.ran_for < RESUME_GRACE {
                reason = format!("the CLI exited within {RESUME_GRACE:?} of resuming: {reason}");
            }
            self.row.error_message = Some(end.with_stderr(reason));
            self.row.closed_at = Some(now.clone());
            self.row.closed_reason = Some(ClosedReason::CliExited);
        }
        self.row.last_active_at = now;
        // Otherwise an ended session waits for nothing (a wake-up still scheduled finds it ended).
        if !stays_parked {
            self.row.resumes_at = None;
            self.row.status_reason = None;
        }
        self.turn_running = false;
        self.background_tasks.clear();
    }
}

/// Starts the next queued turn when the CLI is ready for one. Its stored row records when the
/// transport actually wrote it (`delivered_at`).
pub(super) fn pump(p: &mut CliSession) {
    if p.conv.turn_running || p.conv.settling > 0 || !p.cli.is_ready() || p.conv.row.status != SessionStatus::Idle {
        return;
    }
    let Some(message_id) = p.conv.queue.front().and_then(|t| t.message_id) else { return };
    // Within its project's limit of running turns (the gate's grant calls this again).
    if !p.conv.has_slot() {
        return;
    }
    let line = match p.cli.user_turn(&p.conv.queue.front().map(|t| t.content.clone()).unwrap_or_default()) {
        Ok(line) => line,
        Err(e) => {
            // The turn stays queued: the agent is not in a state to take it yet.
            tracing::warn!(session = %p.conv.row.id, error = %e, "could not start a turn");
            return;
        }
    };
    let Some(turn) = p.conv.queue.pop_front() else { return };
    let (written, heard) = oneshot::channel();
    match p.cli.write(OutLine { line, written: Some(written), unpin: None }) {
        Ok(()) => {
            super::limits::delivered(&mut p.conv, turn);
            p.conv.turn_running = true;
            p.conv.set_status(SessionStatus::Active);
            super::kept::save(p);
            let writer = p.conv.writer.clone();
            actix::spawn(async move {
                if heard.await.is_ok() {
                    writer.persist(WriteOp::Delivered { message_id, at: Some(time::now()) });
                }
            });
        }
        Err(e) => tracing::warn!(session = %p.conv.row.id, error = %e, "could not start a turn"),
    }
}

impl Conversation for Chat {
    type Asked = ClosedReason;

    fn scope(&self) -> (Option<ProjectId>, Option<SessionId>) {
        (Some(self.row.project_id.clone()), Some(self.row.id.clone()))
    }

    fn started(p: &mut CliSession, ctx: &mut Ctx<Self>) {
        p.conv.me = Some(ctx.address().recipient());
        super::supervision::watch(p, ctx);
        super::resources::watch(p, ctx);
        // The first event of this process on the session's stream: a new session, or the
        // resumed (or reattached) one starting again.
        if p.conv.resumed || p.conv.reattached {
            p.conv.publish_row("session.status", "session_status");
        } else {
            p.conv.publish_row("session.created", "session_created");
        }
    }

    fn ready(p: &mut CliSession, ctx: &mut Ctx<Self>) {
        super::kept::save(p);
        // Revived after a restart while parked at a limit: it waits out the same reset.
        if p.conv.row.status == SessionStatus::Starting && p.conv.row.resumes_at.is_some() {
            super::limits::reparked(p, ctx);
            return;
        }
        p.conv.set_status(SessionStatus::Idle);
        pump(p);
    }

    fn on_line(p: &mut CliSession, line: String, msg: Incoming, normalized: Vec<AgentEvent>, ctx: &mut Ctx<Self>) {
        let cli_seq = p.cli.line_seq();
        let chat = &mut p.conv;
        // Control traffic is protocol plumbing (decisions are published as their own events).
        let Said { kept, relayed, secrets } = chat.redacted_once(line, scrub_any);
        let relayed = events::for_line(&msg.message_type, msg.message_subtype.as_deref())
            .map(|(kind, name)| chat.publish_numbered(kind, &name, relayed, secrets));
        chat.record("from_cli", &msg.message_type, msg.message_subtype, kept, (relayed, cli_seq));
        // Then what it says, in the vocabulary every agent shares.
        for event in normalized {
            let (kind, name) = event.names();
            let data = event.data(&chat.row.agent);
            chat.publish(kind, name, data);
        }
        match msg.kind {
            Kind::SystemInit { session_id, model, permission_mode } => {
                let mut patch = SessionPatch::default();
                if session_id.is_some() && session_id != chat.row.session_id {
                    chat.row.session_id = session_id.clone();
                    patch.session_id = session_id;
                }
                if model.is_some() && model != chat.row.model {
                    chat.row.model = model.clone();
                    patch.model = model;
                }
                if permission_mode.is_some() && permission_mode != chat.row.permission_mode {
                    chat.row.permission_mode = permission_mode.clone();
                    patch.permission_mode = permission_mode;
                }
                chat.patch(patch);
            }
            Kind::SystemStatus { status, permission_mode } => {
                if let Some(mode) = permission_mode.filter(|m| Some(m) != chat.row.permission_mode.as_ref()) {
                    chat.row.permission_mode = Some(mode.clone());
                    chat.patch(SessionPatch { permission_mode: Some(mode), ..Default::default() });
                }
                match status.as_deref() {
                    Some("compacting") => chat.set_status(SessionStatus::Compacting),
                    _ if chat.row.status == SessionStatus::Compacting => {
                        let back = if chat.turn_running { SessionStatus::Active } else { SessionStatus::Idle };
                        chat.set_status(back)
                    }
                    _ => {}
                }
            }
            Kind::RateLimit(info) => chat.limit_reported(info),
            Kind::Result(result) => super::turn_end::ended(p, result, ctx),
            Kind::TaskStarted { task_id: Some(id) } => {
                chat.background_tasks.insert(id);
            }
            Kind::TaskNotification { task_id: Some(id), finished: true } => {
                chat.background_tasks.remove(&id);
            }
            Kind::TaskStarted { task_id: None } | Kind::TaskNotification { task_id: None, .. } => {
                tracing::debug!(session = %chat.row.id, "a background task message without a task id");
            }
            Kind::Invalid { error } => {
                tracing::warn!(session = %chat.row.id, %error, "the CLI wrote a line that is not a JSON object");
            }
            // Requests and answers are the supervisor's.
            Kind::TaskNotification { finished: false, .. }
            | Kind::ControlRequest { .. }
            | Kind::ControlResponse { .. }
            | Kind::ControlCancel { .. }
            | Kind::Other => {}
        }
    }

    fn reattached(p: &mut CliSession, ctx: &mut Ctx<Self>) {
        Chat::reattached(p, ctx);
    }

    fn on_stderr(p: &mut CliSession, line: String) {
        let cli_seq = p.cli.line_seq();
        p.conv.record("from_cli", "stderr", None, line, (None, cli_seq));
    }

    fn on_oversized(p: &mut CliSession, len: usize) {
        let note = serde_json::json!({
            "conduit_error": format!("a line of {len} bytes exceeded the {MAX_LINE_BYTES}-byte cap and was dropped")
        });
        let cli_seq = p.cli.line_seq();
        p.conv.record("from_cli", "invalid", None, note.to_string(), (None, cli_seq));
    }

    fn sent(p: &mut CliSession, line: &str, kind: &'static str, subtype: Option<String>) {
        p.conv.record("to_cli", kind, subtype, line.to_string(), (None, None));
    }

    fn decided(p: &mut CliSession, verdict: &Verdict) {
        if let Some(data) = verdict.event.clone() {
            p.conv.publish("permission.decision", "permission", data);
        }
    }

    fn ended(p: &mut CliSession, end: ProcessEnd<ClosedReason>) -> Step<Self> {
        p.conv.give_slot();
        p.conv.conclude(&end);
        // An OOM kill at the very end (the CLI's own, or a tool's) is told like any other.
        if let Some(count) = end.oom_kills {
            p.conv.tell_oom_kills(count);
        }
        let row = &p.conv.row;
        let patch = SessionPatch {
            status: Some(row.status),
            error_message: Some(row.error_message.clone()),
            closed_at: Some(row.closed_at.clone()),
            closed_reason: Some(row.closed_reason),
            last_active_at: Some(row.last_active_at.clone()),
            resumes_at: Some(row.resumes_at.clone()),
            status_reason: Some(row.status_reason.clone()),
            parked_from_seq: if row.resumes_at.is_some() { None } else { Some(None) },
            // Ended: no keeper to look for after a restart.
            keeper_state: Some(None),
            ..Default::default()
        };
        let (id, writer) = (row.id.clone(), p.conv.writer.clone());
        let stored = async move { writer.persist_acked(WriteOp::Session { id, patch }).await };
        Box::pin(stored.into_actor(p).map(|stored, act, _ctx| {
            let chat = &mut act.conv;
            if let Err(e) = stored {
                tracing::error!(session = %chat.row.id, error = %e, "could not store the final session state");
            }
            if chat.row.status == SessionStatus::Error {
                let data = serde_json::json!({"message": chat.row.error_message}).to_string();
                chat.publish("session.error", "error", data);
            }
            chat.publish_row("session.closed", "session_closed");
        }))
    }

    fn closed_reason(&self) -> Option<ClosedReason> {
        self.row.closed_reason
    }

    fn released(p: &mut CliSession) {
        for closer in p.conv.closers.drain(..) {
            let _ = closer.send(p.conv.row.clone());
        }
    }
}
