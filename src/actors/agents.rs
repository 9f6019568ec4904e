//! `AgentRegistry`: starts, finds and retires the [`ProactiveAgent`] actors.
//!
//! It owns the map agent id -> actor and the `CONDUIT_MAX_AGENTS` limit (creations are handled
//! one at a time, so the count cannot be raced). At startup it restores every agent from the
//! database (restart recovery, before it, failed the runs a crash interrupted and ended their
//! processes). Everything about one agent is asked of that agent's actor.

use std::collections::HashMap;

use actix::prelude::*;

use super::agent::RunDeps;
use super::agent::{Apply, CancelRun, Change, Current, ProactiveAgent, Retire, TriggerNow};
use crate::db::agents::{self, Agent, Execution};
use crate::db::StoreError;
use crate::domain::ids::{AgentId, ExecutionId};

// ---------------------------------------------------------------------------------------------
// Messages

#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error("No agent with id {0:?}.")]
    NotFound(AgentId),
    #[error("the limit of {0} agents is reached (CONDUIT_MAX_AGENTS); delete one first")]
    Limit(u32),
    #[error("the service is shutting down")]
    ShuttingDown,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Loads every agent and starts its actor. Answers how many.
#[derive(Message)]
#[rtype(result = "Result<usize, StoreError>")]
pub struct Restore;

/// Stores a new agent (validated) and starts it.
#[derive(Message)]
#[rtype(result = "Result<Agent, AgentError>")]
pub struct Create(pub Agent);

#[derive(Message)]
#[rtype(result = "Result<Agent, AgentError>")]
pub struct Get(pub AgentId);

#[derive(Message)]
#[rtype(result = "Result<Agent, AgentError>")]
pub struct Update {
    pub id: AgentId,
    pub change: Change,
}

/// Cancels the agent's runs, then deletes it with its history.
#[derive(Message)]
#[rtype(result = "Result<(), AgentError>")]
pub struct Delete(pub AgentId);

#[derive(Message)]
#[rtype(result = "Result<Execution, AgentError>")]
pub struct Trigger(pub AgentId);

/// Answers whether a live run was found and told to stop.
#[derive(Message)]
#[rtype(result = "Result<bool, AgentError>")]
pub struct CancelExecution {
    pub agent_id: AgentId,
    pub execution_id: ExecutionId,
}

/// Cancels every run ("service shut down") and waits for them to be recorded.
#[derive(Message)]
#[rtype(result = "()")]
pub struct ShutdownAgents;

// ---------------------------------------------------------------------------------------------
// State

pub struct AgentRegistry {
    pub(super) deps: RunDeps,
    max_agents: u32,
    pub(super) agents: HashMap<AgentId, Addr<ProactiveAgent>>,
    pub(super) shutting_down: bool,
    /// Cluster mode: a sync with the table is under way (see `agents_sync`).
    pub(super) syncing: bool,
}

impl AgentRegistry {
    pub fn new(deps: RunDeps, max_agents: u32) -> AgentRegistry {
        AgentRegistry { deps, max_agents, agents: HashMap::new(), shutting_down: false, syncing: false }
    }

    fn find(&self, id: &AgentId) -> Result<Addr<ProactiveAgent>, AgentError> {
        self.agents.get(id).cloned().ok_or_else(|| AgentError::NotFound(id.clone()))
    }

    pub(super) fn launch(&mut self, agent: Agent) {
        let id = agent.id.clone();
        let addr = ProactiveAgent::new(agent, self.deps.clone()).start();
        self.agents.insert(id, addr);
    }
}

// ---------------------------------------------------------------------------------------------
// Handlers

impl Actor for AgentRegistry {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        if self.deps.node.is_some() {
            ctx.run_interval(super::agents_sync::SYNC_EVERY, |_, ctx| ctx.notify(super::agents_sync::SyncAgents));
        }
    }
}

impl Handler<Restore> for AgentRegistry {
    type Result = AtomicResponse<Self, Result<usize, StoreError>>;

    fn handle(&mut self, _msg: Restore, _ctx: &mut Context<Self>) -> Self::Result {
        let store = self.deps.store.clone();
        // Interrupted runs were failed, and their processes ended, by restart recovery.
        let load = async move { store.run(agents::all).await };
        AtomicResponse::new(Box::pin(load.into_actor(self).map(|loaded, act, _| {
            let loaded = loaded?;
            let count = loaded.len();
            for agent in loaded {
                act.launch(agent);
            }
            Ok(count)
        })))
    }
}

impl Handler<Create> for AgentRegistry {
    type Result = AtomicResponse<Self, Result<Agent, AgentError>>;

    fn handle(&mut self, msg: Create, _ctx: &mut Context<Self>) -> Self::Result {
        if self.shutting_down {
            return AtomicResponse::new(Box::pin(actix::fut::ready(Err(AgentError::ShuttingDown))));
        }
        if self.agents.len() >= self.max_agents as usize {
            return AtomicResponse::new(Box::pin(actix::fut::ready(Err(AgentError::Limit(self.max_agents)))));
        }
        let (store, agent) = (self.deps.store.clone(), msg.0);
        let stored = agent.clone();
        AtomicResponse::new(Box::pin(
            async move { store.run(move |conn| agents::insert(conn, &stored)).await }.into_actor(self).map(
                move |inserted, act, _| {
                    inserted?;
                    act.launch(agent.clone());
                    Ok(agent)
                },
            ),
        ))
    }
}

impl Handler<Get> for AgentRegistry {
    type Result = ResponseFuture<Result<Agent, AgentError>>;

    fn handle(&mut self, msg: Get, _ctx: &mut Context<Self>) -> Self::Result {
        let found = self.find(&msg.0);
        Box::pin(async move { found?.send(Current).await.map_err(|_| AgentError::NotFound(msg.0)) })
    }
}

impl Handler<Update> for AgentRegistry {
    type Result = ResponseFuture<Result<Agent, AgentError>>;

    fn handle(&mut self, msg: Update, _ctx: &mut Context<Self>) -> Self::Result {
        let found = self.find(&msg.id);
        Box::pin(async move {
            let applied = found?.send(Apply(msg.change)).await.map_err(|_| AgentError::NotFound(msg.id))?;
            Ok(applied?)
        })
    }
}

impl Handler<Delete> for AgentRegistry {
    type Result = ResponseActFuture<Self, Result<(), AgentError>>;

    fn handle(&mut self, msg: Delete, _ctx: &mut Context<Self>) -> Self::Result {
        let Some(addr) = self.agents.remove(&msg.0) else {
            return Box::pin(actix::fut::ready(Err(AgentError::NotFound(msg.0))));
        };
        let store = self.deps.store.clone();
        Box::pin(
            async move {
                let _ = addr.send(Retire { reason: "the agent was deleted".to_string(), keep_waiting: false }).await;
                store.run(move |conn| agents::delete(conn, &msg.0)).await?;
                Ok(())
            }
            .into_actor(self),
        )
    }
}

impl Handler<Trigger> for AgentRegistry {
    type Result = ResponseFuture<Result<Execution, AgentError>>;

    fn handle(&mut self, msg: Trigger, _ctx: &mut Context<Self>) -> Self::Result {
        let found = if self.shutting_down { Err(AgentError::ShuttingDown) } else { self.find(&msg.0) };
        Box::pin(async move {
            let started = found?.send(TriggerNow).await.map_err(|_| AgentError::NotFound(msg.0))?;
            Ok(started?)
        })
    }
}

impl Handler<CancelExecution> for AgentRegistry {
    type Result = ResponseFuture<Result<bool, AgentError>>;

    fn handle(&mut self, msg: CancelExecution, _ctx: &mut Context<Self>) -> Self::Result {
        let found = self.find(&msg.agent_id);
        Box::pin(async move {
            let cancel = CancelRun { execution_id: msg.execution_id, reason: "cancelled on request".to_string() };
            found?.send(cancel).await.map_err(|_| AgentError::NotFound(msg.agent_id))
        })
    }
}

impl Handler<ShutdownAgents> for AgentRegistry {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, _msg: ShutdownAgents, _ctx: &mut Context<Self>) -> Self::Result {
        self.shutting_down = true;
        let retiring: Vec<_> = self
            .agents
            .drain()
            .map(|(_, addr)| addr.send(Retire { reason: "the service shut down".to_string(), keep_waiting: true }))
            .collect();
        Box::pin(async move {
            futures_util::future::join_all(retiring).await;
        })
    }
}
