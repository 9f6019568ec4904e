//! A session's side of the work-in-progress limit ([`TurnGate`](crate::actors::turn_gate)):
//! before each turn it asks the gate for a slot, and gives it back when the turn ends, it
//! parks or it ends. While its project is at its cap the turn waits in the gate's line (a
//! `session.turn_waiting` event says where), and starts when granted.

use actix::prelude::*;

use super::chat::pump;
use super::{Chat, CliSession};
use crate::actors::turn_gate::{Slot, SlotAnswer};

/// Where a session stands with the gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SlotState {
    /// It neither holds nor waits for a slot.
    #[default]
    Free,
    /// It asked, and waits for the answer.
    Asked,
    /// It may run a turn (or runs one).
    Held,
}

impl Chat {
    /// Whether a turn may start now. Without a slot it asks for one (once) and answers no: the
    /// grant starts the turn.
    pub(super) fn has_slot(&mut self) -> bool {
        match self.slot {
            SlotState::Held => true,
            SlotState::Asked => false,
            SlotState::Free => {
                let Some(me) = self.me.clone() else { return false };
                self.slot = SlotState::Asked;
                self.gate.do_send(Slot::Ask {
                    project: self.row.project_id.clone(),
                    session: self.row.id.clone(),
                    granted: me,
                });
                false
            }
        }
    }

    /// Gives the slot (or the place in line) back, when it has one.
    pub(super) fn give_slot(&mut self) {
        if self.slot != SlotState::Free {
            self.slot = SlotState::Free;
            self.gate.do_send(Slot::Give { project: self.row.project_id.clone(), session: self.row.id.clone() });
        }
    }
}

impl Handler<SlotAnswer> for CliSession {
    type Result = ();

    fn handle(&mut self, msg: SlotAnswer, _ctx: &mut Self::Context) {
        match msg {
            SlotAnswer::Granted if self.conv.slot == SlotState::Asked => {
                self.conv.slot = SlotState::Held;
                pump(self);
                // Nothing to run any more (it parked, or a hold came meanwhile): the next one's.
                if !self.conv.turn_running {
                    self.conv.give_slot();
                }
            }
            // Given back before the grant arrived: the gate has already taken it back.
            SlotAnswer::Granted => {}
            SlotAnswer::Waiting { position } => {
                let data = serde_json::json!({
                    "session_id": self.conv.row.id,
                    "project_id": self.conv.row.project_id,
                    "position": position,
                    "queued_turns": self.conv.queue.len(),
                })
                .to_string();
                tracing::info!(session = %self.conv.row.id, position, "a turn waits for its project's limit of running turns");
                self.conv.publish("session.turn_waiting", "turn_waiting", data);
            }
        }
    }
}
