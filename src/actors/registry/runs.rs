//! Starting agent runs: the registry spawns their CLIs too, so it owns every pid tokio waits
//! for (the orphan sweep's exclusion list) and there is one way a CLI is started.

use std::time::Duration;

use actix::prelude::*;

use super::enclose::Enclosure;
use super::SessionRegistry;
use crate::actors::agent_run::{AgentRunProcess, Cancel, OneTurn, RunEnded, RunRecords};
use crate::actors::locks::DirLock;
use crate::db::agents::{Agent, Execution};
use crate::db::projects;
use crate::domain::launch::CliOptions;
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
        let sandbox = async move {
            match project {
                Some(id) => store.run(move |conn| projects::find(conn, &id)).await.map(|p| p.and_then(|p| p.sandbox)),
                None => Ok(None),
            }
        };
        Box::pin(sandbox.into_actor(self).then(move |sandbox, act, _ctx| {
            let fence = sandbox
                .map_err(|e| format!("the agent's project could not be read: {e}"))
                .and_then(|mode| act.fence(mode, &msg.agent.cwd, &ClaudeCode).map_err(|e| e.to_string()));
            let enclose = fence.map(|fence| act.enclose(msg.exec.id.to_string(), msg.agent.project_id.clone(), fence));
            let enclosed = async move {
                match enclose {
                    Ok(enclose) => enclose.await,
                    Err(e) => Err(e),
                }
            };
            enclosed.into_actor(act).map(move |enclosure, act, ctx| {
            let StartRun { agent, exec, lock, parent } = msg;
            let Enclosure { cgroup, fence } = enclosure?;
            let options = CliOptions { model: agent.model.clone(), ..Default::default() };
            let req = SpawnRequest {
                marker: exec.id.to_string(),
                program: act.settings.cli_path.clone(),
                arguments: Box::new(move |wire| ClaudeCode.arguments(&options, wire)),
                folder: agent.cwd.clone(),
                env: act.cli_env(),
                bridge: None,
                cgroup,
                fence,
                backlog: None,
            };
            let spawned = spawn(req)?;
            act.children.insert(spawned.pid);
            let peers = Peers { engine: act.engine.clone(), registry: ctx.address().recipient() };
            let records = RunRecords { store: act.store.clone(), bus: act.bus.clone() };
            let id = exec.id.clone();
            let run = OneTurn::new(agent, exec, records, parent, lock);
            let grace = Duration::from_millis(act.settings.agent_kill_grace_ms);
            let addr: Addr<AgentRunProcess> =
                CliProcess::start(id.as_str(), spawned, Box::new(ClaudeCode), peers, grace, run);
            Ok(addr.recipient())
            })
        }))
    }
}
