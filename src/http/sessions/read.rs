//! Reading sessions: a project's, the live ones, one, and its lines.

use actix_web::{web, HttpResponse};

use super::current;
use crate::db::{self, messages::Message, sessions::Session};
use crate::domain::ids::{ProjectId, SessionId};
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
        SessionId::KIND,
        id,
        &page,
        |conn, id| Ok(db::sessions::find(conn, id)?.is_some()),
        |conn, id, limit, offset| db::messages::list(conn, id.as_str(), limit, offset),
    )
    .await?;
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
