//! An agent's runs: each waits for its folder's lock, then the registry starts its CLI (a
//! one-turn conversation holding the lock), and its end comes back as [`RunEnded`]. A run
//! cancelled while it waits for the folder (or for a limit) ends at once, without a process.

use std::path::PathBuf;

use actix::prelude::*;

use super::{CancelRun, ProactiveAgent, Retire, Retiring, MAX_CONSECUTIVE_FAILURES};
use crate::actors::agent_run::{Cancel, RunEnded, RunRecords};
use crate::actors::bus::Publish;
use crate::actors::locks::{self, Acquire, DirLock, LockGone};
use crate::actors::registry::StartRun;
use crate::db::agents::{self, Execution};
use crate::db::{Store, StoreError};
use crate::domain::agent::{AgentStatus, ExecutionStatus, TriggerKind};
use crate::domain::ids::ExecutionId;
use crate::domain::time;

/// What an agent's runs need from the service.
#[derive(Clone)]
pub struct RunDeps {
    pub store: Store,
    pub bus: Recipient<Publish>,
    pub locks: Recipient<Acquire>,
    /// The registry starts every CLI.
    pub registry: Recipient<StartRun>,
    /// Asked before each scheduled fire.
    pub budgets: Recipient<crate::actors::budgets::CheckBudget>,
    /// In cluster mode: this node's name (the owner of its runs) and its role, which says
    /// whether it fires schedules (the leader alone does).
    pub node: Option<crate::actors::cluster::NodeView>,
    /// Runs are stored without secrets (the `at_rest` redaction).
    pub redact_at_rest: bool,
}

impl RunDeps {
    pub(super) fn node_name(&self) -> Option<String> {
        self.node.as_ref().map(|n| n.name.clone())
    }

    /// Whether this node fires schedules: always on a single service; in a cluster, only
    /// while it leads.
    pub(super) fn fires_schedules(&self) -> bool {
        self.node.as_ref().is_none_or(|n| n.leads())
    }

    pub(super) fn records(&self) -> RunRecords {
        RunRecords {
            store: self.store.clone(),
            bus: self.bus.clone(),
            budgets: None,
            redact_at_rest: self.redact_at_rest,
        }
    }
}

/// Where one run is.
pub(super) enum Stage {
    /// Waiting for the folder's lock: a cancel ends it at once.
    Queued(SpawnHandle),
    /// The lock is held and the registry starts the CLI; a cancel waits for it.
    Starting {
        cancel: Option<String>,
    },
    Running(Recipient<Cancel>),
    /// A usage limit stopped it: it sleeps until `resumes_at` (a cancel ends it at once).
    Waiting(SpawnHandle),
    /// Going back to `queued` after a limit (the budget is checked, the row stored); a cancel
    /// waits for it.
    Requeueing {
        cancel: Option<String>,
    },
    /// Ended without a process; its record is being stored.
    Ending,
}

pub(super) struct Run {
    pub(super) stage: Stage,
    pub(super) trigger: TriggerKind,
    pub(super) exec: Execution,
    /// A usage limit stopped an earlier attempt.
    pub(super) again: bool,
}

impl ProactiveAgent {
    /// Records a scheduled fire that did not run because a budget was spent.
    pub(super) fn record_skipped(
        &mut self,
        spent: crate::domain::budget::Exhaustion,
        fire_at: Option<String>,
        ctx: &mut Context<Self>,
    ) {
        let now = time::now();
        let exec = Execution {
            id: ExecutionId::new(),
            agent_id: self.agent.id.clone(),
            trigger_kind: TriggerKind::Cron,
            status: ExecutionStatus::Skipped,
            exit_code: None,
            started_at: None,
            finished_at: Some(now.clone()),
            cost_usd: None,
            input_tokens: None,
            output_tokens: None,
            output: String::new(),
            raw_output: String::new(),
            error: Some(format!("skipped: {}", spent.message())),
            created_at: now,
            resumes_at: None,
            owner_node: self.deps.node_name(),
            fire_at,
        };
        tracing::info!(agent = %self.agent.id, "a spent budget skips this fire");
        let (store, stored) = (self.deps.store.clone(), exec.clone());
        let insert = async move { store.run(move |conn| agents::insert_execution(conn, &stored)).await };
        ctx.spawn(insert.into_actor(self).map(move |inserted, act, _ctx| match inserted {
            Ok(()) => act.deps.records().publish("agent.execution.finished", "execution_finished", &act.agent, &exec),
            Err(StoreError::Conflict(_)) => tracing::debug!(agent = %act.agent.id, "another node recorded this fire"),
            Err(e) => tracing::error!(agent = %act.agent.id, error = %e, "could not record a skipped fire"),
        }));
    }

    /// Records and queues a run. `fire_at`: the scheduled time a cron run is for; when another
    /// node already ran that fire, the insert is refused (`StoreError::Conflict`).
    pub(super) fn start_run(
        &mut self,
        trigger: TriggerKind,
        fire_at: Option<String>,
    ) -> ResponseActFuture<Self, Result<Execution, StoreError>> {
        let exec = Execution {
            id: ExecutionId::new(),
            agent_id: self.agent.id.clone(),
            trigger_kind: trigger,
            status: ExecutionStatus::Queued,
            exit_code: None,
            started_at: None,
            finished_at: None,
            cost_usd: None,
            input_tokens: None,
            output_tokens: None,
            output: String::new(),
            raw_output: String::new(),
            error: None,
            created_at: time::now(),
            resumes_at: None,
            owner_node: self.deps.node_name(),
            fire_at,
        };
        let (store, stored) = (self.deps.store.clone(), exec.clone());
        let insert = async move { store.run(move |conn| agents::insert_execution(conn, &stored)).await };
        Box::pin(insert.into_actor(self).map(move |inserted, act, ctx| {
            inserted?;
            act.deps.records().publish("agent.execution.queued", "execution_queued", &act.agent, &exec);
            let waiting = act.wait_for_folder(exec.id.clone(), ctx);
            let run =
                Run { stage: Stage::Queued(waiting), trigger: exec.trigger_kind, exec: exec.clone(), again: false };
            act.runs.insert(exec.id.clone(), run);
            Ok(exec)
        }))
    }

    pub(super) fn wait_for_folder(&mut self, id: ExecutionId, ctx: &mut Context<Self>) -> SpawnHandle {
        let holder = format!("agent {} (execution {id})", self.agent.name);
        let (queue, path) = (self.deps.locks.clone(), PathBuf::from(&self.agent.cwd));
        let waiting = async move { locks::acquire(&queue, path, holder).await };
        ctx.spawn(waiting.into_actor(self).map(move |lock, act, ctx| act.on_lock(id, lock, ctx)))
    }

    /// The folder is ours: mark the run running (stored first), then have the registry start it.
    fn on_lock(&mut self, id: ExecutionId, lock: Result<DirLock, LockGone>, ctx: &mut Context<Self>) {
        let lock = match lock {
            Ok(lock) => lock,
            Err(e) => return self.end_unstarted(&id, ExecutionStatus::Failure, e.to_string(), ctx),
        };
        let Some(run) = self.runs.get_mut(&id) else { return };
        run.stage = Stage::Starting { cancel: None };
        run.exec.status = ExecutionStatus::Running;
        run.exec.started_at = Some(time::now());
        let exec = run.exec.clone();
        let records = self.deps.records();
        records.publish("agent.execution.started", "execution_started", &self.agent, &exec);
        let parent = ctx.address().recipient();
        let start = StartRun { agent: self.agent.clone(), exec: exec.clone(), lock, parent, again: run.again };
        let registry = self.deps.registry.clone();
        let started = async move {
            records.save(exec).await;
            registry.send(start).await.unwrap_or_else(|e| Err(format!("the session registry is unavailable: {e}")))
        };
        ctx.spawn(started.into_actor(self).map(move |started, act, ctx| match started {
            Ok(cancel_to) => {
                let Some(run) = act.runs.get_mut(&id) else { return };
                if let Stage::Starting { cancel: Some(reason) } = &run.stage {
                    cancel_to.do_send(Cancel { reason: reason.clone() });
                }
                run.stage = Stage::Running(cancel_to);
            }
            Err(reason) => act.end_unstarted(&id, ExecutionStatus::Failure, reason, ctx),
        }));
    }

    /// Ends a run that never got a process (cancelled while queued, no lock, spawn failure; or
    /// one waiting for a limit).
    pub(super) fn end_unstarted(
        &mut self,
        id: &ExecutionId,
        status: ExecutionStatus,
        error: String,
        ctx: &mut Context<Self>,
    ) {
        let Some(run) = self.runs.get_mut(id) else { return };
        if matches!(run.stage, Stage::Ending) {
            return;
        }
        run.stage = Stage::Ending;
        run.exec.status = status;
        run.exec.error = Some(error);
        run.exec.resumes_at = None;
        run.exec.finished_at = Some(time::now());
        let (records, exec) = (self.deps.records(), run.exec.clone());
        let stored = async move {
            records.save(exec.clone()).await;
            exec
        };
        ctx.spawn(stored.into_actor(self).map(|exec, act, ctx| {
            tracing::info!(execution = %exec.id, agent = %act.agent.name, status = %exec.status, "agent run ended");
            act.deps.records().publish("agent.execution.finished", "execution_finished", &act.agent, &exec);
            act.run_ended(exec, ctx);
        }));
    }

    /// Asks run `id` to end; false when there is no such run.
    pub(super) fn cancel(&mut self, id: &ExecutionId, reason: String, ctx: &mut Context<Self>) -> bool {
        let Some(run) = self.runs.get_mut(id) else { return false };
        match &mut run.stage {
            Stage::Queued(waiting) | Stage::Waiting(waiting) => {
                ctx.cancel_future(*waiting);
                self.end_unstarted(id, ExecutionStatus::Cancelled, reason, ctx);
            }
            Stage::Starting { cancel } | Stage::Requeueing { cancel } => *cancel = Some(reason),
            Stage::Running(to) => to.do_send(Cancel { reason }),
            Stage::Ending => {}
        }
        true
    }

    fn run_ended(&mut self, exec: Execution, ctx: &mut Context<Self>) {
        self.runs.remove(&exec.id);
        match exec.status {
            ExecutionStatus::Success => self.agent.consecutive_failures = 0,
            status if status.is_failure() => self.agent.consecutive_failures += 1,
            _ => {}
        }
        if self.agent.consecutive_failures >= MAX_CONSECUTIVE_FAILURES && self.agent.status == AgentStatus::Active {
            tracing::warn!(agent = %self.agent.id, failures = self.agent.consecutive_failures, "the agent failed too often in a row; it stops firing until resumed");
            self.agent.status = AgentStatus::Error;
            self.disarm(ctx);
            self.agent.next_run_at = None;
        }
        self.save(ctx);
        let (store, agent_id) = (self.deps.store.clone(), self.agent.id.clone());
        ctx.spawn(
            async move {
                if let Err(e) = store.run(move |conn| agents::prune_history(conn, &agent_id)).await {
                    tracing::warn!(error = %e, "could not prune an agent's history");
                }
            }
            .into_actor(self),
        );
        self.settle_retiring(ctx);
    }

    /// Retiring, and no run left: tell whoever waits, and stop.
    pub(super) fn settle_retiring(&mut self, ctx: &mut Context<Self>) {
        if self.runs.is_empty() {
            if let Some(retiring) = self.retiring.take() {
                for w in retiring.waiters {
                    let _ = w.send(());
                }
                ctx.stop();
            }
        }
    }
}

impl Handler<CancelRun> for ProactiveAgent {
    type Result = bool;

    fn handle(&mut self, msg: CancelRun, ctx: &mut Context<Self>) -> bool {
        self.cancel(&msg.execution_id, msg.reason, ctx)
    }
}

impl Handler<RunEnded> for ProactiveAgent {
    type Result = ();

    fn handle(&mut self, msg: RunEnded, ctx: &mut Context<Self>) {
        if msg.execution.status == ExecutionStatus::WaitingForLimit {
            self.wait_for_limit(msg.execution, ctx);
        } else {
            self.run_ended(msg.execution, ctx);
        }
    }
}

impl Handler<Retire> for ProactiveAgent {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, msg: Retire, ctx: &mut Context<Self>) -> Self::Result {
        self.disarm(ctx);
        let (tx, rx) = tokio::sync::oneshot::channel();
        let retiring = self.retiring.get_or_insert_with(|| Retiring {
            waiters: Vec::new(),
            reason: msg.reason.clone(),
            keep_waiting: msg.keep_waiting,
        });
        retiring.waiters.push(tx);
        if msg.keep_waiting {
            self.shelve_waiting(ctx);
        }
        let ids: Vec<ExecutionId> = self.runs.keys().cloned().collect();
        for id in ids {
            self.cancel(&id, msg.reason.clone(), ctx);
        }
        self.settle_retiring(ctx);
        Box::pin(async move {
            let _ = rx.await;
        })
    }
}
