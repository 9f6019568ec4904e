//! `GET /api/agents` and `GET /api/agents/{id}`.

use actix_web::{web, HttpResponse};

use super::{ask, view, AgentView};
use crate::actors::agents as registry;
use crate::db::agents;
use crate::domain::access::Identity;
use crate::domain::ids::AgentId;
use crate::error::{AppResult, ErrorBody};
use crate::http::pagination::Page;
use crate::http::AppState;

/// List agents, by name (a token bound to a project: that project's only).
#[utoipa::path(get, path = "/api/agents", tag = "agents", params(Page),
    responses(
        (status = 200, description = "Agents (of the token's project, for a project-bound token)", body = [AgentView]),
        (status = 400, description = "Bad query string", body = ErrorBody),
        (status = 422, description = "Bad limit or offset", body = ErrorBody),
    ))]
pub async fn list(
    state: web::Data<AppState>,
    page: web::Query<Page>,
    identity: Option<web::ReqData<Identity>>,
) -> AppResult<HttpResponse> {
    let (limit, offset) = page.bounds()?;
    let own = identity.as_deref().and_then(Identity::project).cloned();
    let rows = state.store.run(move |conn| agents::list(conn, own.as_ref(), limit, offset)).await?;
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        // The actor's row is fresher (status, failures, next run) than the database's.
        let id = row.id.clone();
        out.push(view(ask(&state, registry::Get(id)).await?.unwrap_or(row)));
    }
    Ok(HttpResponse::Ok().json(out))
}

/// One agent.
#[utoipa::path(get, path = "/api/agents/{id}", tag = "agents",
    params(("id" = String, Path, description = "Agent id (UUID)")),
    responses(
        (status = 200, description = "The agent", body = AgentView),
        (status = 404, description = "No such agent", body = ErrorBody),
    ))]
pub async fn get(state: web::Data<AppState>, id: web::Path<String>) -> AppResult<HttpResponse> {
    let id: AgentId = id.parse()?;
    let agent = ask(&state, registry::Get(id)).await??;
    Ok(HttpResponse::Ok().json(view(agent)))
}
