//! What runs on top of a supervised CLI: a session's open-ended chat, or a scheduled agent's
//! one turn. The supervisor ([`super::process`]) owns the process; a conversation owns what is
//! said, and hears of the process through these hooks, each called with the whole actor (so
//! it can write, ask and stop through [`CliProcess`]'s methods).

use std::pin::Pin;
use std::time::Duration;

use actix::prelude::*;

use super::process::CliProcess;
use super::spawn::Exit;
use crate::domain::agent_events::AgentEvent;
use crate::domain::decision::Verdict;
use crate::domain::ids::{ProjectId, SessionId};
use crate::domain::session::ClosedReason;
use crate::protocol::incoming::Incoming;

pub type Ctx<C> = Context<CliProcess<C>>;
pub type Step<C> = Pin<Box<dyn ActorFuture<CliProcess<C>, Output = ()>>>;

/// How a supervised process ended, for its conversation to record.
#[derive(Debug, Clone)]
pub struct ProcessEnd<R> {
    pub exit: Exit,
    /// Why it was asked to end (the first ask), if it was.
    pub asked: Option<R>,
    /// What went wrong while it ran (a refused handshake, a lost transport), if anything.
    pub failure: Option<String>,
    /// Processes of its tree that outlived SIGKILL (empty when all is well).
    pub survivors: Vec<i32>,
    /// The end of its stderr.
    pub stderr_tail: String,
    pub ran_for: Duration,
    /// Its keeper was killed (its guardian ended the tree): it crashed.
    pub keeper_lost: bool,
    /// The OOM kill count of its memory cgroup as it ended (read before the cgroup goes), where
    /// the machine keeps one.
    pub oom_kills: Option<u64>,
}

impl<R> ProcessEnd<R> {
    /// `reason` with the stderr tail appended, when there is one.
    pub fn with_stderr(&self, reason: String) -> String {
        let tail = self.stderr_tail.trim();
        if tail.is_empty() {
            reason
        } else {
            format!("{reason}; stderr: {tail}")
        }
    }
}

pub trait Conversation: Sized + Unpin + 'static {
    /// Why someone asks the CLI to end (a session's close reason, a run's timeout or cancel).
    type Asked: Clone + Unpin + 'static;

    /// Whose tool calls these are: (project, session), for the permission engine.
    fn scope(&self) -> (Option<ProjectId>, Option<SessionId>);

    /// The actor runs; the handshake is sent right after.
    fn started(p: &mut CliProcess<Self>, ctx: &mut Ctx<Self>);

    /// The CLI answered the handshake: it takes turns now.
    fn ready(p: &mut CliProcess<Self>, ctx: &mut Ctx<Self>);

    /// The service attached again to a CLI its keeper kept (after a restart): it is where it
    /// was, its handshake long done.
    fn reattached(p: &mut CliProcess<Self>, ctx: &mut Ctx<Self>) {
        Self::ready(p, ctx)
    }

    /// Every output line in order, with its parsed form and the normalized events it carries;
    /// the supervisor acts on answers and requests after this (so a line is recorded before
    /// anything it causes).
    fn on_line(p: &mut CliProcess<Self>, line: String, msg: Incoming, events: Vec<AgentEvent>, ctx: &mut Ctx<Self>);

    /// A stderr line (the supervisor keeps the tail itself).
    fn on_stderr(_p: &mut CliProcess<Self>, _line: String) {}

    /// An output line over the size cap was dropped.
    fn on_oversized(_p: &mut CliProcess<Self>, _len: usize) {}

    /// A line Conduit wrote to the CLI: a request of its own (`control_request`) or an answer
    /// (`control_response`), with the request's subtype.
    fn sent(_p: &mut CliProcess<Self>, _line: &str, _kind: &'static str, _subtype: Option<String>) {}

    /// The engine's verdict on a tool call, before the CLI hears it.
    fn decided(_p: &mut CliProcess<Self>, _verdict: &Verdict) {}

    /// The process is gone and its leftovers are ended: record the end. The registry hears of
    /// it when this resolves; then [`Conversation::released`] runs and the actor stops.
    fn ended(p: &mut CliProcess<Self>, end: ProcessEnd<Self::Asked>) -> Step<Self>;

    /// Why the conversation ended, as the registry hears it (a session's stored reason).
    fn closed_reason(&self) -> Option<ClosedReason> {
        None
    }

    /// The registry knows the process is gone: answer whoever waits for the end.
    fn released(_p: &mut CliProcess<Self>) {}
}
