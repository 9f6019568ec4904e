//! The access audit at the edge: the middleware that records every state-changing `/api`
//! request and every refused credential once it is answered (see
//! [`classify`](crate::domain::audit::classify)), and `GET /api/audit` (admin only, see
//! `scopes`), which reads them back.
//!
//! The middleware sits outside the access guard, so it also sees the requests the guard
//! refuses, and reads the identity the guard (or a login) put in the request's extensions.

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::{header, Method};
use actix_web::middleware::Next;
use actix_web::{web, Error, HttpMessage, HttpResponse};
use chrono::{DateTime, SecondsFormat, Utc};
use serde::Deserialize;
use utoipa::IntoParams;

use super::AppState;
use crate::actors::audit::{Flush, Record};
use crate::db::audit::{self as rows, AuditEntry, AuditFilter, NewAuditEntry};
use crate::domain::access::Identity;
use crate::domain::audit::{self, AuditEvent};
use crate::domain::time;
use crate::error::{AppError, AppResult, ErrorBody};

/// The middleware: answer the request, then record it if it is audited.
pub async fn record(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, Error> {
    let auditor = match req.app_data::<web::Data<AppState>>() {
        Some(state) if req.path().starts_with("/api") => state.audit.clone(),
        _ => return next.call(req).await.map(ServiceResponse::map_into_boxed_body),
    };
    let changes_state = !matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS);
    let presented = presents_credential(&req);
    let method = req.method().to_string();
    let address = req.peer_addr().map(|a| a.ip().to_string());
    let answered = next.call(req).await;
    let (status, request, made) = match &answered {
        Ok(response) => (response.status(), Some(response.request()), created(response)),
        // An error a middleware returned: actix answers it with the error's status.
        Err(e) => (e.as_response_error().status_code(), None, None),
    };
    let route = request.and_then(|r| r.match_pattern()).unwrap_or_else(|| "(no route)".to_string());
    if let Some(event) = audit::classify(changes_state, &route, status.as_u16(), presented) {
        let identity = request.and_then(|r| r.extensions().get::<Identity>().cloned());
        if let Some((actor, actor_id)) = audit::actor(identity.as_ref()) {
            let target = made.or_else(|| request.and_then(|r| r.match_info().get("id").map(str::to_string)));
            auditor.do_send(Record(NewAuditEntry {
                at: time::now(),
                event,
                actor,
                actor_id,
                method,
                route,
                target,
                status: i32::from(status.as_u16()),
                address,
            }));
        }
    }
    answered.map(ServiceResponse::map_into_boxed_body)
}

/// The id of what a creation made: the last segment of its `Location` (every creation
/// answers with one, `/api/tokens/{id}`).
fn created<B>(response: &ServiceResponse<B>) -> Option<String> {
    if !response.status().is_success() {
        return None;
    }
    let location = response.headers().get(header::LOCATION)?.to_str().ok()?;
    location.rsplit('/').next().filter(|id| !id.is_empty()).map(str::to_string)
}

/// Whether the request carries a credential of any kind: a refused one is worth recording; a
/// request with none (a page that has not signed in yet) is not, unless it changes state.
fn presents_credential(req: &ServiceRequest) -> bool {
    req.headers().contains_key(header::AUTHORIZATION)
        || super::auth::session_cookie(req.headers()).is_some()
        || req.query_string().split('&').any(|pair| pair.starts_with("token="))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct AuditQuery {
    /// How many rows at most (1-1000, default 100).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<i64>,
    /// Only rows older than this id: pass the last id of a page to get the next one.
    #[param(minimum = 1)]
    pub before: Option<i64>,
    /// Only this event.
    pub event: Option<AuditEvent>,
    /// Only this user's or token's rows.
    pub actor_id: Option<String>,
    /// Only rows at or after this time (RFC 3339).
    pub since: Option<String>,
}

/// The access audit, newest first.
#[utoipa::path(get, path = "/api/audit", tag = "audit", params(AuditQuery),
    responses(
        (status = 200, description = "Audit rows, newest first", body = Vec<AuditEntry>),
        (status = 400, description = "Bad query string (an unknown event or parameter)", body = ErrorBody),
        (status = 403, description = "Not an admin (`insufficient_scope`)", body = ErrorBody),
        (status = 422, description = "`limit`, `before` or `since` is invalid", body = ErrorBody),
        (status = 503, description = "Storage unavailable", body = ErrorBody),
    ))]
pub async fn list(state: web::Data<AppState>, query: web::Query<AuditQuery>) -> AppResult<HttpResponse> {
    let q = query.into_inner();
    let (limit, _) = super::pagination::Page { limit: q.limit, offset: None }.bounds()?;
    if q.before.is_some_and(|b| b < 1) {
        return Err(AppError::validation("`before` must be a row id (1 or more)"));
    }
    let since = q.since.as_deref().map(since).transpose()?;
    // Rows are written behind: what this node recorded before this request is stored first.
    state.audit.send(Flush).await.map_err(|e| AppError::internal(format!("the auditor is gone: {e}")))??;
    let filter = AuditFilter { before: q.before, event: q.event, actor_id: q.actor_id, since };
    let rows = state.store.run(move |conn| rows::list(conn, &filter, limit)).await?;
    Ok(HttpResponse::Ok().json(rows))
}

/// `since` as stored (RFC 3339 UTC with milliseconds, which sorts as text).
fn since(raw: &str) -> Result<String, AppError> {
    let at = DateTime::parse_from_rfc3339(raw.trim())
        .map_err(|e| AppError::validation(format!("`since` must be an RFC 3339 time (2026-11-28T00:00:00Z): {e}")))?;
    Ok(at.with_timezone(&Utc).to_rfc3339_opts(SecondsFormat::Millis, true))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_is_normalised_to_the_stored_form() {
        assert_eq!(since("2026-11-28T01:02:03+01:00").ok().as_deref(), Some("2026-11-28T00:02:03.000Z"));
        assert!(since("yesterday").is_err());
    }
}
