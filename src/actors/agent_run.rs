//! `AgentRun`: one actor per execution of a scheduled agent.
//!
//! It waits for its folder's lock ([`DirLockQueue`](super::locks::DirLockQueue)), then runs the
//! CLI exactly as a session does (stdio stream-json, `initialize` registering the `PreToolUse`
//! hook, so the permission engine decides and audits every tool call), sends the objective as
//! the one user turn, and closes stdin after the `result`. It keeps the raw lines and the clean
//! answer, publishes `agent.execution.*` events on the run's own topic, and records how the
//! run ended: `success` (exit 0), `failure` (non-zero exit, spawn error), `timeout` or
//! `cancelled`. A timeout or cancel sends SIGTERM to the run's process group, then SIGKILL
//! after the grace. The lock is released when the run ends, however it ends (it is dropped
//! with the actor).

use std::time::Duration;

use actix::prelude::*;
use serde_json::Value;
use tokio::sync::mpsc;

use super::bus::{Event, Publish};
use super::locks::{self, Acquire, DirLock};
use super::permissions::Evaluate;
use crate::db::agents::{self, Agent, Execution};
use crate::db::Store;
use crate::domain::agent::ExecutionStatus;
use crate::domain::time;
use crate::process::cgroup::{Cgroup, Containment};
use crate::process::command::{stdio_args, CliOptions};
use crate::process::tree::ProcessTree;
use crate::process::{owned, SESSION_MARKER_ENV};
use crate::protocol::framing::Frame;
use crate::protocol::incoming::{self, Kind};
use crate::protocol::outgoing;
use crate::protocol::requests::{self, CliRequest};
use crate::transport::{stdio, CliOutput, OutLine};

/// The raw lines kept per run; past this they are counted, not kept.
pub const MAX_RAW_BYTES: usize = 16 * 1024 * 1024;
const STDERR_TAIL_BYTES: usize = 4096;
/// After the CLI exits, how long its output may stay open (held by a descendant).
const DRAIN: Duration = Duration::from_secs(2);

// ---------------------------------------------------------------------------------------------
// Messages

/// End the run: SIGTERM to its group, SIGKILL after the grace; a run still waiting for its
/// folder ends at once. Recorded as `cancelled` with `reason`.
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

#[derive(Message)]
#[rtype(result = "()")]
struct Exited {
    how: String,
    code: Option<i32>,
}

// ---------------------------------------------------------------------------------------------
// State

/// What every run needs from the service.
#[derive(Clone)]
pub struct RunDeps {
    pub store: Store,
    pub engine: Recipient<Evaluate>,
    pub bus: Recipient<Publish>,
    pub locks: Recipient<Acquire>,
    pub cli_path: String,
    pub access_token: Option<String>,
    pub kill_grace: Duration,
    /// How each run's process tree is contained (a cgroup each, or process groups).
    pub containment: std::sync::Arc<Containment>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Ending {
    Timeout,
    Cancelled,
    /// The run cannot go on (the CLI refused the handshake): recorded as a failure.
    Failed,
}

pub struct AgentRun {
    deps: RunDeps,
    agent: Agent,
    exec: Execution,
    parent: Recipient<RunEnded>,
    lock: Option<DirLock>,
    tree: Option<ProcessTree>,
    stdin: Option<mpsc::Sender<OutLine>>,
    init_request: String,
    raw_dropped: usize,
    assistant_text: Vec<String>,
    result_text: Option<String>,
    stderr_tail: String,
    ending: Option<(Ending, String)>,
    exit: Option<(String, Option<i32>)>,
    stdout_done: bool,
    stderr_done: bool,
    finishing: bool,
}

impl AgentRun {
    /// Starts a run of `agent` for `exec` (already stored, status `queued`).
    pub fn start(deps: RunDeps, agent: Agent, exec: Execution, parent: Recipient<RunEnded>) -> Addr<AgentRun> {
        let init_request = format!("conduit-run-{}", &exec.id.as_str()[..8]);
        AgentRun {
            deps,
            agent,
            exec,
            parent,
            lock: None,
            tree: None,
            stdin: None,
            init_request,
            raw_dropped: 0,
            assistant_text: Vec::new(),
            result_text: None,
            stderr_tail: String::new(),
            ending: None,
            exit: None,
            stdout_done: false,
            stderr_done: false,
            finishing: false,
        }
        .start()
    }

    fn publish(&self, kind: &'static str, name: &str, data: String) {
        self.deps.bus.do_send(Publish(Event::for_execution(kind, name, self.exec.id.as_str(), data)));
    }

    /// The execution without its output, as events carry it.
    fn summary(&self) -> String {
        let mut row = serde_json::to_value(&self.exec).unwrap_or(Value::Null);
        if let Some(obj) = row.as_object_mut() {
            obj.remove("raw_output");
            obj.insert("agent_name".to_string(), Value::String(self.agent.name.clone()));
        }
        row.to_string()
    }

    fn save(&self, ctx: &mut Context<Self>) {
        let (store, exec) = (self.deps.store.clone(), self.exec.clone());
        ctx.spawn(
            async move {
                if let Err(e) = store.run(move |conn| agents::save_execution(conn, &exec)).await {
                    tracing::error!(error = %e, "could not store an agent execution");
                }
            }
            .into_actor(self),
        );
    }

    fn on_lock(&mut self, lock: Result<DirLock, locks::LockGone>, ctx: &mut Context<Self>) {
        let lock = match lock {
            Ok(lock) => lock,
            Err(e) => return self.finish_without_process(ctx, ExecutionStatus::Failure, e.to_string()),
        };
        self.lock = Some(lock);
        self.exec.status = ExecutionStatus::Running;
        self.exec.started_at = Some(time::now());
        self.save(ctx);
        self.publish("agent.execution.started", "execution_started", self.summary());
        // Its cgroup first (cgroupfs work, off the executor), then the CLI.
        let (containment, id) = (self.deps.containment.clone(), self.exec.id.to_string());
        let cgroup =
            async move { tokio::task::spawn_blocking(move || containment.cgroup_for(&id)).await.ok().flatten() };
        ctx.wait(cgroup.into_actor(self).map(|cgroup, act, ctx| {
            if act.ending.is_some() || act.finishing {
                if let Some(cgroup) = cgroup {
                    tokio::task::spawn_blocking(move || cgroup.kill_and_remove(Duration::from_secs(2)));
                }
                return;
            }
            act.spawn_cli(cgroup, ctx)
        }));
    }

    fn spawn_cli(&mut self, cgroup: Option<Cgroup>, ctx: &mut Context<Self>) {
        let options = CliOptions { model: self.agent.model.clone(), ..Default::default() };
        let mut cmd = tokio::process::Command::new(&self.deps.cli_path);
        cmd.args(stdio_args(&options))
            .current_dir(&self.agent.cwd)
            .process_group(0)
            .env(SESSION_MARKER_ENV, self.exec.id.as_str())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(false);
        if let Some(token) = &self.deps.access_token {
            cmd.env("CLAUDE_CODE_SESSION_ACCESS_TOKEN", token);
        }
        let mut child = match cmd.spawn() {
            Ok(child) => child,
            Err(e) => {
                if let Some(cgroup) = cgroup {
                    tokio::task::spawn_blocking(move || cgroup.kill_and_remove(Duration::from_secs(1)));
                }
                let reason = format!("cannot start the CLI {:?}: {e}", self.deps.cli_path);
                return self.finish_without_process(ctx, ExecutionStatus::Failure, reason);
            }
        };
        let (Some(pid), Some(stdin), Some(stdout), Some(stderr)) =
            (child.id(), child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            let _ = child.start_kill();
            if let Some(cgroup) = cgroup {
                tokio::task::spawn_blocking(move || cgroup.kill_and_remove(Duration::from_secs(2)));
            }
            return self.finish_without_process(
                ctx,
                ExecutionStatus::Failure,
                "the CLI started without its streams".to_string(),
            );
        };
        let pid = pid as i32;
        owned::own(pid);
        // Into its cgroup at once (see `spawn::spawn_cli` for why this is not deferred).
        let cgroup = cgroup.and_then(|cg| match cg.add(pid) {
            Ok(()) => Some(cg),
            Err(e) => {
                tracing::warn!(execution = %self.exec.id, error = %e, "cannot move the CLI into its cgroup; its process group contains it");
                tokio::task::spawn_blocking(move || cg.kill_and_remove(Duration::from_secs(1)));
                None
            }
        });
        self.tree = Some(ProcessTree { pgid: pid, marker: self.exec.id.to_string(), cgroup });
        ctx.add_stream(stdio::stdout_stream(stdout, None));
        ctx.add_stream(stdio::stderr_stream(stderr, None));
        let addr = ctx.address();
        actix::spawn(async move {
            let exited = match child.wait().await {
                Ok(status) => Exited { how: super::spawn::describe_exit(status), code: status.code() },
                Err(e) => Exited { how: format!("could not be waited for: {e}"), code: None },
            };
            owned::release(pid);
            addr.do_send(exited);
        });
        let stdin = stdio::stdin_writer(stdin);
        let _ = stdin.try_send(OutLine::new(outgoing::initialize(&self.init_request)));
        self.stdin = Some(stdin);
        let timeout = Duration::from_millis(self.agent.timeout_ms.max(1) as u64);
        ctx.run_later(timeout, move |act, ctx| {
            let reason = format!("the run passed its timeout of {} ms", timeout.as_millis());
            act.end(Ending::Timeout, reason, ctx);
        });
    }

    /// Timeout or cancel: SIGTERM to the group now, SIGKILL after the grace.
    fn end(&mut self, ending: Ending, reason: String, ctx: &mut Context<Self>) {
        if self.finishing || self.ending.is_some() {
            return;
        }
        self.ending = Some((ending, reason.clone()));
        let Some(tree) = self.tree.clone() else {
            // Still waiting for the folder: nothing to stop.
            let status = match ending {
                Ending::Timeout => ExecutionStatus::Timeout,
                Ending::Cancelled => ExecutionStatus::Cancelled,
                Ending::Failed => ExecutionStatus::Failure,
            };
            return self.finish_without_process(ctx, status, reason);
        };
        if self.exit.is_some() {
            return;
        }
        tracing::warn!(execution = %self.exec.id, pid = tree.pgid, %reason, "ending an agent run");
        self.stdin = None;
        let polite = tree.clone();
        tokio::task::spawn_blocking(move || polite.signal(libc::SIGTERM));
        ctx.run_later(self.deps.kill_grace, move |act, _ctx| {
            if act.exit.is_none() {
                tracing::warn!(execution = %act.exec.id, "the agent's CLI outlived the grace period; killing its tree");
                tokio::task::spawn_blocking(move || tree.signal(libc::SIGKILL));
            }
        });
    }

    fn on_line(&mut self, line: String, ctx: &mut Context<Self>) {
        if self.exec.raw_output.len() + line.len() < MAX_RAW_BYTES {
            self.exec.raw_output.push_str(&line);
            self.exec.raw_output.push('\n');
        } else {
            self.raw_dropped += 1;
        }
        let msg = incoming::parse(&line);
        let data = if msg.message_type == "invalid" { Value::String(line.clone()).to_string() } else { line.clone() };
        self.publish("agent.execution.output", &msg.message_type, data);
        match msg.kind {
            Kind::ControlResponse { request_id, outcome } if request_id == self.init_request => match outcome {
                Ok(_) => {
                    let turn = outgoing::user_turn(&self.agent.objective);
                    if let Some(stdin) = &self.stdin {
                        let _ = stdin.try_send(OutLine::new(turn));
                    }
                }
                Err(e) => self.end(Ending::Failed, format!("the CLI refused initialize: {e}"), ctx),
            },
            Kind::ControlRequest { request_id, subtype, request } => {
                self.answer_cli(&request_id, &subtype, &request, ctx)
            }
            Kind::Result(result) => {
                self.exec.cost_usd = result.total_cost_usd;
                let (input, output) = result
                    .cumulative_tokens
                    .unwrap_or((result.input_tokens.unwrap_or(0), result.output_tokens.unwrap_or(0)));
                self.exec.input_tokens = Some(input);
                self.exec.output_tokens = Some(output);
                if let Ok(v) = serde_json::from_str::<Value>(&line) {
                    self.result_text = v.get("result").and_then(Value::as_str).map(str::to_string);
                }
                // One turn: closing stdin is the CLI's cue to finish.
                self.stdin = None;
            }
            _ if msg.message_type == "assistant" => {
                if let Ok(v) = serde_json::from_str::<Value>(&line) {
                    let blocks = v.pointer("/message/content").and_then(Value::as_array).cloned().unwrap_or_default();
                    self.assistant_text.extend(
                        blocks
                            .iter()
                            .filter(|b| b["type"] == "text")
                            .filter_map(|b| b["text"].as_str().map(str::to_string)),
                    );
                }
            }
            _ => {}
        }
    }

    fn answer_cli(&mut self, request_id: &str, subtype: &str, request: &Value, ctx: &mut Context<Self>) {
        let call = match requests::classify(request_id, subtype, request) {
            CliRequest::Answer(answer) => {
                if let Some(stdin) = &self.stdin {
                    let _ = stdin.try_send(OutLine::new(answer));
                }
                return;
            }
            CliRequest::Decide(call) => call,
        };
        let evaluate = Evaluate { project_id: self.agent.project_id.clone(), session_id: None, call: call.clone() };
        let decided = self.deps.engine.send(evaluate);
        ctx.spawn(decided.into_actor(self).map(move |verdict, act, _ctx| {
            if let Some(stdin) = &act.stdin {
                let _ = stdin.try_send(OutLine::new(requests::answer(&call, verdict.ok())));
            }
        }));
    }

    fn on_stderr(&mut self, line: &str) {
        stdio::keep_tail(&mut self.stderr_tail, line, STDERR_TAIL_BYTES);
    }

    /// Ends a run that never started a process (spawn failure, cancel while queued).
    fn finish_without_process(&mut self, ctx: &mut Context<Self>, status: ExecutionStatus, error: String) {
        if self.finishing {
            return;
        }
        self.finishing = true;
        self.exec.status = status;
        self.exec.error = Some(error);
        self.record_end(ctx);
    }

    /// Once the process is gone and its output drained: end leftovers, store, tell, stop.
    fn maybe_finish(&mut self, ctx: &mut Context<Self>) {
        if self.finishing || self.exit.is_none() || !self.stdout_done || !self.stderr_done {
            return;
        }
        self.finishing = true;
        self.stdin = None;
        let (how, code) = self.exit.clone().unwrap_or_default();
        self.exec.exit_code = code;
        let tail = self.stderr_tail.trim().to_string();
        let with_tail = |reason: String| if tail.is_empty() { reason } else { format!("{reason}; stderr: {tail}") };
        match self.ending.clone() {
            Some((Ending::Timeout, reason)) => {
                self.exec.status = ExecutionStatus::Timeout;
                self.exec.error = Some(reason);
            }
            Some((Ending::Cancelled, reason)) => {
                self.exec.status = ExecutionStatus::Cancelled;
                self.exec.error = Some(reason);
            }
            Some((Ending::Failed, reason)) => {
                self.exec.status = ExecutionStatus::Failure;
                self.exec.error = Some(with_tail(reason));
            }
            None if code == Some(0) => self.exec.status = ExecutionStatus::Success,
            None => {
                self.exec.status = ExecutionStatus::Failure;
                self.exec.error = Some(with_tail(format!("the CLI {how}")));
            }
        }
        if self.raw_dropped > 0 {
            self.exec.raw_output.push_str(&format!(
                "[{} more lines over the {MAX_RAW_BYTES}-byte cap were not kept]\n",
                self.raw_dropped
            ));
        }
        let tree = self.tree.clone();
        let cleanup = tokio::task::spawn_blocking(move || {
            if let Some(tree) = tree {
                tree.end(Duration::from_secs(2));
            }
        });
        ctx.wait(cleanup.into_actor(self).map(|_, act, ctx| act.record_end(ctx)));
    }

    fn record_end(&mut self, ctx: &mut Context<Self>) {
        self.exec.output = self.result_text.clone().unwrap_or_else(|| self.assistant_text.join("\n"));
        self.exec.finished_at = Some(time::now());
        let (store, exec) = (self.deps.store.clone(), self.exec.clone());
        ctx.wait(
            async move { store.run(move |conn| agents::save_execution(conn, &exec)).await }.into_actor(self).map(
                |stored, act, ctx| {
                    if let Err(e) = stored {
                        tracing::error!(execution = %act.exec.id, error = %e, "could not store the end of an agent run");
                    }
                    tracing::info!(execution = %act.exec.id, agent = %act.agent.name, status = %act.exec.status, "agent run ended");
                    act.lock = None;
                    act.publish("agent.execution.finished", "execution_finished", act.summary());
                    act.parent.do_send(RunEnded { execution: act.exec.clone() });
                    ctx.stop();
                },
            ),
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Handlers

impl Actor for AgentRun {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        self.publish("agent.execution.queued", "execution_queued", self.summary());
        let holder = format!("agent {} (execution {})", self.agent.name, self.exec.id);
        let (queue, path) = (self.deps.locks.clone(), std::path::PathBuf::from(&self.agent.cwd));
        let waiting = async move { locks::acquire(&queue, path, holder).await };
        ctx.spawn(waiting.into_actor(self).map(|lock, act, ctx| {
            if !act.finishing {
                act.on_lock(lock, ctx);
            }
        }));
    }
}

impl StreamHandler<CliOutput> for AgentRun {
    fn handle(&mut self, item: CliOutput, ctx: &mut Context<Self>) {
        match item {
            CliOutput::Stdout(Frame::Line(line)) => self.on_line(line, ctx),
            CliOutput::Stdout(Frame::Oversized { .. }) => self.raw_dropped += 1,
            CliOutput::Stderr(Frame::Line(line)) => self.on_stderr(&line),
            CliOutput::Stderr(Frame::Oversized { len }) => self.on_stderr(&format!("[{len} bytes of stderr dropped]")),
            CliOutput::StdoutEnd => {
                self.stdout_done = true;
                self.maybe_finish(ctx);
            }
            CliOutput::StderrEnd => {
                self.stderr_done = true;
                self.maybe_finish(ctx);
            }
            CliOutput::Failed(reason) => self.end(Ending::Failed, reason, ctx),
        }
    }

    fn finished(&mut self, _ctx: &mut Context<Self>) {}
}

impl Handler<Exited> for AgentRun {
    type Result = ();

    fn handle(&mut self, msg: Exited, ctx: &mut Context<Self>) {
        self.exit = Some((msg.how, msg.code));
        self.stdin = None;
        ctx.run_later(DRAIN, |act, ctx| {
            act.stdout_done = true;
            act.stderr_done = true;
            act.maybe_finish(ctx);
        });
        self.maybe_finish(ctx);
    }
}

impl Handler<Cancel> for AgentRun {
    type Result = ();

    fn handle(&mut self, msg: Cancel, ctx: &mut Context<Self>) {
        self.end(Ending::Cancelled, msg.reason, ctx);
    }
}
