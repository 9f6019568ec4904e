//! Starting agent runs: the registry spawns their CLIs too, so it owns every pid tokio waits
//! for (the orphan sweep's exclusion list) and there is one way a CLI is started.

use std::time::Duration;

use actix::prelude::*;

use super::SessionRegistry;
use crate::actors::agent_run::{AgentRunProcess, Cancel, OneTurn, RunEnded, RunRecords};
use crate::actors::locks::DirLock;
use crate::db::agents::{Agent, Execution};
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
        // Its cgroup first (cgroupfs work, off the executor), then the CLI.
        let (containment, id) = (self.containment.clone(), msg.exec.id.clone());
        let cgroup = async move {
            tokio::task::spawn_blocking(move || containment.cgroup_for(id.as_str())).await.ok().flatten()
        };
        Box::pin(cgroup.into_actor(self).map(move |cgroup, act, ctx| {
            let StartRun { agent, exec, lock, parent } = msg;
            let options = CliOptions { model: agent.model.clone(), ..Default::default() };
            let req = SpawnRequest {
                marker: exec.id.to_string(),
                program: act.settings.cli_path.clone(),
                arguments: Box::new(move |wire| ClaudeCode.arguments(&options, wire)),
                folder: agent.cwd.clone(),
                env: act.cli_env(),
                bridge: None,
                cgroup,
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
        }))
    }
}
