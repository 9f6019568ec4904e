//! What the registry tells of its live sessions: how many, and their resource readings (for the
//! API's session views and `/metrics`). Each session keeps its own latest reading (see
//! [`crate::actors::session::resources`]); the registry, which knows the live ones, asks them.

use actix::prelude::*;

use super::SessionRegistry;
use crate::actors::session::CliSession;
use crate::domain::ids::{ProjectId, SessionId};

/// How many sessions are live.
#[derive(Message)]
#[rtype(result = "usize")]
pub struct LiveCount;

/// The latest resource readings of live sessions: those named, or every one (`None`).
#[derive(Message)]
#[rtype(result = "Vec<LiveReading>")]
pub struct ReadLive(pub Option<Vec<SessionId>>);

/// One live session's latest reading (`None`: none yet, or the machine has none).
#[derive(Debug, Clone)]
pub struct LiveReading {
    pub id: SessionId,
    pub project_id: ProjectId,
    pub resources: Option<crate::domain::resources::Resources>,
}

impl Handler<ReadLive> for SessionRegistry {
    type Result = ResponseFuture<Vec<LiveReading>>;

    /// Asks each session for its cached reading (sessions read their cgroups themselves, at
    /// most once a second: asking costs no cgroupfs read).
    fn handle(&mut self, msg: ReadLive, _ctx: &mut Context<Self>) -> Self::Result {
        let wanted: Vec<(SessionId, ProjectId, Addr<CliSession>)> = match msg.0 {
            Some(ids) => ids
                .into_iter()
                .filter_map(|id| self.live.get(&id).map(|l| (id, l.project_id.clone(), l.addr.clone())))
                .collect(),
            None => self.live.iter().map(|(id, l)| (id.clone(), l.project_id.clone(), l.addr.clone())).collect(),
        };
        Box::pin(async move {
            let asked = wanted.iter().map(|(_, _, addr)| addr.send(crate::actors::session::resources::Readings));
            let answers = futures_util::future::join_all(asked).await;
            wanted
                .into_iter()
                .zip(answers)
                .map(|((id, project_id, _), answer)| LiveReading { id, project_id, resources: answer.ok().flatten() })
                .collect()
        })
    }
}

impl Handler<LiveCount> for SessionRegistry {
    type Result = usize;

    fn handle(&mut self, _msg: LiveCount, _ctx: &mut Context<Self>) -> usize {
        self.live.len()
    }
}
