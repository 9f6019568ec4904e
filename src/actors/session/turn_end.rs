//! The end of a turn: the result's totals and cost (stored in one transaction with its
//! ledger row), whether a budget ran out or a limit stopped it, then the next turn.

use actix::prelude::*;

use super::chat::pump;
use super::{Chat, CliSession};
use crate::actors::budgets::TurnCost;
use crate::db::sessions::SessionPatch;
use crate::db::usage::NewUsage;
use crate::db::writer::WriteOp;
use crate::domain::session::SessionStatus;
use crate::domain::time;
use crate::protocol::incoming::{limit_of, LimitHit, TurnResult};
use crate::supervisor::conversation::Ctx;

/// How long a session waits for its turn's result to be stored before it goes on.
const RESULT_STORE_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

impl Chat {
    /// The row after a turn's result, and the change to store with what the turn cost.
    fn on_result(&mut self, r: TurnResult, live: bool, hit: Option<&LimitHit>) -> (SessionPatch, NewUsage) {
        let now = time::now();
        let before = (self.row.total_cost_usd, self.row.total_input_tokens, self.row.total_output_tokens);
        self.cap_reported |= r.subtype.as_deref() == Some("error_max_budget_usd");
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
        if live {
            self.row.status = self.at_rest();
            self.row.status_reason = self.budget_hold.clone();
        }
        // What this turn cost is what it added to the totals. The CLI's figures are cumulative
        // per process, so the difference is right across resumes; a figure that went down
        // (a CLI that restarted its count) adds nothing rather than a negative cost.
        let usage = NewUsage {
            recorded_at: now.clone(),
            project_id: Some(self.row.project_id.to_string()),
            session_id: Some(self.row.id.to_string()),
            execution_id: None,
            agent_id: None,
            agent: self.row.agent.to_string(),
            model: self.row.model.clone(),
            cost_usd: (self.row.total_cost_usd - before.0).max(0.0),
            input_tokens: (self.row.total_input_tokens - before.1).max(0),
            output_tokens: (self.row.total_output_tokens - before.2).max(0),
        };
        let mut patch = SessionPatch {
            status: Some(self.row.status),
            total_cost_usd: Some(self.row.total_cost_usd),
            total_input_tokens: Some(self.row.total_input_tokens),
            total_output_tokens: Some(self.row.total_output_tokens),
            num_turns: Some(self.row.num_turns),
            last_active_at: Some(now),
            status_reason: Some(self.row.status_reason.clone()),
            ..Default::default()
        };
        match hit {
            Some(hit) if live => self.park(hit, &mut patch),
            _ => self.in_flight = None,
        }
        (patch, usage)
    }
}

/// A `result` line: the turn is over.
pub(super) fn ended(p: &mut CliSession, result: TurnResult, ctx: &mut Ctx<Chat>) {
    let live = p.cli.is_live();
    let hit = limit_of(&result, p.conv.limit_info.as_ref());
    let (patch, usage) = p.conv.on_result(result, live, hit.as_ref());
    // A turn's count and totals are stored before anyone can see the session idle
    // again (the actor waits: nothing is read, answered or sent meanwhile), so a
    // crash right after a turn never loses it. One write per turn. While storage
    // fails the wait is bounded: the write stays queued, the session goes on.
    let (writer, id) = (p.conv.writer.clone(), p.conv.row.id.clone());
    let (keeper, project_id) = (p.conv.budgets.keeper.clone(), Some(p.conv.row.project_id.clone()));
    let cost_usd = usage.cost_usd;
    let stored = async move {
        let acked = writer.persist_acked(WriteOp::TurnResult { id, patch, usage });
        let stored = tokio::time::timeout(RESULT_STORE_WAIT, acked).await;
        // Whether a budget ran out with this turn, before anyone sees the session
        // at rest (so the next message meets the 402, not a race).
        let asked = tokio::time::timeout(RESULT_STORE_WAIT, keeper.send(TurnCost { project_id, cost_usd })).await;
        (stored, asked.ok().and_then(Result::ok).flatten())
    };
    ctx.wait(stored.into_actor(p).map(move |(stored, spent), act, ctx| {
        match stored {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::error!(session = %act.conv.row.id, error = %e, "could not store a turn's result"),
            Err(_) => tracing::warn!(session = %act.conv.row.id, "a turn's result is not stored yet; it stays queued"),
        }
        if !act.conv.set_hold(spent.map(|e| e.message())) {
            act.conv.publish_row("session.status", "session_status");
        }
        // The turn is over: its slot goes to the next in line (this session's next turn asks
        // again, behind those already waiting).
        act.conv.give_slot();
        match hit {
            Some(hit) if act.conv.row.status == SessionStatus::WaitingForLimit => super::limits::parked(act, hit, ctx),
            _ => pump(act),
        }
    }));
}
