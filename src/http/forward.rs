//! Cluster mode: an action on a live session another node runs is forwarded to that node (its
//! `address` in `nodes`), with the cluster secret, and its answer is streamed back as it comes:
//! the caller gets what the owner would have said, streams included (command output, a
//! process's log stream). Reads of the database (`GET` of the session and its messages) are
//! answered here, and so are the session's event streams (events are relayed between nodes).
//! A request about a background process goes to the node that runs it (its logs are on that
//! node's disk). A request about a terminal (`GET`, `DELETE`, its WebSocket) goes to the node
//! running it, found by asking the live peers (see [`super::terminals_across`]); the WebSocket
//! is carried both ways by [`super::ws_proxy`]. A new session's terminal starts on the
//! session's owner (`POST .../terminals` is an action on the session).
//!
//! Launches and resumes are placed (see [`super::placement`]) and forwarded to the node chosen.
//! Lists and project-wide actions that span nodes fan out instead (`GET /api/terminals`, a
//! project's `kill-all` and `cleanup`: see [`super::peers::fan_out`]).
//!
//! The receiving node trusts a request carrying the right secret as coming from a node of its
//! cluster (see [`super::guard`]) and never forwards it again.

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::{header, Method, StatusCode};
use actix_web::middleware::Next;
use actix_web::{web, Error, FromRequest, HttpMessage, HttpResponse, ResponseError};
use futures_util::StreamExt;

use super::peers::{self, error_chain};
use super::placement::{self, Placing};
use super::{terminals_across, ws_proxy};
use crate::db::{nodes, processes, sessions};
use crate::domain::cluster::NodeState;
use crate::domain::ids::{ProcessId, ProjectId, SessionId, TerminalId};
use crate::error::AppError;
use crate::http::AppState;

/// The largest body forwarded: the API's own JSON limit.
const MAX_BODY: usize = 1 << 20;

/// The middleware: forwards, or passes the request on to be answered here.
pub async fn to_owner(
    mut req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, Error> {
    let target = match req.app_data::<web::Data<AppState>>() {
        Some(state) if state.settings.cluster.is_some() && !peers::from_peer(req.headers()) => {
            target(req.method(), req.path(), upgrading(&req)).map(|target| (state.clone(), target))
        }
        _ => None,
    };
    let Some((state, target)) = target else {
        return next.call(req).await.map(ServiceResponse::map_into_boxed_body);
    };
    let destination = match target {
        Target::Session(id) => owner_address(&state, id).await,
        Target::Process(id) => process_owner(&state, id).await,
        Target::Place(placing) => placement::place(&state, placing).await,
        Target::Terminal(ref id) => terminals_across::owner(&state, id).await,
    };
    match destination {
        Ok(None) => next.call(req).await.map(ServiceResponse::map_into_boxed_body),
        Ok(Some((node, address))) if upgrading(&req) => {
            // Only a terminal's WebSocket gets here (`target` leaves every other upgrade alone).
            let (http, mut payload) = req.into_parts();
            let payload = web::Payload::from_request(&http, &mut payload).await?;
            let answer = match state.settings.cluster.as_ref() {
                Some(cluster) => ws_proxy::proxy(cluster, &state.peers, &http, payload, &node, &address).await,
                None => AppError::internal("not a cluster").error_response(),
            };
            Ok(ServiceResponse::new(http, answer))
        }
        Ok(Some((node, address))) => {
            let answer = match read_body(&mut req).await {
                Ok(body) => forward(&state, &req, &node, &address, body).await,
                Err(refusal) => refusal.error_response(),
            };
            Ok(req.into_response(answer))
        }
        Err(e) => Ok(req.into_response(e.error_response())),
    }
}

/// Where a request goes: to the node running its session, process or terminal, or (a launch,
/// a resume) to the node placement picks.
enum Target {
    Session(SessionId),
    Process(ProcessId),
    Place(Placing),
    Terminal(TerminalId),
}

/// What a request is about, when it may have to go to another node.
fn target(method: &Method, path: &str, upgrading: bool) -> Option<Target> {
    let (scope, rest) = path.strip_prefix("/api/")?.split_once('/')?;
    let (id, tail) = rest.split_once('/').unwrap_or((rest, ""));
    if scope == "terminals" {
        // The terminal itself and its WebSocket: both only where its PTY is.
        if !matches!(tail, "" | "ws") {
            return None;
        }
        return TerminalId::parse(id).ok().map(Target::Terminal);
    }
    if upgrading {
        return None;
    }
    let process = tail.strip_prefix("processes/").and_then(|rest| rest.split('/').next());
    if let Some(id) = process.and_then(|id| ProcessId::parse(id).ok()) {
        return Some(Target::Process(id));
    }
    match scope {
        "projects" if *method == Method::POST && tail == "sessions" => {
            ProjectId::parse(id).ok().map(|id| Target::Place(Placing::Launch(id)))
        }
        "sessions" => {
            let id = SessionId::parse(id).ok()?;
            match tail {
                "resume" => Some(Target::Place(Placing::Resume(id))),
                // Session events are relayed to every node.
                "stream" | "ws" => None,
                "" | "messages" if *method == Method::GET => None,
                _ => Some(Target::Session(id)),
            }
        }
        _ => None,
    }
}

fn upgrading(req: &ServiceRequest) -> bool {
    req.headers().contains_key(header::UPGRADE)
}

/// The owner's name and address when the session is live on another node; `None` when this
/// node answers (it owns it, the session has ended, or there is no such session).
async fn owner_address(state: &AppState, id: SessionId) -> Result<Option<(String, String)>, AppError> {
    let Some(me) = state.settings.cluster.as_ref().map(|c| c.node.clone()) else { return Ok(None) };
    let found = state
        .store
        .run(move |conn| {
            let Some(owner) = sessions::live_owner(conn, &id)?.filter(|owner| *owner != me) else { return Ok(None) };
            Ok(Some((owner.clone(), nodes::find(conn, &owner)?)))
        })
        .await?;
    match found {
        None => Ok(None),
        Some((owner, Some(node))) if node.state == NodeState::Live => Ok(Some((owner, node.address))),
        Some((owner, _)) => Err(unreachable(&owner, "it is not live in the cluster")),
    }
}

/// The node running a background process, when it is another live one: its logs are on that
/// node's disk, and only that node can stop it. `None` when this node answers.
async fn process_owner(state: &AppState, id: ProcessId) -> Result<Option<(String, String)>, AppError> {
    let Some(me) = state.settings.cluster.as_ref().map(|c| c.node.clone()) else { return Ok(None) };
    let found = state
        .store
        .run(move |conn| {
            let owner = processes::find(conn, &id)?.and_then(|row| row.owner_node).filter(|owner| *owner != me);
            owner.map(|owner| nodes::find(conn, &owner)).transpose().map(Option::flatten)
        })
        .await?;
    Ok(found.filter(|node| node.state == NodeState::Live).map(|node| (node.name, node.address)))
}

fn unreachable(owner: &str, why: &str) -> AppError {
    AppError::unavailable(
        "owner_unreachable",
        format!("the session runs on node {owner}, which cannot be reached ({why}); try again: a lost node's sessions end with node_lost within its lease"),
    )
}

async fn read_body(req: &mut ServiceRequest) -> Result<web::Bytes, AppError> {
    let mut payload = req.take_payload();
    let mut body = web::BytesMut::new();
    while let Some(chunk) = payload.next().await {
        let chunk = chunk.map_err(|e| AppError::bad_request("bad_body", format!("the body could not be read: {e}")))?;
        if body.len() + chunk.len() > MAX_BODY {
            return Err(AppError::new(StatusCode::PAYLOAD_TOO_LARGE, "body_too_large", "the body is over 1 MiB"));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body.freeze())
}

/// Sends the request to `address` and translates the answer back.
async fn forward(state: &AppState, req: &ServiceRequest, owner: &str, address: &str, body: web::Bytes) -> HttpResponse {
    let Some(cluster) = state.settings.cluster.as_ref() else {
        return AppError::internal("not a cluster").error_response();
    };
    let path = req.uri().path_and_query().map_or(req.path(), |p| p.as_str());
    let Ok(method) = reqwest::Method::from_bytes(req.method().as_str().as_bytes()) else {
        return AppError::bad_request("bad_method", "this method cannot be forwarded").error_response();
    };
    let mut outgoing = peers::request(state, cluster, method, address, path).body(body);
    for name in [header::CONTENT_TYPE, header::ACCEPT] {
        if let Some(value) = req.headers().get(&name).and_then(|v| v.to_str().ok()) {
            outgoing = outgoing.header(name.as_str(), value);
        }
    }
    let answer = match outgoing.send().await {
        Ok(answer) => answer,
        Err(e) => {
            let why = error_chain(&e.without_url());
            tracing::warn!(node = %owner, error = %why, "cluster: forwarding failed");
            return unreachable(owner, &why).error_response();
        }
    };
    let status = StatusCode::from_u16(answer.status().as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
    let mut response = HttpResponse::build(status);
    for name in [header::CONTENT_TYPE, header::LOCATION, header::RETRY_AFTER] {
        if let Some(value) = answer.headers().get(name.as_str()).and_then(|v| v.to_str().ok()) {
            response.insert_header((name, value.to_string()));
        }
    }
    // Streamed as it comes: a command's output or a log stream flows on while the owner sends.
    response.streaming(answer.bytes_stream())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(method: Method, path: &str) -> &'static str {
        match target(&method, path, false) {
            None => "here",
            Some(Target::Session(_)) => "owner",
            Some(Target::Process(_)) => "process owner",
            Some(Target::Place(Placing::Launch(_))) => "placed launch",
            Some(Target::Place(Placing::Resume(_))) => "placed resume",
            Some(Target::Terminal(_)) => "terminal owner",
        }
    }

    #[test]
    fn what_is_forwarded() {
        let id = "6f1c2a9e-1d3b-4c5a-8e7f-0a1b2c3d4e5f";
        let s = |tail: &str| format!("/api/sessions/{id}{tail}");
        assert_eq!(kind(Method::POST, &s("/message")), "owner");
        assert_eq!(kind(Method::POST, &s("/interrupt")), "owner");
        assert_eq!(kind(Method::DELETE, &s("")), "owner");
        assert_eq!(kind(Method::GET, &s("/diff")), "owner");
        assert_eq!(kind(Method::POST, &s("/exec/stream")), "owner", "a command's output is streamed back");
        assert_eq!(kind(Method::GET, &s("")), "here", "a read of the database");
        assert_eq!(kind(Method::GET, &s("/messages")), "here");
        assert_eq!(kind(Method::GET, &s("/stream")), "here", "events are relayed");
        assert_eq!(kind(Method::POST, &s("/resume")), "placed resume");
        assert_eq!(kind(Method::GET, &s(&format!("/processes/{id}/logs/stream"))), "process owner");
        assert_eq!(kind(Method::POST, &format!("/api/projects/{id}/processes/{id}/kill")), "process owner");
        assert_eq!(kind(Method::POST, &s("/processes/kill-all")), "owner");
        assert_eq!(kind(Method::GET, "/api/sessions/active"), "here");
        assert_eq!(kind(Method::POST, &format!("/api/projects/{id}/sessions")), "placed launch");
        assert_eq!(kind(Method::GET, &format!("/api/projects/{id}/sessions")), "here");
        assert_eq!(kind(Method::POST, "/api/projects/not-an-id/sessions"), "here", "the handler answers 404");
        assert_eq!(kind(Method::POST, "/api/projects/import"), "here");
        assert!(target(&Method::POST, &s("/message"), true).is_none(), "an upgrade is answered here");
        assert!(target(&Method::GET, &s("/ws"), true).is_none(), "session events are relayed");
        assert_eq!(kind(Method::POST, &s("/terminals")), "owner", "a session's terminal starts on its owner");
        let t = |tail: &str| format!("/api/terminals/{id}{tail}");
        assert_eq!(kind(Method::GET, &t("")), "terminal owner");
        assert_eq!(kind(Method::DELETE, &t("")), "terminal owner");
        assert!(matches!(target(&Method::GET, &t("/ws"), true), Some(Target::Terminal(_))), "its WebSocket is carried");
        assert_eq!(kind(Method::GET, "/api/terminals"), "here", "the list fans out in its handler");
        assert_eq!(kind(Method::GET, "/api/terminals/not-an-id"), "here", "the handler answers 400");
        assert_eq!(kind(Method::POST, &format!("/api/projects/{id}/processes/kill-all")), "here", "it fans out");
    }
}
