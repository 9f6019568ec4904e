//! Listing rules, a project's or the global ones, in evaluation order.

use actix_web::{web, HttpResponse};

use super::{project_exists, Rule};
use crate::db;
use crate::domain::ids::ProjectId;
use crate::error::{AppResult, ErrorBody};
use crate::http::pagination::Page;
use crate::http::AppState;

async fn list(state: &AppState, project_id: Option<ProjectId>, page: &Page) -> AppResult<HttpResponse> {
    let (limit, offset) = page.bounds()?;
    let rows = state.store.run(move |conn| db::rules::list(conn, project_id.as_ref(), limit, offset)).await?;
    Ok(HttpResponse::Ok().json(rows.into_iter().map(Rule::from).collect::<Vec<_>>()))
}

/// A project's rules, in evaluation order.
#[utoipa::path(get, path = "/api/projects/{id}/rules", tag = "rules", params(("id" = String, Path, description = "Project id (UUID)"), Page),
    responses(
        (status = 200, description = "Rules: deny before allow, higher priority first, older first", body = Vec<Rule>),
        (status = 400, description = "Bad query string", body = ErrorBody),
        (status = 404, description = "No such project", body = ErrorBody),
        (status = 422, description = "limit/offset out of range", body = ErrorBody),
    ))]
pub async fn list_project(
    state: web::Data<AppState>,
    id: web::Path<String>,
    page: web::Query<Page>,
) -> AppResult<HttpResponse> {
    let id: ProjectId = id.parse()?;
    project_exists(&state, &id).await?;
    list(&state, Some(id), &page).await
}

/// Global rules, in evaluation order.
#[utoipa::path(get, path = "/api/rules/global", tag = "rules", params(Page),
    responses(
        (status = 200, description = "Rules: deny before allow, higher priority first, older first", body = Vec<Rule>),
        (status = 400, description = "Bad query string", body = ErrorBody),
        (status = 422, description = "limit/offset out of range", body = ErrorBody),
    ))]
pub async fn list_global(state: web::Data<AppState>, page: web::Query<Page>) -> AppResult<HttpResponse> {
    list(&state, None, &page).await
}
