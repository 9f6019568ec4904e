//! Sessions: launch, inspect, talk to and end supervised CLI processes. One file per group of
//! handlers; here, what they share: how the session actors' errors read over HTTP, and the
//! lookups of a session (its live actor, or its stored row).

pub mod control;
pub mod launch;
pub mod offers;
pub mod pause;
pub mod read;
pub mod review;
pub mod turns;

use actix::Addr;
use actix_web::http::StatusCode;

use super::AppState;
use crate::actors::registry::{DeliverError, Find, LaunchError, Resume, ResumeError};
use crate::actors::session::{CliSession, SessionError, Snapshot};
use crate::db;
use crate::db::sessions::Session;
use crate::domain::ids::SessionId;
use crate::error::{AppError, AppResult};

impl From<SessionError> for AppError {
    fn from(e: SessionError) -> Self {
        let message = e.to_string();
        match e {
            SessionError::NotLive(_) => AppError::new(StatusCode::CONFLICT, "session_not_live", message),
            SessionError::Storage(e) => e.into(),
            SessionError::QueueFull => AppError::new(StatusCode::TOO_MANY_REQUESTS, "queue_full", message),
            SessionError::Timeout(_) => AppError::new(StatusCode::GATEWAY_TIMEOUT, "cli_timeout", message),
            SessionError::Cli(_) => AppError::new(StatusCode::BAD_GATEWAY, "cli_error", message),
            SessionError::Unsupported(_) => AppError::new(StatusCode::CONFLICT, "unsupported_by_agent", message),
            SessionError::Refused(_) => AppError::new(StatusCode::CONFLICT, "refused_by_cli", message),
            SessionError::Budget(spent) => spent.into(),
            SessionError::Conflict(_) => AppError::new(StatusCode::CONFLICT, "session_conflict", message),
            SessionError::Unavailable(_) => AppError::new(StatusCode::SERVICE_UNAVAILABLE, "unavailable", message),
        }
    }
}

impl From<crate::supervisor::catalog::AgentError> for AppError {
    fn from(e: crate::supervisor::catalog::AgentError) -> Self {
        use crate::supervisor::catalog::AgentError;
        let message = e.to_string();
        match e {
            AgentError::Unknown { .. } => AppError::new(StatusCode::UNPROCESSABLE_ENTITY, "unknown_agent", message),
            AgentError::Missing { .. } | AgentError::Unprepared { .. } => {
                AppError::unavailable("agent_unavailable", message)
            }
            AgentError::Unsupported { .. } => {
                AppError::new(StatusCode::UNPROCESSABLE_ENTITY, "unsupported_by_agent", message)
            }
        }
    }
}

impl From<LaunchError> for AppError {
    fn from(e: LaunchError) -> Self {
        match e {
            LaunchError::Capacity(m) => AppError::new(StatusCode::TOO_MANY_REQUESTS, "capacity_reached", m),
            LaunchError::ShuttingDown => AppError::unavailable("shutting_down", "The service is shutting down."),
            LaunchError::ProjectDeleted => AppError::not_found("The project is being deleted."),
            LaunchError::NoPort(m) => AppError::unavailable("ports_exhausted", m),
            LaunchError::Sandbox(e) => AppError::unavailable("sandbox_unavailable", e.to_string()),
            LaunchError::Store(e) => e.into(),
            LaunchError::Storage(e) => e.into(),
            LaunchError::Workspace(e) => e.into(),
            LaunchError::Limits(m) => AppError::unavailable("limits_unavailable", m),
        }
    }
}

impl From<DeliverError> for AppError {
    fn from(e: DeliverError) -> Self {
        match e {
            DeliverError::NotFound(_) => AppError::not_found(e.to_string()),
            DeliverError::Ended(_) => AppError::new(StatusCode::CONFLICT, "session_not_live", e.to_string()),
            DeliverError::Session(e) => e.into(),
            DeliverError::Resume(e) => e.into(),
            DeliverError::Store(e) => e.into(),
            DeliverError::Budget(spent) => spent.into(),
        }
    }
}

impl From<ResumeError> for AppError {
    fn from(e: ResumeError) -> Self {
        match e {
            ResumeError::NotFound(m) => AppError::not_found(m),
            ResumeError::Conflict(m) => AppError::new(StatusCode::CONFLICT, "session_live", m),
            ResumeError::NotResumable(m) => AppError::new(StatusCode::CONFLICT, "not_resumable", m),
            ResumeError::Launch(e) => e.into(),
        }
    }
}

/// The registry's answer to [`Resume`]; a registry that cannot be asked is a storage failure
/// of the launch (503).
async fn resume_session(state: &AppState, id: &SessionId) -> Result<Session, ResumeError> {
    state.registry.send(Resume(id.clone())).await.map_err(|e| {
        ResumeError::Launch(LaunchError::Store(db::StoreError::Other(format!("session registry unavailable: {e}"))))
    })?
}

/// The stored row, or a 404.
async fn load_row(state: &AppState, id: &SessionId) -> AppResult<Session> {
    let lookup = id.clone();
    state
        .store
        .run(move |conn| db::sessions::find(conn, &lookup))
        .await?
        .ok_or_else(|| AppError::not_found(format!("No session with id {id:?}.")))
}

/// The live actor, or why there is none: 409 for an ended session, 404 for an unknown one.
async fn live(state: &AppState, id: &SessionId) -> AppResult<Addr<CliSession>> {
    match state.registry.send(Find(id.clone())).await {
        Ok(Some(addr)) => Ok(addr),
        Ok(None) => {
            let row = load_row(state, id).await?;
            Err(AppError::new(StatusCode::CONFLICT, "session_not_live", format!("The session is {}.", row.status)))
        }
        Err(e) => Err(AppError::internal(format!("session registry unavailable: {e}"))),
    }
}

/// Asks the live session `id` (a control request, a pause), answering with its row.
async fn ask_live<M>(state: &AppState, id: &SessionId, ask: M) -> AppResult<actix_web::HttpResponse>
where
    M: actix::Message<Result = Result<Session, SessionError>> + Send + 'static,
    CliSession: actix::Handler<M>,
{
    let addr = live(state, id).await?;
    let row = addr.send(ask).await.map_err(ended)??;
    Ok(actix_web::HttpResponse::Ok().json(row))
}

/// Current view of a session: the actor's own row while live, the database's afterwards.
async fn current(state: &AppState, id: &SessionId) -> AppResult<Session> {
    if let Ok(Some(addr)) = state.registry.send(Find(id.clone())).await {
        if let Ok(row) = addr.send(Snapshot).await {
            return Ok(row);
        }
    }
    load_row(state, id).await
}

/// A request to a live session's actor that the actor may no longer take: it ended meanwhile.
fn ended(_: actix::MailboxError) -> AppError {
    AppError::new(StatusCode::CONFLICT, "session_not_live", "The session ended.")
}
