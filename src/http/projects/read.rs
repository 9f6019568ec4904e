//! `GET /api/projects` and `GET /api/projects/{id}`.

use actix_web::{web, HttpResponse};

use super::load;
use crate::actors::turn_gate::{ReadTurnQueue, TurnQueue};
use crate::db::{self, projects::Project};
use crate::domain::access::Identity;
use crate::domain::ids::ProjectId;
use crate::error::{AppError, AppResult, ErrorBody};
use crate::http::pagination::Page;
use crate::http::AppState;

/// List projects, by name (a token bound to a project: that one only).
#[utoipa::path(get, path = "/api/projects", tag = "projects", params(Page),
    responses(
        (status = 200, description = "Projects", body = Vec<Project>),
        (status = 400, description = "Bad query string", body = ErrorBody),
        (status = 422, description = "limit/offset out of range", body = ErrorBody),
    ))]
pub async fn list(
    state: web::Data<AppState>,
    page: web::Query<Page>,
    identity: Option<web::ReqData<Identity>>,
) -> AppResult<HttpResponse> {
    let (limit, offset) = page.bounds()?;
    // A token bound to a project sees that one only.
    if let Some(own) = identity.as_ref().and_then(|i| i.project().cloned()) {
        let row = state.store.run(move |conn| db::projects::find(conn, &own)).await?;
        let rows: Vec<Project> = row.into_iter().skip(usize::try_from(offset).unwrap_or(usize::MAX)).collect();
        return Ok(HttpResponse::Ok().json(rows));
    }
    let rows = state.store.run(move |conn| db::projects::list(conn, limit, offset)).await?;
    Ok(HttpResponse::Ok().json(rows))
}

/// Get one project.
#[utoipa::path(get, path = "/api/projects/{id}", tag = "projects",
    params(("id" = String, Path, description = "Project id (UUID)")),
    responses(
        (status = 200, description = "The project", body = Project),
        (status = 404, description = "No such project", body = ErrorBody),
    ))]
pub async fn get(state: web::Data<AppState>, id: web::Path<String>) -> AppResult<HttpResponse> {
    let id: ProjectId = id.parse()?;
    Ok(HttpResponse::Ok().json(load(&state, id).await?))
}

/// The project's turns: its limit of turns running at once (`max_running_turns`), the
/// sessions running one, and those waiting to start one, first in line first.
#[utoipa::path(get, path = "/api/projects/{id}/turns", tag = "projects",
    params(("id" = String, Path, description = "Project id (UUID)")),
    responses(
        (status = 200, description = "Running and waiting turns", body = TurnQueue),
        (status = 404, description = "No such project", body = ErrorBody),
        (status = 503, description = "The service is shutting down, or storage is failing", body = ErrorBody),
    ))]
pub async fn turns(state: web::Data<AppState>, id: web::Path<String>) -> AppResult<HttpResponse> {
    let id: ProjectId = id.parse()?;
    let project = load(&state, id).await?;
    let queue = state
        .turn_gate
        .send(ReadTurnQueue(project.id))
        .await
        .map_err(|_| AppError::unavailable("shutting_down", "the service is shutting down"))?;
    Ok(HttpResponse::Ok().json(queue))
}
