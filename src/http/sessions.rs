//! Sessions: launch, inspect, talk to and end supervised CLI processes.

use actix::Addr;
use actix_web::http::{header, StatusCode};
use actix_web::{web, HttpResponse};
use serde::Deserialize;
use utoipa::ToSchema;

use super::pagination::Page;
use super::{projects, AppState};
use crate::actors::registry::{Find, Launch, LaunchError, Resume, ResumeError};
use crate::actors::session::{AwaitEnd, CliSession, Close, Control, SendOutcome, SendUser, SessionError, Snapshot};
use crate::db;
use crate::db::messages::Message;
use crate::db::sessions::Session;
use crate::domain::ids::{ProjectId, SessionId};
use crate::domain::launch::{CliOptions, LaunchSpec};
use crate::domain::session::ClosedReason;
use crate::domain::validate::{self, PermissionMode, Transport};
use crate::error::{AppError, AppResult, ErrorBody};

const MAX_PROMPT_BYTES: usize = 100_000;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LaunchSession {
    /// Display name; a friendly two-word name when absent.
    #[schema(min_length = 1, max_length = 200)]
    pub name: Option<String>,
    /// Defaults to the project's `default_model`.
    #[schema(pattern = r"^[^\s-]\S*$", max_length = 200)]
    pub model: Option<String>,
    /// Defaults to the project's `default_permission_mode`.
    pub permission_mode: Option<PermissionMode>,
    /// A CLI session id to continue (`--resume`).
    #[schema(pattern = r"^[^\s-]\S*$", max_length = 200)]
    pub resume_session_id: Option<String>,
    /// With `resume_session_id`: continue in a new CLI session id.
    pub fork_session: Option<bool>,
    /// Defaults to the project's `default_system_prompt`.
    pub system_prompt: Option<String>,
    /// Defaults to the project's `default_append_system_prompt`.
    pub append_system_prompt: Option<String>,
    /// Idempotency key: while a live session of this project holds it, launching with it
    /// again returns that session (200) instead of starting another.
    #[schema(min_length = 1, max_length = 200)]
    pub external_key: Option<String>,
    /// How the CLI is reached: `stdio` (its pipes), `websocket` (a bridge it connects to with
    /// `--sdk-url`; older CLIs only) or `auto` (websocket for CLI versions known to accept
    /// it). Defaults to the `transport` setting.
    pub transport: Option<Transport>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SendMessage {
    /// The user turn's text.
    #[schema(min_length = 1)]
    pub content: String,
}

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

fn session_error(e: SessionError) -> AppError {
    let message = e.to_string();
    match e {
        SessionError::NotLive(_) => AppError::new(StatusCode::CONFLICT, "session_not_live", message),
        SessionError::Storage(e) => e.into(),
        SessionError::QueueFull => AppError::new(StatusCode::TOO_MANY_REQUESTS, "queue_full", message),
        SessionError::Timeout(_) => AppError::new(StatusCode::GATEWAY_TIMEOUT, "cli_timeout", message),
        SessionError::Cli(_) => AppError::new(StatusCode::BAD_GATEWAY, "cli_error", message),
    }
}

fn launch_error(e: LaunchError) -> AppError {
    match e {
        LaunchError::Capacity(m) => AppError::new(StatusCode::TOO_MANY_REQUESTS, "capacity_reached", m),
        LaunchError::ShuttingDown => AppError::unavailable("shutting_down", "The service is shutting down."),
        LaunchError::NoPort(m) => AppError::unavailable("ports_exhausted", m),
        LaunchError::Store(e) => e.into(),
        LaunchError::Storage(e) => e.into(),
    }
}

fn resume_error(e: ResumeError) -> AppError {
    match e {
        ResumeError::NotFound(m) => AppError::not_found(m),
        ResumeError::Conflict(m) => AppError::new(StatusCode::CONFLICT, "session_live", m),
        ResumeError::NotResumable(m) => AppError::new(StatusCode::CONFLICT, "not_resumable", m),
        ResumeError::Launch(e) => launch_error(e),
    }
}

async fn resume_session(state: &AppState, id: &SessionId) -> Result<Session, ResumeError> {
    state.registry.send(Resume(id.clone())).await.map_err(|e| {
        ResumeError::Launch(LaunchError::Store(db::StoreError::Other(format!("session registry unavailable: {e}"))))
    })?
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
        Err(e) => Err(resume_error(e)),
    }
}

fn check<T>(r: Result<T, String>) -> AppResult<T> {
    r.map_err(AppError::validation)
}

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

/// Current view of a session: the actor's own row while live, the database's afterwards.
async fn current(state: &AppState, id: &SessionId) -> AppResult<Session> {
    if let Ok(Some(addr)) = state.registry.send(Find(id.clone())).await {
        if let Ok(row) = addr.send(Snapshot).await {
            return Ok(row);
        }
    }
    load_row(state, id).await
}

/// Launch a Claude Code session in a project.
#[utoipa::path(post, path = "/api/projects/{id}/sessions", tag = "sessions", request_body = LaunchSession,
    params(("id" = String, Path, description = "Project id (UUID)")),
    responses(
        (status = 201, description = "Launched; status `starting` (or `error` when the CLI cannot be started)", body = Session),
        (status = 200, description = "A live session with this `external_key` already exists", body = Session),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 404, description = "No such project", body = ErrorBody),
        (status = 413, description = "Body over 1 MiB", body = ErrorBody),
        (status = 415, description = "Not JSON", body = ErrorBody),
        (status = 422, description = "Validation failed", body = ErrorBody),
        (status = 429, description = "The project's or the global session limit is reached", body = ErrorBody),
        (status = 503, description = "The service is shutting down, or no port is free for a WebSocket bridge", body = ErrorBody),
    ))]
pub async fn launch(
    state: web::Data<AppState>,
    id: web::Path<String>,
    body: web::Json<LaunchSession>,
) -> AppResult<HttpResponse> {
    let project_id: ProjectId = id.parse()?;
    let b = body.into_inner();
    let name = b.name.as_deref().map(|n| validate::name("name", n)).transpose().map_err(AppError::validation)?;
    let external_key = b
        .external_key
        .as_deref()
        .map(|k| validate::name("external_key", k))
        .transpose()
        .map_err(AppError::validation)?;
    let model =
        b.model.as_deref().map(|m| validate::identifier("model", m)).transpose().map_err(AppError::validation)?;
    let resume = b
        .resume_session_id
        .as_deref()
        .map(|r| validate::identifier("resume_session_id", r))
        .transpose()
        .map_err(AppError::validation)?;
    if let Some(p) = &b.system_prompt {
        check(validate::free_text("system_prompt", p, MAX_PROMPT_BYTES))?;
    }
    if let Some(p) = &b.append_system_prompt {
        check(validate::free_text("append_system_prompt", p, MAX_PROMPT_BYTES))?;
    }
    if b.fork_session == Some(true) && resume.is_none() {
        return Err(AppError::validation("`fork_session` needs `resume_session_id`"));
    }

    let lookup = project_id.clone();
    let project = state
        .store
        .run(move |conn| db::projects::find(conn, &lookup))
        .await?
        .ok_or_else(|| AppError::not_found(format!("No project with id {project_id:?}.")))?;
    let options = CliOptions {
        model: model.or_else(|| project.default_model.clone()),
        permission_mode: b
            .permission_mode
            .map(|m| m.as_str().to_string())
            .or_else(|| project.default_permission_mode.clone()),
        resume_session_id: resume,
        fork_session: b.fork_session.unwrap_or(false),
        system_prompt: b.system_prompt.or_else(|| project.default_system_prompt.clone()),
        append_system_prompt: b.append_system_prompt.or_else(|| project.default_append_system_prompt.clone()),
    };
    let spec = LaunchSpec { name, external_key, options, transport: b.transport };
    let launched = match state
        .registry
        .send(Launch { project, spec })
        .await
        .map_err(|e| AppError::internal(format!("session registry unavailable: {e}")))?
    {
        Ok(launched) => launched,
        Err(LaunchError::Store(e)) if projects::vanished(&state, &e, &project_id).await => {
            return Err(AppError::not_found(format!("No project with id {project_id:?}.")));
        }
        Err(e) => return Err(launch_error(e)),
    };
    let mut response = if launched.created { HttpResponse::Created() } else { HttpResponse::Ok() };
    Ok(response
        .insert_header((header::LOCATION, format!("/api/sessions/{}", launched.session.id)))
        .json(launched.session))
}

/// A project's sessions, newest first.
#[utoipa::path(get, path = "/api/projects/{id}/sessions", tag = "sessions", params(("id" = String, Path, description = "Project id (UUID)"), Page),
    responses(
        (status = 200, description = "Sessions", body = Vec<Session>),
        (status = 400, description = "Bad query string", body = ErrorBody),
        (status = 404, description = "No such project", body = ErrorBody),
        (status = 422, description = "limit/offset out of range", body = ErrorBody),
    ))]
pub async fn list_for_project(
    state: web::Data<AppState>,
    id: web::Path<String>,
    page: web::Query<Page>,
) -> AppResult<HttpResponse> {
    let project_id: ProjectId = id.parse()?;
    let rows = list_under(
        &state,
        "project",
        project_id,
        &page,
        |conn, id| Ok(db::projects::find(conn, id)?.is_some()),
        db::sessions::list_for_project,
    )
    .await?;
    Ok(HttpResponse::Ok().json(rows))
}

/// A query listing `limit` rows from `offset` under a parent id.
type ListPage<I, T> = fn(&mut db::DbConnection, &I, i64, i64) -> Result<Vec<T>, db::StoreError>;

/// A page of rows belonging to a parent that must exist (404 naming `kind` when it does not).
async fn list_under<I: std::fmt::Debug + Clone + Send + 'static, T: Send + 'static>(
    state: &AppState,
    kind: &'static str,
    parent: I,
    page: &Page,
    exists: fn(&mut db::DbConnection, &I) -> Result<bool, db::StoreError>,
    list: ListPage<I, T>,
) -> AppResult<Vec<T>> {
    let (limit, offset) = page.bounds()?;
    let lookup = parent.clone();
    let rows = state
        .store
        .run(move |conn| if exists(conn, &lookup)? { list(conn, &lookup, limit, offset).map(Some) } else { Ok(None) })
        .await?;
    rows.ok_or_else(|| AppError::not_found(format!("No {kind} with id {parent:?}.")))
}

/// Sessions whose CLI is running (starting, idle, active, compacting), oldest first.
#[utoipa::path(get, path = "/api/sessions/active", tag = "sessions", params(Page),
    responses(
        (status = 200, description = "Live sessions", body = Vec<Session>),
        (status = 400, description = "Bad query string", body = ErrorBody),
        (status = 422, description = "limit/offset out of range", body = ErrorBody),
    ))]
pub async fn list_active(state: web::Data<AppState>, page: web::Query<Page>) -> AppResult<HttpResponse> {
    let (limit, offset) = page.bounds()?;
    let rows = state.store.run(move |conn| db::sessions::list_live(conn, limit, offset)).await?;
    Ok(HttpResponse::Ok().json(rows))
}

/// One session.
#[utoipa::path(get, path = "/api/sessions/{id}", tag = "sessions", params(("id" = String, Path, description = "Session id (UUID)")),
    responses(
        (status = 200, description = "The session", body = Session),
        (status = 404, description = "No such session", body = ErrorBody),
    ))]
pub async fn get(state: web::Data<AppState>, id: web::Path<String>) -> AppResult<HttpResponse> {
    let id: SessionId = id.parse()?;
    Ok(HttpResponse::Ok().json(current(&state, &id).await?))
}

/// Every line exchanged with the CLI, oldest first.
#[utoipa::path(get, path = "/api/sessions/{id}/messages", tag = "sessions", params(("id" = String, Path, description = "Session id (UUID)"), Page),
    responses(
        (status = 200, description = "Lines, oldest first", body = Vec<Message>),
        (status = 400, description = "Bad query string", body = ErrorBody),
        (status = 404, description = "No such session", body = ErrorBody),
        (status = 422, description = "limit/offset out of range", body = ErrorBody),
    ))]
pub async fn messages(
    state: web::Data<AppState>,
    id: web::Path<String>,
    page: web::Query<Page>,
) -> AppResult<HttpResponse> {
    let id: SessionId = id.parse()?;
    // Lines are written behind: whatever a client has already seen happen (a turn's result in
    // the session row, an event) is stored before it is read back.
    if let Err(e) = state.writer.flush().await {
        tracing::warn!(error = %e, "could not flush the session writer before reading messages");
    }
    let rows = list_under(
        &state,
        "session",
        id,
        &page,
        |conn, id| Ok(db::sessions::find(conn, id)?.is_some()),
        |conn, id, limit, offset| db::messages::list(conn, id.as_str(), limit, offset),
    )
    .await?;
    Ok(HttpResponse::Ok().json(rows))
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
            let not_live = session_error(SessionError::NotLive(status));
            resume_if_idle_closed(&state, &id, not_live).await?.send(SendUser { content }).await
        }
        other => other,
    };
    let outcome = outcome
        .map_err(|_| AppError::new(StatusCode::CONFLICT, "session_not_live", "The session ended."))?
        .map_err(session_error)?;
    Ok(HttpResponse::Accepted().json(outcome))
}

async fn control(state: &AppState, id: &SessionId, command: Control) -> AppResult<HttpResponse> {
    let addr = live(state, id).await?;
    let row = addr
        .send(command)
        .await
        .map_err(|_| AppError::new(StatusCode::CONFLICT, "session_not_live", "The session ended."))?
        .map_err(session_error)?;
    Ok(HttpResponse::Ok().json(row))
}

/// Interrupt the running turn; the session goes back to idle after the CLI's result.
#[utoipa::path(post, path = "/api/sessions/{id}/interrupt", tag = "sessions",
    params(("id" = String, Path, description = "Session id (UUID)")),
    responses(
        (status = 200, description = "The CLI accepted the interrupt", body = Session),
        (status = 404, description = "No such session", body = ErrorBody),
        (status = 409, description = "The session is not live (or still starting)", body = ErrorBody),
        (status = 502, description = "The CLI refused or failed", body = ErrorBody),
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

/// End a session: stdin closed, SIGTERM to its process group, SIGKILL after 5 s. Answers with
/// the final row once every process is confirmed gone. Idempotent.
#[utoipa::path(delete, path = "/api/sessions/{id}", tag = "sessions",
    params(("id" = String, Path, description = "Session id (UUID)")),
    responses(
        (status = 200, description = "The session, closed (or errored if its processes could not be ended)", body = Session),
        (status = 404, description = "No such session", body = ErrorBody),
    ))]
pub async fn close(state: web::Data<AppState>, id: web::Path<String>) -> AppResult<HttpResponse> {
    let id: SessionId = id.parse()?;
    if let Ok(Some(addr)) = state.registry.send(Find(id.clone())).await {
        if let Ok(Ok(row)) = addr.send(Close { signal: libc::SIGTERM, reason: ClosedReason::Requested }).await {
            return Ok(HttpResponse::Ok().json(row));
        }
    }
    // Not live (or it ended meanwhile): the stored row is the answer.
    Ok(HttpResponse::Ok().json(load_row(&state, &id).await?))
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
        (status = 409, description = "The session is live (`session_live`), or its CLI never reported a session id (`not_resumable`)", body = ErrorBody),
        (status = 429, description = "The project's or the global session limit is reached", body = ErrorBody),
        (status = 503, description = "The service is shutting down, or no port is free for a WebSocket bridge", body = ErrorBody),
    ))]
pub async fn resume(state: web::Data<AppState>, id: web::Path<String>) -> AppResult<HttpResponse> {
    let id: SessionId = id.parse()?;
    let row = resume_session(&state, &id).await.map_err(resume_error)?;
    Ok(HttpResponse::Ok().json(row))
}
