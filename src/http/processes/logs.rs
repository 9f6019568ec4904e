//! A background process's logs: stored pages by byte offset, and the log followed live as
//! Server-Sent Events with replay from an offset. Both read the log files (the source of
//! truth), so a follower that falls behind loses nothing: it reads on from where it is.

use std::time::Duration;

use actix_web::web::Bytes;
use actix_web::{web, HttpRequest, HttpResponse};
use serde::{Deserialize, Serialize};
use tokio::sync::watch;
use utoipa::{IntoParams, ToSchema};

use super::{ask, process_of, project, session, Workspace};
use crate::actors::workbench::logs::{self, LogMark, Stream};
use crate::actors::workbench::WatchLogs;
use crate::db::processes::{self, ProcessRow};
use crate::error::{AppError, AppResult, ErrorBody};
use crate::http::AppState;

const DEFAULT_PAGE: usize = 64 * 1024;
const MAX_PAGE: usize = 4 * 1024 * 1024;
/// What one event of a followed log carries at most.
const FOLLOW_CHUNK: usize = 256 * 1024;
const KEEP_ALIVE: Duration = Duration::from_secs(15);

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LogQuery {
    /// `stdout` (default) or `stderr`.
    pub stream: Option<Stream>,
    /// Byte offset to read from (default 0).
    #[param(minimum = 0)]
    pub offset: Option<i64>,
    /// Bytes at most (1-4194304, default 65536).
    #[param(minimum = 1, maximum = 4194304)]
    pub limit: Option<usize>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct FollowQuery {
    /// `stdout` (default) or `stderr`.
    pub stream: Option<Stream>,
    /// Byte offset to replay from (default 0; the `Last-Event-ID` header does the same).
    #[param(minimum = 0)]
    pub offset: Option<i64>,
    /// The API token, for clients that cannot send headers (only when one is configured).
    pub token: Option<String>,
}

/// A page of a log.
#[derive(Debug, Serialize, ToSchema)]
pub struct LogPage {
    pub stream: Stream,
    pub offset: u64,
    /// Where the next page starts.
    pub next_offset: u64,
    /// The log's size when read.
    pub size: u64,
    /// The bytes as text (invalid UTF-8 replaced; pages end on whole characters).
    pub data: String,
    /// The process wrote more than the log keeps (`process_log_bytes`).
    pub truncated: bool,
    /// The process has ended and this page reaches the log's end.
    pub complete: bool,
}

fn truncated(row: &ProcessRow, stream: Stream) -> bool {
    match stream {
        Stream::Stdout => row.stdout_truncated,
        Stream::Stderr => row.stderr_truncated,
    }
}

async fn read(
    state: &AppState,
    row: &ProcessRow,
    stream: Stream,
    offset: u64,
    limit: usize,
) -> AppResult<(Vec<u8>, u64)> {
    let path = logs::log_path(&state.settings.process_dir(), &row.id, stream);
    tokio::task::spawn_blocking(move || logs::read_page(&path, offset, limit))
        .await
        .map_err(|e| AppError::internal(format!("a log read failed: {e}")))?
        .map_err(|e| AppError::unavailable("logs_unavailable", format!("The log cannot be read: {e}")))
}

async fn page(state: &AppState, ws: Workspace, raw: &str, query: &LogQuery) -> AppResult<HttpResponse> {
    let limit = query.limit.unwrap_or(DEFAULT_PAGE);
    if !(1..=MAX_PAGE).contains(&limit) {
        return Err(AppError::validation(format!("`limit` must be from 1 to {MAX_PAGE}, got {limit}")));
    }
    let (stream, offset) = (query.stream.unwrap_or(Stream::Stdout), offset(query.offset)?);
    let row = process_of(state, &ws.owner, raw).await?;
    let (data, size) = read(state, &row, stream, offset, limit).await?;
    let next_offset = offset.min(size) + data.len() as u64;
    Ok(HttpResponse::Ok().json(LogPage {
        stream,
        offset,
        next_offset,
        size,
        data: String::from_utf8_lossy(&data).into_owned(),
        truncated: truncated(&row, stream),
        complete: !row.status.is_live() && next_offset >= size,
    }))
}

/// A byte offset from the query string: not negative.
fn offset(raw: Option<i64>) -> AppResult<u64> {
    let raw = raw.unwrap_or(0);
    u64::try_from(raw).map_err(|_| AppError::validation(format!("`offset` must not be negative, got {raw}")))
}

fn resume_from(req: &HttpRequest, query: &FollowQuery) -> AppResult<u64> {
    if query.offset.is_some() {
        return offset(query.offset);
    }
    match req.headers().get("last-event-id") {
        None => Ok(0),
        Some(v) => v
            .to_str()
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
            .ok_or_else(|| AppError::bad_request("invalid_last_event_id", "`Last-Event-ID` must be a byte offset")),
    }
}

/// The follower's state between two events.
struct Follower {
    state: web::Data<AppState>,
    row: ProcessRow,
    stream: Stream,
    offset: u64,
    /// The process's progress while it runs; `None` once it has ended (or never ran here).
    mark: Option<watch::Receiver<LogMark>>,
    done: bool,
}

impl Follower {
    /// The next frame: log bytes, a keep-alive, or the end.
    async fn next(&mut self) -> Option<Bytes> {
        if self.done {
            return None;
        }
        loop {
            let ended = self.mark.as_ref().is_none_or(|m| m.borrow().ended);
            let path = logs::log_path(&self.state.settings.process_dir(), &self.row.id, self.stream);
            let offset = self.offset;
            let read = tokio::task::spawn_blocking(move || logs::read_page(&path, offset, FOLLOW_CHUNK)).await;
            let (data, _) = match read {
                Ok(Ok(page)) => page,
                _ => {
                    self.done = true;
                    return Some(Bytes::from_static(
                        b"event: error\ndata: {\"message\":\"the log cannot be read\"}\n\n",
                    ));
                }
            };
            if !data.is_empty() {
                let at = self.offset;
                self.offset += data.len() as u64;
                let body = serde_json::json!({ "offset": at, "data": super::exec::scrubbed_output(&data, self.state.settings.redaction.in_flight()) });
                return Some(Bytes::from(format!(
                    "event: {}\nid: {}\ndata: {body}\n\n",
                    self.stream.as_str(),
                    self.offset
                )));
            }
            if ended {
                self.done = true;
                let id = self.row.id.clone();
                let row = self.state.store.run(move |conn| processes::find(conn, &id)).await.ok().flatten();
                let data = serde_json::to_string(&row.unwrap_or_else(|| self.row.clone())).unwrap_or_default();
                return Some(Bytes::from(format!("event: exit\ndata: {data}\n\n")));
            }
            let Some(mark) = self.mark.as_mut() else { continue };
            match tokio::time::timeout(KEEP_ALIVE, mark.changed()).await {
                Ok(Ok(())) => continue,
                // The pump is gone: what is in the file is all there is.
                Ok(Err(_)) => self.mark = None,
                Err(_) => return Some(Bytes::from_static(b": keep-alive\n\n")),
            }
        }
    }
}

async fn follow(
    state: web::Data<AppState>,
    ws: Workspace,
    raw: &str,
    query: &FollowQuery,
    req: &HttpRequest,
) -> AppResult<HttpResponse> {
    let offset = resume_from(req, query)?;
    let row = process_of(&state, &ws.owner, raw).await?;
    let mark = if row.status.is_live() { ask(&state, WatchLogs(row.id.clone())).await? } else { None };
    let stream = query.stream.unwrap_or(Stream::Stdout);
    let follower = Follower { state, row, stream, offset, mark, done: false };
    let body = futures_util::stream::unfold(follower, |mut f| async move {
        let frame = f.next().await?;
        Some((Ok::<_, actix_web::Error>(frame), f))
    });
    Ok(HttpResponse::Ok()
        .content_type("text/event-stream")
        .insert_header(("cache-control", "no-cache"))
        .insert_header(("x-accel-buffering", "no"))
        .streaming(body))
}

/// A page of the log of one of the session's background processes.
#[utoipa::path(get, path = "/api/sessions/{id}/processes/{process_id}/logs", tag = "processes",
    params(("id" = String, Path, description = "Session id (UUID)"), ("process_id" = String, Path, description = "Process id (UUID)"), LogQuery),
    responses(
        (status = 200, description = "A page", body = LogPage),
        (status = 400, description = "Bad query string", body = ErrorBody),
        (status = 404, description = "No such session or process", body = ErrorBody),
        (status = 422, description = "Bad limit or a negative offset", body = ErrorBody),
    ))]
pub async fn logs_session(
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    query: web::Query<LogQuery>,
) -> AppResult<HttpResponse> {
    let ws = session(&state, &path.0, false).await?;
    page(&state, ws, &path.1, &query).await
}

/// A page of the log of one of the project folder's background processes.
#[utoipa::path(get, path = "/api/projects/{id}/processes/{process_id}/logs", tag = "processes",
    params(("id" = String, Path, description = "Project id (UUID)"), ("process_id" = String, Path, description = "Process id (UUID)"), LogQuery),
    responses(
        (status = 200, description = "A page", body = LogPage),
        (status = 400, description = "Bad query string", body = ErrorBody),
        (status = 404, description = "No such project or process", body = ErrorBody),
        (status = 422, description = "Bad limit or a negative offset", body = ErrorBody),
    ))]
pub async fn logs_project(
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    query: web::Query<LogQuery>,
) -> AppResult<HttpResponse> {
    let ws = project(&state, &path.0).await?;
    page(&state, ws, &path.1, &query).await
}

/// The log of one of the session's background processes as Server-Sent Events, from `offset`
/// on: `stdout` (or `stderr`) events (`id`: the offset after them; `data`: `{offset, data}`),
/// live while it runs, then `exit` (its row).
#[utoipa::path(get, path = "/api/sessions/{id}/processes/{process_id}/logs/stream", tag = "processes",
    params(("id" = String, Path, description = "Session id (UUID)"), ("process_id" = String, Path, description = "Process id (UUID)"), FollowQuery,
        ("Last-Event-ID" = Option<String>, Header, description = "Replay from this byte offset")),
    responses(
        (status = 200, description = "text/event-stream: stdout or stderr events, then exit", content_type = "text/event-stream"),
        (status = 400, description = "Bad query string or Last-Event-ID", body = ErrorBody),
        (status = 404, description = "No such session or process", body = ErrorBody),
        (status = 422, description = "A negative offset", body = ErrorBody),
    ))]
pub async fn stream_session(
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    query: web::Query<FollowQuery>,
    req: HttpRequest,
) -> AppResult<HttpResponse> {
    let ws = session(&state, &path.0, false).await?;
    follow(state, ws, &path.1, &query, &req).await
}

/// The log of one of the project folder's background processes as Server-Sent Events (see
/// the session's).
#[utoipa::path(get, path = "/api/projects/{id}/processes/{process_id}/logs/stream", tag = "processes",
    params(("id" = String, Path, description = "Project id (UUID)"), ("process_id" = String, Path, description = "Process id (UUID)"), FollowQuery,
        ("Last-Event-ID" = Option<String>, Header, description = "Replay from this byte offset")),
    responses(
        (status = 200, description = "text/event-stream: stdout or stderr events, then exit", content_type = "text/event-stream"),
        (status = 400, description = "Bad query string or Last-Event-ID", body = ErrorBody),
        (status = 404, description = "No such project or process", body = ErrorBody),
        (status = 422, description = "A negative offset", body = ErrorBody),
    ))]
pub async fn stream_project(
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    query: web::Query<FollowQuery>,
    req: HttpRequest,
) -> AppResult<HttpResponse> {
    let ws = project(&state, &path.0).await?;
    follow(state, ws, &path.1, &query, &req).await
}
