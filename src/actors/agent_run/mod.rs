//! An agent run: one execution of a scheduled agent, as a one-turn conversation ([`OneTurn`])
//! on the CLI supervisor. Its agent waits for the folder's lock, the registry spawns the CLI
//! (stdio stream-json, `initialize` registering the `PreToolUse` hook, so the permission engine
//! decides and audits every tool call) and starts the supervisor with this conversation, which
//! holds the lock until the run ends. Once the CLI is ready the objective goes as the one user
//! turn; after the `result` stdin is closed, the CLI's cue to finish. It keeps the raw lines and
//! the clean answer, publishes `agent.execution.*` events on the run's own topic, and records
//! how the run ended: `success` (exit 0), `failure` (non-zero exit, spawn error, a refused
//! handshake), `timeout` or `cancelled` (both: SIGTERM to the tree, SIGKILL after the grace).
//! A run whose turn met a usage limit has not ended: it is stored `waiting_for_limit` with
//! `resumes_at`, and its agent runs it again then (a new process; the raw lines, cost and
//! tokens of every attempt add up).

use std::time::Duration;

use actix::prelude::*;
use serde_json::Value;

use super::bus::{Event, Publish};
use super::limits::LimitPolicy;
use super::locks::DirLock;
use crate::db::agents::{self, Agent, Execution};
use crate::db::usage::{self, NewUsage};
use crate::db::Store;
use crate::domain::agent::ExecutionStatus;
use crate::domain::agent_events::AgentEvent;
use crate::domain::ids::{ProjectId, SessionId};
use crate::domain::time;
use crate::protocol::incoming::{limit_of, Incoming, Kind, LimitHit, LimitInfo};
use crate::supervisor::conversation::{Conversation, Ctx, ProcessEnd, Step};
use crate::supervisor::process::CliProcess;
use crate::transport::OutLine;

/// The raw lines kept per run; past this they are counted, not kept.
pub const MAX_RAW_BYTES: usize = 16 * 1024 * 1024;

/// A run's actor: the CLI supervisor running one turn.
pub type AgentRunProcess = CliProcess<OneTurn>;

mod limits;

use self::limits::{add, Spent};

// ---------------------------------------------------------------------------------------------
// Messages

/// End the run: SIGTERM to its tree, SIGKILL after the grace. Recorded as `cancelled` with
/// `reason`.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Cancel {
    pub reason: String,
}

/// Sent to whoever started the run when it has ended and is stored.
#[derive(Message, Debug, Clone)]
#[rtype(result = "()")]
pub struct RunEnded {
    pub execution: Execution,
}

/// Why a run was asked to end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunStop {
    Timeout(String),
    Cancelled(String),
}

// ---------------------------------------------------------------------------------------------
// State

/// Where a run's events and records go.
#[derive(Clone)]
pub struct RunRecords {
    pub store: Store,
    pub bus: Recipient<Publish>,
    /// Told after a run's cost is in the ledger (only the run's own records carry it).
    pub budgets: Option<crate::actors::session::holds::BudgetLink>,
    /// Runs are stored without secrets (the `at_rest` redaction).
    pub redact_at_rest: bool,
}

impl RunRecords {
    pub fn publish(&self, kind: &'static str, name: &str, agent: &Agent, exec: &Execution) {
        self.bus.do_send(Publish(Event::for_execution(kind, name, exec.id.as_str(), summary(agent, exec))));
    }

    /// Adds a run's cost to the ledger.
    pub fn record_usage(&self, usage: NewUsage, project_id: Option<ProjectId>) {
        let (store, budgets, cost_usd) = (self.store.clone(), self.budgets.clone(), usage.cost_usd);
        actix::spawn(async move {
            if let Err(e) = store.run(move |conn| usage::record(conn, &usage)).await {
                tracing::error!(error = %e, "could not record an agent run's cost in the ledger");
            }
            if let Some(budgets) = budgets {
                budgets.keeper.do_send(crate::actors::budgets::TurnCost { project_id, cost_usd });
            }
        });
    }

    /// Stores the execution as it is now.
    pub async fn save(&self, mut exec: Execution) {
        let at_rest = self.redact_at_rest;
        let saved = self.store.run(move |conn| {
            // Scrubbed here, on the blocking pool: the output can be megabytes.
            if at_rest {
                agents::scrub_execution(&mut exec);
            }
            agents::save_execution(conn, &exec)
        });
        if let Err(e) = saved.await {
            tracing::error!(error = %e, "could not store an agent execution");
        }
    }
}

/// The execution without its output, as events carry it.
pub fn summary(agent: &Agent, exec: &Execution) -> String {
    summary_value(agent, exec).to_string()
}

fn summary_value(agent: &Agent, exec: &Execution) -> Value {
    let mut row = serde_json::to_value(exec).unwrap_or(Value::Null);
    if let Some(obj) = row.as_object_mut() {
        obj.remove("raw_output");
        obj.insert("agent_name".to_string(), Value::String(agent.name.clone()));
    }
    row
}

pub struct OneTurn {
    pub agent: Agent,
    pub exec: Execution,
    pub records: RunRecords,
    pub parent: Recipient<RunEnded>,
    /// The folder's lock, released when the run ends.
    pub lock: Option<DirLock>,
    raw_dropped: usize,
    assistant_text: Vec<String>,
    result_text: Option<String>,
    /// The model the CLI named in its `system`/`init`, for the ledger.
    model: Option<String>,
    /// The turn failed (or could not be sent), whatever the CLI's exit status says.
    turn_failure: Option<String>,
    /// How to wait at a limit, and where to report one.
    limits: LimitPolicy,
    /// The CLI's latest limit state, for the result that may follow.
    limit_info: Option<LimitInfo>,
    /// The turn's result was a limit.
    limit_hit: Option<LimitHit>,
    /// What earlier attempts of this execution (stopped by a limit) cost.
    earlier: Spent,
}

impl OneTurn {
    pub fn new(
        agent: Agent,
        exec: Execution,
        records: RunRecords,
        parent: Recipient<RunEnded>,
        lock: DirLock,
        limits: LimitPolicy,
    ) -> Self {
        let earlier =
            Spent { cost_usd: exec.cost_usd, input_tokens: exec.input_tokens, output_tokens: exec.output_tokens };
        OneTurn {
            agent,
            exec,
            records,
            parent,
            lock: Some(lock),
            raw_dropped: 0,
            assistant_text: Vec::new(),
            result_text: None,
            model: None,
            turn_failure: None,
            limits,
            limit_info: None,
            limit_hit: None,
            earlier,
        }
    }

    fn keep_raw(&mut self, line: &str) {
        if self.exec.raw_output.len() + line.len() < MAX_RAW_BYTES {
            self.exec.raw_output.push_str(line);
            self.exec.raw_output.push('\n');
        } else {
            self.raw_dropped += 1;
        }
    }

    fn conclude(&mut self, end: &ProcessEnd<RunStop>) {
        self.exec.exit_code = end.exit.code;
        let hit = self.limit_hit.clone();
        let (status, error) = match (&end.asked, &end.failure, &hit) {
            (Some(RunStop::Timeout(reason)), _, _) => (ExecutionStatus::Timeout, Some(reason.clone())),
            (Some(RunStop::Cancelled(reason)), _, _) => (ExecutionStatus::Cancelled, Some(reason.clone())),
            // A limit stopped the turn: whatever the exit, it runs again after the reset.
            (None, _, Some(hit)) => self.wait_for_limit(hit),
            (None, Some(failure), None) => (ExecutionStatus::Failure, Some(end.with_stderr(failure.clone()))),
            (None, None, None) if end.exit.code == Some(0) => match &self.turn_failure {
                None => (ExecutionStatus::Success, None),
                Some(why) => (ExecutionStatus::Failure, Some(why.clone())),
            },
            (None, None, None) => {
                (ExecutionStatus::Failure, Some(end.with_stderr(format!("the CLI {}", end.exit.how))))
            }
        };
        self.exec.status = status;
        self.exec.error = error;
        if self.raw_dropped > 0 {
            self.exec.raw_output.push_str(&format!(
                "[{} more lines over the {MAX_RAW_BYTES}-byte cap were not kept]\n",
                self.raw_dropped
            ));
        }
        self.exec.output = self.result_text.clone().unwrap_or_else(|| self.assistant_text.join("\n"));
        if status.has_ended() {
            self.exec.finished_at = Some(time::now());
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Hooks and handlers

impl Conversation for OneTurn {
    type Asked = RunStop;

    fn scope(&self) -> (Option<ProjectId>, Option<SessionId>) {
        (self.agent.project_id.clone(), None)
    }

    fn started(p: &mut AgentRunProcess, ctx: &mut Ctx<Self>) {
        let timeout = Duration::from_millis(p.conv.agent.timeout_ms.max(1) as u64);
        ctx.run_later(timeout, move |act, ctx| {
            let reason = format!("the run passed its timeout of {} ms", timeout.as_millis());
            tracing::warn!(execution = %act.conv.exec.id, %reason, "ending an agent run");
            act.stop(libc::SIGTERM, Some(RunStop::Timeout(reason)), ctx);
        });
    }

    fn ready(p: &mut AgentRunProcess, ctx: &mut Ctx<Self>) {
        let sent = p
            .cli
            .user_turn(&p.conv.agent.objective)
            .and_then(|turn| p.cli.write(OutLine::new(turn)).map_err(|e| e.to_string()));
        if let Err(e) = sent {
            tracing::warn!(execution = %p.conv.exec.id, error = %e, "could not send the objective");
            p.conv.turn_failure = Some(format!("the objective could not be sent: {e}"));
            p.stop(libc::SIGTERM, None, ctx);
        }
    }

    fn on_line(p: &mut AgentRunProcess, line: String, msg: Incoming, events: Vec<AgentEvent>, _ctx: &mut Ctx<Self>) {
        let run = &mut p.conv;
        run.keep_raw(&line);
        let data = if msg.message_type == "invalid" { Value::String(line.clone()).to_string() } else { line.clone() };
        let exec_id = run.exec.id.as_str();
        let bus = &run.records.bus;
        bus.do_send(Publish(Event::for_execution("agent.execution.output", &msg.message_type, exec_id, data)));
        // What it says in the vocabulary every agent shares, on the run's topic too.
        for event in events {
            let (kind, name) = event.names();
            bus.do_send(Publish(Event::for_execution(kind, name, exec_id, event.data(&run.agent.agent))));
            match event {
                AgentEvent::AssistantMessage { text, .. } => run.assistant_text.push(text),
                AgentEvent::TurnResult { status, text, .. } => {
                    run.result_text = text;
                    if status.is_error() {
                        run.turn_failure =
                            Some(format!("the turn ended as {}", serde_json::to_value(status).unwrap_or_default()));
                    }
                }
                _ => {}
            }
        }
        match &msg.kind {
            Kind::SystemInit { model: Some(model), .. } => run.model = Some(model.clone()),
            Kind::RateLimit(info) => run.limit_reported(info),
            _ => {}
        }
        if let Kind::Result(result) = msg.kind {
            if let Some(hit) = limit_of(&result, run.limit_info.as_ref()) {
                run.limit_met(hit);
            }
            let (input, output) = result
                .cumulative_tokens
                .unwrap_or((result.input_tokens.unwrap_or(0), result.output_tokens.unwrap_or(0)));
            let model = run.model.clone().or_else(|| run.agent.model.clone());
            // A CLI that reports no cost: its tokens at its model's price, when it has one.
            let cost = result.total_cost_usd.or_else(|| {
                let prices = run.records.budgets.as_ref().map(|b| b.prices.clone())?;
                prices.of(model.as_deref()).map(|price| price.cost(input, output))
            });
            // This process's figures, after those of the attempts a limit stopped.
            run.exec.cost_usd = add(run.earlier.cost_usd, cost);
            run.exec.input_tokens = add(run.earlier.input_tokens, Some(input));
            run.exec.output_tokens = add(run.earlier.output_tokens, Some(output));
            // One process, one turn: its cumulative figures are what the run cost.
            run.records.record_usage(
                NewUsage {
                    recorded_at: time::now(),
                    project_id: run.agent.project_id.as_ref().map(ToString::to_string),
                    session_id: None,
                    execution_id: Some(run.exec.id.to_string()),
                    agent_id: Some(run.agent.id.to_string()),
                    agent: run.agent.agent.to_string(),
                    model,
                    cost_usd: cost.unwrap_or(0.0).max(0.0),
                    input_tokens: input.max(0),
                    output_tokens: output.max(0),
                },
                run.agent.project_id.clone(),
            );
            // One turn: closing stdin is the CLI's cue to finish.
            p.cli.close_input();
        }
    }

    fn on_oversized(p: &mut AgentRunProcess, _len: usize) {
        p.conv.raw_dropped += 1;
    }

    fn ended(p: &mut AgentRunProcess, end: ProcessEnd<RunStop>) -> Step<Self> {
        p.conv.conclude(&end);
        let (records, exec) = (p.conv.records.clone(), p.conv.exec.clone());
        Box::pin(async move { records.save(exec).await }.into_actor(p))
    }

    fn released(p: &mut AgentRunProcess) {
        let run = &mut p.conv;
        tracing::info!(execution = %run.exec.id, agent = %run.agent.name, status = %run.exec.status, "agent run ended");
        run.lock = None;
        if run.exec.status == ExecutionStatus::WaitingForLimit {
            // Not an end: the run's stream goes on when it runs again.
            let data = run.limit_event();
            let event = Event::for_execution(
                "agent.execution.limit_reached",
                "execution_limit_reached",
                run.exec.id.as_str(),
                data,
            );
            run.records.bus.do_send(Publish(event));
        } else {
            run.records.publish("agent.execution.finished", "execution_finished", &run.agent, &run.exec);
        }
        run.parent.do_send(RunEnded { execution: run.exec.clone() });
    }
}

impl Handler<Cancel> for AgentRunProcess {
    type Result = ();

    fn handle(&mut self, msg: Cancel, ctx: &mut Ctx<OneTurn>) {
        tracing::warn!(execution = %self.conv.exec.id, reason = %msg.reason, "ending an agent run");
        self.stop(libc::SIGTERM, Some(RunStop::Cancelled(msg.reason)), ctx);
    }
}
