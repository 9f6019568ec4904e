//! `GET /api/permissions/log`: the audit of decisions, newest first.

use actix_web::{web, HttpResponse};
use serde::Deserialize;
use utoipa::IntoParams;

use crate::db;
use crate::db::permission_log::{Decision, LogFilter};
use crate::domain::access::Identity;
use crate::domain::decision;
use crate::domain::ids::{ProjectId, SessionId};
use crate::error::{AppError, AppResult, ErrorBody};
use crate::http::pagination::Page;
use crate::http::AppState;

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LogQuery {
    /// Only this session's decisions.
    pub session_id: Option<String>,
    /// Only this project's decisions.
    pub project_id: Option<String>,
    /// `allow` or `deny`.
    #[param(pattern = "^(allow|deny)$")]
    pub decision: Option<String>,
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<i64>,
    #[param(minimum = 0)]
    pub offset: Option<i64>,
}

/// Permission decisions, newest first (a token bound to a project: that project's only).
#[utoipa::path(get, path = "/api/permissions/log", tag = "rules", params(LogQuery),
    responses(
        (status = 200, description = "Decisions, newest first (of the token's project, for a project-bound token)", body = Vec<Decision>),
        (status = 400, description = "Bad query string", body = ErrorBody),
        (status = 422, description = "A filter or limit/offset is invalid", body = ErrorBody),
    ))]
pub async fn log(
    state: web::Data<AppState>,
    query: web::Query<LogQuery>,
    identity: Option<web::ReqData<Identity>>,
) -> AppResult<HttpResponse> {
    // Decisions are written behind: one already announced on the bus is stored before it is read.
    if let Err(e) = state.writer.flush().await {
        tracing::warn!(error = %e, "could not flush the writer before reading the audit");
    }
    let q = query.into_inner();
    let (limit, offset) = Page { limit: q.limit, offset: q.offset }.bounds()?;
    let must_be_uuid = |field: &str| AppError::validation(format!("`{field}` must be a UUID"));
    let decision = q
        .decision
        .map(|d| d.parse::<decision::Decision>().map_err(|_| AppError::validation("`decision` must be allow or deny")))
        .transpose()?;
    let filter = LogFilter {
        session_id: q.session_id.map(|s| SessionId::parse(&s).map_err(|_| must_be_uuid("session_id"))).transpose()?,
        project_id: q.project_id.map(|p| ProjectId::parse(&p).map_err(|_| must_be_uuid("project_id"))).transpose()?,
        decision,
        bound_to: identity.as_deref().and_then(Identity::project).cloned(),
    };
    let rows = state.store.run(move |conn| db::permission_log::list(conn, &filter, limit, offset)).await?;
    Ok(HttpResponse::Ok().json(rows))
}
