//! `Janitor`: the one actor that tidies up on a timer.
//!
//! Every `janitor_interval_ms` it sweeps: live sessions quiet for `session_idle_timeout_ms`
//! are offered to the registry for closing (reason `idle_timeout`; a message to such a session
//! resumes it). Candidates come from an indexed query on the stored `last_active_at`, which only
//! ever lags the session's own clock; each candidate's actor then decides whether it is truly
//! idle (no turn, no control request either way, no queued turn, no background task, nobody
//! watching). Agent executions still running well past their timeout (plus the kill grace)
//! are cancelled, or failed when no run owns them any more, lock queues nobody waits in any
//! more are pruned, and so are worktrees whose session (or agent run) is gone, and dashboard
//! sign-ins a day after they expired or were revoked. A sweep never overlaps the previous one,
//! logs its counts, and an error in one step or one session never stops the rest.

use std::time::Duration;

use actix::prelude::*;

use super::agents::CancelExecution;
use super::bus::WatcherCount;
use super::locks::Prune;
use super::registry::CloseIdle;
use super::workbench::Cleanup;
use crate::db::{agents, login_sessions, sessions, Store};
use crate::domain::idleness::Busy;
use crate::domain::time;

/// Candidates looked at per sweep, at most; the rest wait for the next sweep.
const SWEEP_BATCH: i64 = 500;
/// How long an ended (expired or revoked) sign-in is kept before the janitor removes it.
const ENDED_SIGN_INS_KEPT: Duration = Duration::from_secs(86_400);

// ---------------------------------------------------------------------------------------------
// Messages

/// Sweep now (the timer sends it too). Answers with what the sweep did; a sweep asked for while
/// one runs is skipped (`skipped: true`).
#[derive(Message)]
#[rtype(result = "SweepReport")]
pub struct Sweep;

/// Stops the timer (at shutdown, before the sessions are ended).
#[derive(Message)]
#[rtype(result = "()")]
pub struct StopJanitor;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SweepReport {
    /// Sessions the indexed query offered.
    pub checked: usize,
    /// Closed as idle.
    pub closed: usize,
    /// Left open: a turn, a control request, a queued turn, a background task, a watcher, or
    /// recent activity.
    pub busy: usize,
    /// Ended (or ending) meanwhile.
    pub gone: usize,
    pub errors: usize,
    /// Agent executions found running past their timeout and ended.
    pub executions_reaped: usize,
    /// Lock queue entries dropped (waiters that gave up, empty queues).
    pub locks_pruned: usize,
    /// Ended commands and processes removed after their retention.
    pub processes_removed: usize,
    /// Worktrees removed whose session (or agent run) is gone.
    pub worktrees_pruned: usize,
    /// Dashboard sign-ins removed a day after they expired or were revoked.
    pub sign_ins_removed: usize,
    pub skipped: bool,
}

// ---------------------------------------------------------------------------------------------
// State

pub struct Janitor {
    interval: Duration,
    idle_timeout: Duration,
    store: Store,
    registry: Recipient<CloseIdle>,
    bus: Recipient<WatcherCount>,
    agents: Recipient<CancelExecution>,
    locks: Recipient<Prune>,
    /// How long past its timeout a run may take to end (its kill grace) before it counts as stuck.
    grace: Duration,
    processes: Recipient<Cleanup>,
    /// How long ended commands and processes are kept.
    process_retention: Duration,
    /// Where sessions' worktrees are made.
    workspaces: std::path::PathBuf,
    node: Option<String>,
    sweeping: bool,
}

/// What the janitor tidies besides sessions.
pub struct Tidies {
    pub agents: Recipient<CancelExecution>,
    pub locks: Recipient<Prune>,
    pub grace: Duration,
    /// Where ended commands and processes are removed, and after how long.
    pub processes: Recipient<Cleanup>,
    pub process_retention: Duration,
    pub workspaces: std::path::PathBuf,
    /// In cluster mode, this node: its janitor looks only at what it runs.
    pub node: Option<String>,
}

impl Janitor {
    pub fn new(
        interval: Duration,
        idle_timeout: Duration,
        store: Store,
        registry: Recipient<CloseIdle>,
        bus: Recipient<WatcherCount>,
        tidies: Tidies,
    ) -> Self {
        let Tidies { agents, locks, grace, processes, process_retention, workspaces, node } = tidies;
        Janitor {
            interval,
            idle_timeout,
            store,
            registry,
            bus,
            agents,
            locks,
            grace,
            processes,
            process_retention,
            workspaces,
            node,
            sweeping: false,
        }
    }
}

/// Offers every quiet live session to the registry for closing.
async fn close_idle_sessions(
    store: Store,
    registry: Recipient<CloseIdle>,
    bus: Recipient<WatcherCount>,
    timeout: Duration,
    node: Option<String>,
    report: &mut SweepReport,
) {
    let cutoff = time::ago(timeout);
    let ids = match store.run(move |conn| sessions::quiet_since(conn, &cutoff, SWEEP_BATCH, node.as_deref())).await {
        Ok(ids) => ids,
        Err(e) => {
            tracing::warn!(error = %e, "janitor: cannot list quiet sessions");
            report.errors += 1;
            return;
        }
    };
    for id in ids {
        report.checked += 1;
        let watchers = match bus.send(WatcherCount(id.to_string())).await {
            Ok(n) => n,
            Err(e) => {
                tracing::warn!(session = %id, error = %e, "janitor: the event bus did not answer");
                report.errors += 1;
                continue;
            }
        };
        match registry.send(CloseIdle { id: id.clone(), timeout, watchers }).await {
            Ok(Ok(())) => report.closed += 1,
            Ok(Err(Busy::NotLive)) => report.gone += 1,
            Ok(Err(why)) => {
                tracing::debug!(session = %id, reason = why.as_str(), "janitor: session kept open");
                report.busy += 1;
            }
            Err(e) => {
                tracing::warn!(session = %id, error = %e, "janitor: the registry did not answer");
                report.errors += 1;
            }
        }
    }
}

/// Ends agent executions still running past their timeout plus twice the kill grace: their
/// run should have ended them long ago. A run that still exists is cancelled; a row no run owns
/// (its actor is gone) is marked failed.
async fn reap_stuck_executions(
    store: Store,
    agents_: Recipient<CancelExecution>,
    grace: Duration,
    node: Option<String>,
    report: &mut SweepReport,
) {
    let running = match store.run(move |conn| agents::running(conn, node.as_deref())).await {
        Ok(rows) => rows,
        Err(e) => {
            tracing::warn!(error = %e, "janitor: cannot list running executions");
            report.errors += 1;
            return;
        }
    };
    let now = chrono::Utc::now();
    for run in running {
        let Ok(started) = chrono::DateTime::parse_from_rfc3339(&run.started_at) else { continue };
        let limit =
            chrono::Duration::milliseconds(run.timeout_ms) + chrono::Duration::from_std(grace * 2).unwrap_or_default();
        if started.with_timezone(&chrono::Utc) + limit > now {
            continue;
        }
        let cancel = CancelExecution { agent_id: run.agent_id.clone(), execution_id: run.id.clone() };
        let live = matches!(agents_.send(cancel).await, Ok(Ok(true)));
        if !live {
            let (id, at) = (run.id.clone(), time::now());
            let error = "reaped by the janitor: still marked running past its timeout, with no run going";
            match store.run(move |conn| agents::fail_orphan(conn, &id, error, &at)).await {
                Ok(false) => continue,
                Ok(true) => {}
                Err(e) => {
                    tracing::warn!(execution = %run.id, error = %e, "janitor: cannot end a stuck execution");
                    report.errors += 1;
                    continue;
                }
            }
        }
        tracing::warn!(execution = %run.id, live, "janitor: ended an execution stuck past its timeout");
        report.executions_reaped += 1;
    }
}

// ---------------------------------------------------------------------------------------------
// Handlers

impl Actor for Janitor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        tracing::info!(interval = ?self.interval, idle_timeout = ?self.idle_timeout, "janitor started");
        ctx.run_interval(self.interval, |_act, ctx| ctx.notify(Sweep));
    }
}

impl Handler<Sweep> for Janitor {
    type Result = ResponseActFuture<Self, SweepReport>;

    fn handle(&mut self, _msg: Sweep, _ctx: &mut Context<Self>) -> Self::Result {
        if self.sweeping {
            return Box::pin(actix::fut::ready(SweepReport { skipped: true, ..Default::default() }));
        }
        self.sweeping = true;
        let (store, registry, bus, timeout) =
            (self.store.clone(), self.registry.clone(), self.bus.clone(), self.idle_timeout);
        let (agents, locks, grace) = (self.agents.clone(), self.locks.clone(), self.grace);
        let (processes, retention) = (self.processes.clone(), self.process_retention);
        let (workspaces, node) = (self.workspaces.clone(), self.node.clone());
        // Each step on its own: one failing never stops the others.
        let sweep = async move {
            let mut report = SweepReport::default();
            close_idle_sessions(store.clone(), registry, bus, timeout, node.clone(), &mut report).await;
            reap_stuck_executions(store.clone(), agents, grace, node, &mut report).await;
            match crate::workspace::prune::prune(&store, &workspaces).await {
                Ok(pruned) => report.worktrees_pruned = pruned,
                Err(e) => {
                    tracing::warn!(error = %e, "janitor: cannot look for orphaned worktrees");
                    report.errors += 1;
                }
            }
            match locks.send(Prune).await {
                Ok(pruned) => report.locks_pruned = pruned,
                Err(e) => {
                    tracing::warn!(error = %e, "janitor: the lock queue did not answer");
                    report.errors += 1;
                }
            }
            let before = Some(time::ago(retention));
            match processes.send(Cleanup { owner: None, before }).await {
                Ok(Ok(n)) => report.processes_removed = n,
                Ok(Err(e)) => {
                    tracing::warn!(error = %e, "janitor: cannot remove ended processes");
                    report.errors += 1;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "janitor: the workbench did not answer");
                    report.errors += 1;
                }
            }
            let cutoff = time::ago(ENDED_SIGN_INS_KEPT);
            match store.run(move |conn| login_sessions::remove_ended_before(conn, &cutoff)).await {
                Ok(n) => report.sign_ins_removed = n,
                Err(e) => {
                    tracing::warn!(error = %e, "janitor: cannot remove ended sign-ins");
                    report.errors += 1;
                }
            }
            report
        };
        Box::pin(sweep.into_actor(self).map(|report, act, _ctx| {
            act.sweeping = false;
            let tidied = report.executions_reaped
                + report.locks_pruned
                + report.processes_removed
                + report.worktrees_pruned
                + report.sign_ins_removed;
            if report.checked > 0 || report.errors > 0 || tidied > 0 {
                tracing::info!(
                    checked = report.checked,
                    closed = report.closed,
                    busy = report.busy,
                    gone = report.gone,
                    errors = report.errors,
                    executions_reaped = report.executions_reaped,
                    locks_pruned = report.locks_pruned,
                    processes_removed = report.processes_removed,
                    worktrees_pruned = report.worktrees_pruned,
                    sign_ins_removed = report.sign_ins_removed,
                    "janitor sweep"
                );
            } else {
                tracing::debug!("janitor sweep: nothing to look at");
            }
            report
        }))
    }
}

impl Handler<StopJanitor> for Janitor {
    type Result = ();

    fn handle(&mut self, _msg: StopJanitor, ctx: &mut Context<Self>) {
        ctx.stop();
    }
}
