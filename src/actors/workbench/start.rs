//! `Start`: a command or background process, from the permission rules to a running process
//! with its row stored.

use std::time::Duration;

use actix::prelude::*;

use super::spawn::{Launch, Running};
use super::{run, script, Life, Proc, Workbench};
use crate::actors::bus::{Event, Publish};
use crate::actors::permissions::Evaluate;
use crate::db::processes::{self, ProcessRow};
use crate::db::StoreError;
use crate::domain::decision::{DecisionPoint, ToolCall};
use crate::domain::ids::{ProcessId, ProjectId};
use crate::domain::process::{Owner, ProcessKind, ProcessStatus};
use crate::domain::sandbox::SandboxMode;
use crate::domain::time;
use crate::process::SESSION_MARKER_ENV;
use crate::sandbox::fence::StatePath;

/// Start `command` (one shell command line) in `folder`, the workspace of `owner`.
#[derive(Message, Debug, Clone)]
#[rtype(result = "Result<Started, StartError>")]
pub struct Start {
    pub owner: Owner,
    pub project_id: ProjectId,
    pub folder: String,
    /// The project's sandbox (`None`: the `sandbox` setting).
    pub sandbox: Option<SandboxMode>,
    pub command: String,
    /// An absolute folder to start in (checked to be inside the workspace by the caller).
    pub cwd: Option<String>,
    pub env: Vec<(String, String)>,
    /// The exec context to run in, created on first use.
    pub context: Option<String>,
    pub kind: ProcessKind,
    /// An exec command's timeout.
    pub timeout: Option<Duration>,
}

/// A started process: its row, and for an exec command its output (ending with how it ended).
pub struct Started {
    pub row: ProcessRow,
    pub output: Option<tokio::sync::mpsc::Receiver<super::Output>>,
}

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("the service is shutting down")]
    ShuttingDown,
    #[error("the session has ended")]
    OwnerEnded,
    #[error("{0}")]
    TooMany(String),
    #[error("this {0} already has {1} exec contexts (the `max_exec_contexts` setting)")]
    TooManyContexts(&'static str, usize),
    #[error("the exec context {0:?} is running a command; contexts run one at a time")]
    ContextBusy(String),
    #[error("{0}")]
    Denied(String),
    #[error("{0}")]
    Sandbox(String),
    #[error("{0}")]
    Failed(String),
    #[error("{0}")]
    Store(#[from] StoreError),
}

impl Handler<Start> for Workbench {
    type Result = ResponseActFuture<Self, Result<Started, StartError>>;

    fn handle(&mut self, msg: Start, _ctx: &mut Context<Self>) -> Self::Result {
        if let Err(e) = self.admit(&msg) {
            return Box::pin(actix::fut::ready(Err(e)));
        }
        let id = ProcessId::new();
        let proc = Proc {
            owner: msg.owner.clone(),
            project_id: msg.project_id.clone(),
            context: msg.context.clone(),
            life: Life::Starting { doomed: None },
            logs: None,
        };
        self.procs.insert(id.clone(), proc);
        let state_dir = msg.context.as_ref().map(|name| self.contexts_dir(&msg.owner).join(name));
        let deps = self.deps.clone();
        let work = begin(deps, id.clone(), msg.clone(), state_dir);
        Box::pin(work.into_actor(self).map(move |began, act, ctx| act.started(id, msg, began, ctx)))
    }
}

impl Workbench {
    /// Limits, shutdown and the context, decided at once (nothing awaited) so two starts can
    /// never both take the last place.
    fn admit(&mut self, msg: &Start) -> Result<(), StartError> {
        if self.shutting_down {
            return Err(StartError::ShuttingDown);
        }
        if msg.owner.session().is_some_and(|s| self.ended.contains(s)) {
            return Err(StartError::OwnerEnded);
        }
        let limits = &self.deps.settings;
        if let Owner::Session(_) = msg.owner {
            if self.running_for(&msg.owner) >= limits.max_per_session {
                return Err(StartError::TooMany(format!(
                    "this session already runs {} commands and processes (the `max_processes_per_session` setting)",
                    limits.max_per_session
                )));
            }
        }
        if self.running_in(&msg.project_id) >= limits.max_per_project {
            return Err(StartError::TooMany(format!(
                "this project already runs {} commands and processes (the `max_processes_per_project` setting)",
                limits.max_per_project
            )));
        }
        if let Some(name) = &msg.context {
            let max = limits.max_contexts;
            let contexts = self.contexts.entry(msg.owner.clone()).or_default();
            let known = contexts.len();
            match contexts.get_mut(name) {
                Some(true) => return Err(StartError::ContextBusy(name.clone())),
                Some(busy) => *busy = true,
                None if known >= max => return Err(StartError::TooManyContexts(msg.owner.kind(), max)),
                None => {
                    contexts.insert(name.clone(), true);
                }
            }
        }
        Ok(())
    }

    /// Frees what a start took: its place and its context.
    pub(super) fn release(&mut self, id: &ProcessId) -> Option<Proc> {
        let proc = self.procs.remove(id)?;
        if let Some(name) = &proc.context {
            if let Some(busy) = self.contexts.get_mut(&proc.owner).and_then(|c| c.get_mut(name)) {
                *busy = false;
            }
        }
        Some(proc)
    }

    fn started(
        &mut self,
        id: ProcessId,
        msg: Start,
        began: Result<(ProcessRow, Running), StartError>,
        ctx: &mut Context<Self>,
    ) -> Result<Started, StartError> {
        let (row, running) = match began {
            Ok(began) => began,
            Err(e) => {
                self.release(&id);
                return Err(e);
            }
        };
        let doomed = match self.procs.get(&id).map(|p| &p.life) {
            Some(Life::Starting { doomed }) => *doomed,
            _ => None,
        };
        let tree = running.tree.clone();
        if let Some(proc) = self.procs.get_mut(&id) {
            proc.life = Life::Running { tree: tree.clone(), ending: doomed };
        }
        if doomed.is_some() {
            tokio::task::spawn_blocking(move || tree.end(Duration::from_secs(2)));
        }
        let data = serde_json::to_string(&row).unwrap_or_default();
        self.deps.bus.do_send(Publish(Event::for_process("process.started", "started", id.as_str(), data)));
        let addr = ctx.address();
        let output = match msg.kind {
            ProcessKind::Exec => Some(run::exec(addr, id, running, msg.timeout, &self.deps)),
            ProcessKind::Background => {
                let logs = run::background(addr, id.clone(), running, &self.deps);
                if let Some(proc) = self.procs.get_mut(&id) {
                    proc.logs = Some(logs);
                }
                None
            }
        };
        Ok(Started { row, output })
    }
}

/// Everything of a start that waits: the rules, the fence, the spawn and the row.
async fn begin(
    deps: super::Deps,
    id: ProcessId,
    msg: Start,
    state_dir: Option<std::path::PathBuf>,
) -> Result<(ProcessRow, Running), StartError> {
    let call = ToolCall {
        request_id: id.to_string(),
        point: DecisionPoint::Exec,
        tool_name: "Bash".to_string(),
        input: serde_json::json!({ "command": msg.command }),
        tool_use_id: None,
        agent: None,
    };
    let ask = Evaluate { project_id: Some(msg.project_id.clone()), session_id: msg.owner.session().cloned(), call };
    let verdict = deps.engine.send(ask).await.unwrap_or_else(|_| crate::domain::decision::Verdict::unavailable());
    if let Some(event) = verdict.event {
        // A session's decisions are published by its CLI's actor on its own stream; this one
        // is not part of that conversation, so it goes to everyone's stream.
        let event = Event::new("permission.decision", "permission", None, event);
        deps.bus.do_send(Publish(event.in_project(Some(msg.project_id.clone()))));
    }
    if !verdict.allow {
        return Err(StartError::Denied(verdict.reason));
    }
    let state = match &state_dir {
        Some(dir) => {
            tokio::fs::create_dir_all(dir)
                .await
                .map_err(|e| StartError::Failed(format!("cannot keep the exec context's state: {e}")))?;
            vec![StatePath::Folder(dir.clone())]
        }
        None => Vec::new(),
    };
    let fence = deps.encloser.plan(msg.sandbox, &msg.folder, state).map_err(|e| StartError::Sandbox(e.to_string()))?;
    let guest = crate::sandbox::enclosure::Guest {
        project: Some(msg.project_id.clone()),
        agent: None,
        session: msg.owner.session().cloned(),
        extra: msg.env.clone(),
        bridge: None,
        limits: None,
    };
    let enclosure =
        deps.encloser.enclose(id.to_string(), guest, fence, "bash".to_string()).await.map_err(StartError::Failed)?;
    let launch = match &state_dir {
        Some(dir) => Launch {
            id: id.clone(),
            script: script::in_context(
                &dir.join("state"),
                msg.cwd.as_deref(),
                &msg.env,
                (SESSION_MARKER_ENV, id.as_str()),
            )
            .map_err(|e| StartError::Failed(e.to_string()))?,
            script_args: vec!["conduit-exec".to_string(), msg.command.clone()],
            cwd: msg.folder.clone(),
            env: Vec::new(),
            enclosure,
        },
        None => Launch {
            id: id.clone(),
            script: msg.command.clone(),
            script_args: Vec::new(),
            cwd: msg.cwd.clone().unwrap_or_else(|| msg.folder.clone()),
            env: msg.env.clone(),
            enclosure,
        },
    };
    let running = deps
        .spawner
        .send(crate::actors::registry::SpawnCommand(launch))
        .await
        .map_err(|e| StartError::Failed(format!("the session registry is gone: {e}")))?
        .map_err(StartError::Failed)?;
    let row = ProcessRow {
        id: id.clone(),
        project_id: msg.project_id.clone(),
        session_id: msg.owner.session().cloned(),
        kind: msg.kind,
        command: msg.command.clone(),
        cwd: msg.cwd.clone().unwrap_or_else(|| msg.folder.clone()),
        context: msg.context.clone(),
        status: ProcessStatus::Running,
        pid: Some(running.pid),
        exit_code: None,
        signal: None,
        end_reason: None,
        started_at: time::now(),
        ended_at: None,
        stdout_bytes: 0,
        stderr_bytes: 0,
        stdout_truncated: false,
        stderr_truncated: false,
        owner_node: deps.node.clone(),
    };
    let stored = row.clone();
    if let Err(e) = deps.store.run(move |conn| processes::insert(conn, &stored)).await {
        // Nothing may run that no row records.
        super::pipes::end_tree(running.tree.clone()).await;
        let pid = running.pid;
        let mut child = running.child;
        let _ = child.wait().await;
        deps.gone.do_send(crate::supervisor::process::ProcessGone { id: id.to_string(), pid, reason: None });
        return Err(e.into());
    }
    Ok((row, running))
}
