//! A session held by a spent budget: `paused` with the budget's words as `status_reason`.
//! Turns already queued wait; new ones are refused before they reach the session (402), and
//! by the session itself once its own cap (`max_budget_usd`) is spent. A turn running when a
//! budget runs out finishes, or is interrupted when the `budget_running_turn` setting says
//! so. Released, the session is idle again and its queue goes on.

use actix::prelude::*;

use super::chat::pump;
use super::{CliSession, Hold};
use crate::actors::budgets::TurnCost;
use crate::db::sessions::SessionPatch;
use crate::domain::budget::{Budget, Exhaustion};
use crate::domain::session::SessionStatus;
use crate::domain::time;
use crate::supervisor::adapter::Command;

/// How a session takes part in budgets.
#[derive(Clone)]
pub struct BudgetLink {
    pub keeper: Recipient<TurnCost>,
    /// Interrupt a running turn when a budget runs out (else it finishes).
    pub interrupts: bool,
    /// What tokens cost, for CLIs that report no cost.
    pub prices: std::sync::Arc<crate::domain::prices::PriceTable>,
}

impl super::Chat {
    /// The status a session at rest shows: paused while held, else idle.
    pub(super) fn at_rest(&self) -> SessionStatus {
        if self.budget_hold.is_some() || self.paused_since.is_some() {
            SessionStatus::Paused
        } else {
            SessionStatus::Idle
        }
    }

    /// Why it rests as it does: paused on request, or the budget that holds it.
    pub(super) fn rest_reason(&self) -> Option<String> {
        match self.paused_since {
            Some(_) => Some(super::pause::PAUSED_REASON.to_string()),
            None => self.budget_hold.clone(),
        }
    }

    /// The session's own cap, once its cost has reached it.
    pub(super) fn own_cap_spent(&self) -> Option<Exhaustion> {
        let cap = self.row.max_budget_usd?;
        (self.row.total_cost_usd >= cap || self.cap_reported).then(|| Exhaustion {
            budget: Budget::Session,
            project_id: Some(self.row.project_id.to_string()),
            limit_usd: cap,
            spent_usd: self.row.total_cost_usd,
            resets_at: None,
        })
    }

    /// Holds or releases; shows it when the session is at rest.
    pub(super) fn set_hold(&mut self, hold: Option<String>) -> bool {
        // A spent cap of its own keeps the session held whatever the budgets above say.
        let hold = hold.or_else(|| self.own_cap_spent().map(|e| e.message()));
        if self.budget_hold == hold {
            return false;
        }
        self.budget_hold = hold;
        let resting = matches!(self.row.status, SessionStatus::Idle | SessionStatus::Paused);
        if resting {
            self.row.status = self.at_rest();
            self.row.status_reason = self.rest_reason();
            self.row.last_active_at = time::now();
            self.patch(SessionPatch {
                status: Some(self.row.status),
                status_reason: Some(self.row.status_reason.clone()),
                last_active_at: Some(self.row.last_active_at.clone()),
                ..Default::default()
            });
            self.publish_row("session.status", "session_status");
        }
        resting
    }
}

impl Handler<Hold> for CliSession {
    type Result = ();

    fn handle(&mut self, msg: Hold, ctx: &mut Self::Context) {
        let holding = msg.0.is_some();
        self.conv.set_hold(msg.0);
        if holding && self.conv.turn_running && self.conv.budgets.interrupts && self.cli.is_ready() {
            tracing::warn!(session = %self.conv.row.id, "a budget ran out: interrupting the running turn");
            drop(self.command(Command::Interrupt, ctx));
        }
        if !holding {
            pump(self);
        }
    }
}
