//! A session at a usage limit: it parks (`waiting_for_limit` until `resumes_at`), keeps every
//! turn (the one the limit stopped goes back to the front of the queue, messages sent
//! meanwhile are accepted and queued behind it), and at the reset plus a little jitter it
//! delivers them again in order, by itself. The CLI stays up meanwhile: it takes the next turn
//! once the limit has passed.

use actix::prelude::*;
use chrono::Utc;

use super::chat::pump;
use super::{CliSession, QueuedTurn};
pub use crate::actors::limits::LimitPolicy;
use crate::actors::limits::{limit_reason, LimitSeen, LimitStatus};
use crate::db::sessions::SessionPatch;
use crate::db::writer::WriteOp;
use crate::domain::session::SessionStatus;
use crate::domain::time;
use crate::domain::usage::stamp;
use crate::protocol::incoming::{LimitHit, LimitInfo};
use crate::supervisor::conversation::Ctx;

use super::Chat;

impl Chat {
    /// The CLI's latest limit state (a `rate_limit_event`): kept for the result that may
    /// follow, and told to the board.
    pub(super) fn limit_reported(&mut self, info: LimitInfo) {
        self.limits.board.do_send(LimitSeen {
            agent: self.row.agent.clone(),
            status: LimitStatus::from_cli(&info.status),
            resets_at: info.resets_at.and_then(|s| chrono::DateTime::from_timestamp(s, 0)),
            limit_type: info.limit_type.clone(),
            utilization: info.utilization,
            message: None,
            session_id: Some(self.row.id.to_string()),
        });
        self.limit_info = Some(info);
    }

    /// A turn ended on a limit: the row waits until the reset, and the turn goes back to the
    /// front of the queue. Called before the result's row change is stored, so it is stored
    /// with it.
    pub(super) fn park(&mut self, hit: &LimitHit, patch: &mut SessionPatch) {
        let resumes_at = self.limits.resumes_at(hit, Utc::now());
        let reason = limit_reason(hit);
        if let Some(turn) = self.in_flight.take() {
            // Not taken by the model: it waits again (and says so when read).
            if let Some(message_id) = turn.message_id {
                self.writer.persist(WriteOp::Delivered { message_id, at: None });
            }
            self.queue.push_front(turn);
        }
        // Every user turn from here on is still to deliver, also by a new process after a
        // restart; with none queued, the next one sent.
        let from = self.queue.front().map_or(self.seq + 1, |t| t.event_seq);
        patch.parked_from_seq = Some(Some(from as i64));
        self.row.status = SessionStatus::WaitingForLimit;
        self.row.resumes_at = Some(stamp(&resumes_at));
        self.row.status_reason = Some(reason);
        patch.status = Some(self.row.status);
        patch.resumes_at = Some(self.row.resumes_at.clone());
        patch.status_reason = Some(self.row.status_reason.clone());
        self.hold_generation += 1;
    }

    /// What the limit events carry.
    fn limit_event(&self, hit: Option<&LimitHit>) -> String {
        serde_json::json!({
            "session_id": self.row.id,
            "project_id": self.row.project_id,
            "agent": self.row.agent,
            "status": self.row.status,
            "resumes_at": self.row.resumes_at,
            "resets_at": hit.and_then(|h| h.resets_at).as_ref().map(stamp),
            "limit_type": hit.and_then(|h| h.limit_type.clone()),
            "kind": hit.map(|h| h.kind.as_str()),
            "message": hit.map(|h| h.message.clone()),
            "queued_turns": self.queue.len(),
        })
        .to_string()
    }
}

/// A session revived after a restart while it was parked: it waits again, until the same
/// `resumes_at`, with the turns it took over.
pub(super) fn reparked(p: &mut CliSession, ctx: &mut Ctx<Chat>) {
    p.conv.hold_generation += 1;
    p.conv.set_status(SessionStatus::WaitingForLimit);
    wake_at_reset(p, ctx);
}

/// After the parked row is stored and shown: the event, the board, and the wake-up.
pub(super) fn parked(p: &mut CliSession, hit: LimitHit, ctx: &mut Ctx<Chat>) {
    let chat = &mut p.conv;
    let data = chat.limit_event(Some(&hit));
    chat.publish("usage.limit_reached", "limit_reached", data);
    chat.limits.board.do_send(LimitSeen {
        agent: chat.row.agent.clone(),
        status: LimitStatus::Limited,
        resets_at: hit.resets_at,
        limit_type: hit.limit_type.clone(),
        utilization: None,
        message: Some(hit.message.clone()),
        session_id: Some(chat.row.id.to_string()),
    });
    wake_at_reset(p, ctx);
}

/// Lifts the wait at `resumes_at`.
fn wake_at_reset(p: &mut CliSession, ctx: &mut Ctx<Chat>) {
    let chat = &mut p.conv;
    let at = chat.row.resumes_at.as_deref().and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok());
    let wait = at.map(|t| (t.with_timezone(&Utc) - Utc::now()).to_std().unwrap_or_default()).unwrap_or_default();
    let generation = chat.hold_generation;
    tracing::info!(session = %chat.row.id, resumes_at = ?chat.row.resumes_at, queued = chat.queue.len(), "waiting for a limit");
    ctx.run_later(wait, move |act, _ctx| lift(act, generation));
}

/// The wait is over: idle again, and the queued turns go, oldest first.
fn lift(p: &mut CliSession, generation: u64) {
    let chat = &mut p.conv;
    if chat.hold_generation != generation || chat.row.status != SessionStatus::WaitingForLimit {
        return;
    }
    chat.row.status = chat.at_rest();
    chat.row.resumes_at = None;
    chat.row.status_reason = chat.rest_reason();
    chat.row.last_active_at = time::now();
    chat.patch(SessionPatch {
        status: Some(chat.row.status),
        resumes_at: Some(None),
        parked_from_seq: Some(None),
        status_reason: Some(chat.row.status_reason.clone()),
        last_active_at: Some(chat.row.last_active_at.clone()),
        ..Default::default()
    });
    let data = chat.limit_event(None);
    chat.publish("usage.limit_reset", "limit_reset", data);
    chat.publish_row("session.status", "session_status");
    tracing::info!(session = %chat.row.id, queued = chat.queue.len(), "the limit's wait is over");
    pump(p);
}

/// Keeps the turn being delivered, for a limit that sends it back.
pub(super) fn delivered(chat: &mut Chat, turn: QueuedTurn) {
    chat.in_flight = Some(turn);
}
