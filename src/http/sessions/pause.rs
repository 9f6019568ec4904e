//! Pausing and unpausing a session: its whole cgroup frozen and thawed (see
//! [`crate::actors::session::pause`]).

use actix_web::{web, HttpResponse};

use super::ask_live;
use crate::actors::session::pause::{Pause, Unpause};
use crate::db::sessions::Session;
use crate::error::{AppResult, ErrorBody};
use crate::http::AppState;

/// Freeze the session: the CLI and everything it started stop running (`cgroup.freeze`) until
/// it is unpaused; its status is `paused` (`status_reason` "paused on request"). Messages sent
/// meanwhile are queued and go once it is unpaused; the turn watchdog does not count the pause,
/// and the janitor leaves it open for the idle timeout counted from the pause. A pause
/// outlasts a restart of the service.
#[utoipa::path(post, path = "/api/sessions/{id}/pause", tag = "sessions",
    params(("id" = String, Path, description = "Session id (UUID)")),
    responses(
        (status = 200, description = "Paused", body = Session),
        (status = 404, description = "No such session", body = ErrorBody),
        (status = 409, description = "The session is not live (or still starting), or is paused already (`session_conflict`)", body = ErrorBody),
        (status = 503, description = "Its processes cannot be frozen here (no cgroup v2 of its own: see health's `process_containment`)", body = ErrorBody),
    ))]
pub async fn pause(state: web::Data<AppState>, id: web::Path<String>) -> AppResult<HttpResponse> {
    ask_live(&state, &id.parse()?, Pause).await
}

/// Thaw a paused session: it goes on where it was (a turn that was running continues), and
/// the messages queued meanwhile go, oldest first.
#[utoipa::path(post, path = "/api/sessions/{id}/unpause", tag = "sessions",
    params(("id" = String, Path, description = "Session id (UUID)")),
    responses(
        (status = 200, description = "Running again", body = Session),
        (status = 404, description = "No such session", body = ErrorBody),
        (status = 409, description = "The session is not live, or not paused (`session_conflict`)", body = ErrorBody),
        (status = 503, description = "Its processes could not be thawed", body = ErrorBody),
    ))]
pub async fn unpause(state: web::Data<AppState>, id: web::Path<String>) -> AppResult<HttpResponse> {
    ask_live(&state, &id.parse()?, Unpause).await
}
