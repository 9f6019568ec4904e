//! Terminals: a shell in a PTY in a session's workspace or a project's folder, and the
//! WebSocket that carries its bytes (see [`crate::actors::terminal`]).

use std::collections::BTreeMap;

use actix_web::http::{header, StatusCode};
use actix_web::{web, HttpRequest, HttpResponse};
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};

use super::{peers, projects, terminals_across, AppState};
use crate::actors::subscriber::MAX_FRAME_BYTES;
use crate::actors::terminal::{
    client, Describe, EndTerminal, FindTerminal, ListTerminals, StartError, StartTerminal, TerminalView, Workspace,
};
use crate::db;
use crate::db::projects::Project;
use crate::domain::access::Identity;
use crate::domain::environment;
use crate::domain::ids::{ProjectId, SessionId, TerminalId};
use crate::domain::terminal::{self, EndReason, Size};
use crate::error::{AppError, AppResult, ErrorBody};
use crate::terminal::shell;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StartTerminalBody {
    /// The shell: an absolute path to an executable file. Default: the service user's shell
    /// (`$SHELL`, then its passwd entry, then `/bin/bash`).
    #[schema(min_length = 1, max_length = 4096)]
    pub shell: Option<String>,
    /// Columns (default 80).
    #[schema(minimum = 1, maximum = 1000)]
    pub cols: Option<i64>,
    /// Rows (default 24).
    #[schema(minimum = 1, maximum = 500)]
    pub rows: Option<i64>,
    /// Variables added to the shell's environment (at most 100; names `[A-Za-z_][A-Za-z0-9_]*`,
    /// values without NUL, 32 KiB at most). `TERM` is `xterm-256color` unless set here.
    pub env: Option<BTreeMap<String, String>>,
}

/// A start whose fields passed their checks.
struct Wanted {
    shell: String,
    size: Size,
    env: Vec<(String, String)>,
}

impl Wanted {
    async fn check(body: StartTerminalBody) -> AppResult<Wanted> {
        let size = Size::new(body.cols.unwrap_or(80), body.rows.unwrap_or(24)).map_err(AppError::validation)?;
        let env = body.env.unwrap_or_default();
        if env.len() > terminal::MAX_ENV_VARS {
            let max = terminal::MAX_ENV_VARS;
            return Err(AppError::validation(format!("`env` holds at most {max} variables, got {}", env.len())));
        }
        for (name, value) in &env {
            environment::check_name("env", name).map_err(AppError::validation)?;
            environment::check_value("env", name, value).map_err(AppError::validation)?;
        }
        let shell = web::block(move || match body.shell {
            Some(path) => shell::check(&path),
            None => Ok(shell::default_shell()),
        })
        .await
        .map_err(|e| AppError::internal(format!("the shell check was interrupted: {e}")))?
        .map_err(AppError::validation)?;
        Ok(Wanted { shell, size, env: env.into_iter().collect() })
    }
}

impl From<StartError> for AppError {
    fn from(e: StartError) -> Self {
        let message = e.to_string();
        match e {
            StartError::Limit(_) => AppError::new(StatusCode::TOO_MANY_REQUESTS, "terminal_limit_reached", message),
            StartError::SessionNotLive(_) => AppError::new(StatusCode::CONFLICT, "session_not_live", message),
            StartError::Sandbox(_) => AppError::unavailable("sandbox_unavailable", message),
            StartError::Spawn(_) => AppError::unavailable("terminal_start_failed", message),
            StartError::ShuttingDown => AppError::unavailable("shutting_down", "The service is shutting down."),
        }
    }
}

fn no_terminal(id: &TerminalId) -> AppError {
    AppError::not_found(format!("No terminal with id {id:?}."))
}

fn registry_gone(e: impl std::fmt::Display) -> AppError {
    AppError::internal(format!("the terminal registry is unavailable: {e}"))
}

async fn start(
    state: &AppState,
    workspace: Workspace,
    project: Project,
    folder: String,
    wanted: Wanted,
) -> AppResult<HttpResponse> {
    let Wanted { shell, size, env } = wanted;
    let started = state
        .terminals
        .send(StartTerminal { workspace, project, folder, shell, size, env })
        .await
        .map_err(registry_gone)??;
    Ok(HttpResponse::Created()
        .insert_header((header::LOCATION, format!("/api/terminals/{}", started.id)))
        .json(started))
}

/// Start a terminal in a session's workspace; it ends when the session does.
#[utoipa::path(post, path = "/api/sessions/{id}/terminals", tag = "terminals", request_body = StartTerminalBody,
    params(("id" = String, Path, description = "Session id (UUID)")),
    responses(
        (status = 201, description = "The shell runs; attach with `GET /api/terminals/{id}/ws`", body = TerminalView),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 404, description = "No such session", body = ErrorBody),
        (status = 409, description = "The session's CLI is not running (`session_not_live`)", body = ErrorBody),
        (status = 413, description = "Body over 1 MiB", body = ErrorBody),
        (status = 415, description = "Not JSON", body = ErrorBody),
        (status = 422, description = "Validation failed", body = ErrorBody),
        (status = 429, description = "The session has `max_terminals` terminals", body = ErrorBody),
        (status = 503, description = "Shutting down, the sandbox is unavailable, or the shell could not be started", body = ErrorBody),
    ))]
pub async fn start_for_session(
    state: web::Data<AppState>,
    id: web::Path<String>,
    body: web::Json<StartTerminalBody>,
) -> AppResult<HttpResponse> {
    let session_id: SessionId = id.parse()?;
    let wanted = Wanted::check(body.into_inner()).await?;
    let lookup = session_id.clone();
    let workspace = state
        .store
        .run(move |conn| db::sessions::workspace(conn, &lookup))
        .await?
        .ok_or_else(|| AppError::not_found(format!("No session with id {session_id:?}.")))?;
    start(&state, Workspace::Session(session_id), workspace.project, workspace.folder, wanted).await
}

/// Start a terminal in a project's folder.
#[utoipa::path(post, path = "/api/projects/{id}/terminals", tag = "terminals", request_body = StartTerminalBody,
    params(("id" = String, Path, description = "Project id (UUID)")),
    responses(
        (status = 201, description = "The shell runs; attach with `GET /api/terminals/{id}/ws`", body = TerminalView),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 404, description = "No such project", body = ErrorBody),
        (status = 413, description = "Body over 1 MiB", body = ErrorBody),
        (status = 415, description = "Not JSON", body = ErrorBody),
        (status = 422, description = "Validation failed", body = ErrorBody),
        (status = 429, description = "The project has `max_terminals` terminals", body = ErrorBody),
        (status = 503, description = "Shutting down, the sandbox is unavailable, or the shell could not be started", body = ErrorBody),
    ))]
pub async fn start_for_project(
    state: web::Data<AppState>,
    id: web::Path<String>,
    body: web::Json<StartTerminalBody>,
) -> AppResult<HttpResponse> {
    let project_id: ProjectId = id.parse()?;
    let wanted = Wanted::check(body.into_inner()).await?;
    let project = projects::load(&state, project_id.clone()).await?;
    let folder = project.folder_path.clone();
    start(&state, Workspace::Project(project_id), project, folder, wanted).await
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct TerminalFilter {
    /// Only this session's terminals (UUID).
    pub session_id: Option<String>,
    /// Only this project's terminals, its sessions' included (UUID).
    pub project_id: Option<String>,
}

/// The live terminals, oldest first; in cluster mode every live node's. A token bound to a
/// project: that project's terminals on this node only.
#[utoipa::path(get, path = "/api/terminals", tag = "terminals", params(TerminalFilter),
    responses(
        (status = 200, description = "Live terminals (in cluster mode, of every live node; for a project-bound token, its project's on this node)", body = [TerminalView],
            headers(("x-conduit-unreachable-nodes" = String,
                description = "Cluster mode: the live nodes that could not be asked, comma-separated; their terminals are missing from the list"))),
        (status = 400, description = "Bad query string (an id that is not a UUID)", body = ErrorBody),
        (status = 503, description = "The database does not answer (cluster mode)", body = ErrorBody),
    ))]
pub async fn list(
    state: web::Data<AppState>,
    query: web::Query<TerminalFilter>,
    req: HttpRequest,
    identity: Option<web::ReqData<Identity>>,
) -> AppResult<HttpResponse> {
    let bad = |e: crate::domain::ids::InvalidId| AppError::bad_request("invalid_query", e.to_string());
    let session_id = query.session_id.as_deref().map(SessionId::parse).transpose().map_err(bad)?;
    let asked = query.project_id.as_deref().map(ProjectId::parse).transpose().map_err(bad)?;
    let identity = identity.as_deref();
    // A token bound to a project: its own terminals, none of another project's.
    let filter = match identity {
        Some(who) => who.project_filter(asked),
        None => Some(asked),
    };
    let Some(project_id) = filter else { return Ok(HttpResponse::Ok().json(Vec::<TerminalView>::new())) };
    let views = state.terminals.send(ListTerminals { session_id, project_id }).await.map_err(registry_gone)?;
    // A peer asks for this node's own, and a bound token reaches this node's only; anyone
    // else gets every node's.
    let bound = identity.and_then(Identity::project).is_some();
    if state.settings.cluster.is_none() || bound || peers::from_peer(req.headers()) {
        return Ok(HttpResponse::Ok().json(views));
    }
    let here = views.iter().filter_map(|view| serde_json::to_value(view).ok()).collect();
    let (views, unreachable) = terminals_across::everywhere(&state, req.query_string(), here).await?;
    let mut response = HttpResponse::Ok();
    if !unreachable.is_empty() {
        response.insert_header((terminals_across::UNREACHABLE_HEADER, unreachable.join(", ")));
    }
    Ok(response.json(views))
}

/// One live terminal.
#[utoipa::path(get, path = "/api/terminals/{id}", tag = "terminals",
    params(("id" = String, Path, description = "Terminal id (UUID)")),
    responses(
        (status = 200, description = "The terminal", body = TerminalView),
        (status = 404, description = "No such terminal (or it ended)", body = ErrorBody),
        (status = 503, description = "Cluster mode: it may run on a node that cannot be reached (`owner_unreachable`)", body = ErrorBody),
    ))]
pub async fn get(state: web::Data<AppState>, id: web::Path<String>) -> AppResult<HttpResponse> {
    let id: TerminalId = id.parse()?;
    let addr = state.terminals.send(FindTerminal(id.clone())).await.map_err(registry_gone)?;
    let view = match addr {
        Some(addr) => addr.send(Describe).await.map_err(|_| no_terminal(&id))?,
        None => return Err(no_terminal(&id)),
    };
    Ok(HttpResponse::Ok().json(view))
}

/// End a terminal: SIGHUP to its processes, SIGKILL after 2 s; answers once they are gone.
#[utoipa::path(delete, path = "/api/terminals/{id}", tag = "terminals",
    params(("id" = String, Path, description = "Terminal id (UUID)")),
    responses(
        (status = 204, description = "Ended; its processes are gone"),
        (status = 404, description = "No such terminal (or it already ended)", body = ErrorBody),
        (status = 503, description = "Cluster mode: it may run on a node that cannot be reached (`owner_unreachable`)", body = ErrorBody),
    ))]
pub async fn delete(state: web::Data<AppState>, id: web::Path<String>) -> AppResult<HttpResponse> {
    let id: TerminalId = id.parse()?;
    let ended = state.terminals.send(EndTerminal(id.clone(), EndReason::Closed)).await.map_err(registry_gone)?;
    if !ended {
        return Err(no_terminal(&id));
    }
    Ok(HttpResponse::NoContent().finish())
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct WsQuery {
    /// The API token, for clients that cannot send headers (only when one is configured).
    pub token: Option<String>,
}

/// A terminal over WebSocket.
///
/// Binary frames carry raw bytes both ways: the client's are the keyboard, the server's the
/// shell's output. Text frames are JSON control messages: from the client
/// `{"type":"resize","cols":120,"rows":40}` (1-1000 columns, 1-500 rows); from the server
/// `{"type":"error","message":"..."}` for a control message it could not apply (the connection
/// stays open) and `{"type":"exit","code":0,"signal":null,"reason":"exited"}` when the terminal
/// ends, right before the close. On connect the server first sends the scrollback (the latest
/// `terminal_scrollback_bytes` of output, from a line start once older output was dropped), then
/// live output; nothing between the two is lost or repeated. Several clients may attach; each
/// has a bounded queue (64 chunks of up to 64 KiB) and the PTY is read again once every client
/// queued the last chunk (a fast program is held back, nothing is dropped). A client whose
/// queue stays full for 2 s is closed with 1013 (try again later): reconnecting repaints it
/// from the scrollback. The server pings every 30 s and closes after 75 s without a frame;
/// frames over 1 MiB close with 1009. In cluster mode any node answers: the node asked carries
/// the socket to the node running the terminal, and closes it with 1001 if that node goes away.
#[utoipa::path(get, path = "/api/terminals/{id}/ws", tag = "terminals",
    params(("id" = String, Path, description = "Terminal id (UUID)"), WsQuery),
    responses(
        (status = 101, description = "Switching to the WebSocket protocol"),
        (status = 400, description = "Not a WebSocket upgrade request", body = ErrorBody),
        (status = 404, description = "No such terminal (or it ended)", body = ErrorBody),
        (status = 409, description = "The terminal is ending", body = ErrorBody),
        (status = 503, description = "Cluster mode: the node running it cannot be reached (`owner_unreachable`)", body = ErrorBody),
    ))]
pub async fn ws(
    state: web::Data<AppState>,
    id: web::Path<String>,
    _query: web::Query<WsQuery>,
    req: HttpRequest,
    body: web::Payload,
) -> AppResult<HttpResponse> {
    let id: TerminalId = id.parse()?;
    let terminal =
        state.terminals.send(FindTerminal(id.clone())).await.map_err(registry_gone)?.ok_or_else(|| no_terminal(&id))?;
    let (response, socket, frames) = actix_ws::handle(&req, body)
        .map_err(|e| AppError::bad_request("not_a_websocket", format!("This endpoint speaks WebSocket: {e}")))?;
    let Some(attachment) = client::attach(&terminal).await else {
        return Err(AppError::conflict("The terminal is ending."));
    };
    client::serve(terminal, attachment, socket, frames.max_frame_size(MAX_FRAME_BYTES));
    Ok(response)
}
