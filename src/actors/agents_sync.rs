//! Cluster mode: every node keeps an actor for every scheduled agent (the leader fires them;
//! any node answers their requests), so each node's registry follows the table: an agent
//! created on another node starts here, one deleted there retires here, and one edited there
//! (its `updated_at` moved) is adopted as stored. Once a second, one query.

use std::time::Duration;

use actix::prelude::*;

use super::agent::{Adopt, Current, Retire};
use super::agents::AgentRegistry;
use crate::db::agents;

pub(super) const SYNC_EVERY: Duration = Duration::from_secs(1);

#[derive(Message)]
#[rtype(result = "()")]
pub(super) struct SyncAgents;

impl Handler<SyncAgents> for AgentRegistry {
    type Result = ResponseActFuture<Self, ()>;

    fn handle(&mut self, _msg: SyncAgents, _ctx: &mut Context<Self>) -> Self::Result {
        if self.shutting_down || self.syncing {
            return Box::pin(actix::fut::ready(()));
        }
        self.syncing = true;
        let store = self.deps.store.clone();
        let known: Vec<_> = self.agents.iter().map(|(id, addr)| (id.clone(), addr.clone())).collect();
        let load = async move {
            let stored = store.run(agents::all).await;
            let mut current = Vec::with_capacity(known.len());
            for (id, addr) in known {
                if let Ok(agent) = addr.send(Current).await {
                    current.push((id, agent.updated_at));
                }
            }
            (stored, current)
        };
        Box::pin(load.into_actor(self).map(|(stored, current), act, _ctx| {
            act.syncing = false;
            let stored = match stored {
                Ok(stored) => stored,
                Err(e) => return tracing::warn!(error = %e, "cluster: cannot read the agents to follow them"),
            };
            if act.shutting_down {
                return;
            }
            for (id, _) in &current {
                if !stored.iter().any(|a| &a.id == id) {
                    if let Some(addr) = act.agents.remove(id) {
                        tracing::info!(agent = %id, "cluster: an agent deleted on another node retires here");
                        addr.do_send(Retire { reason: "the agent was deleted".to_string(), keep_waiting: false });
                    }
                }
            }
            for agent in stored {
                match current.iter().find(|(id, _)| *id == agent.id) {
                    None if !act.agents.contains_key(&agent.id) => {
                        tracing::info!(agent = %agent.id, "cluster: an agent created on another node starts here");
                        act.launch(agent);
                    }
                    Some((_, updated_at)) if *updated_at != agent.updated_at => {
                        if let Some(addr) = act.agents.get(&agent.id) {
                            addr.do_send(Adopt(agent));
                        }
                    }
                    _ => {}
                }
            }
        }))
    }
}
