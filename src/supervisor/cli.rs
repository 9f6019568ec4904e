//! The process half of a supervised CLI ([`Cli`]): its pid and tree, its adapter and input,
//! where it is in its [`Life`], and the requests in flight both ways. The actor
//! ([`super::process::CliProcess`]) drives the transitions; conversations read it and write
//! through it.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use actix::prelude::*;
use tokio::sync::mpsc;

use super::adapter::AgentAdapter;
use super::controls::Controls;
use super::process::{Life, ProcessGone};
use crate::actors::bridge::BridgeHandle;
use crate::actors::permissions::Evaluate;
use crate::keeper::link::KeeperHandle;
use crate::process::tree::ProcessTree;
use crate::transport::OutLine;

/// Where the supervisor sends what it cannot decide itself.
pub struct Peers {
    pub engine: Recipient<Evaluate>,
    pub registry: Recipient<ProcessGone>,
}

/// The process half of the actor: everything about the CLI as a process.
pub struct Cli<R> {
    pub(super) id: String,
    pub(super) pid: i32,
    pub(super) tree: ProcessTree,
    pub(super) adapter: Box<dyn AgentAdapter>,
    pub(super) stdin: Option<mpsc::Sender<OutLine>>,
    pub(super) bridge: Option<BridgeHandle>,
    pub(super) life: Life,
    /// Why it was asked to end (the first ask wins).
    pub(super) asked: Option<R>,
    /// What went wrong while it ran (the first failure wins).
    pub(super) failure: Option<String>,
    /// Output streams not yet at their end.
    pub(super) outputs_open: usize,
    pub(super) controls: Controls,
    /// Requests of the CLI being decided; a withdrawn one is removed and gets no answer.
    pub(super) asks: HashSet<String>,
    pub(super) stderr_tail: String,
    pub(super) peers: Peers,
    pub(super) grace: Duration,
    pub(super) started: Instant,
    pub(super) last_activity: Instant,
    /// Set when a keeper holds the CLI: stored lines are acknowledged to it, requests pinned.
    pub(super) keeper: Option<KeeperHandle>,
    /// The keeper's number of the output line being handled (its `cli_seq`).
    pub(super) line_seq: Option<u64>,
    /// The keeper's number of each request of the CLI being decided, by request id.
    pub(super) pinned: HashMap<String, u64>,
    /// The keeper went without telling the CLI's end (killed): the session crashed.
    pub(super) keeper_lost: bool,
}

impl<R> Cli<R> {
    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn pid(&self) -> i32 {
        self.pid
    }

    pub fn life(&self) -> &Life {
        &self.life
    }

    /// The cgroups that limit and measure its tree, if it has any.
    pub fn resources(&self) -> Option<&crate::process::limits::ResourceGroups> {
        self.tree.resources.as_ref()
    }

    /// Handshaking or ready: not asked to end, not exited.
    pub fn is_live(&self) -> bool {
        matches!(self.life, Life::Handshaking | Life::Ready)
    }

    pub fn is_ready(&self) -> bool {
        self.life == Life::Ready
    }

    /// What the CLI said it takes (models, permission modes).
    pub fn offers(&self) -> crate::domain::offers::Offers {
        self.adapter.offers()
    }

    /// Conduit's requests still waiting for an answer.
    pub fn pending_controls(&self) -> usize {
        self.controls.len()
    }

    /// The CLI's requests still being decided.
    pub fn asks_in_flight(&self) -> usize {
        self.asks.len()
    }

    /// Since the last line in either direction.
    pub fn quiet_for(&self) -> Duration {
        self.last_activity.elapsed()
    }

    pub fn touch(&mut self) {
        self.last_activity = Instant::now();
    }

    pub fn ran_for(&self) -> Duration {
        self.started.elapsed()
    }

    /// The adapter's line for a user turn.
    pub fn user_turn(&mut self, content: &str) -> Result<String, String> {
        self.adapter.user_turn(content)
    }

    /// The agent CLI this process runs.
    pub fn agent(&self) -> crate::domain::agent_kind::AgentKind {
        self.adapter.kind()
    }

    /// Hands a line to the transport; refused when its input is closed or full.
    pub fn write(&mut self, line: OutLine) -> Result<(), String> {
        self.touch();
        let tx = self.stdin.as_ref().ok_or_else(|| "the CLI's input is closed".to_string())?;
        tx.try_send(line).map_err(|e| match e {
            mpsc::error::TrySendError::Full(_) => "the CLI is not reading its input".to_string(),
            mpsc::error::TrySendError::Closed(_) => "the CLI's input is closed".to_string(),
        })
    }

    /// Closes the CLI's input: its cue to finish (a one-turn run after its result).
    pub fn close_input(&mut self) {
        self.stdin = None;
    }

    /// The keeper's number of the output line being handled: stored with it, so a restarted
    /// service knows which lines it has.
    pub fn line_seq(&self) -> Option<u64> {
        self.line_seq
    }

    /// The CLI's own cgroup, when the service uses cgroups.
    pub fn cgroup(&self) -> Option<&crate::process::cgroup::Cgroup> {
        self.tree.cgroup.as_ref()
    }

    /// A keeper holds the CLI: it outlives the service.
    pub fn is_kept(&self) -> bool {
        self.keeper.is_some()
    }

    /// Tells the keeper every line handed to the store is stored (call it once they are).
    pub fn acknowledge_stored(&self) {
        if let Some(keeper) = &self.keeper {
            keeper.acknowledge_recorded();
        }
    }

    /// The keeper's pid, when one holds the CLI.
    pub fn keeper_pid(&self) -> Option<i32> {
        self.keeper.as_ref().map(|k| k.keeper_pid)
    }

    /// What the adapter must remember across a restart of the service.
    pub fn adapter_state(&self) -> serde_json::Value {
        self.adapter.snapshot()
    }
}
