//! One way in for a user turn, used alike by HTTP and the WebSocket `message` action: to the
//! live session, or, when the session was left rather than ended (closed as idle by the
//! janitor, closed by the service's stop, errored by its crash, stalled), to the session resumed for
//! it. A message that races the janitor (the session is ending as it arrives) waits for the end
//! and then takes the same path.

use actix::prelude::*;

use super::resume::{Resume, ResumeError};
use super::{Find, SessionRegistry};
use crate::actors::budgets::CheckBudget;
use crate::actors::session::{AwaitEnd, CliSession, SendOutcome, SendUser, SessionError};
use crate::db::{sessions, Store, StoreError};
use crate::domain::budget::Exhaustion;
use crate::domain::ids::{ProjectId, SessionId};
use crate::domain::session::{ClosedReason, SessionStatus};

/// A user turn for session `id`. Answers once the line is stored.
#[derive(Message)]
#[rtype(result = "Result<SendOutcome, DeliverError>")]
pub struct Deliver {
    pub id: SessionId,
    pub content: String,
}

#[derive(Debug, thiserror::Error)]
pub enum DeliverError {
    #[error("No session with id {0:?}.")]
    NotFound(SessionId),
    /// The session ended (other than by the idle timeout): its status.
    #[error("The session is {0}.")]
    Ended(SessionStatus),
    #[error(transparent)]
    Session(#[from] SessionError),
    #[error(transparent)]
    Resume(#[from] ResumeError),
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A budget covering the session is spent.
    #[error("{}", .0.message())]
    Budget(Exhaustion),
}

impl Handler<Deliver> for SessionRegistry {
    type Result = ResponseFuture<Result<SendOutcome, DeliverError>>;

    fn handle(&mut self, msg: Deliver, ctx: &mut Context<Self>) -> Self::Result {
        let project_id = self.live.get(&msg.id).map(|l| l.project_id.clone());
        let route =
            Route { registry: ctx.address(), store: self.store.clone(), id: msg.id, keeper: self.budgets.clone() };
        Box::pin(async move {
            route.within_budget(project_id).await?;
            route.deliver(msg.content).await
        })
    }
}

/// Where a turn for one session goes.
struct Route {
    registry: Addr<SessionRegistry>,
    store: Store,
    id: SessionId,
    keeper: Recipient<CheckBudget>,
}

impl Route {
    /// Refuses the turn while a budget covering the session's project is spent.
    async fn within_budget(&self, project_id: Option<ProjectId>) -> Result<(), DeliverError> {
        let project_id = match project_id {
            Some(id) => id,
            None => self.row().await?.project_id,
        };
        match self.keeper.send(CheckBudget { project_id: Some(project_id) }).await {
            Ok(Err(spent)) => Err(DeliverError::Budget(spent)),
            // A keeper that is gone (shutting down) refuses nothing.
            Ok(Ok(())) | Err(_) => Ok(()),
        }
    }

    async fn deliver(&self, content: String) -> Result<SendOutcome, DeliverError> {
        let session = match self.registry.send(Find(self.id.clone())).await.ok().flatten() {
            Some(session) => session,
            None => self.resume_if_left(None).await?,
        };
        match session.send(SendUser { content: content.clone() }).await {
            Ok(Err(SessionError::NotLive(status))) => {
                // Ending as the message came (perhaps closed by the janitor this very moment):
                // once it has ended, a session closed as idle is resumed like any other.
                let _ = session.send(AwaitEnd).await;
                let session = self.resume_if_left(Some(SessionError::NotLive(status))).await?;
                Ok(session.send(SendUser { content }).await.map_err(|_| ended_meanwhile())??)
            }
            Ok(outcome) => Ok(outcome?),
            Err(_) => Err(ended_meanwhile().into()),
        }
    }

    /// The session's actor after resuming it, when it ended for a reason that resumes on a
    /// message (the janitor, the service's stop or crash); otherwise `not_live` (or, without
    /// one, the stored status).
    async fn resume_if_left(&self, not_live: Option<SessionError>) -> Result<Addr<CliSession>, DeliverError> {
        let row = self.row().await?;
        if !row.closed_reason.is_some_and(ClosedReason::resumes_on_message) {
            return Err(not_live.map_or(DeliverError::Ended(row.status), DeliverError::Session));
        }
        let resumed = self.registry.send(Resume(self.id.clone())).await;
        match resumed.unwrap_or_else(|e| Err(StoreError::Other(format!("session registry unavailable: {e}")).into())) {
            // Another request resumed it first: the turn goes to that process.
            Ok(_) | Err(ResumeError::Conflict(_)) => {
                match self.registry.send(Find(self.id.clone())).await.ok().flatten() {
                    Some(session) => Ok(session),
                    None => Err(DeliverError::Ended(self.row().await?.status)),
                }
            }
            Err(e) => Err(e.into()),
        }
    }

    async fn row(&self) -> Result<sessions::Session, DeliverError> {
        let id = self.id.clone();
        let row = self.store.run(move |conn| sessions::find(conn, &id)).await?;
        row.ok_or_else(|| DeliverError::NotFound(self.id.clone()))
    }
}

fn ended_meanwhile() -> SessionError {
    SessionError::NotLive("ended".to_string())
}
