//! Pausing a session: its whole cgroup frozen (`cgroup.freeze`), so nothing it started runs
//! (the CLI, its tools, their children), until it is thawed. The keeper is outside the cgroup
//! and keeps the session's connection; a paused session shows `paused`, queues the messages
//! it gets, is never stalled by the watchdog, and the janitor leaves it alone for the idle
//! timeout (counted from the pause).

use std::time::Instant;

use actix::prelude::*;

use super::chat::pump;
use super::{CliSession, SessionError};
use crate::db::sessions::{Session, SessionPatch};
use crate::domain::session::SessionStatus;
use crate::domain::time;
use crate::process::cgroup::Cgroup;

/// What a paused session's `status_reason` says (a budget's hold says which budget instead).
pub const PAUSED_REASON: &str = "paused on request";

/// Freeze the session. Answers with its row, `paused`.
#[derive(Message, Debug, Clone, Copy)]
#[rtype(result = "Result<Session, SessionError>")]
pub struct Pause;

/// Thaw a paused session. Answers with its row, where it was before the pause.
#[derive(Message, Debug, Clone, Copy)]
#[rtype(result = "Result<Session, SessionError>")]
pub struct Unpause;

impl CliSession {
    fn freezer(&self) -> Result<Cgroup, SessionError> {
        self.cli.cgroup().cloned().ok_or_else(|| {
            SessionError::Unavailable(
                "pausing needs the session's own cgroup (cgroup v2 with cgroup.freeze), and this service contains its CLIs by process group only (see health's process_containment)".to_string(),
            )
        })
    }
}

impl Handler<Pause> for CliSession {
    type Result = ResponseActFuture<Self, Result<Session, SessionError>>;

    fn handle(&mut self, _msg: Pause, _ctx: &mut Self::Context) -> Self::Result {
        let refused = |e: SessionError| -> Self::Result { Box::pin(actix::fut::ready(Err(e))) };
        if !self.cli.is_ready() || !self.conv.row.status.is_live() || self.conv.row.status == SessionStatus::Starting {
            return refused(SessionError::NotLive(self.conv.status_word(self.cli.is_live())));
        }
        if self.conv.paused_since.is_some() {
            return refused(SessionError::Conflict("the session is paused already".to_string()));
        }
        let cgroup = match self.freezer() {
            Ok(cgroup) => cgroup,
            Err(e) => return refused(e),
        };
        let frozen = tokio::task::spawn_blocking(move || cgroup.freeze(true));
        Box::pin(frozen.into_actor(self).map(|frozen, act, _ctx| {
            frozen
                .map_err(|e| SessionError::Unavailable(format!("could not freeze the session: {e}")))?
                .map_err(|e| SessionError::Unavailable(format!("could not freeze the session's cgroup: {e}")))?;
            act.cli.touch();
            act.conv.paused_since = Some(Instant::now());
            act.conv.row.status_reason = Some(PAUSED_REASON.to_string());
            act.conv
                .patch(SessionPatch { status_reason: Some(act.conv.row.status_reason.clone()), ..Default::default() });
            act.conv.set_status(SessionStatus::Paused);
            super::kept::save(act);
            tracing::info!(session = %act.conv.row.id, "session paused");
            Ok(act.conv.row.clone())
        }))
    }
}

impl Handler<Unpause> for CliSession {
    type Result = ResponseActFuture<Self, Result<Session, SessionError>>;

    fn handle(&mut self, _msg: Unpause, _ctx: &mut Self::Context) -> Self::Result {
        let refused = |e: SessionError| -> Self::Result { Box::pin(actix::fut::ready(Err(e))) };
        if self.conv.paused_since.is_none() {
            return refused(SessionError::Conflict(format!(
                "the session is not paused (it is {})",
                self.conv.row.status
            )));
        }
        let cgroup = match self.freezer() {
            Ok(cgroup) => cgroup,
            Err(e) => return refused(e),
        };
        let thawed = tokio::task::spawn_blocking(move || cgroup.freeze(false));
        Box::pin(thawed.into_actor(self).map(|thawed, act, _ctx| {
            thawed
                .map_err(|e| SessionError::Unavailable(format!("could not thaw the session: {e}")))?
                .map_err(|e| SessionError::Unavailable(format!("could not thaw the session's cgroup: {e}")))?;
            resume_work(act);
            tracing::info!(session = %act.conv.row.id, "session unpaused");
            Ok(act.conv.row.clone())
        }))
    }
}

/// Thawed (or never frozen after all): back where it was, its queued turns going out.
pub(super) fn resume_work(act: &mut CliSession) {
    act.cli.touch();
    act.conv.paused_since = None;
    if act.conv.row.status_reason.as_deref() == Some(PAUSED_REASON) {
        act.conv.row.status_reason = act.conv.rest_reason();
        act.conv.patch(SessionPatch { status_reason: Some(act.conv.row.status_reason.clone()), ..Default::default() });
    }
    act.conv.row.last_active_at = time::now();
    let back = if act.conv.turn_running { SessionStatus::Active } else { act.conv.at_rest() };
    act.conv.set_status(back);
    super::kept::save(act);
    pump(act);
}

/// The session is being ended: a frozen one is thawed, so its CLI hears the signal and ends in
/// its own time (a SIGKILL would end it frozen or not).
pub(super) fn thaw_to_end(act: &mut CliSession) {
    if act.conv.paused_since.take().is_some() {
        if let Some(cgroup) = act.cli.cgroup().cloned() {
            tokio::task::spawn_blocking(move || cgroup.freeze(false));
        }
    }
}
