//! Background processes: start one (answered at once), list, read, kill one or all, and clean
//! up the ended ones.

use actix_web::http::header;
use actix_web::{web, HttpRequest, HttpResponse};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::across::{self, Act, Spread};
use super::{ask, process_of, project, session, start, CommandSpec, Workspace};
use crate::actors::workbench::{Cleanup, Kill, KillAll};
use crate::db::processes::{self, ProcessRow};
use crate::domain::process::{Owner, ProcessKind, ProcessStatus};
use crate::error::{AppError, AppResult, ErrorBody};
use crate::http::pagination::Page;
use crate::http::{peers, AppState};

/// A signal a kill may start with.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema)]
pub enum KillSignal {
    #[serde(rename = "SIGTERM")]
    Term,
    #[serde(rename = "SIGINT")]
    Int,
    #[serde(rename = "SIGHUP")]
    Hup,
    #[serde(rename = "SIGQUIT")]
    Quit,
    #[serde(rename = "SIGKILL")]
    Kill,
    #[serde(rename = "SIGUSR1")]
    Usr1,
    #[serde(rename = "SIGUSR2")]
    Usr2,
}

impl KillSignal {
    fn number(self) -> i32 {
        match self {
            KillSignal::Term => libc::SIGTERM,
            KillSignal::Int => libc::SIGINT,
            KillSignal::Hup => libc::SIGHUP,
            KillSignal::Quit => libc::SIGQUIT,
            KillSignal::Kill => libc::SIGKILL,
            KillSignal::Usr1 => libc::SIGUSR1,
            KillSignal::Usr2 => libc::SIGUSR2,
        }
    }
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct KillRequest {
    /// Sent to every process of its tree first (default `SIGTERM`).
    pub signal: Option<KillSignal>,
    /// Then SIGKILL to the whole tree (its process group or cgroup) after this long (default:
    /// the `process_kill_grace_ms` setting; at most 600000).
    #[schema(minimum = 0, maximum = 600000)]
    pub grace_ms: Option<u64>,
}

impl KillRequest {
    fn parts(&self, state: &AppState) -> AppResult<(i32, std::time::Duration)> {
        let grace = self.grace_ms.unwrap_or(state.settings.processes.kill_grace_ms);
        if grace > 600_000 {
            return Err(AppError::validation(format!("`grace_ms` must be at most 600000, got {grace}")));
        }
        Ok((self.signal.unwrap_or(KillSignal::Term).number(), std::time::Duration::from_millis(grace)))
    }
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListFilter {
    /// Only `exec` commands or `background` processes.
    pub kind: Option<ProcessKind>,
    /// Only processes in this status.
    pub status: Option<ProcessStatus>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Count {
    /// How many processes it concerned.
    pub count: usize,
}

async fn start_in(state: &AppState, ws: Workspace, spec: CommandSpec) -> AppResult<HttpResponse> {
    let checked = spec.check(&ws.folder).await?;
    let scope = match &ws.owner {
        Owner::Session(id) => format!("/api/sessions/{id}"),
        Owner::Project(id) => format!("/api/projects/{id}"),
    };
    let started = ask(state, start(ws, checked, ProcessKind::Background)).await??;
    Ok(HttpResponse::Accepted()
        .insert_header((header::LOCATION, format!("{scope}/processes/{}", started.row.id)))
        .json(started.row))
}

async fn list_of(state: &AppState, owner: Owner, filter: &ListFilter, page: &Page) -> AppResult<HttpResponse> {
    let (limit, offset) = page.bounds()?;
    let (kind, status) = (filter.kind, filter.status);
    let rows = state.store.run(move |conn| processes::list(conn, &owner, kind, status, limit, offset)).await?;
    Ok(HttpResponse::Ok().json(rows))
}

async fn kill_in(state: &AppState, owner: Owner, raw: &str, body: &KillRequest) -> AppResult<HttpResponse> {
    let (signal, grace) = body.parts(state)?;
    let row = process_of(state, &owner, raw).await?;
    ask(state, Kill { owner, id: row.id.clone(), signal, grace }).await??;
    Ok(HttpResponse::Accepted().json(row))
}

async fn kill_all_here(state: &AppState, owner: Owner, body: &KillRequest) -> AppResult<usize> {
    let (signal, grace) = body.parts(state)?;
    ask(state, KillAll { owner, signal, grace }).await
}

async fn cleanup_here(state: &AppState, owner: Owner) -> AppResult<usize> {
    Ok(ask(state, Cleanup { owner: Some(owner), before: None }).await??)
}

/// Start a background process in the session's workspace; answered at once.
#[utoipa::path(post, path = "/api/sessions/{id}/processes", tag = "processes", request_body = CommandSpec,
    params(("id" = String, Path, description = "Session id (UUID)")),
    responses(
        (status = 202, description = "Started (`Location`: the process)", body = ProcessRow),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 413, description = "The body is larger than 1 MiB", body = ErrorBody),
        (status = 415, description = "Not JSON", body = ErrorBody),
        (status = 403, description = "A permission rule denies it (`permission_denied`)", body = ErrorBody),
        (status = 404, description = "No such session", body = ErrorBody),
        (status = 409, description = "The session has ended", body = ErrorBody),
        (status = 422, description = "Bad command, env or cwd", body = ErrorBody),
        (status = 429, description = "Too many processes", body = ErrorBody),
        (status = 503, description = "Shutting down, no sandbox, or it could not start", body = ErrorBody),
    ))]
pub async fn start_session(
    state: web::Data<AppState>,
    id: web::Path<String>,
    body: web::Json<CommandSpec>,
) -> AppResult<HttpResponse> {
    let ws = session(&state, &id, true).await?;
    start_in(&state, ws, body.into_inner()).await
}

/// Start a background process in the project's folder; answered at once.
#[utoipa::path(post, path = "/api/projects/{id}/processes", tag = "processes", request_body = CommandSpec,
    params(("id" = String, Path, description = "Project id (UUID)")),
    responses(
        (status = 202, description = "Started (`Location`: the process)", body = ProcessRow),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 413, description = "The body is larger than 1 MiB", body = ErrorBody),
        (status = 415, description = "Not JSON", body = ErrorBody),
        (status = 403, description = "A permission rule denies it (`permission_denied`)", body = ErrorBody),
        (status = 404, description = "No such project", body = ErrorBody),
        (status = 422, description = "Bad command, env or cwd", body = ErrorBody),
        (status = 429, description = "Too many processes", body = ErrorBody),
        (status = 503, description = "Shutting down, no sandbox, or it could not start", body = ErrorBody),
    ))]
pub async fn start_project(
    state: web::Data<AppState>,
    id: web::Path<String>,
    body: web::Json<CommandSpec>,
) -> AppResult<HttpResponse> {
    let ws = project(&state, &id).await?;
    start_in(&state, ws, body.into_inner()).await
}

/// The session's commands and background processes, newest first.
#[utoipa::path(get, path = "/api/sessions/{id}/processes", tag = "processes",
    params(("id" = String, Path, description = "Session id (UUID)"), ListFilter, Page),
    responses(
        (status = 200, description = "Processes", body = [ProcessRow]),
        (status = 400, description = "Bad query string", body = ErrorBody),
        (status = 404, description = "No such session", body = ErrorBody),
        (status = 422, description = "Bad limit or offset", body = ErrorBody),
    ))]
pub async fn list_session(
    state: web::Data<AppState>,
    id: web::Path<String>,
    filter: web::Query<ListFilter>,
    page: web::Query<Page>,
) -> AppResult<HttpResponse> {
    let ws = session(&state, &id, false).await?;
    list_of(&state, ws.owner, &filter, &page).await
}

/// The project folder's commands and background processes (not its sessions'), newest first.
#[utoipa::path(get, path = "/api/projects/{id}/processes", tag = "processes",
    params(("id" = String, Path, description = "Project id (UUID)"), ListFilter, Page),
    responses(
        (status = 200, description = "Processes", body = [ProcessRow]),
        (status = 400, description = "Bad query string", body = ErrorBody),
        (status = 404, description = "No such project", body = ErrorBody),
        (status = 422, description = "Bad limit or offset", body = ErrorBody),
    ))]
pub async fn list_project(
    state: web::Data<AppState>,
    id: web::Path<String>,
    filter: web::Query<ListFilter>,
    page: web::Query<Page>,
) -> AppResult<HttpResponse> {
    let ws = project(&state, &id).await?;
    list_of(&state, ws.owner, &filter, &page).await
}

/// One of the session's processes.
#[utoipa::path(get, path = "/api/sessions/{id}/processes/{process_id}", tag = "processes",
    params(("id" = String, Path, description = "Session id (UUID)"), ("process_id" = String, Path, description = "Process id (UUID)")),
    responses(
        (status = 200, description = "The process", body = ProcessRow),
        (status = 404, description = "No such session or process", body = ErrorBody),
    ))]
pub async fn get_session(state: web::Data<AppState>, path: web::Path<(String, String)>) -> AppResult<HttpResponse> {
    let ws = session(&state, &path.0, false).await?;
    Ok(HttpResponse::Ok().json(process_of(&state, &ws.owner, &path.1).await?))
}

/// One of the project folder's processes.
#[utoipa::path(get, path = "/api/projects/{id}/processes/{process_id}", tag = "processes",
    params(("id" = String, Path, description = "Project id (UUID)"), ("process_id" = String, Path, description = "Process id (UUID)")),
    responses(
        (status = 200, description = "The process", body = ProcessRow),
        (status = 404, description = "No such project or process", body = ErrorBody),
    ))]
pub async fn get_project(state: web::Data<AppState>, path: web::Path<(String, String)>) -> AppResult<HttpResponse> {
    let ws = project(&state, &path.0).await?;
    Ok(HttpResponse::Ok().json(process_of(&state, &ws.owner, &path.1).await?))
}

/// Kill one of the session's processes: `signal` to its whole tree, SIGKILL after `grace_ms`.
#[utoipa::path(post, path = "/api/sessions/{id}/processes/{process_id}/kill", tag = "processes", request_body = KillRequest,
    params(("id" = String, Path, description = "Session id (UUID)"), ("process_id" = String, Path, description = "Process id (UUID)")),
    responses(
        (status = 202, description = "Ending (the row as it was)", body = ProcessRow),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 413, description = "The body is larger than 1 MiB", body = ErrorBody),
        (status = 415, description = "Not JSON", body = ErrorBody),
        (status = 404, description = "No such session or process", body = ErrorBody),
        (status = 409, description = "It is not running", body = ErrorBody),
        (status = 422, description = "Bad signal or grace", body = ErrorBody),
    ))]
pub async fn kill_session(
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    body: web::Json<KillRequest>,
) -> AppResult<HttpResponse> {
    let ws = session(&state, &path.0, false).await?;
    kill_in(&state, ws.owner, &path.1, &body).await
}

/// Kill one of the project folder's processes: `signal` to its whole tree, SIGKILL after `grace_ms`.
#[utoipa::path(post, path = "/api/projects/{id}/processes/{process_id}/kill", tag = "processes", request_body = KillRequest,
    params(("id" = String, Path, description = "Project id (UUID)"), ("process_id" = String, Path, description = "Process id (UUID)")),
    responses(
        (status = 202, description = "Ending (the row as it was)", body = ProcessRow),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 413, description = "The body is larger than 1 MiB", body = ErrorBody),
        (status = 415, description = "Not JSON", body = ErrorBody),
        (status = 404, description = "No such project or process", body = ErrorBody),
        (status = 409, description = "It is not running", body = ErrorBody),
        (status = 422, description = "Bad signal or grace", body = ErrorBody),
    ))]
pub async fn kill_project(
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    body: web::Json<KillRequest>,
) -> AppResult<HttpResponse> {
    let ws = project(&state, &path.0).await?;
    kill_in(&state, ws.owner, &path.1, &body).await
}

/// Kill every running command and process of the session.
#[utoipa::path(post, path = "/api/sessions/{id}/processes/kill-all", tag = "processes", request_body = KillRequest,
    params(("id" = String, Path, description = "Session id (UUID)")),
    responses(
        (status = 202, description = "Ending this many", body = Count),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 413, description = "The body is larger than 1 MiB", body = ErrorBody),
        (status = 415, description = "Not JSON", body = ErrorBody),
        (status = 404, description = "No such session", body = ErrorBody),
        (status = 422, description = "Bad signal or grace", body = ErrorBody),
    ))]
pub async fn kill_all_session(
    state: web::Data<AppState>,
    id: web::Path<String>,
    body: web::Json<KillRequest>,
) -> AppResult<HttpResponse> {
    let ws = session(&state, &id, false).await?;
    let count = kill_all_here(&state, ws.owner, &body).await?;
    Ok(HttpResponse::Accepted().json(Count { count }))
}

/// Kill every running command and process of the project's folder (not its sessions'), on
/// every node that runs some (cluster mode); `unreachable` names the nodes that could not be.
#[utoipa::path(post, path = "/api/projects/{id}/processes/kill-all", tag = "processes", request_body = KillRequest,
    params(("id" = String, Path, description = "Project id (UUID)")),
    responses(
        (status = 202, description = "Ending this many, per node", body = Spread),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 413, description = "The body is larger than 1 MiB", body = ErrorBody),
        (status = 415, description = "Not JSON", body = ErrorBody),
        (status = 404, description = "No such project", body = ErrorBody),
        (status = 422, description = "Bad signal or grace", body = ErrorBody),
        (status = 503, description = "The database does not answer", body = ErrorBody),
    ))]
pub async fn kill_all_project(
    state: web::Data<AppState>,
    id: web::Path<String>,
    body: web::Json<KillRequest>,
    req: HttpRequest,
) -> AppResult<HttpResponse> {
    let ws = project(&state, &id).await?;
    let count = kill_all_here(&state, ws.owner, &body).await?;
    let act = Act::KillAll(serde_json::to_value(&*body).unwrap_or_default());
    let spread = across::spread(&state, &ws.project_id, act, count, peers::from_peer(req.headers())).await?;
    Ok(HttpResponse::Accepted().json(spread))
}

/// Remove the session's ended commands and processes, with their logs.
#[utoipa::path(post, path = "/api/sessions/{id}/processes/cleanup", tag = "processes",
    params(("id" = String, Path, description = "Session id (UUID)")),
    responses(
        (status = 200, description = "Removed this many", body = Count),
        (status = 404, description = "No such session", body = ErrorBody),
    ))]
pub async fn cleanup_session(state: web::Data<AppState>, id: web::Path<String>) -> AppResult<HttpResponse> {
    let ws = session(&state, &id, false).await?;
    let count = cleanup_here(&state, ws.owner).await?;
    Ok(HttpResponse::Ok().json(Count { count }))
}

/// Remove the project folder's ended commands and processes, with their logs, on every node
/// that ran some (cluster mode); `unreachable` names the nodes that could not be asked.
#[utoipa::path(post, path = "/api/projects/{id}/processes/cleanup", tag = "processes",
    params(("id" = String, Path, description = "Project id (UUID)")),
    responses(
        (status = 200, description = "Removed this many, per node", body = Spread),
        (status = 404, description = "No such project", body = ErrorBody),
        (status = 503, description = "The database does not answer", body = ErrorBody),
    ))]
pub async fn cleanup_project(
    state: web::Data<AppState>,
    id: web::Path<String>,
    req: HttpRequest,
) -> AppResult<HttpResponse> {
    let ws = project(&state, &id).await?;
    let count = cleanup_here(&state, ws.owner).await?;
    let spread = across::spread(&state, &ws.project_id, Act::Cleanup, count, peers::from_peer(req.headers())).await?;
    Ok(HttpResponse::Ok().json(spread))
}
