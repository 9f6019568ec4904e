//! `POST /api/sessions/{id}/message`: a user turn, through the registry's one way in
//! ([`Deliver`]), which resumes a session the janitor closed as idle (as the WebSocket
//! `message` action does).

use actix_web::{web, HttpResponse};
use serde::Deserialize;
use utoipa::ToSchema;

use crate::actors::registry::Deliver;
use crate::actors::session::SendOutcome;
use crate::domain::ids::SessionId;
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

/// Send a user turn. Answers once the line is stored; it is written to the CLI when the
/// running turn (if any) ends. At most 100 turns wait per session. A session that was left
/// rather than ended (`closed_reason` `idle_timeout`, `shutdown`, `service_restarted` or `stalled`) is
/// resumed first, and the turn waits for it.
#[utoipa::path(post, path = "/api/sessions/{id}/message", tag = "sessions", request_body = SendMessage,
    params(("id" = String, Path, description = "Session id (UUID)")),
    responses(
        (status = 202, description = "Stored, and sent or queued", body = SendOutcome),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 404, description = "No such session", body = ErrorBody),
        (status = 402, description = "A budget covering it is spent (`budget_exhausted`: the message names the budget and when it resets; `Retry-After` gives the seconds)", body = ErrorBody),
        (status = 409, description = "The session ended for another reason (requested, its CLI exited, ...), or cannot be resumed", body = ErrorBody),
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
    let delivered = state.registry.send(Deliver { id, content }).await;
    let outcome = delivered.map_err(|e| AppError::internal(format!("session registry unavailable: {e}")))??;
    Ok(HttpResponse::Accepted().json(outcome))
}
