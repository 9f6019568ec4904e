//! `GET /api/locks`: the folders agent runs hold, and who waits for each.

use actix_web::{web, HttpResponse};

use crate::actors::locks::{LockState, Snapshot};
use crate::error::{AppError, AppResult};
use crate::http::AppState;

/// Folders held by a run, and who waits for each, in order.
#[utoipa::path(get, path = "/api/locks", tag = "agents",
    responses((status = 200, description = "Directory locks", body = [LockState])))]
pub async fn locks(state: web::Data<AppState>) -> AppResult<HttpResponse> {
    let states =
        state.locks.send(Snapshot).await.map_err(|e| AppError::internal(format!("lock queue unavailable: {e}")))?;
    Ok(HttpResponse::Ok().json(states))
}
