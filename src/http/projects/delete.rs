//! `DELETE /api/projects/{id}`: its sessions and agents end, then everything recorded for it goes.

use actix_web::{web, HttpResponse};

use super::{load, no_project};
use crate::actors::agents::Delete;
use crate::actors::registry::{CloseProject, ProjectDeleted};
use crate::actors::terminal::EndProjectTerminals;
use crate::db::{self, StoreError};
use crate::domain::ids::{AgentId, ProjectId};
use crate::error::{AppError, AppResult, ErrorBody};
use crate::http::changes::{announce_deleted, Entity};
use crate::http::AppState;

/// Delete a project: its live sessions are ended first, then everything recorded for it goes.
#[utoipa::path(delete, path = "/api/projects/{id}", tag = "projects",
    params(("id" = String, Path, description = "Project id (UUID)")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 404, description = "No such project", body = ErrorBody),
    ))]
pub async fn delete(state: web::Data<AppState>, id: web::Path<String>) -> AppResult<HttpResponse> {
    let id: ProjectId = id.parse()?;
    let project = load(&state, id.clone()).await?;
    state
        .registry
        .send(CloseProject(id.clone()))
        .await
        .map_err(|e| AppError::internal(format!("session registry unavailable: {e}")))?;
    // Its terminals too (a session's already end with it; the project's own would outlive it).
    state
        .terminals
        .send(EndProjectTerminals(id.clone()))
        .await
        .map_err(|e| AppError::internal(format!("terminal registry unavailable: {e}")))?;
    // What was started in its folder and its sessions' workspaces ends before its rows go.
    if let Err(e) = state.workbench.send(crate::actors::workbench::EndProject(id.clone())).await {
        tracing::warn!(error = %e, "the workbench did not end the project's processes");
    }
    // The sessions' final rows are written behind; let them land before the cascade. A failed
    // flush (some other row of its batch could not be stored) does not stop the delete: the
    // cascade removes whatever was stored.
    if let Err(e) = state.writer.flush().await {
        tracing::warn!(error = %e, "could not flush the session writer before deleting a project");
    }
    // The row's deletion cascades to its agents' rows; their actors (schedules, runs) must end
    // too, or they would keep firing and count against CONDUIT_MAX_AGENTS.
    let deleted = state.store.run(move |conn| db::projects::delete_listing_agents(conn, &project)).await;
    state.registry.do_send(ProjectDeleted(id.clone()));
    match deleted {
        Ok(agents) => {
            retire(&state, agents).await;
            state.turn_gate.do_send(crate::actors::turn_gate::SetTurnCap { project: id.clone(), max: None });
            announce_deleted(&state, Entity::Project, id.as_str());
            Ok(HttpResponse::NoContent().finish())
        }
        Err(StoreError::NotFound) => Err(no_project(&id)),
        Err(e) => Err(e.into()),
    }
}

/// Ends the actors of a deleted project's agents.
async fn retire(state: &AppState, agents: Vec<AgentId>) {
    for agent in agents {
        // NotFound: it was being deleted by its own request meanwhile.
        if let Ok(Err(e)) = state.agents.send(Delete(agent)).await {
            tracing::debug!(error = %e, "an agent of a deleted project was already gone");
        }
    }
}
