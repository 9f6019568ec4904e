//! Controlling a session: interrupt, model, permission mode; closing and resuming it.

use actix_web::{web, HttpResponse};
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};

use super::{ask_live, load_row, resume_session};
use crate::actors::registry::Find;
use crate::actors::session::{Close, Control};
use crate::db::sessions::Session;
use crate::domain::ids::SessionId;
use crate::domain::session::ClosedReason;
use crate::domain::validate::{self, PermissionMode};
use crate::error::{AppResult, ErrorBody};
use crate::http::fields::check;
use crate::http::AppState;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SetModel {
    #[schema(pattern = r"^[^\s-]\S*$", max_length = 200)]
    pub model: String,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SetPermissionMode {
    pub mode: PermissionMode,
}

/// Sends a control request to the live session; answers with its row after the CLI's answer.
async fn control(state: &AppState, id: &SessionId, command: Control) -> AppResult<HttpResponse> {
    ask_live(state, id, command).await
}

/// Interrupt the running turn; the session goes back to idle after the CLI's result.
#[utoipa::path(post, path = "/api/sessions/{id}/interrupt", tag = "sessions",
    params(("id" = String, Path, description = "Session id (UUID)")),
    responses(
        (status = 200, description = "The CLI accepted the interrupt", body = Session),
        (status = 404, description = "No such session", body = ErrorBody),
        (status = 409, description = "The session is not live (or still starting), its agent cannot do this, or the CLI refused (`refused_by_cli`, with its reason)", body = ErrorBody),
        (status = 502, description = "The CLI failed (it ended before answering)", body = ErrorBody),
        (status = 504, description = "The CLI did not answer within 30 s", body = ErrorBody),
    ))]
pub async fn interrupt(state: web::Data<AppState>, id: web::Path<String>) -> AppResult<HttpResponse> {
    let id: SessionId = id.parse()?;
    control(&state, &id, Control::Interrupt).await
}

/// Switch the model (the CLI's `set_model`); the session row follows the CLI's answer.
#[utoipa::path(post, path = "/api/sessions/{id}/model", tag = "sessions", request_body = SetModel,
    params(("id" = String, Path, description = "Session id (UUID)")),
    responses(
        (status = 200, description = "Changed", body = Session),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 404, description = "No such session", body = ErrorBody),
        (status = 409, description = "The session is not live (or still starting)", body = ErrorBody),
        (status = 413, description = "Body over 1 MiB", body = ErrorBody),
        (status = 415, description = "Not JSON", body = ErrorBody),
        (status = 422, description = "Validation failed", body = ErrorBody),
        (status = 502, description = "The CLI refused or failed", body = ErrorBody),
        (status = 504, description = "The CLI did not answer within 30 s", body = ErrorBody),
    ))]
pub async fn set_model(
    state: web::Data<AppState>,
    id: web::Path<String>,
    body: web::Json<SetModel>,
) -> AppResult<HttpResponse> {
    let id: SessionId = id.parse()?;
    let model = check(validate::identifier("model", &body.model))?;
    control(&state, &id, Control::SetModel(model)).await
}

/// Switch the permission mode (the CLI's `set_permission_mode`).
#[utoipa::path(post, path = "/api/sessions/{id}/permission-mode", tag = "sessions", request_body = SetPermissionMode,
    params(("id" = String, Path, description = "Session id (UUID)")),
    responses(
        (status = 200, description = "Changed", body = Session),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 404, description = "No such session", body = ErrorBody),
        (status = 409, description = "The session is not live (or still starting)", body = ErrorBody),
        (status = 413, description = "Body over 1 MiB", body = ErrorBody),
        (status = 415, description = "Not JSON", body = ErrorBody),
        (status = 422, description = "Validation failed", body = ErrorBody),
        (status = 502, description = "The CLI refused or failed", body = ErrorBody),
        (status = 504, description = "The CLI did not answer within 30 s", body = ErrorBody),
    ))]
pub async fn set_permission_mode(
    state: web::Data<AppState>,
    id: web::Path<String>,
    body: web::Json<SetPermissionMode>,
) -> AppResult<HttpResponse> {
    let id: SessionId = id.parse()?;
    control(&state, &id, Control::SetPermissionMode(body.mode.as_str().to_string())).await
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CloseQuery {
    /// A worktree session: delete its branch too (default: the branch is kept).
    pub delete_branch: Option<bool>,
}

/// End a session: stdin closed, SIGTERM to its process group, SIGKILL after 5 s. Answers with
/// the final row once every process is confirmed gone. A worktree session's worktree is then
/// archived: its checkout removed (work left uncommitted is committed on its branch first),
/// its branch kept unless `delete_branch=true`; resuming makes the checkout again. Idempotent.
#[utoipa::path(delete, path = "/api/sessions/{id}", tag = "sessions",
    params(("id" = String, Path, description = "Session id (UUID)"), CloseQuery),
    responses(
        (status = 200, description = "The session, closed (or errored if its processes could not be ended)", body = Session),
        (status = 400, description = "Bad query string", body = ErrorBody),
        (status = 404, description = "No such session", body = ErrorBody),
        (status = 503, description = "Its worktree could not be archived (git failed)", body = ErrorBody),
    ))]
pub async fn close(
    state: web::Data<AppState>,
    id: web::Path<String>,
    q: web::Query<CloseQuery>,
) -> AppResult<HttpResponse> {
    let id: SessionId = id.parse()?;
    let mut closed = None;
    if let Ok(Some(addr)) = state.registry.send(Find(id.clone())).await {
        if let Ok(Ok(row)) = addr.send(Close { signal: libc::SIGTERM, reason: ClosedReason::Requested }).await {
            closed = Some(row);
        }
    }
    // Not live (or it ended meanwhile): the stored row is the answer.
    let row = match closed {
        Some(row) => row,
        None => load_row(&state, &id).await?,
    };
    if row.status.has_ended() {
        super::review::archive(&state, &id, q.delete_branch.unwrap_or(false)).await?;
    }
    Ok(HttpResponse::Ok().json(row))
}

/// Bring back a closed or errored session (idle timeout, restart, crash): a new CLI process
/// with `--resume=<its session_id>` in the same folder, with the same options and transport.
/// The session keeps its id, history and totals; it answers at status `starting`. A CLI that
/// exits within 5 s of resuming leaves the session in `error` with the CLI's reason.
#[utoipa::path(post, path = "/api/sessions/{id}/resume", tag = "sessions",
    params(("id" = String, Path, description = "Session id (UUID)")),
    responses(
        (status = 200, description = "Resuming; status `starting` (or `error` when the CLI cannot be started)", body = Session),
        (status = 404, description = "No such session", body = ErrorBody),
        (status = 402, description = "A budget covering it is spent (`budget_exhausted`: the message names the budget and when it resets; `Retry-After` gives the seconds)", body = ErrorBody),
        (status = 409, description = "The session is live (`session_live`), or its CLI never reported a session id (`not_resumable`)", body = ErrorBody),
        (status = 429, description = "The project's or the global session limit is reached", body = ErrorBody),
        (status = 503, description = "The service is shutting down, no port is free for a WebSocket bridge, or the project asks for a sandbox this machine cannot provide (`sandbox_unavailable`)", body = ErrorBody),
    ))]
pub async fn resume(state: web::Data<AppState>, id: web::Path<String>) -> AppResult<HttpResponse> {
    let id: SessionId = id.parse()?;
    let stored = super::load_row(&state, &id).await?;
    crate::http::usage::within_budget(&state, Some(stored.project_id)).await?;
    let row = resume_session(&state, &id).await?;
    Ok(HttpResponse::Ok().json(row))
}
