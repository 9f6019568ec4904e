//! How Conduit runs a CLI: `CliProcess`, one actor per CLI process, whatever the agent kind and
//! whatever the conversation on top (a session's chat, a scheduled agent's one turn).
//!
//! The registry spawns the process ([`super::spawn`]) and starts this actor with it. From then
//! on the process's life is one [`Life`], read top to bottom:
//!
//! 1. `Handshaking`: the adapter's handshake is sent at once; its answer makes the CLI `Ready`,
//!    a refusal or [`CONTROL_TIMEOUT`] without an answer fails it.
//! 2. `Ready`: turns and commands flow. Every request of the CLI is answered: tool calls by the
//!    permission engine, the rest at once. Conduit's own requests are matched to their answers
//!    by id, each with a timeout.
//! 3. `Stopping`: someone asked it to end ([`CliProcess::stop`]), or it failed: stdin is closed,
//!    the signal goes to its whole tree, SIGKILL follows the grace period.
//! 4. `Draining`: the process exited (on its own or stopped); its output is read to the end, for
//!    at most [`DRAIN`] (a descendant may hold the pipes open).
//! 5. `Ending`: leftovers are ended (cgroup, group, marked escapees), the bridge released, and
//!    the conversation records the typed [`ProcessEnd`].
//! 6. `Ended`: the registry has heard ([`ProcessGone`]); the actor stops.
//!
//! Or, when a keeper holds the CLI (see [`crate::keeper`]) and the service stops, `Detached`:
//! the service lets go of a live CLI ([`CliProcess::detach`]) and the actor stops without an
//! end; the next service attaches again and starts at `Ready` (no handshake: the CLI has had
//! one).

use std::collections::HashSet;
use std::time::{Duration, Instant};

use actix::prelude::*;
use tokio::sync::oneshot;

use super::adapter::{AgentAdapter, Command, Outgoing};
pub use super::cli::{Cli, Peers};
use super::controls::{ControlError, Controls, Pending, Reply, CONTROL_TIMEOUT};
use super::conversation::{Conversation, Ctx, ProcessEnd};
use super::spawn::{Exit, Spawned};
use crate::domain::session::ClosedReason;
use crate::transport::stdio::{read_ahead, READ_AHEAD_BYTES};
use crate::transport::OutLine;

mod asks;
mod output;

/// After the process exits, how long its output may stay open before it is no longer waited for.
pub const DRAIN: Duration = Duration::from_secs(2);
/// The end of stderr kept for error messages.
const STDERR_TAIL_BYTES: usize = 4096;

/// Sent to the registry once the process is gone and its end recorded.
#[derive(Message, Debug)]
#[rtype(result = "()")]
pub struct ProcessGone {
    /// The session or execution id.
    pub id: String,
    pub pid: i32,
    /// Why it ended, for a session.
    pub reason: Option<ClosedReason>,
}

#[derive(Message)]
#[rtype(result = "()")]
struct Exited(Exit);

/// One process's life; see the module documentation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Life {
    Handshaking,
    Ready,
    Stopping,
    Draining(Exit),
    Ending,
    Ended,
    /// The service let go of the CLI, which runs on under its keeper.
    Detached,
}

pub struct CliProcess<C: Conversation> {
    pub conv: C,
    pub cli: Cli<C::Asked>,
}

impl<C: Conversation> CliProcess<C> {
    pub fn start(
        id: &str,
        spawned: Spawned,
        adapter: Box<dyn AgentAdapter>,
        peers: Peers,
        grace: Duration,
        conv: C,
        reattached: bool,
    ) -> Addr<Self> {
        let Spawned { pid, tree, stdin, outputs, exited, bridge, ends, keeper, .. } = spawned;
        CliProcess::create(move |ctx| {
            let outputs_open = ends;
            // Read ahead, so a session busy for a moment (waiting for its result's commit) does
            // not stall its CLI.
            for stream in outputs {
                ctx.add_stream(read_ahead(stream, READ_AHEAD_BYTES));
            }
            let addr = ctx.address();
            actix::spawn(async move { addr.do_send(Exited(exited.await)) });
            let cli = Cli {
                id: id.to_string(),
                pid,
                tree,
                adapter,
                stdin: Some(stdin),
                bridge: bridge.map(|(handle, _)| handle),
                life: if reattached { Life::Ready } else { Life::Handshaking },
                asked: None,
                failure: None,
                outputs_open,
                controls: Controls::new(id),
                asks: HashSet::new(),
                stderr_tail: String::new(),
                peers,
                grace,
                started: Instant::now(),
                last_activity: Instant::now(),
                keeper,
                line_seq: None,
                pinned: std::collections::HashMap::new(),
                keeper_lost: false,
            };
            CliProcess { conv, cli }
        })
    }

    /// Sends one of Conduit's requests; the answer (or timeout, or the CLI's end) arrives on
    /// the returned channel.
    pub fn command(
        &mut self,
        command: Command,
        ctx: &mut Ctx<C>,
    ) -> oneshot::Receiver<Result<serde_json::Value, ControlError>> {
        let (reply, answer) = oneshot::channel();
        let id = self.cli.controls.next_id();
        match self.cli.adapter.command(&command, &id) {
            Ok(Outgoing::Request(line)) => {
                self.request(id, line, command.name(), Pending::Command { what: command.name(), reply }, ctx)
            }
            // Nothing to wait for: done once written.
            Ok(Outgoing::Done(line)) => {
                let written = match line {
                    Some(line) => self.cli.write(OutLine::new(line.clone())).map(|()| {
                        C::sent(self, &line, "control_request", Some(command.name().to_string()));
                    }),
                    None => Ok(()),
                };
                let _ = reply.send(written.map(|()| serde_json::Value::Null).map_err(ControlError::Gone));
            }
            Err(why) => {
                let _ = reply.send(Err(ControlError::Unsupported { what: command.name(), why }));
            }
        }
        answer
    }

    fn request(&mut self, id: String, line: String, subtype: &'static str, pending: Pending, ctx: &mut Ctx<C>) {
        if let Err(e) = self.cli.write(OutLine::new(line.clone())) {
            return match pending {
                Pending::Command { reply, .. } => refuse(reply, e),
                Pending::Handshake => self.fail(format!("could not send the handshake: {e}"), ctx),
            };
        }
        C::sent(self, &line, "control_request", Some(subtype.to_string()));
        self.cli.controls.insert(id.clone(), pending);
        ctx.run_later(CONTROL_TIMEOUT, move |act, ctx| match act.cli.controls.take(&id) {
            Some(Pending::Handshake) => {
                tracing::warn!(id = %act.cli.id, "the CLI did not answer the handshake in time");
                act.fail(format!("the CLI did not answer initialize within {CONTROL_TIMEOUT:?}"), ctx);
            }
            Some(Pending::Command { what, reply }) => {
                tracing::warn!(id = %act.cli.id, %what, "the CLI did not answer a request in time");
                let _ = reply.send(Err(ControlError::Timeout(what)));
            }
            None => {}
        });
    }

    /// Ends the CLI: stdin closed, `signal` to its whole tree, SIGKILL after the grace period.
    /// The first `asked` is the one recorded; a stop of an exited process only records it.
    pub fn stop(&mut self, signal: i32, asked: Option<C::Asked>, ctx: &mut Ctx<C>) {
        if matches!(self.cli.life, Life::Ending | Life::Ended | Life::Detached) {
            return;
        }
        if self.cli.asked.is_none() {
            self.cli.asked = asked;
        }
        self.cli.stdin = None;
        if !self.cli.is_live() {
            return;
        }
        self.cli.life = Life::Stopping;
        let tree = self.cli.tree.clone();
        tokio::task::spawn_blocking(move || tree.signal(signal));
        ctx.run_later(self.cli.grace, |act, _ctx| {
            if act.cli.life == Life::Stopping {
                tracing::warn!(id = %act.cli.id, "the CLI outlived the grace period; killing its tree");
                let tree = act.cli.tree.clone();
                tokio::task::spawn_blocking(move || tree.signal(libc::SIGKILL));
            }
        });
    }

    /// Something went wrong while the CLI runs: end it, and record `reason`.
    pub fn fail(&mut self, reason: String, ctx: &mut Ctx<C>) {
        if matches!(self.cli.life, Life::Ending | Life::Ended | Life::Detached) {
            return;
        }
        self.cli.failure.get_or_insert(reason);
        self.stop(libc::SIGTERM, None, ctx);
    }

    /// Once the process has exited and its output is drained: end leftovers, let the
    /// conversation record the end, tell the registry, stop.
    fn maybe_finish(&mut self, ctx: &mut Ctx<C>) {
        let Life::Draining(exit) = &self.cli.life else { return };
        if self.cli.outputs_open > 0 {
            return;
        }
        let exit = exit.clone();
        self.cli.life = Life::Ending;
        self.cli.stdin = None;
        self.cli.controls.fail_all();
        let tree = self.cli.tree.clone();
        // The OOM kill count is read before the tree's cgroups go with it: it tells whether
        // the kernel killed the CLI for its memory.
        let cleanup = tokio::task::spawn_blocking(move || {
            let oom_kills = tree.resources.as_ref().and_then(|r| r.oom_kills());
            (tree.end(Duration::from_secs(2)), oom_kills)
        });
        // The bridge's port is released before anyone hears the process ended.
        let bridge = self.cli.bridge.take();
        let cleanup = async move {
            if let Some(bridge) = &bridge {
                bridge.shutdown().await;
            }
            cleanup.await.unwrap_or_default()
        };
        ctx.wait(cleanup.into_actor(self).then(move |(survivors, oom_kills), act, _ctx| {
            let end = ProcessEnd {
                exit,
                asked: act.cli.asked.clone(),
                failure: act.cli.failure.clone(),
                survivors,
                stderr_tail: act.cli.stderr_tail.clone(),
                ran_for: act.cli.started.elapsed(),
                keeper_lost: act.cli.keeper_lost,
                oom_kills,
            };
            C::ended(act, end).map(|(), act, ctx| {
                // The end is recorded: the keeper may go (the tree is ended already).
                if let Some(keeper) = &act.cli.keeper {
                    keeper.release();
                }
                // The registry hears before anyone waiting is answered: a client's next launch
                // then queues behind this notice in the registry's mailbox.
                act.tell_registry();
                C::released(act);
                ctx.stop();
            })
        }));
    }

    /// The service stops and leaves the CLI to its keeper: nothing more is read (what was not
    /// stored is sent again to the next service), Conduit's requests in flight fail, the lines
    /// already queued for the CLI are written, and its stdin stays open. Resolves once they
    /// are written; the conversation then records what it must and stops the actor, without
    /// an end. `None` when no keeper holds the CLI.
    pub fn detach(&mut self) -> Option<impl std::future::Future<Output = ()>> {
        let drained = self.cli.keeper.as_mut()?.detach();
        self.cli.life = Life::Detached;
        self.cli.stdin = None;
        self.cli.controls.fail_all();
        Some(drained)
    }

    fn tell_registry(&mut self) {
        if !matches!(self.cli.life, Life::Ended | Life::Detached) {
            self.cli.life = Life::Ended;
            let reason = self.conv.closed_reason();
            self.cli.peers.registry.do_send(ProcessGone { id: self.cli.id.clone(), pid: self.cli.pid, reason });
        }
    }
}

fn refuse(reply: Reply, why: String) {
    let _ = reply.send(Err(ControlError::Gone(why)));
}

impl<C: Conversation> Actor for CliProcess<C> {
    type Context = Ctx<C>;

    fn started(&mut self, ctx: &mut Ctx<C>) {
        C::started(self, ctx);
        if self.cli.life == Life::Ready {
            // Attached again to a CLI that had its handshake with an earlier service.
            return C::reattached(self, ctx);
        }
        let id = self.cli.controls.next_id();
        let line = self.cli.adapter.handshake(&id);
        self.request(id, line, "initialize", Pending::Handshake, ctx);
    }

    fn stopped(&mut self, _ctx: &mut Ctx<C>) {
        self.tell_registry();
    }
}
