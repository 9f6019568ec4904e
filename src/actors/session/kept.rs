//! A session whose CLI a keeper holds (see [`crate::keeper`]): what it stores to go on after a
//! restart of the service, how it lets go of its CLI when the service stops ([`Detach`]), and
//! how it picks up again when the next service attaches ([`Chat::reattached`]).
//!
//! What is stored (the session row's `keeper_state`) is the adapter's protocol state (thread,
//! turn, counters), where this CLI's part of the stream began, and the background tasks still
//! running. It is stored after the handshake, as each turn starts and ends, and at the detach;
//! lines are numbered by the keeper and stored with their number, so the next service asks for
//! exactly the lines it does not have.

use actix::prelude::*;
use serde::{Deserialize, Serialize};

use super::chat::pump;
use super::{Chat, CliSession};
use crate::db::sessions::SessionPatch;
use crate::db::writer::WriteOp;
use crate::domain::session::SessionStatus;
use crate::supervisor::conversation::Ctx;

/// What a kept session stores to go on after a restart.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct KeptState {
    /// The adapter's protocol state ([`crate::supervisor::adapter::AgentAdapter::snapshot`]).
    #[serde(default)]
    pub adapter: serde_json::Value,
    /// The stream number this CLI's part of the session began after: user turns from here on
    /// not yet delivered are its to deliver.
    #[serde(default)]
    pub since_seq: u64,
    #[serde(default)]
    pub background_tasks: Vec<String>,
    /// Its cgroup is frozen (paused on request).
    #[serde(default)]
    pub paused: bool,
    /// The session's totals when this CLI started (cost, input and output tokens): the CLI's
    /// figures are cumulative for its process, and are added to these.
    #[serde(default)]
    pub base: Option<(f64, i64, i64)>,
    /// A turn was running (the status says so too, but not when the session is paused).
    #[serde(default)]
    pub turn_running: Option<bool>,
}

impl KeptState {
    pub fn read(stored: Option<&str>) -> KeptState {
        stored.and_then(|text| serde_json::from_str(text).ok()).unwrap_or_default()
    }
}

/// Let go of the CLI, which runs on under its keeper: answers `true` once what the session
/// must keep is stored; `false` (nothing done) when no keeper holds it or it is not at a point
/// it can be left at (starting, ending): the caller closes it instead.
#[derive(Message)]
#[rtype(result = "bool")]
pub struct Detach;

/// Stores what the session needs to go on after a restart (when a keeper holds its CLI).
pub(super) fn save(p: &CliSession) {
    if let Some(text) = state_of(p) {
        p.conv.writer.persist(WriteOp::Session {
            id: p.conv.row.id.clone(),
            patch: SessionPatch { keeper_state: Some(Some(text)), ..Default::default() },
        });
    }
}

fn state_of(p: &CliSession) -> Option<String> {
    if !p.cli.is_kept() {
        return None;
    }
    let mut background_tasks: Vec<String> = p.conv.background_tasks.iter().cloned().collect();
    background_tasks.sort();
    let state = KeptState {
        adapter: p.cli.adapter_state(),
        since_seq: p.conv.since_seq,
        background_tasks,
        paused: p.conv.paused_since.is_some(),
        base: Some((p.conv.base.cost, p.conv.base.input, p.conv.base.output)),
        turn_running: Some(p.conv.turn_running),
    };
    serde_json::to_string(&state).ok()
}

impl Handler<Detach> for CliSession {
    type Result = ResponseActFuture<Self, bool>;

    fn handle(&mut self, _msg: Detach, _ctx: &mut Self::Context) -> Self::Result {
        let at_rest_or_working = self.cli.is_ready() && self.conv.row.status.is_live();
        if !self.cli.is_kept() || !at_rest_or_working || self.conv.row.status == SessionStatus::Starting {
            return Box::pin(actix::fut::ready(false));
        }
        let state = state_of(self);
        let Some(drained) = self.detach() else { return Box::pin(actix::fut::ready(false)) };
        self.conv.give_slot();
        let (id, writer) = (self.conv.row.id.clone(), self.conv.writer.clone());
        tracing::info!(session = %id, pid = self.cli.pid(), "leaving the session's CLI to its keeper");
        let stored = async move {
            drained.await;
            // The turns just written record their delivery in tasks woken by the write: let
            // them queue it before the last write below.
            tokio::task::yield_now().await;
            let patch = SessionPatch { keeper_state: Some(state), ..Default::default() };
            writer.persist_acked(WriteOp::Session { id, patch }).await
        };
        Box::pin(stored.into_actor(self).map(|stored, act, ctx| {
            match &stored {
                // Everything read is stored: the keeper may forget it (the next service then
                // reads nothing twice, not even to look for a request).
                Ok(()) => act.cli.acknowledge_stored(),
                Err(e) => {
                    tracing::error!(session = %act.conv.row.id, error = %e, "could not store the session before leaving it; its next service may repeat a few lines' effects")
                }
            }
            ctx.stop();
            true
        }))
    }
}

impl Chat {
    /// Attached again to a CLI its keeper kept: the session is where it was. A turn that was
    /// running goes on (its slot asked for again); queued turns go out once it is at rest.
    pub(super) fn reattached(p: &mut CliSession, ctx: &mut Ctx<Chat>) {
        let status = p.conv.row.status;
        // The stored status says whether a turn runs; a paused session's says `paused`, and
        // what it stored at the pause says.
        if p.conv.paused_since.is_none() {
            p.conv.turn_running = matches!(status, SessionStatus::Active | SessionStatus::Compacting);
        }
        tracing::info!(session = %p.conv.row.id, pid = p.cli.pid(), %status, queued = p.conv.queue.len(), "attached again to the session's CLI");
        match status {
            _ if p.conv.paused_since.is_some() => {}
            SessionStatus::WaitingForLimit => super::limits::reparked(p, ctx),
            _ if p.conv.turn_running => {
                // Held before the restart; the gate is new.
                let _ = p.conv.has_slot();
            }
            _ => pump(p),
        }
    }
}
