//! `exec`: run one command in a workspace and answer when it ends, or stream it as
//! Server-Sent Events.

use std::collections::BTreeMap;

use actix_web::web::Bytes;
use actix_web::{web, HttpResponse};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{ask, context, project, session, start, CommandSpec, Workspace};
use crate::actors::workbench::{Ended, Output, Started, Stream};
use crate::domain::ids::ProcessId;
use crate::domain::process::ProcessKind;
use crate::error::{AppError, AppResult, ErrorBody};
use crate::http::AppState;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ExecRequest {
    /// A bash command line. Give this or `argv`.
    #[schema(min_length = 1, max_length = 65536)]
    pub command: Option<String>,
    /// A program and its arguments (quoted into one command line). Give this or `command`.
    #[schema(min_items = 1)]
    pub argv: Option<Vec<String>>,
    /// Environment variables to set (names: `[A-Za-z_][A-Za-z0-9_]*`). In a context they stay
    /// set for its next commands, as `export` would.
    pub env: Option<BTreeMap<String, String>>,
    /// Where to start: a folder inside the workspace, absolute or relative to it. In a context
    /// it stays the folder of its next commands, as `cd` would.
    pub cwd: Option<String>,
    /// Killed with its whole process group after this long (default: the `exec_timeout_ms`
    /// setting; at most `exec_max_timeout_ms`).
    #[schema(minimum = 1)]
    pub timeout_ms: Option<u64>,
    /// An exec context: the folder and exported variables one command leaves are where and
    /// with what the next command of the same context starts (created on first use; 1-64 of
    /// `A-Z a-z 0-9 _ . -`). Without one, every command starts afresh in the workspace.
    #[schema(pattern = r"^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,63}$")]
    pub context: Option<String>,
}

/// How an exec command ended, with its output (each stream up to `exec_output_bytes`).
#[derive(Debug, Serialize, ToSchema)]
pub struct ExecResult {
    /// The command's process id (its row in `.../processes`).
    #[schema(value_type = String)]
    pub id: ProcessId,
    /// Null when a signal ended it.
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    /// It ran out of time and its whole process group was killed.
    pub timed_out: bool,
    pub duration_ms: u64,
    /// stdout as text (invalid UTF-8 replaced).
    pub stdout: String,
    pub stderr: String,
    /// Bytes it wrote, all of them, sent or not.
    pub stdout_bytes: u64,
    pub stderr_bytes: u64,
    /// More was written than is sent.
    pub stdout_truncated: bool,
    pub stderr_truncated: bool,
}

impl ExecResult {
    fn of(id: ProcessId, ended: &Ended, stdout: &[u8], stderr: &[u8]) -> ExecResult {
        ExecResult {
            id,
            exit_code: ended.exit_code,
            signal: ended.signal,
            timed_out: ended.timed_out,
            duration_ms: ended.duration.as_millis() as u64,
            stdout: String::from_utf8_lossy(stdout).into_owned(),
            stderr: String::from_utf8_lossy(stderr).into_owned(),
            stdout_bytes: ended.stdout_bytes,
            stderr_bytes: ended.stderr_bytes,
            stdout_truncated: ended.stdout_truncated,
            stderr_truncated: ended.stderr_truncated,
        }
    }
}

/// Starts the request's command in `ws`.
async fn launch(state: &AppState, ws: Workspace, body: ExecRequest) -> AppResult<Started> {
    let settings = &state.settings.processes;
    let timeout_ms = body.timeout_ms.unwrap_or(settings.exec_timeout_ms);
    if timeout_ms == 0 || timeout_ms > settings.exec_max_timeout_ms {
        return Err(AppError::validation(format!(
            "`timeout_ms` must be from 1 to {} (the `exec_max_timeout_ms` setting), got {timeout_ms}",
            settings.exec_max_timeout_ms
        )));
    }
    let context = context(body.context)?;
    let spec = CommandSpec { command: body.command, argv: body.argv, env: body.env, cwd: body.cwd };
    let checked = spec.check(&ws.folder).await?;
    let mut msg = start(ws, checked, ProcessKind::Exec);
    msg.timeout = Some(std::time::Duration::from_millis(timeout_ms));
    msg.context = context;
    Ok(ask(state, msg).await??)
}

fn lost() -> AppError {
    AppError::unavailable("exec_lost", "The command's watcher stopped before it ended; see the service's log.")
}

async fn answer(state: &AppState, ws: Workspace, body: ExecRequest) -> AppResult<HttpResponse> {
    let started = launch(state, ws, body).await?;
    let mut output = started.output.ok_or_else(lost)?;
    let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
    while let Some(item) = output.recv().await {
        match item {
            Output::Chunk(Stream::Stdout, data) => stdout.extend_from_slice(&data),
            Output::Chunk(Stream::Stderr, data) => stderr.extend_from_slice(&data),
            Output::Ended(ended) => {
                return Ok(HttpResponse::Ok().json(ExecResult::of(started.row.id, &ended, &stdout, &stderr)))
            }
        }
    }
    Err(lost())
}

/// A chunk of output as text, without secrets when `redacts` (not in the `off` mode). Chunks
/// end at line ends (the watcher re-cuts them, `workbench/aligned.rs`), so each holds its
/// lines' secrets whole.
pub(super) fn scrubbed_output(data: &[u8], redacts: bool) -> String {
    let mut text = String::from_utf8_lossy(data).into_owned();
    if redacts {
        crate::secrets::scrub_text(&mut text);
    }
    text
}

fn sse_event(name: &str, data: &serde_json::Value) -> Bytes {
    Bytes::from(format!("event: {name}\ndata: {data}\n\n"))
}

/// The stream of a started command: `start`, then `stdout`/`stderr` in the order written,
/// then `exit` (or `error`).
fn stream(started: Started, redacts: bool) -> HttpResponse {
    let row = started.row;
    let first = sse_event("start", &serde_json::json!({ "id": row.id, "pid": row.pid, "command": row.command }));
    let id = row.id.clone();
    let rest = futures_util::stream::unfold(started.output, move |output| {
        let id = id.clone();
        async move {
            let mut output = output?;
            let frame = match output.recv().await {
                Some(Output::Chunk(stream, data)) => {
                    sse_event(stream.as_str(), &serde_json::json!({ "data": scrubbed_output(&data, redacts) }))
                }
                Some(Output::Ended(ended)) => {
                    let result = ExecResult::of(id, &ended, &[], &[]);
                    let mut data = serde_json::to_value(&result).unwrap_or_default();
                    if let Some(map) = data.as_object_mut() {
                        map.remove("stdout");
                        map.remove("stderr");
                    }
                    return Some((Ok::<_, actix_web::Error>(sse_event("exit", &data)), None));
                }
                None => {
                    let data = serde_json::json!({ "message": "the command's watcher stopped before it ended" });
                    return Some((Ok(sse_event("error", &data)), None));
                }
            };
            Some((Ok(frame), Some(output)))
        }
    });
    let body = futures_util::StreamExt::chain(futures_util::stream::once(async move { Ok(first) }), rest);
    HttpResponse::Ok()
        .content_type("text/event-stream")
        .insert_header(("cache-control", "no-cache"))
        .insert_header(("x-accel-buffering", "no"))
        .streaming(body)
}

/// Run a command in the session's workspace and answer when it ends.
#[utoipa::path(post, path = "/api/sessions/{id}/exec", tag = "processes", request_body = ExecRequest,
    params(("id" = String, Path, description = "Session id (UUID)")),
    responses(
        (status = 200, description = "It ended (any exit code, or its timeout)", body = ExecResult),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 413, description = "The body is larger than 1 MiB", body = ErrorBody),
        (status = 415, description = "Not JSON", body = ErrorBody),
        (status = 403, description = "A permission rule denies it (`permission_denied`)", body = ErrorBody),
        (status = 404, description = "No such session", body = ErrorBody),
        (status = 409, description = "The session has ended, or the context runs a command", body = ErrorBody),
        (status = 422, description = "Bad command, env, cwd, timeout or context", body = ErrorBody),
        (status = 429, description = "Too many processes or contexts", body = ErrorBody),
        (status = 503, description = "Shutting down, no sandbox, or it could not start", body = ErrorBody),
    ))]
pub async fn exec_session(
    state: web::Data<AppState>,
    id: web::Path<String>,
    body: web::Json<ExecRequest>,
) -> AppResult<HttpResponse> {
    let ws = session(&state, &id, true).await?;
    answer(&state, ws, body.into_inner()).await
}

/// Run a command in the project's folder and answer when it ends.
#[utoipa::path(post, path = "/api/projects/{id}/exec", tag = "processes", request_body = ExecRequest,
    params(("id" = String, Path, description = "Project id (UUID)")),
    responses(
        (status = 200, description = "It ended (any exit code, or its timeout)", body = ExecResult),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 413, description = "The body is larger than 1 MiB", body = ErrorBody),
        (status = 415, description = "Not JSON", body = ErrorBody),
        (status = 403, description = "A permission rule denies it (`permission_denied`)", body = ErrorBody),
        (status = 404, description = "No such project", body = ErrorBody),
        (status = 409, description = "The context runs a command", body = ErrorBody),
        (status = 422, description = "Bad command, env, cwd, timeout or context", body = ErrorBody),
        (status = 429, description = "Too many processes or contexts", body = ErrorBody),
        (status = 503, description = "Shutting down, no sandbox, or it could not start", body = ErrorBody),
    ))]
pub async fn exec_project(
    state: web::Data<AppState>,
    id: web::Path<String>,
    body: web::Json<ExecRequest>,
) -> AppResult<HttpResponse> {
    let ws = project(&state, &id).await?;
    answer(&state, ws, body.into_inner()).await
}

/// Run a command in the session's workspace, streamed as Server-Sent Events: `start`
/// (`{id, pid, command}`), `stdout` and `stderr` (`{data}`, in the order read), then `exit`
/// (the `ExecResult` without the output) or `error` (`{message}`).
#[utoipa::path(post, path = "/api/sessions/{id}/exec/stream", tag = "processes", request_body = ExecRequest,
    params(("id" = String, Path, description = "Session id (UUID)")),
    responses(
        (status = 200, description = "text/event-stream: start, stdout, stderr, exit, error", content_type = "text/event-stream"),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 413, description = "The body is larger than 1 MiB", body = ErrorBody),
        (status = 415, description = "Not JSON", body = ErrorBody),
        (status = 403, description = "A permission rule denies it (`permission_denied`)", body = ErrorBody),
        (status = 404, description = "No such session", body = ErrorBody),
        (status = 409, description = "The session has ended, or the context runs a command", body = ErrorBody),
        (status = 422, description = "Bad command, env, cwd, timeout or context", body = ErrorBody),
        (status = 429, description = "Too many processes or contexts", body = ErrorBody),
        (status = 503, description = "Shutting down, no sandbox, or it could not start", body = ErrorBody),
    ))]
pub async fn stream_session(
    state: web::Data<AppState>,
    id: web::Path<String>,
    body: web::Json<ExecRequest>,
) -> AppResult<HttpResponse> {
    let ws = session(&state, &id, true).await?;
    Ok(stream(launch(&state, ws, body.into_inner()).await?, state.settings.redaction.in_flight()))
}

/// Run a command in the project's folder, streamed as Server-Sent Events (see the session's).
#[utoipa::path(post, path = "/api/projects/{id}/exec/stream", tag = "processes", request_body = ExecRequest,
    params(("id" = String, Path, description = "Project id (UUID)")),
    responses(
        (status = 200, description = "text/event-stream: start, stdout, stderr, exit, error", content_type = "text/event-stream"),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 413, description = "The body is larger than 1 MiB", body = ErrorBody),
        (status = 415, description = "Not JSON", body = ErrorBody),
        (status = 403, description = "A permission rule denies it (`permission_denied`)", body = ErrorBody),
        (status = 404, description = "No such project", body = ErrorBody),
        (status = 409, description = "The context runs a command", body = ErrorBody),
        (status = 422, description = "Bad command, env, cwd, timeout or context", body = ErrorBody),
        (status = 429, description = "Too many processes or contexts", body = ErrorBody),
        (status = 503, description = "Shutting down, no sandbox, or it could not start", body = ErrorBody),
    ))]
pub async fn stream_project(
    state: web::Data<AppState>,
    id: web::Path<String>,
    body: web::Json<ExecRequest>,
) -> AppResult<HttpResponse> {
    let ws = project(&state, &id).await?;
    Ok(stream(launch(&state, ws, body.into_inner()).await?, state.settings.redaction.in_flight()))
}
