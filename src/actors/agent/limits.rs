//! Runs a usage limit stopped. Its run stores it `waiting_for_limit` with `resumes_at` (the
//! reset plus jitter); here it sleeps until then and, if no budget covering it is spent (as for
//! a fire; else it ends `skipped`), goes back to `queued` as the same execution, waits for its
//! folder like any run, and runs again in a new process. A limit is no failure: the agent's
//! failures in a row stay as they are, and while a scheduled run waits the schedule's fires
//! are skipped (the previous scheduled run is still going).
//!
//! Waiting runs outlive the service: a shutdown leaves them stored as they are, restart
//! recovery leaves them alone, and the agent's actor takes them up when it starts (one whose
//! `resumes_at` has passed goes at once). A cancel ends one at once as `cancelled`, and so does
//! deleting its agent; pausing the agent does not touch it (like a queued run, it runs).

use std::time::Duration;

use actix::prelude::*;
use chrono::{DateTime, Utc};

use super::runs::{Run, Stage};
use super::{parse_time, ProactiveAgent, MAX_SLEEP};
use crate::actors::budgets::CheckBudget;
use crate::db::agents::{self, Execution};
use crate::domain::agent::ExecutionStatus;
use crate::domain::budget::Exhaustion;
use crate::domain::ids::ExecutionId;

/// When a waiting run goes again (at once when its time is unreadable).
fn resume_time(exec: &Execution) -> DateTime<Utc> {
    exec.resumes_at.as_deref().and_then(parse_time).unwrap_or_else(Utc::now)
}

impl ProactiveAgent {
    /// Run `exec` ended its attempt at a limit (stored waiting): it sleeps until it resumes.
    pub(super) fn wait_for_limit(&mut self, exec: Execution, ctx: &mut Context<Self>) {
        let id = exec.id.clone();
        tracing::info!(execution = %id, agent = %self.agent.name, resumes_at = ?exec.resumes_at, "an agent run met a usage limit; it runs again after the reset");
        let at = resume_time(&exec);
        let Some(run) = self.runs.get_mut(&id) else { return };
        run.exec = exec;
        let timer = self.sleep_for_limit(id.clone(), at, ctx);
        if let Some(run) = self.runs.get_mut(&id) {
            run.stage = Stage::Waiting(timer);
        }
        // It came back while the agent retires.
        if let Some(retiring) = &self.retiring {
            if retiring.keep_waiting {
                self.shelve_waiting(ctx);
                self.settle_retiring(ctx);
            } else {
                let reason = retiring.reason.clone();
                self.cancel(&id, reason, ctx);
            }
        }
    }

    /// Sleeps until `at` (in steps of at most [`MAX_SLEEP`]), then resumes run `id`.
    fn sleep_for_limit(&mut self, id: ExecutionId, at: DateTime<Utc>, ctx: &mut Context<Self>) -> SpawnHandle {
        let wait = (at - Utc::now()).to_std().unwrap_or(Duration::ZERO);
        if wait > MAX_SLEEP {
            ctx.run_later(MAX_SLEEP, move |act, ctx| {
                let timer = act.sleep_for_limit(id.clone(), at, ctx);
                match act.runs.get_mut(&id) {
                    Some(run) if matches!(run.stage, Stage::Waiting(_)) => run.stage = Stage::Waiting(timer),
                    _ => {
                        ctx.cancel_future(timer);
                    }
                }
            })
        } else {
            ctx.run_later(wait, move |act, ctx| act.resume_after_limit(id, ctx))
        }
    }

    /// The wait is over: the budget is checked, then the run is stored `queued` again.
    fn resume_after_limit(&mut self, id: ExecutionId, ctx: &mut Context<Self>) {
        let Some(run) = self.runs.get_mut(&id) else { return };
        if !matches!(run.stage, Stage::Waiting(_)) {
            return;
        }
        run.stage = Stage::Requeueing { cancel: None };
        let exec = &mut run.exec;
        exec.status = ExecutionStatus::Queued;
        (exec.resumes_at, exec.error, exec.exit_code, exec.finished_at) = (None, None, None, None);
        let (stored, store) = (exec.clone(), self.deps.store.clone());
        let check = self.deps.budgets.send(CheckBudget { project_id: self.agent.project_id.clone() });
        let requeue = async move {
            if let Ok(Err(spent)) = check.await {
                return Err(spent);
            }
            if let Err(e) = store.run(move |conn| agents::save_execution(conn, &stored)).await {
                tracing::error!(error = %e, "could not store an agent execution");
            }
            Ok(())
        };
        ctx.spawn(requeue.into_actor(self).map(move |checked, act, ctx| act.requeued(id, checked, ctx)));
    }

    /// Stored `queued` again (or not, a budget being spent): it waits for its folder.
    fn requeued(&mut self, id: ExecutionId, checked: Result<(), Exhaustion>, ctx: &mut Context<Self>) {
        let Some(run) = self.runs.get_mut(&id) else { return };
        let Stage::Requeueing { cancel } = &mut run.stage else { return };
        if let Some(reason) = cancel.take() {
            return self.end_unstarted(&id, ExecutionStatus::Cancelled, reason, ctx);
        }
        if let Err(spent) = checked {
            tracing::info!(execution = %id, "a spent budget keeps a run from going again after its limit");
            return self.end_unstarted(&id, ExecutionStatus::Skipped, format!("skipped: {}", spent.message()), ctx);
        }
        run.again = true;
        let exec = run.exec.clone();
        tracing::info!(execution = %id, agent = %self.agent.name, "the limit's wait is over; the run is queued again");
        self.deps.records().publish("agent.execution.queued", "execution_queued", &self.agent, &exec);
        let waiting = self.wait_for_folder(id.clone(), ctx);
        if let Some(run) = self.runs.get_mut(&id) {
            run.stage = Stage::Queued(waiting);
        }
    }

    /// Takes up the agent's runs left waiting for a limit (before a restart). Nothing else is
    /// handled until they are known.
    pub(super) fn restore_waiting(&mut self, ctx: &mut Context<Self>) {
        let (store, agent_id) = (self.deps.store.clone(), self.agent.id.clone());
        let load = async move { store.run(move |conn| agents::waiting(conn, &agent_id)).await };
        ctx.wait(load.into_actor(self).map(|loaded, act, ctx| match loaded {
            Ok(rows) => {
                for exec in rows {
                    let (id, at) = (exec.id.clone(), resume_time(&exec));
                    tracing::info!(execution = %id, agent = %act.agent.name, resumes_at = ?exec.resumes_at, "taking up a run that waits for a usage limit");
                    let timer = act.sleep_for_limit(id.clone(), at, ctx);
                    let run = Run { stage: Stage::Waiting(timer), trigger: exec.trigger_kind, exec, again: true };
                    act.runs.insert(id, run);
                }
            }
            Err(e) => tracing::error!(agent = %act.agent.id, error = %e, "could not read the runs waiting for a limit"),
        }));
    }

    /// The service shuts down: runs waiting for a limit stay stored as they are (the next start
    /// takes them up); only their timers go.
    pub(super) fn shelve_waiting(&mut self, ctx: &mut Context<Self>) {
        let waiting: Vec<ExecutionId> =
            self.runs.iter().filter(|(_, r)| matches!(r.stage, Stage::Waiting(_))).map(|(id, _)| id.clone()).collect();
        for id in waiting {
            if let Some(Run { stage: Stage::Waiting(timer), .. }) = self.runs.remove(&id) {
                ctx.cancel_future(timer);
            }
        }
    }
}
