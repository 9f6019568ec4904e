//! `POST /api/sessions/{id}/message`: a user turn, resuming a session the janitor closed as
//! idle. (Kept as it was when the handlers were split: a registry message will replace it.)

use actix::Addr;
use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};
use serde::Deserialize;
use utoipa::ToSchema;

use super::{live, load_row, resume_session};
use crate::actors::registry::ResumeError;
use crate::actors::session::{AwaitEnd, CliSession, SendOutcome, SendUser, SessionError};
use crate::domain::ids::SessionId;
use crate::domain::session::ClosedReason;
use crate::domain::validate;
use crate::error::{AppError, AppResult, ErrorBody};
use crate::http::fields::check;
use crate::http::AppState;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SendMessage {
    /// The user turn's text.
    #[schema(min_length = 1)]
    pub content: String,
}

/// For a session that is not live: resumes it when the janitor closed it as idle (and answers
/// with the new actor); any other ended session gets `not_live`.
async fn resume_if_idle_closed(state: &AppState, id: &SessionId, not_live: AppError) -> AppResult<Addr<CliSession>> {
    let row = load_row(state, id).await?;
    if row.closed_reason != Some(ClosedReason::IdleTimeout) {
        return Err(not_live);
    }
    match resume_session(state, id).await {
        // Another request resumed it first: the turn goes to that process.
        Ok(_) | Err(ResumeError::Conflict(_)) => live(state, id).await,
        Err(e) => Err(AppError::from(e)),
    }
}

/// Send a user turn. Answers once the line is stored; it is written to the CLI when the
/// running turn (if any) ends. At most 100 turns wait per session. A session the janitor
/// closed as idle (`closed_reason` `idle_timeout`) is resumed first, and the turn waits for it.
#[utoipa::path(post, path = "/api/sessions/{id}/message", tag = "sessions", request_body = SendMessage,
    params(("id" = String, Path, description = "Session id (UUID)")),
    responses(
        (status = 202, description = "Stored, and sent or queued", body = SendOutcome),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 404, description = "No such session", body = ErrorBody),
        (status = 409, description = "The session is closed or errored (other than by the idle timeout), or cannot be resumed", body = ErrorBody),
        (status = 413, description = "Body over 1 MiB", body = ErrorBody),
        (status = 415, description = "Not JSON", body = ErrorBody),
        (status = 422, description = "Validation failed", body = ErrorBody),
        (status = 429, description = "100 turns already wait, or resuming would exceed a session limit", body = ErrorBody),
        (status = 503, description = "The message could not be stored, or the service is shutting down", body = ErrorBody),
    ))]
pub async fn send_message(
    state: web::Data<AppState>,
    id: web::Path<String>,
    body: web::Json<SendMessage>,
) -> AppResult<HttpResponse> {
    let id: SessionId = id.parse()?;
    let content = body.into_inner().content;
    if content.trim().is_empty() {
        return Err(AppError::validation("`content` must not be empty"));
    }
    check(validate::free_text("content", &content, usize::MAX))?;
    let addr = match live(&state, &id).await {
        Ok(addr) => addr,
        Err(not_live) => resume_if_idle_closed(&state, &id, not_live).await?,
    };
    let outcome = match addr.send(SendUser { content: content.clone() }).await {
        Ok(Err(SessionError::NotLive(status))) => {
            // Ending as the message came (perhaps closed by the janitor this very moment):
            // once it has ended, a session closed as idle is resumed like any other.
            let _ = addr.send(AwaitEnd).await;
            let not_live = AppError::from(SessionError::NotLive(status));
            resume_if_idle_closed(&state, &id, not_live).await?.send(SendUser { content }).await
        }
        other => other,
    };
    let outcome = outcome
        .map_err(|_| AppError::new(StatusCode::CONFLICT, "session_not_live", "The session ended."))?
        .map_err(AppError::from)?;
    Ok(HttpResponse::Accepted().json(outcome))
}
