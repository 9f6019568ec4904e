//! Pausing, resuming and deleting an agent.

use actix_web::{web, HttpResponse};

use super::{ask, view, AgentView};
use crate::actors::agent::Change;
use crate::actors::agents as registry;
use crate::domain::ids::AgentId;
use crate::error::{AppResult, ErrorBody};
use crate::http::changes::{self as told, announce, announce_deleted, Entity};
use crate::http::AppState;

/// Delete an agent: its runs are cancelled, its history goes with it.
#[utoipa::path(delete, path = "/api/agents/{id}", tag = "agents",
    params(("id" = String, Path, description = "Agent id (UUID)")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 404, description = "No such agent", body = ErrorBody),
    ))]
pub async fn delete(state: web::Data<AppState>, id: web::Path<String>) -> AppResult<HttpResponse> {
    let id: AgentId = id.parse()?;
    ask(&state, registry::Delete(id.clone())).await??;
    announce_deleted(&state, Entity::Agent, id.as_str());
    Ok(HttpResponse::NoContent().finish())
}

async fn change(state: &AppState, id: &str, change: Change) -> AppResult<HttpResponse> {
    let id: AgentId = id.parse()?;
    let agent = view(ask(state, registry::Update { id, change }).await??);
    announce(state, Entity::Agent, told::Change::Updated, &agent);
    Ok(HttpResponse::Ok().json(agent))
}

/// Stop firing until resumed (runs already going finish).
#[utoipa::path(post, path = "/api/agents/{id}/pause", tag = "agents",
    params(("id" = String, Path, description = "Agent id (UUID)")),
    responses(
        (status = 200, description = "Paused", body = AgentView),
        (status = 404, description = "No such agent", body = ErrorBody),
    ))]
pub async fn pause(state: web::Data<AppState>, id: web::Path<String>) -> AppResult<HttpResponse> {
    change(&state, &id, Change::Pause).await
}

/// Fire on schedule again (also after `error`: the failure count starts over).
#[utoipa::path(post, path = "/api/agents/{id}/resume", tag = "agents",
    params(("id" = String, Path, description = "Agent id (UUID)")),
    responses(
        (status = 200, description = "Active", body = AgentView),
        (status = 404, description = "No such agent", body = ErrorBody),
    ))]
pub async fn resume(state: web::Data<AppState>, id: web::Path<String>) -> AppResult<HttpResponse> {
    change(&state, &id, Change::Resume).await
}
