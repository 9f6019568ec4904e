//! `GET /api/projects` and `GET /api/projects/{id}`.

use actix_web::{web, HttpResponse};

use super::load;
use crate::db::{self, projects::Project};
use crate::domain::ids::ProjectId;
use crate::error::{AppResult, ErrorBody};
use crate::http::pagination::Page;
use crate::http::AppState;

/// List projects, by name.
#[utoipa::path(get, path = "/api/projects", tag = "projects", params(Page),
    responses(
        (status = 200, description = "Projects", body = Vec<Project>),
        (status = 400, description = "Bad query string", body = ErrorBody),
        (status = 422, description = "limit/offset out of range", body = ErrorBody),
    ))]
pub async fn list(state: web::Data<AppState>, page: web::Query<Page>) -> AppResult<HttpResponse> {
    let (limit, offset) = page.bounds()?;
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
