//! Bringing back, at startup, the sessions that were parked at a usage limit when the service
//! stopped or crashed: each gets a new CLI (`--resume`), waits out the same reset, then
//! delivers the turns it still had, in order. Nothing accepted is lost across a restart.

use actix::prelude::*;

use super::resume::ResumeError;
use super::SessionRegistry;
use crate::db::sessions::{self, Session, SessionPatch};
use crate::db::writer::WriteOp;
use crate::db::Store;
use crate::domain::ids::SessionId;

/// Revive session `id`, parked at a limit before the restart.
#[derive(Message)]
#[rtype(result = "Result<Session, ResumeError>")]
pub struct Revive(pub SessionId);

impl Handler<Revive> for SessionRegistry {
    type Result = AtomicResponse<Self, Result<Session, ResumeError>>;

    fn handle(&mut self, msg: Revive, _ctx: &mut Context<Self>) -> Self::Result {
        let id = msg.0.clone();
        AtomicResponse::new(Box::pin(self.resume(msg.0, true).map(move |revived, act, _ctx| {
            if let Err(e) = &revived {
                // It stays ended, and no longer waits: a later start does not try again.
                tracing::error!(session = %id, error = %e, "a session parked before the restart could not be brought back");
                act.writer.persist(WriteOp::Session {
                    id,
                    patch: SessionPatch { resumes_at: Some(None), parked_from_seq: Some(None), ..Default::default() },
                });
            }
            revived
        })))
    }
}

/// Revives every session parked before the restart; answers how many came back.
pub async fn revive_parked(store: &Store, registry: &Addr<SessionRegistry>) -> usize {
    let parked = match store.run(sessions::parked_before_restart).await {
        Ok(parked) => parked,
        Err(e) => {
            tracing::error!(error = %e, "could not read the sessions parked before the restart");
            return 0;
        }
    };
    let mut revived = 0;
    for id in parked {
        if let Ok(Ok(row)) = registry.send(Revive(id)).await {
            tracing::info!(session = %row.id, resumes_at = ?row.resumes_at, "a session parked at a usage limit is back");
            revived += 1;
        }
    }
    revived
}
