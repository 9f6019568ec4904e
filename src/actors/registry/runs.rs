//! Starting agent runs: the registry spawns their CLIs too, so it owns every pid tokio waits
//! for (the orphan sweep's exclusion list) and there is one way a CLI is started.

use std::time::Duration;

use actix::prelude::*;

use super::SessionRegistry;
use crate::actors::agent_run::{AgentRunProcess, Cancel, OneTurn, RunEnded, RunRecords};
use crate::actors::locks::DirLock;
use crate::db::agents::{Agent, Execution};
use crate::db::projects;
use crate::domain::launch::CliOptions;
use crate::sandbox::enclosure::Enclosure;
use crate::supervisor::adapter::AgentAdapter;
use crate::supervisor::claude::ClaudeCode;
use crate::supervisor::process::{CliProcess, Peers};
use crate::supervisor::spawn::{spawn, SpawnRequest};

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
}

impl Handler<StartRun> for SessionRegistry {
    type Result = ResponseActFuture<Self, Result<Recipient<Cancel>, String>>;

    fn handle(&mut self, msg: StartRun, _ctx: &mut Context<Self>) -> Self::Result {
        // The project's sandbox (its row), then the cgroup and the sandbox (off the executor),
        // then the CLI.
        let (store, project) = (self.store.clone(), msg.agent.project_id.clone());
        let (cwd, marker, rules_of) = (msg.agent.cwd.clone(), msg.exec.id.to_string(), project.clone());
        let sandbox = async move {
            match project {
                Some(id) => store.run(move |conn| projects::find(conn, &id)).await.map(|p| p.and_then(|p| p.sandbox)),
                None => Ok(None),
            }
        };
        let enclosed = sandbox.into_actor(self).then(move |loaded, act, _ctx| {
            let enclose = loaded.map_err(|e| format!("the agent's project could not be read: {e}")).and_then(|mode| {
                let fence = act.fence(mode, &cwd, &ClaudeCode).map_err(|e| e.to_string())?;
                Ok(act.enclose(marker, rules_of, fence))
            });
            async move { enclose?.await }.into_actor(act)
        });
        Box::pin(enclosed.map(move |enclosure, act, ctx| act.start_run(msg, enclosure?, ctx)))
    }
}

impl SessionRegistry {
    /// Spawns the CLI of an agent run inside its enclosure and starts its actor.
    fn start_run(
        &mut self,
        msg: StartRun,
        enclosure: Enclosure,
        ctx: &mut Context<Self>,
    ) -> Result<Recipient<Cancel>, String> {
        let StartRun { agent, exec, lock, parent } = msg;
        let Enclosure { cgroup, fence } = enclosure;
        let options = CliOptions { model: agent.model.clone(), ..Default::default() };
        let req = SpawnRequest {
            marker: exec.id.to_string(),
            program: self.settings.cli_path.clone(),
            arguments: Box::new(move |wire| ClaudeCode.arguments(&options, wire)),
            folder: agent.cwd.clone(),
            env: self.cli_env(),
            bridge: None,
            cgroup,
            fence,
            backlog: None,
        };
        let spawned = spawn(req)?;
        self.children.insert(spawned.pid);
        let peers = Peers { engine: self.engine.clone(), registry: ctx.address().recipient() };
        let records = RunRecords { store: self.store.clone(), bus: self.bus.clone() };
        let id = exec.id.clone();
        let run = OneTurn::new(agent, exec, records, parent, lock);
        let grace = Duration::from_millis(self.settings.agent_kill_grace_ms);
        let addr: Addr<AgentRunProcess> =
            CliProcess::start(id.as_str(), spawned, Box::new(ClaudeCode), peers, grace, run);
        Ok(addr.recipient())
    }
}
