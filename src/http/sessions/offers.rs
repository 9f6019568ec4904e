//! What a session's CLI offers to switch to, for the clients' model and mode lists.

use actix_web::{web, HttpResponse};

use super::load_row;
use crate::actors::registry::Find;
use crate::actors::session::GetOffers;
use crate::domain::ids::SessionId;
use crate::domain::offers::Offers;
use crate::error::{AppResult, ErrorBody};
use crate::http::AppState;

/// The models and permission modes the session's CLI reported (Claude Code's `initialize`
/// answer, an ACP agent's `session/new`): `source` `cli`. For a session that is not live, or
/// whose CLI reports no list, its agent kind's defaults: `source` `defaults`.
#[utoipa::path(get, path = "/api/sessions/{id}/options", tag = "sessions",
    params(("id" = String, Path, description = "Session id (UUID)")),
    responses(
        (status = 200, description = "What the session can switch to", body = Offers),
        (status = 404, description = "No such session", body = ErrorBody),
    ))]
pub async fn options(state: web::Data<AppState>, id: web::Path<String>) -> AppResult<HttpResponse> {
    let id: SessionId = id.parse()?;
    // A session that ends between the lookup and the question answers with the defaults.
    if let Ok(Some(addr)) = state.registry.send(Find(id.clone())).await {
        if let Ok(offers) = addr.send(GetOffers).await {
            return Ok(HttpResponse::Ok().json(offers));
        }
    }
    let row = load_row(&state, &id).await?;
    Ok(HttpResponse::Ok().json(Offers::defaults(&row.agent)))
}
