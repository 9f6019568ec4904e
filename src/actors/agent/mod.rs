//! `ProactiveAgent`: one actor per scheduled agent.
//!
//! It owns the agent's row (the database follows it), computes the next fire time from the cron
//! schedule and sleeps until then, starts a run (a one-turn [`OneTurn`](super::agent_run::OneTurn)) per fire or manual trigger, and counts
//! failures: after [`MAX_CONSECUTIVE_FAILURES`] in a row the agent goes to `error` and stops
//! firing until resumed. A fire that comes while the previous scheduled run is still going is
//! skipped. A fire time missed while the service was down runs once when the actor starts, not
//! once per miss. A run that meets a usage limit is not a failure: it waits for the reset and
//! runs again ([`limits`]), also after a restart.

use std::collections::HashMap;
use std::time::Duration;

use actix::prelude::*;
use chrono::{DateTime, Utc};

mod limits;
mod runs;

use self::runs::Run;
pub use self::runs::RunDeps;
use crate::db::agents::{self, Agent, Execution};
use crate::db::StoreError;
use crate::domain::agent::{AgentStatus, TriggerKind};
use crate::domain::cron::CronSchedule;
use crate::domain::ids::ExecutionId;
use crate::domain::time;

/// Failures in a row that put an agent in `error`.
pub const MAX_CONSECUTIVE_FAILURES: i32 = 5;
/// The longest single sleep; longer waits wake and re-arm (far-future schedules, clock jumps).
const MAX_SLEEP: Duration = Duration::from_secs(3600);

// ---------------------------------------------------------------------------------------------
// Messages

/// Run once now, whatever the status (a manual trigger).
#[derive(Message)]
#[rtype(result = "Result<Execution, StoreError>")]
pub struct TriggerNow;

/// A change to the agent, already validated.
#[derive(Debug, Clone)]
pub enum Change {
    Edit(AgentEdit),
    Pause,
    /// Back to `active`, failures forgiven.
    Resume,
}

#[derive(Debug, Clone, Default)]
pub struct AgentEdit {
    pub name: Option<String>,
    pub objective: Option<String>,
    pub schedule: Option<String>,
    pub cwd: Option<String>,
    /// `Some(None)` clears it.
    pub model: Option<Option<String>>,
    pub timeout_ms: Option<i64>,
    pub workspace_mode: Option<crate::domain::workspace::WorkspaceMode>,
    pub agent: Option<crate::domain::agent_kind::AgentKind>,
    /// `Some(None)` clears it.
    pub max_budget_usd: Option<Option<f64>>,
}

#[derive(Message)]
#[rtype(result = "Result<Agent, StoreError>")]
pub struct Apply(pub Change);

/// The agent as this actor knows it.
#[derive(Message)]
#[rtype(result = "Agent")]
pub struct Current;

/// Cancel one of this agent's runs; answers whether it was found.
#[derive(Message)]
#[rtype(result = "bool")]
pub struct CancelRun {
    pub execution_id: ExecutionId,
    pub reason: String,
}

/// Stop firing, cancel every run, wait for them to end, stop.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Retire {
    pub reason: String,
    /// Runs waiting for a limit are left stored as they are (the service shuts down: the next
    /// start takes them up), not cancelled (the agent is deleted).
    pub keep_waiting: bool,
}

#[derive(Message)]
#[rtype(result = "()")]
struct Fire;

// ---------------------------------------------------------------------------------------------
// State

pub struct ProactiveAgent {
    agent: Agent,
    schedule: Option<CronSchedule>,
    deps: RunDeps,
    timer: Option<SpawnHandle>,
    runs: HashMap<ExecutionId, Run>,
    retiring: Option<Retiring>,
}

/// The agent is going away once its runs have ended.
struct Retiring {
    waiters: Vec<tokio::sync::oneshot::Sender<()>>,
    reason: String,
    keep_waiting: bool,
}

fn parse_time(s: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s).ok().map(|t| t.with_timezone(&Utc))
}

fn format_time(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

impl ProactiveAgent {
    pub fn new(agent: Agent, deps: RunDeps) -> ProactiveAgent {
        let schedule = match CronSchedule::parse(&agent.schedule) {
            Ok(s) => Some(s),
            Err(e) => {
                tracing::error!(agent = %agent.id, error = %e, "a stored schedule does not parse; the agent will not fire");
                None
            }
        };
        ProactiveAgent { agent, schedule, deps, timer: None, runs: HashMap::new(), retiring: None }
    }

    fn save(&mut self, ctx: &mut Context<Self>) {
        self.agent.updated_at = time::now();
        let (store, agent) = (self.deps.store.clone(), self.agent.clone());
        ctx.spawn(
            async move {
                if let Err(e) = store.run(move |conn| agents::save(conn, &agent)).await {
                    tracing::error!(error = %e, "could not store an agent");
                }
            }
            .into_actor(self),
        );
    }

    /// Stores the next fire time alone: not an edit (`updated_at` stays), so it never
    /// overwrites what another node changed meanwhile.
    fn save_next_run(&mut self, ctx: &mut Context<Self>) {
        let (store, id, next) = (self.deps.store.clone(), self.agent.id.clone(), self.agent.next_run_at.clone());
        ctx.spawn(
            async move {
                if let Err(e) = store.run(move |conn| agents::save_next_run(conn, &id, next.as_deref())).await {
                    tracing::error!(error = %e, "could not store an agent's next fire time");
                }
            }
            .into_actor(self),
        );
    }

    fn disarm(&mut self, ctx: &mut Context<Self>) {
        if let Some(timer) = self.timer.take() {
            ctx.cancel_future(timer);
        }
    }

    /// Sleeps until the next fire time after now (while active), and stores it.
    fn arm(&mut self, ctx: &mut Context<Self>) {
        self.disarm(ctx);
        let next = match (&self.schedule, self.agent.status) {
            (Some(schedule), AgentStatus::Active) => schedule.next_after(Utc::now()),
            _ => None,
        };
        let next_text = next.map(format_time);
        if next_text != self.agent.next_run_at {
            self.agent.next_run_at = next_text;
            // In a cluster every node arms; the leader, which fires, records the time.
            if self.deps.fires_schedules() {
                self.save_next_run(ctx);
            }
        }
        if let Some(at) = next {
            self.sleep_until(at, ctx);
        }
    }

    fn sleep_until(&mut self, at: DateTime<Utc>, ctx: &mut Context<Self>) {
        let wait = (at - Utc::now()).to_std().unwrap_or(Duration::ZERO);
        self.timer = Some(if wait > MAX_SLEEP {
            ctx.run_later(MAX_SLEEP, move |act, ctx| act.sleep_until(at, ctx))
        } else {
            ctx.run_later(wait, |_, ctx| ctx.notify(Fire))
        });
    }

    fn apply(&mut self, change: Change) {
        match change {
            Change::Pause => self.agent.status = AgentStatus::Paused,
            Change::Resume => {
                self.agent.status = AgentStatus::Active;
                self.agent.consecutive_failures = 0;
            }
            Change::Edit(edit) => {
                if let Some(v) = edit.name {
                    self.agent.name = v;
                }
                if let Some(v) = edit.objective {
                    self.agent.objective = v;
                }
                if let Some(v) = edit.schedule {
                    self.schedule = CronSchedule::parse(&v).ok();
                    self.agent.schedule = v;
                }
                if let Some(v) = edit.cwd {
                    self.agent.cwd = v;
                }
                if let Some(v) = edit.model {
                    self.agent.model = v;
                }
                if let Some(v) = edit.max_budget_usd {
                    self.agent.max_budget_usd = v;
                }
                if let Some(v) = edit.timeout_ms {
                    self.agent.timeout_ms = v;
                }
                if let Some(v) = edit.workspace_mode {
                    self.agent.workspace_mode = v;
                }
                if let Some(v) = edit.agent {
                    self.agent.agent = v;
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Handlers

impl Actor for ProactiveAgent {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        // Runs a limit stopped before a restart first (nothing else is handled meanwhile), so a
        // missed fire sees a waiting scheduled run as still going.
        self.restore_waiting(ctx);
        let missed = self.agent.status == AgentStatus::Active
            && self.agent.next_run_at.as_deref().and_then(parse_time).is_some_and(|at| at <= Utc::now());
        if missed {
            tracing::info!(agent = %self.agent.id, "a fire time passed while the service was down; running once now");
            ctx.notify(Fire);
        } else {
            self.arm(ctx);
        }
    }
}

impl Handler<Fire> for ProactiveAgent {
    type Result = ();

    fn handle(&mut self, _msg: Fire, ctx: &mut Context<Self>) {
        self.timer = None;
        if self.agent.status != AgentStatus::Active || self.retiring.is_some() {
            return;
        }
        if !self.deps.fires_schedules() {
            // In a cluster every node arms every schedule, so a new leader takes over at once;
            // only the leader's fire runs.
            tracing::debug!(agent = %self.agent.id, "not the cluster's leader: the leader runs this fire");
        } else if self.runs.values().any(|r| r.trigger == TriggerKind::Cron) {
            tracing::info!(agent = %self.agent.id, "the previous scheduled run is still going; skipping this fire");
        } else {
            let check = self
                .deps
                .budgets
                .send(crate::actors::budgets::CheckBudget { project_id: self.agent.project_id.clone() });
            // The time this fire is for, read before `arm` below moves on to the next one.
            let fire_at = self.agent.next_run_at.clone();
            ctx.spawn(check.into_actor(self).then(move |checked, act, ctx| {
                if let Ok(Err(spent)) = checked {
                    act.record_skipped(spent, fire_at, ctx);
                    return Box::pin(actix::fut::ready(())) as std::pin::Pin<Box<dyn ActorFuture<Self, Output = ()>>>;
                }
                Box::pin(act.start_run(TriggerKind::Cron, fire_at).map(|started, act, _| match started {
                    Ok(_) => {}
                    Err(StoreError::Conflict(_)) => {
                        tracing::info!(agent = %act.agent.id, "this fire already ran on another node");
                    }
                    Err(e) => tracing::error!(agent = %act.agent.id, error = %e, "could not start a scheduled run"),
                }))
            }));
        }
        self.arm(ctx);
    }
}

impl Handler<TriggerNow> for ProactiveAgent {
    type Result = ResponseActFuture<Self, Result<Execution, StoreError>>;

    fn handle(&mut self, _msg: TriggerNow, _ctx: &mut Context<Self>) -> Self::Result {
        if self.retiring.is_some() {
            return Box::pin(actix::fut::ready(Err(StoreError::NotFound)));
        }
        self.start_run(TriggerKind::Manual, None)
    }
}

impl Handler<Apply> for ProactiveAgent {
    type Result = ResponseActFuture<Self, Result<Agent, StoreError>>;

    fn handle(&mut self, msg: Apply, ctx: &mut Context<Self>) -> Self::Result {
        self.apply(msg.0);
        self.agent.updated_at = time::now();
        self.disarm(ctx);
        self.agent.next_run_at = None;
        // Store the change before answering, then re-arm (which stores the next fire time).
        let (store, agent) = (self.deps.store.clone(), self.agent.clone());
        Box::pin(async move { store.run(move |conn| agents::save(conn, &agent)).await }.into_actor(self).map(
            |stored, act, ctx| {
                stored?;
                act.arm(ctx);
                Ok(act.agent.clone())
            },
        ))
    }
}

/// Cluster mode: the agent as stored after another node changed it, taken as it is (nothing
/// is stored again), and armed anew.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Adopt(pub Agent);

impl Handler<Adopt> for ProactiveAgent {
    type Result = ();

    fn handle(&mut self, msg: Adopt, ctx: &mut Context<Self>) {
        if self.retiring.is_some() {
            return;
        }
        self.schedule = CronSchedule::parse(&msg.0.schedule).ok();
        self.agent = msg.0;
        self.arm(ctx);
    }
}

impl Handler<Current> for ProactiveAgent {
    type Result = MessageResult<Current>;

    fn handle(&mut self, _msg: Current, _ctx: &mut Context<Self>) -> Self::Result {
        MessageResult(self.agent.clone())
    }
}
