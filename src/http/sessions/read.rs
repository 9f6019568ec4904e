//! Reading sessions: a project's, the live ones, one, and its lines.

use actix_web::{web, HttpResponse};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::current;
use crate::actors::registry::{Find, ReadLive};
use crate::actors::session::resources::Readings;
use crate::actors::session::Snapshot;
use crate::db::messages::{Message, Window};
use crate::db::{self, sessions::Session};
use crate::domain::access::Identity;
use crate::domain::ids::{ProjectId, SessionId};
use crate::domain::resources::Resources;
use crate::error::{AppError, AppResult, ErrorBody};
use crate::http::pagination::Page;
use crate::http::AppState;

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
        ProjectId::KIND,
        project_id,
        &page,
        |conn, id| Ok(db::projects::find(conn, id)?.is_some()),
        db::sessions::list_for_project,
    )
    .await?;
    Ok(HttpResponse::Ok().json(rows))
}

/// A session with what its CLI uses now.
#[derive(Debug, Serialize, ToSchema)]
pub struct SessionView {
    #[serde(flatten)]
    pub session: Session,
    /// What the session's processes use, read from its cgroup at most once a second; null
    /// while it is not live, before the first reading, or where the machine gives none (see
    /// `checks.session_limits` in health). Each field is null when unknown.
    pub resources: Option<Resources>,
}

/// Sessions whose CLI is running (starting, idle, active, compacting), oldest first (a token
/// bound to a project: that project's only), each with its `resources`.
#[utoipa::path(get, path = "/api/sessions/active", tag = "sessions", params(Page),
    responses(
        (status = 200, description = "Live sessions (of the token's project, for a project-bound token)", body = Vec<SessionView>),
        (status = 400, description = "Bad query string", body = ErrorBody),
        (status = 422, description = "limit/offset out of range", body = ErrorBody),
    ))]
pub async fn list_active(
    state: web::Data<AppState>,
    page: web::Query<Page>,
    identity: Option<web::ReqData<Identity>>,
) -> AppResult<HttpResponse> {
    let (limit, offset) = page.bounds()?;
    let own = identity.as_deref().and_then(Identity::project).cloned();
    let rows = state.store.run(move |conn| db::sessions::list_live(conn, own.as_ref(), limit, offset)).await?;
    let ids = rows.iter().map(|r| r.id.clone()).collect();
    let mut readings: std::collections::HashMap<SessionId, Resources> =
        match state.registry.send(ReadLive(Some(ids))).await {
            Ok(live) => live.into_iter().filter_map(|l| Some((l.id, l.resources?))).collect(),
            Err(_) => Default::default(),
        };
    let views: Vec<SessionView> =
        rows.into_iter().map(|session| SessionView { resources: readings.remove(&session.id), session }).collect();
    Ok(HttpResponse::Ok().json(views))
}

/// One session.
#[utoipa::path(get, path = "/api/sessions/{id}", tag = "sessions", params(("id" = String, Path, description = "Session id (UUID)")),
    responses(
        (status = 200, description = "The session, with what its CLI uses now (`resources`)", body = SessionView),
        (status = 404, description = "No such session", body = ErrorBody),
    ))]
pub async fn get(state: web::Data<AppState>, id: web::Path<String>) -> AppResult<HttpResponse> {
    let id: SessionId = id.parse()?;
    // A live session answers from its actor: its row (fresher than the database's) and its
    // latest reading.
    if let Ok(Some(addr)) = state.registry.send(Find(id.clone())).await {
        if let (Ok(session), Ok(resources)) = (addr.send(Snapshot).await, addr.send(Readings).await) {
            return Ok(HttpResponse::Ok().json(SessionView { session, resources }));
        }
    }
    Ok(HttpResponse::Ok().json(SessionView { session: current(&state, &id).await?, resources: None }))
}

/// Which lines `GET /api/sessions/{id}/messages` answers with.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct MessagesQuery {
    /// How many lines at most (1-1000, default 100).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<i64>,
    /// How many lines to skip from the oldest (default 0); not with `tail` or `before`.
    #[param(minimum = 0)]
    pub offset: Option<i64>,
    /// The newest `limit` lines (still oldest first): where a transcript starts reading.
    pub tail: Option<bool>,
    /// The `limit` lines just older than the line with this id (still oldest first): the page
    /// before one already read.
    #[param(minimum = 1)]
    pub before: Option<i64>,
    /// `false` leaves out the partial lines that only preview a message which follows whole
    /// (Claude Code's `stream_event`, Codex's `*/delta`). Default `true`: every line.
    pub partial: Option<bool>,
}

impl MessagesQuery {
    fn window(&self) -> AppResult<(Window, i64, bool)> {
        let (limit, offset) = Page { limit: self.limit, offset: self.offset }.bounds()?;
        let tail = self.tail.unwrap_or(false);
        let window = match (tail, self.before, self.offset.is_some()) {
            (true, Some(_), _) => return Err(AppError::validation("`tail` and `before` cannot be combined")),
            (true, None, true) | (false, Some(_), true) => {
                return Err(AppError::validation("`offset` cannot be combined with `tail` or `before`"))
            }
            (true, None, false) => Window::Tail,
            (false, Some(id), false) if id >= 1 => Window::Before(id),
            (false, Some(id), false) => {
                return Err(AppError::validation(format!("`before` must be a message id (1 or more), got {id}")))
            }
            (false, None, _) => Window::From(offset),
        };
        Ok((window, limit, self.partial.unwrap_or(true)))
    }
}

/// A session's lines, oldest first: from the start (`offset`), its newest (`tail=true`) or the
/// page before a line already read (`before=<id>`), as a transcript reads backwards.
#[utoipa::path(get, path = "/api/sessions/{id}/messages", tag = "sessions", params(("id" = String, Path, description = "Session id (UUID)"), MessagesQuery),
    responses(
        (status = 200, description = "Lines, oldest first", body = Vec<Message>),
        (status = 400, description = "Bad query string", body = ErrorBody),
        (status = 404, description = "No such session", body = ErrorBody),
        (status = 422, description = "limit/offset/before out of range, or `offset` with `tail`/`before`", body = ErrorBody),
    ))]
pub async fn messages(
    state: web::Data<AppState>,
    id: web::Path<String>,
    query: web::Query<MessagesQuery>,
) -> AppResult<HttpResponse> {
    let id: SessionId = id.parse()?;
    let (window, limit, partial) = query.window()?;
    // Lines are written behind: whatever a client has already seen happen (a turn's result in
    // the session row, an event) is stored before it is read back.
    if let Err(e) = state.writer.flush().await {
        tracing::warn!(error = %e, "could not flush the session writer before reading messages");
    }
    let lookup = id.clone();
    let rows = state
        .store
        .run(move |conn| match db::sessions::find(conn, &lookup)? {
            Some(_) => db::messages::list_window(conn, lookup.as_str(), window, limit, partial).map(Some),
            None => Ok(None),
        })
        .await?;
    let rows = rows.ok_or_else(|| AppError::not_found(format!("No {} with id {id:?}.", SessionId::KIND)))?;
    Ok(HttpResponse::Ok().json(rows))
}

/// A query listing `limit` rows from `offset` under a parent id.
type ListPage<I, T> = fn(&mut db::DbConnection, &I, i64, i64) -> Result<Vec<T>, db::StoreError>;

/// A page of rows belonging to a parent that must exist (404 naming `kind` when it does not).
async fn list_under<I, T>(
    state: &AppState,
    kind: &'static str,
    parent: I,
    page: &Page,
    exists: fn(&mut db::DbConnection, &I) -> Result<bool, db::StoreError>,
    list: ListPage<I, T>,
) -> AppResult<Vec<T>>
where
    I: std::fmt::Debug + Clone + Send + 'static,
    T: Send + 'static,
{
    let (limit, offset) = page.bounds()?;
    let lookup = parent.clone();
    let rows = state
        .store
        .run(move |conn| if exists(conn, &lookup)? { list(conn, &lookup, limit, offset).map(Some) } else { Ok(None) })
        .await?;
    rows.ok_or_else(|| AppError::not_found(format!("No {kind} with id {parent:?}.")))
}
