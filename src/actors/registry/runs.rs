//! Starting agent runs: the registry spawns their CLIs too, so it owns every pid tokio waits
//! for (the orphan sweep's exclusion list) and there is one way a CLI is started.

use std::time::Duration;

use actix::prelude::*;

use std::path::PathBuf;

use super::enclose::Enclosed;
use super::workspace::share_repository;
use super::{worktree_folder, SessionRegistry};
use crate::actors::agent_run::{AgentRunProcess, Cancel, OneTurn, RunEnded, RunRecords};
use crate::actors::limits::LimitPolicy;
use crate::actors::locks::DirLock;
use crate::db::agents::{Agent, Execution};
use crate::db::projects;
use crate::domain::launch::CliOptions;
use crate::domain::workspace::{branch_for, WorkspaceMode};
use crate::sandbox::enclosure::Enclosure;
use crate::supervisor::catalog;
use crate::supervisor::process::{CliProcess, Peers};
use crate::supervisor::spawn::{spawn, SpawnRequest};
use crate::workspace::prune::RUN_PREFIX;
use crate::workspace::worktree::{self, Worktree, WorktreePlan};
use crate::workspace::WorkspaceError;

/// Starts the CLI of an agent run that holds its folder's lock. Answers where to send a
/// cancel, or why the CLI could not start (the lock is released then).
#[derive(Message)]
#[rtype(result = "Result<Recipient<Cancel>, String>")]
pub struct StartRun {
    pub agent: Agent,
    /// Stored, status `running`.
    pub exec: Execution,
    pub lock: DirLock,
    pub parent: Recipient<RunEnded>,
    /// An attempt after a usage limit stopped an earlier one: a run in its own worktree
    /// carries on in the earlier attempt's branch.
    pub again: bool,
}

impl Handler<StartRun> for SessionRegistry {
    type Result = ResponseActFuture<Self, Result<Recipient<Cancel>, String>>;

    fn handle(&mut self, msg: StartRun, _ctx: &mut Context<Self>) -> Self::Result {
        // The project's sandbox (its row), then the cgroup and the sandbox (off the executor),
        // then the CLI.
        let (store, project) = (self.store.clone(), msg.agent.project_id.clone());
        let (marker, rules_of) = (msg.exec.id.to_string(), project.clone());
        let (agent_kind, kind) = (msg.agent.agent.clone(), msg.agent.agent.clone());
        // A run in its own worktree works there; the worktree is made before the sandbox.
        let run_worktree = (msg.agent.workspace_mode == WorkspaceMode::Worktree).then(|| {
            let short = &marker[..8.min(marker.len())];
            WorktreePlan {
                repo: PathBuf::from(&msg.agent.cwd),
                path: worktree_folder(&self.settings.workspaces(), &format!("{RUN_PREFIX}{marker}")),
                branch: branch_for(&format!("agent-{}-{short}", msg.agent.name), short),
                suffix: short.to_string(),
                base_ref: None,
            }
        });
        let cwd = match &run_worktree {
            Some(plan) => plan.path.to_string_lossy().into_owned(),
            None => msg.agent.cwd.clone(),
        };
        let sandbox = async move {
            match project {
                Some(id) => store.run(move |conn| projects::find(conn, &id)).await.map(|p| p.and_then(|p| p.sandbox)),
                None => Ok(None),
            }
        };
        let again = msg.again;
        let made = async move {
            match run_worktree {
                Some(plan) => run_worktree_for(plan, again)
                    .await
                    .map(Some)
                    .map_err(|e| format!("the run's git worktree could not be made: {e}")),
                None => Ok(None),
            }
        };
        let prepared = async move { Ok::<_, String>((sandbox.await, made.await?)) };
        let repo = PathBuf::from(&msg.agent.cwd);
        let enclosed = prepared.into_actor(self).then(move |prepared, act, _ctx| {
            let (loaded, made) = match prepared {
                Ok(p) => p,
                Err(e) => {
                    return Box::pin(actix::fut::ready(Err(e))) as std::pin::Pin<Box<dyn ActorFuture<Self, Output = _>>>
                }
            };
            let planned = loaded
                .map_err(|e| format!("the agent's project could not be read: {e}"))
                .and_then(|mode| act.fence(mode, &cwd, &agent_kind).map_err(|e| e.to_string()));
            if let Some(made) = &made {
                act.run_worktrees.insert(marker.clone(), (repo, PathBuf::from(&made.path), made.branch.clone()));
            }
            let folder = PathBuf::from(&cwd);
            let shared = async move {
                match (planned, made.is_some()) {
                    (Ok(fence), true) => share_repository(fence, &folder).await,
                    (planned, _) => planned,
                }
            };
            Box::pin(shared.into_actor(act).then(move |fence, act, _ctx| {
                let enclose = fence.map(|fence| act.enclose(marker, rules_of, fence, &kind, (None, None, None, None)));
                async move { enclose?.await }.into_actor(act).map(move |enclosure, _, _| enclosure.map(|e| (e, cwd)))
            }))
        });
        Box::pin(enclosed.map(move |enclosed, act, ctx| {
            let (enclosed, folder) = enclosed.inspect_err(|_| act.run_ended(msg.exec.id.as_str()))?;
            act.start_run(msg, enclosed, folder, ctx)
        }))
    }
}

impl SessionRegistry {
    /// Spawns the CLI of an agent run inside its enclosure and starts its actor.
    fn start_run(
        &mut self,
        msg: StartRun,
        enclosed: Enclosed,
        folder: String,
        ctx: &mut Context<Self>,
    ) -> Result<Recipient<Cancel>, String> {
        let StartRun { agent, exec, lock, parent, .. } = msg;
        let Enclosed { enclosure: Enclosure { cgroup, resources, fence, env, network }, program } = enclosed;
        let options =
            CliOptions { model: agent.model.clone(), max_budget_usd: agent.max_budget_usd, ..Default::default() };
        let prepared = catalog::prepare(&self.settings, &agent.agent, &program, &options, &folder)
            .map_err(|e| e.to_string())
            .inspect_err(|_| self.run_ended(exec.id.as_str()))?;
        let (launch, adapter) = prepared;
        let req = SpawnRequest {
            marker: exec.id.to_string(),
            program: launch.program,
            arguments: launch.arguments,
            folder,
            env,
            bridge: None,
            cgroup,
            fence,
            backlog: None,
            network,
            resources,
        };
        let spawned = spawn(req).inspect_err(|_| self.run_ended(exec.id.as_str()))?;
        self.children.insert(spawned.pid);
        let peers = Peers { engine: self.engine.clone(), registry: ctx.address().recipient() };
        let records = RunRecords {
            store: self.store.clone(),
            bus: self.bus.clone(),
            budgets: Some(self.budget_link.clone()),
            redact_at_rest: self.settings.redaction.at_rest(),
        };
        let id = exec.id.clone();
        let limits = LimitPolicy::new(&self.settings, self.limit_board.clone());
        let run = OneTurn::new(agent, exec, records, parent, lock, limits);
        let grace = Duration::from_millis(self.settings.agent_kill_grace_ms);
        let addr: Addr<AgentRunProcess> = CliProcess::start(id.as_str(), spawned, adapter, peers, grace, run, false);
        Ok(addr.recipient())
    }
}

impl SessionRegistry {
    /// An agent run's CLI has ended: its worktree (if it had one) is archived, its branch kept
    /// with the run's work (uncommitted work committed on it).
    pub(super) fn run_ended(&mut self, id: &str) {
        if let Some((repo, path, branch)) = self.run_worktrees.remove(id) {
            tokio::spawn(async move {
                if let Err(e) = worktree::archive(&repo, &path, &branch, false).await {
                    tracing::warn!(worktree = %path.display(), error = %e, "an agent run's worktree could not be archived");
                }
            });
        }
    }
}

/// The run's worktree: a new one, or for another attempt of the same run, the earlier
/// attempt's branch checked out again (its name is this run's, or with the run's short id when
/// that name was taken).
async fn run_worktree_for(plan: WorktreePlan, again: bool) -> Result<Worktree, WorkspaceError> {
    if again {
        for branch in [format!("{}-{}", plan.branch, plan.suffix), plan.branch.clone()] {
            if worktree::branch_exists(&plan.repo, &branch).await? {
                worktree::restore(&plan.repo, &plan.path, &branch).await?;
                let path = plan.path.to_string_lossy().into_owned();
                return Ok(Worktree { path, branch, base_ref: String::new(), base_commit: String::new() });
            }
        }
    }
    worktree::create(plan).await
}
