//! `SessionRegistry`: the one actor that launches, finds and ends sessions.
//!
//! It owns the map of live sessions (id -> actor, project, external key, pid), enforces the
//! global and per-project capacity, and is the only place CLI processes are spawned, so the set
//! of pids tokio waits for is always known here. Launches are handled one at a time
//! (`AtomicResponse`), which makes `external_key` idempotent without a check-then-spawn race.
//! When the service is a child subreaper it also reaps orphaned descendants that were
//! re-parented to it, skipping the CLI pids tokio reaps itself.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;

mod commands;
mod deliver;
mod enclose;
mod keepers;
mod launch;
mod readings;
mod reaper;
mod resume;
mod revive;
mod runs;
mod spawn_cli;
mod workspace;

pub use self::commands::SpawnCommand;
pub use self::deliver::{Deliver, DeliverError};
pub use self::keepers::{Found, Keepers, Reattach};
pub use self::launch::{Launch, LaunchError, Launched};
pub use self::readings::{LiveCount, LiveReading, ReadLive};
pub use self::resume::{Resume, ResumeError};
pub use self::revive::{revive_parked, Revive};
pub use self::runs::StartRun;
pub use self::workspace::worktree_folder;

use self::reaper::Sweep;
use super::bus::Publish;
use super::permissions::Evaluate;
use super::session::{CliSession, Close, CloseIfIdle};
use crate::config::Settings;
use crate::db::writer::Writer;
use crate::db::Store;
use crate::domain::idleness::Busy;
use crate::domain::ids::{ProjectId, SessionId};
use crate::domain::session::ClosedReason;
use crate::process::version::CliVersion;
use crate::sandbox::enclosure::Encloser;
use crate::supervisor::process::ProcessGone;

#[derive(Message)]
#[rtype(result = "Result<(), Busy>")]
pub struct CloseIdle {
    pub id: SessionId,
    pub timeout: Duration,
    /// Stream clients following it, as the bus counts them.
    pub watchers: usize,
}

/// The actor of a live session, if there is one.
#[derive(Message)]
#[rtype(result = "Option<Addr<CliSession>>")]
pub struct Find(pub SessionId);

/// Ends every live session of a project (before the project is deleted). Answers when all are
/// gone. Until [`ProjectDeleted`], launches in it are refused: one accepted between the close
/// and the row's deletion would run on with its row cascaded away.
#[derive(Message)]
#[rtype(result = "()")]
pub struct CloseProject(pub ProjectId);

/// The project's deletion is over (done or failed): launches in it are decided as usual again
/// (a deleted one no longer has a row to launch in).
#[derive(Message)]
#[rtype(result = "()")]
pub struct ProjectDeleted(pub ProjectId);

/// The service stops: refuses new launches, and leaves each session's CLI to its keeper
/// (`detach`, where a keeper holds it and it is at a point it can be left at) or ends it
/// (stdin closed, SIGINT to each group, grace, SIGKILL). Answers, once every session is left
/// or gone, with the sessions left running.
#[derive(Message)]
#[rtype(result = "Vec<SessionId>")]
pub struct Shutdown(pub crate::domain::session::OnShutdown);

/// Cluster mode: this node lost its lease (it could not renew for a whole lease, or the leader
/// declared it lost). Ends every session with `node_lost`, as the leader records them, so no
/// CLI of a session another node may resume keeps running here.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Fence;

/// A session's CLI has ended (for any reason): what was started in its workspace ends too.
#[derive(Message, Clone, Debug)]
#[rtype(result = "()")]
pub struct SessionEnded {
    pub id: SessionId,
    pub project_id: ProjectId,
}

/// A child process started outside the registry (a terminal's shell) that tokio waits for: the
/// orphan sweep leaves it alone until its `ProcessGone`. Sent right after the spawn: a sweep
/// could only reap it unlisted if it exited and was walked before this message was handled.
#[derive(Message)]
#[rtype(result = "()")]
pub struct AdoptChild(pub i32);

/// Tells `0` of every session that ends from now on.
#[derive(Message)]
#[rtype(result = "()")]
pub struct WatchEnds(pub Recipient<SessionEnded>);

// ---------------------------------------------------------------------------------------------
// State

struct Live {
    addr: Addr<CliSession>,
    project_id: ProjectId,
    external_key: Option<String>,
}

/// A session whose worktree is being made and set up: it counts against capacity and holds
/// its external key, though it has no CLI yet.
struct Preparing {
    row: crate::db::sessions::Session,
}

/// How the registry starts processes: each CLI's cgroup and sandbox, the keepers sessions run
/// under (`None`: none can be started), and whether it reaps orphans (only as a subreaper).
pub struct Spawning {
    pub encloser: Encloser,
    pub keepers: Option<Keepers>,
    pub reap_orphans: bool,
}

/// Who sessions tell about their turns: the limits they meet, and the gate they ask.
pub struct TurnPeers {
    pub limit_board: Recipient<crate::actors::limits::LimitSeen>,
    pub gate: Recipient<crate::actors::turn_gate::Slot>,
}

pub struct SessionRegistry {
    settings: Arc<Settings>,
    store: Store,
    writer: Writer,
    engine: Recipient<Evaluate>,
    bus: Recipient<Publish>,
    live: HashMap<SessionId, Live>,
    /// Sessions getting their worktree ready (see `workspace.rs`).
    preparing: HashMap<SessionId, Preparing>,
    /// Sessions that were preparing when this node lost its cluster lease: their CLI must not
    /// start once the worktree is ready (another node may resume them).
    lost_while_preparing: HashSet<SessionId>,
    /// Projects being deleted: no launch in them.
    closing: std::collections::HashSet<ProjectId>,
    /// Agent runs working in a worktree of their own, by execution id: (repository, worktree,
    /// branch), archived when the run's CLI ends.
    run_worktrees: HashMap<String, (std::path::PathBuf, std::path::PathBuf, String)>,
    /// The installed CLI's version, read once for the `auto` transport (`Some(None)`: it
    /// could not be read, so `auto` means stdio).
    cli_version: Option<Option<CliVersion>>,
    shutting_down: bool,
    /// Reap orphans re-parented to this process (only when it is a subreaper).
    reap_orphans: bool,
    /// Every CLI pid tokio waits for (sessions' and agent runs'): the one owner of pids.
    children: HashSet<i32>,
    sweep: Sweep,
    /// Each CLI's cgroup and sandbox.
    encloser: Encloser,
    /// Told of every session that ends (the workspace's processes and terminals end with it).
    end_watchers: Vec<Recipient<SessionEnded>>,
    /// Where sessions report the limits their CLIs meet.
    limit_board: Recipient<crate::actors::limits::LimitSeen>,
    /// The work-in-progress limit's gate, asked before every turn.
    gate: Recipient<crate::actors::turn_gate::Slot>,
    /// Which budgets are spent.
    budgets: Recipient<crate::actors::budgets::CheckBudget>,
    budget_link: crate::actors::session::holds::BudgetLink,
    /// Sessions on stdio run under keepers (unless none can be started).
    keepers: Option<Keepers>,
}

impl SessionRegistry {
    /// In cluster mode, this node's name: the owner of the sessions it runs.
    fn node_name(&self) -> Option<String> {
        self.settings.cluster.as_ref().map(|c| c.node.clone())
    }

    pub fn new(
        settings: Arc<Settings>,
        store: Store,
        writer: Writer,
        engine: Recipient<Evaluate>,
        bus: Recipient<Publish>,
        spawning: Spawning,
        turns: TurnPeers,
        budgets: &Addr<crate::actors::budgets::BudgetKeeper>,
    ) -> Self {
        let TurnPeers { limit_board, gate } = turns;
        let Spawning { encloser, keepers, reap_orphans } = spawning;
        let budget_link = crate::actors::session::holds::BudgetLink {
            keeper: budgets.clone().recipient(),
            interrupts: settings.budget_interrupts,
            prices: std::sync::Arc::new(settings.model_prices.clone()),
        };
        SessionRegistry {
            settings,
            store,
            writer,
            engine,
            bus,
            live: HashMap::new(),
            preparing: HashMap::new(),
            lost_while_preparing: HashSet::new(),
            closing: Default::default(),
            run_worktrees: HashMap::new(),
            cli_version: None,
            shutting_down: false,
            reap_orphans,
            children: HashSet::new(),
            sweep: Sweep::Idle,
            encloser,
            end_watchers: Vec::new(),
            limit_board,
            gate,
            budgets: budgets.clone().recipient(),
            budget_link,
            keepers,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Handlers

impl Actor for SessionRegistry {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        self.watch_orphans(ctx);
    }
}

impl Handler<Find> for SessionRegistry {
    type Result = Option<Addr<CliSession>>;

    fn handle(&mut self, msg: Find, _ctx: &mut Context<Self>) -> Self::Result {
        self.live.get(&msg.0).map(|l| l.addr.clone())
    }
}

impl Handler<crate::actors::budgets::HoldSessions> for SessionRegistry {
    type Result = ();

    /// Passes a budget's hold (or release) to the live sessions it covers.
    fn handle(&mut self, msg: crate::actors::budgets::HoldSessions, _ctx: &mut Context<Self>) {
        let covered = |live: &&Live| match &msg.project_id {
            Some(project) => live.project_id == *project,
            None => !msg.except.contains(&live.project_id),
        };
        for live in self.live.values().filter(covered) {
            live.addr.do_send(crate::actors::session::Hold(msg.hold.clone()));
        }
    }
}

impl Handler<ProcessGone> for SessionRegistry {
    type Result = ();

    fn handle(&mut self, msg: ProcessGone, _ctx: &mut Context<Self>) {
        self.children.remove(&msg.pid);
        self.run_ended(&msg.id);
        if let Some((id, live)) = self.live.remove_entry(msg.id.as_str()) {
            tracing::debug!(session = %id, pid = msg.pid, reason = ?msg.reason, "session ended");
            let ended = SessionEnded { id, project_id: live.project_id };
            for watcher in &self.end_watchers {
                watcher.do_send(ended.clone());
            }
        }
    }
}

impl Handler<AdoptChild> for SessionRegistry {
    type Result = ();

    fn handle(&mut self, msg: AdoptChild, _ctx: &mut Context<Self>) {
        self.children.insert(msg.0);
    }
}

impl Handler<WatchEnds> for SessionRegistry {
    type Result = ();

    fn handle(&mut self, msg: WatchEnds, _ctx: &mut Context<Self>) {
        self.end_watchers.push(msg.0);
    }
}

/// Sends `Close` to each session and waits for all of them.
fn close_all(sessions: Vec<Addr<CliSession>>, signal: i32, reason: ClosedReason) -> ResponseFuture<()> {
    let closing: Vec<_> = sessions.iter().map(|addr| addr.send(Close { signal, reason })).collect();
    Box::pin(async move {
        for outcome in futures_util::future::join_all(closing).await {
            if let Ok(Err(e)) = outcome {
                tracing::warn!(error = %e, "a session did not close cleanly");
            }
        }
    })
}

impl Handler<CloseProject> for SessionRegistry {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, msg: CloseProject, _ctx: &mut Context<Self>) -> Self::Result {
        self.closing.insert(msg.0.clone());
        let sessions = self.live.values().filter(|l| l.project_id == msg.0).map(|l| l.addr.clone()).collect();
        close_all(sessions, libc::SIGTERM, ClosedReason::ProjectDeleted)
    }
}

impl Handler<ProjectDeleted> for SessionRegistry {
    type Result = ();

    fn handle(&mut self, msg: ProjectDeleted, _ctx: &mut Context<Self>) {
        self.closing.remove(&msg.0);
    }
}

impl Handler<Shutdown> for SessionRegistry {
    type Result = ResponseFuture<Vec<SessionId>>;

    fn handle(&mut self, Shutdown(mode): Shutdown, _ctx: &mut Context<Self>) -> Self::Result {
        self.shutting_down = true;
        let sessions: Vec<(SessionId, Addr<CliSession>)> =
            self.live.iter().map(|(id, l)| (id.clone(), l.addr.clone())).collect();
        if mode == crate::domain::session::OnShutdown::Stop {
            tracing::info!(sessions = sessions.len(), "ending every session");
            let ending =
                close_all(sessions.into_iter().map(|(_, a)| a).collect(), libc::SIGINT, ClosedReason::Shutdown);
            return Box::pin(async move {
                ending.await;
                Vec::new()
            });
        }
        tracing::info!(sessions = sessions.len(), "leaving kept sessions to their keepers, ending the others");
        Box::pin(async move {
            let asked = sessions.iter().map(|(_, addr)| addr.send(crate::actors::session::kept::Detach));
            let answers = futures_util::future::join_all(asked).await;
            let mut left = Vec::new();
            let mut ending = Vec::new();
            for ((id, addr), detached) in sessions.into_iter().zip(answers) {
                match detached {
                    Ok(true) => left.push(id),
                    _ => ending.push(addr),
                }
            }
            close_all(ending, libc::SIGINT, ClosedReason::Shutdown).await;
            left
        })
    }
}

impl Handler<Fence> for SessionRegistry {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, _msg: Fence, _ctx: &mut Context<Self>) -> Self::Result {
        tracing::error!(
            sessions = self.live.len(),
            preparing = self.preparing.len(),
            "this node lost its cluster lease: ending its sessions (node_lost)"
        );
        self.lost_while_preparing.extend(self.preparing.keys().cloned());
        close_all(self.live.values().map(|l| l.addr.clone()).collect(), libc::SIGTERM, ClosedReason::NodeLost)
    }
}

impl Handler<CloseIdle> for SessionRegistry {
    type Result = ResponseFuture<Result<(), Busy>>;

    fn handle(&mut self, msg: CloseIdle, _ctx: &mut Context<Self>) -> Self::Result {
        let Some(live) = self.live.get(&msg.id) else {
            return Box::pin(async { Err(Busy::NotLive) });
        };
        let asked = live.addr.send(CloseIfIdle { timeout: msg.timeout, watchers: msg.watchers });
        // A session that stopped meanwhile is simply not live any more.
        Box::pin(async move { asked.await.unwrap_or(Err(Busy::NotLive)) })
    }
}
