//! Commands and background processes in a session's workspace or a project's folder (the exec
//! API). Every endpoint exists twice, under `/api/sessions/{id}/...` and
//! `/api/projects/{id}/...`; both variants resolve their owner here and share one body.
//! Process ids are Conduit's (UUIDs), never pids.
//!
//! - [`exec`]: `exec` (answered when it ends) and `exec/stream` (Server-Sent Events).
//! - [`background`]: start, list, get, kill, kill-all, cleanup.
//! - [`logs`]: a background process's stored logs by offset, and followed live.

pub mod across;
pub mod background;
pub mod exec;
pub mod logs;

use std::collections::BTreeMap;
use std::path::Path;

use actix_web::http::StatusCode;
use serde::Deserialize;
use utoipa::ToSchema;

use super::AppState;
use crate::actors::workbench::{KillError, Start, StartError};
use crate::db::{self, processes::ProcessRow};
use crate::domain::environment;
use crate::domain::ids::{ProcessId, ProjectId, SessionId};
use crate::domain::process::{context_name, Owner, ProcessKind};
use crate::domain::sandbox::SandboxMode;
use crate::error::{AppError, AppResult};

/// The longest command line accepted, in characters (small enough that a request one character
/// over it still fits the 1 MiB body limit, so it is refused as invalid, not as too large).
pub const MAX_COMMAND_CHARS: usize = 65536;
/// The most environment variables one request may set.
pub const MAX_ENV: usize = 256;

/// A workspace commands run in, as resolved from the path.
pub struct Workspace {
    pub owner: Owner,
    pub project_id: ProjectId,
    pub folder: String,
    pub sandbox: Option<SandboxMode>,
}

/// The session `raw` names; `live`: it must still run (to start something in it).
pub async fn session(state: &AppState, raw: &str, live: bool) -> AppResult<Workspace> {
    let id: SessionId = raw.parse()?;
    let lookup = id.clone();
    let found = state.store.run(move |conn| db::sessions::workspace(conn, &lookup)).await?;
    let ws = found.ok_or_else(|| AppError::not_found(format!("No session with id {id:?}.")))?;
    if live && !ws.session.status.is_live() {
        return Err(AppError::new(
            StatusCode::CONFLICT,
            "session_not_live",
            format!("The session has ended ({}); its workspace runs nothing more.", ws.session.status),
        ));
    }
    Ok(Workspace {
        owner: Owner::Session(id),
        project_id: ws.project.id,
        folder: ws.folder,
        sandbox: ws.project.sandbox,
    })
}

/// The project `raw` names.
pub async fn project(state: &AppState, raw: &str) -> AppResult<Workspace> {
    let id: ProjectId = raw.parse()?;
    let lookup = id.clone();
    let found = state.store.run(move |conn| db::projects::find(conn, &lookup)).await?;
    let project = found.ok_or_else(|| AppError::not_found(format!("No project with id {id:?}.")))?;
    Ok(Workspace {
        owner: Owner::Project(id),
        project_id: project.id,
        folder: project.folder_path,
        sandbox: project.sandbox,
    })
}

/// A process of `owner`, by its id in the path (404 for anyone else's).
pub async fn process_of(state: &AppState, owner: &Owner, raw: &str) -> AppResult<ProcessRow> {
    let id: ProcessId = raw.parse()?;
    let lookup = id.clone();
    let row = state.store.run(move |conn| db::processes::find(conn, &lookup)).await?;
    let theirs = |row: &ProcessRow| match owner {
        Owner::Session(s) => row.session_id.as_ref() == Some(s),
        Owner::Project(p) => &row.project_id == p && row.session_id.is_none(),
    };
    row.filter(theirs).ok_or_else(|| AppError::not_found(format!("No process with id {id:?} here.")))
}

/// What to run, as both `exec` and a background start take it.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CommandSpec {
    /// A bash command line. Give this or `argv`.
    #[schema(min_length = 1, max_length = 65536)]
    pub command: Option<String>,
    /// A program and its arguments, run without shell interpretation (quoted into one command
    /// line for the rules and bash). Give this or `command`.
    #[schema(min_items = 1)]
    pub argv: Option<Vec<String>>,
    /// Environment variables to set (names: `[A-Za-z_][A-Za-z0-9_]*`).
    pub env: Option<BTreeMap<String, String>>,
    /// Where to start: a folder inside the workspace, absolute or relative to it (default: the
    /// workspace, or in a context the context's folder).
    pub cwd: Option<String>,
}

/// A command checked: one command line, its environment, its folder.
pub struct Checked {
    pub command: String,
    pub env: Vec<(String, String)>,
    pub cwd: Option<String>,
}

impl CommandSpec {
    /// Checks the spec against `folder` (the `cwd` must be a folder inside it). Blocking parts
    /// (resolving the folder) run on the blocking pool.
    pub async fn check(self, folder: &str) -> AppResult<Checked> {
        let command = match (self.command, self.argv) {
            (Some(c), None) if !c.trim().is_empty() => c,
            (None, Some(argv)) if !argv.is_empty() && !argv[0].is_empty() => {
                crate::actors::workbench::script::join_argv(&argv).map_err(|e| AppError::validation(e.to_string()))?
            }
            (Some(_), Some(_)) => return Err(AppError::validation("give `command` or `argv`, not both")),
            (None, None) => return Err(AppError::validation("give `command` (a command line) or `argv` (words)")),
            _ => return Err(AppError::validation("the command is empty")),
        };
        if command.chars().count() > MAX_COMMAND_CHARS || command.contains('\0') {
            return Err(AppError::validation(format!(
                "the command must be at most {MAX_COMMAND_CHARS} characters, without NUL bytes"
            )));
        }
        let env = self.env.unwrap_or_default();
        if env.len() > MAX_ENV {
            return Err(AppError::validation(format!("at most {MAX_ENV} environment variables")));
        }
        for (name, value) in &env {
            environment::check_name("env", name).map_err(AppError::validation)?;
            environment::check_value("env", name, value).map_err(AppError::validation)?;
        }
        let cwd = match self.cwd {
            None => None,
            Some(raw) => Some(inside(folder, raw).await?),
        };
        Ok(Checked { command, env: env.into_iter().collect(), cwd })
    }
}

/// `raw` (absolute, or relative to `folder`) as a canonical folder inside `folder`.
async fn inside(folder: &str, raw: String) -> AppResult<String> {
    if raw.contains('\0') || raw.len() > 4096 {
        return Err(AppError::validation("`cwd` must be a path of at most 4096 bytes"));
    }
    let folder = folder.to_string();
    let resolved = tokio::task::spawn_blocking(move || {
        let base = std::fs::canonicalize(&folder).map_err(|e| format!("the workspace is not reachable: {e}"))?;
        let wanted = std::fs::canonicalize(base.join(Path::new(&raw)))
            .map_err(|_| format!("`cwd` {raw:?} does not exist in the workspace"))?;
        if !wanted.starts_with(&base) {
            return Err(format!("`cwd` {raw:?} is outside the workspace"));
        }
        if !wanted.is_dir() {
            return Err(format!("`cwd` {raw:?} is not a folder"));
        }
        wanted.into_os_string().into_string().map_err(|_| "`cwd` is not UTF-8".to_string())
    })
    .await
    .map_err(|e| AppError::internal(format!("a folder check failed: {e}")))?;
    resolved.map_err(|m| AppError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_cwd", m))
}

/// The `Start` for a checked command in `ws`.
pub fn start(ws: Workspace, checked: Checked, kind: ProcessKind) -> Start {
    Start {
        owner: ws.owner,
        project_id: ws.project_id,
        folder: ws.folder,
        sandbox: ws.sandbox,
        command: checked.command,
        cwd: checked.cwd,
        env: checked.env,
        context: None,
        kind,
        timeout: None,
    }
}

/// A context's name from a request, checked.
pub fn context(raw: Option<String>) -> AppResult<Option<String>> {
    raw.map(|r| context_name(&r)).transpose().map_err(AppError::validation)
}

/// Asks the workbench, which never goes away while the server runs.
pub async fn ask<M>(state: &AppState, msg: M) -> AppResult<M::Result>
where
    M: actix::Message + Send + 'static,
    M::Result: Send,
    crate::actors::workbench::Workbench: actix::Handler<M>,
{
    state
        .workbench
        .send(msg)
        .await
        .map_err(|e| AppError::unavailable("shutting_down", format!("The service is shutting down ({e}).")))
}

impl From<StartError> for AppError {
    fn from(e: StartError) -> Self {
        let message = e.to_string();
        match e {
            StartError::ShuttingDown => AppError::unavailable("shutting_down", "The service is shutting down."),
            StartError::OwnerEnded => AppError::new(StatusCode::CONFLICT, "session_not_live", message),
            StartError::TooMany(_) => AppError::new(StatusCode::TOO_MANY_REQUESTS, "too_many_processes", message),
            StartError::TooManyContexts(..) => {
                AppError::new(StatusCode::TOO_MANY_REQUESTS, "too_many_contexts", message)
            }
            StartError::ContextBusy(_) => AppError::new(StatusCode::CONFLICT, "context_busy", message),
            StartError::Denied(_) => AppError::forbidden("permission_denied", message),
            StartError::Sandbox(_) => AppError::unavailable("sandbox_unavailable", message),
            StartError::Failed(_) => AppError {
                cause: Some(message),
                ..AppError::unavailable("start_failed", "The command could not be started; the service's log says why.")
            },
            StartError::Store(e) => e.into(),
        }
    }
}

impl From<KillError> for AppError {
    fn from(e: KillError) -> Self {
        AppError::new(StatusCode::CONFLICT, "not_running", format!("The process is not running ({e})."))
    }
}
