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
pub(super) const RESULT_STORE_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

impl Chat {
    /// The row after a turn's result, and the change to store with what the turn cost.
    fn on_result(&mut self, r: TurnResult, live: bool, hit: Option<&LimitHit>) -> (SessionPatch, NewUsage) {
        let now = time::now();
        let before = (self.row.total_cost_usd, self.row.total_input_tokens, self.row.total_output_tokens);
        self.cap_reported |= r.subtype.as_deref() == Some("error_max_budget_usd");
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
        match r.total_cost_usd {
            Some(cost) => self.row.total_cost_usd = self.base.cost + cost,
            // A CLI that reports no cost: the turn's tokens at its model's price, if it has one.
            None => {
                if let Some(price) = self.budgets.prices.of(self.row.model.as_deref()) {
                    let (input, output) =
                        (self.row.total_input_tokens - before.1, self.row.total_output_tokens - before.2);
                    self.row.total_cost_usd += price.cost(input, output);
                }
            }
        }
        // A result no turn asked for that is an error (a refused `--resume` reports one before
        // exiting) is kept and totals follow it, but it is not a turn.
        if self.turn_running || !r.is_error {
            self.row.num_turns += 1;
        }
        self.row.last_active_at = now.clone();
        self.turn_running = false;
        // Stored with the result, but shown only once it is stored (see `settle`).
        let (status, status_reason) =
            if live { (self.at_rest(), self.rest_reason()) } else { (self.row.status, self.row.status_reason.clone()) };
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
            status: Some(status),
            total_cost_usd: Some(self.row.total_cost_usd),
            total_input_tokens: Some(self.row.total_input_tokens),
            total_output_tokens: Some(self.row.total_output_tokens),
            num_turns: Some(self.row.num_turns),
            last_active_at: Some(now),
            status_reason: Some(status_reason),
            ..Default::default()
        };
        match hit {
            Some(hit) if live => self.park(hit, &mut patch),
            _ => self.in_flight = None,
        }
        (patch, usage)
    }
}

type Rest = (Option<SessionStatus>, Option<String>);

/// A `result` line: the turn is over. Its count and totals are stored before anyone can see
/// the session at rest again, so a crash right after a turn never loses it; one write per
/// turn. Meanwhile the session reads on (the writer keeps the order of what follows), but it
/// takes no turn and shows no status until the result is stored and the budget keeper has
/// answered (so the next message meets a spent budget's 402, not a race). While storage fails
/// the wait is bounded: the write stays queued, the session goes on.
pub(super) fn ended(p: &mut CliSession, result: TurnResult, ctx: &mut Ctx<Chat>) {
    let live = p.cli.is_live();
    let hit = limit_of(&result, p.conv.limit_info.as_ref());
    let (patch, usage) = p.conv.on_result(result, live, hit.as_ref());
    let rest = (patch.status, patch.status_reason.clone().flatten());
    let (writer, id) = (p.conv.writer.clone(), p.conv.row.id.clone());
    let (keeper, project_id) = (p.conv.budgets.keeper.clone(), Some(p.conv.row.project_id.clone()));
    let cost_usd = usage.cost_usd;
    let stored = async move {
        let acked = writer.persist_acked(WriteOp::TurnResult { id, patch, usage });
        let stored = tokio::time::timeout(RESULT_STORE_WAIT, acked).await;
        let asked = tokio::time::timeout(RESULT_STORE_WAIT, keeper.send(TurnCost { project_id, cost_usd })).await;
        (stored, asked.ok().and_then(Result::ok).flatten())
    };
    p.conv.settling += 1;
    super::kept::save(p);
    ctx.spawn(stored.into_actor(p).map(move |(stored, spent), act, ctx| {
        match stored {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::error!(session = %act.conv.row.id, error = %e, "could not store a turn's result"),
            Err(_) => tracing::warn!(session = %act.conv.row.id, "a turn's result is not stored yet; it stays queued"),
        }
        act.conv.settling -= 1;
        act.conv.set_hold(spent.map(|e| e.message()));
        // A later result still on its way settles the session.
        if act.conv.settling == 0 {
            settle(act, hit, rest, ctx);
        }
    }));
}

/// The last result is stored: the session shows itself at rest (or parks at a limit), and its
/// slot goes to the next in line (this session's next turn asks again, behind those already
/// waiting). `stored`: the status and reason stored with the result.
fn settle(act: &mut CliSession, hit: Option<LimitHit>, stored: Rest, ctx: &mut Ctx<Chat>) {
    let chat = &mut act.conv;
    let at_work = matches!(chat.row.status, SessionStatus::Active | SessionStatus::Idle | SessionStatus::Paused);
    if act.cli.is_live() && at_work && !chat.turn_running {
        let (status, reason) = (chat.at_rest(), chat.rest_reason());
        chat.row.status = status;
        chat.row.status_reason = reason.clone();
        // What was stored with the result, unless a hold changed it since.
        if stored != (Some(status), reason) {
            chat.patch(SessionPatch {
                status: Some(status),
                status_reason: Some(chat.row.status_reason.clone()),
                ..Default::default()
            });
        }
    }
    chat.publish_row("session.status", "session_status");
    for reader in chat.settled.drain(..) {
        let _ = reader.send(());
    }
    chat.give_slot();
    match hit {
        Some(hit) if chat.row.status == SessionStatus::WaitingForLimit => super::limits::parked(act, hit, ctx),
        _ => pump(act),
    }
}
