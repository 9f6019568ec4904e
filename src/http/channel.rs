//! The session channel on the HTTP side (see [`crate::sandbox::channel`]): connections that
//! came over its socket are marked when they open, a session's token is an identity of its own
//! ([`Identity::Session`]), and what such an identity may reach is [`SESSION_ROUTES`]: its own
//! session, its own transcript, its project's sessions. Nothing else, over the socket or the
//! port: never a change to a sandbox, a rule, a token, an account, a webhook, a budget or a
//! project. Over the socket, nothing but a session's token counts (no open mode, no admin
//! token, no password, no cluster secret).

use std::any::Any;

use actix_web::dev::{Extensions, ServiceRequest};
use actix_web::http::Method;
use actix_web::web;

use super::AppState;
use crate::db;
use crate::domain::access::Identity;
use crate::error::AppError;
use crate::sandbox::channel::SessionChannel;

/// A connection that came over the session channel's socket.
#[derive(Debug, Clone, Copy)]
pub struct ChannelConnection;

/// Marks a connection that came over the channel's socket (`HttpServer::on_connect`).
pub fn mark(connection: &dyn Any, extensions: &mut Extensions) {
    if connection.downcast_ref::<actix_web::rt::net::UnixStream>().is_some() {
        extensions.insert(ChannelConnection);
    }
}

/// Whether `req` came over the channel's socket.
pub fn over_channel(req: &ServiceRequest) -> bool {
    req.conn_data::<ChannelConnection>().is_some()
}

/// Which of its own rows a session route names by its `{id}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Own {
    Session,
    Project,
}

/// Everything a session's token may reach: (method, route, whose id the route names).
pub const SESSION_ROUTES: &[(Method, &str, Own)] = &[
    (Method::GET, "/api/sessions/{id}", Own::Session),
    (Method::GET, "/api/sessions/{id}/messages", Own::Session),
    (Method::GET, "/api/projects/{id}/sessions", Own::Project),
];

/// Whether a session's token may send `method` to the route `pattern` with `id` in the
/// path's third segment; `Err` with the 403 otherwise.
pub fn allow(identity: &Identity, method: &Method, pattern: &str, id: Option<&str>) -> Result<(), AppError> {
    let Identity::Session { session, project } = identity else { return Ok(()) };
    let own = SESSION_ROUTES.iter().find(|(m, p, _)| m == method && *p == pattern).map(|(_, _, own)| *own);
    let allowed = match own {
        Some(Own::Session) => id == Some(session.as_str()),
        Some(Own::Project) => id == Some(project.as_str()),
        None => false,
    };
    if allowed {
        return Ok(());
    }
    Err(outside(method, pattern))
}

fn outside(method: &Method, route: &str) -> AppError {
    AppError::forbidden(
        "outside_session",
        format!(
            "{method} {route} is beyond what a session may do through its channel: it can read its own session (GET /api/sessions/{{id}}), its transcript (GET /api/sessions/{{id}}/messages) and its project's sessions (GET /api/projects/{{id}}/sessions), and change nothing."
        ),
    )
}

/// The answer to anything over the socket that is no API route a session may reach.
pub fn not_for_the_channel(req: &ServiceRequest) -> AppError {
    outside(req.method(), req.path())
}

/// The session a `cst_` bearer of `bearers` proves, as an identity: `Ok(None)` when none looks
/// like a session token, 401 when one does but names no session this service made (or one
/// since deleted), 503 when the database cannot say.
pub async fn session_identity(req: &ServiceRequest, bearers: &[String]) -> Result<Option<Identity>, AppError> {
    let mut presented = bearers.iter().filter(|b| SessionChannel::looks_like_token(b)).peekable();
    if presented.peek().is_none() {
        return Ok(None);
    }
    let Some(state) = req.app_data::<web::Data<AppState>>() else {
        return Err(AppError::internal("app state missing from app data"));
    };
    for bearer in presented {
        let Some(session) = state.channel.verify(bearer) else { continue };
        let lookup = session.clone();
        if let Some(row) = state.store.run(move |conn| db::sessions::find(conn, &lookup)).await? {
            return Ok(Some(Identity::Session { session, project: row.project_id }));
        }
    }
    Err(AppError::new(
        actix_web::http::StatusCode::UNAUTHORIZED,
        "unauthorized",
        "This session token names no session of this service (the session may have been deleted).",
    ))
}
