//! Cluster mode: an action on a live session another node runs is forwarded to that node (its
//! `address` in `nodes`), with the cluster secret, and its answer is sent back as it came: the
//! caller gets what the owner would have said. Reads of the database (`GET` of the session and
//! its messages) are answered here, streams are not forwarded (see the README), and a resume is
//! any node's to do (the node that resumes a session takes it over).
//!
//! A launch (`POST /api/projects/{id}/sessions`) is placed on the least-loaded live node (live
//! sessions over capacity; this node on a tie) and forwarded there. Every node is assumed to
//! reach every project's folder (shared storage, see the README).
//!
//! The receiving node trusts a request carrying the right secret as coming from a node of its
//! cluster (see [`super::guard`]) and never forwards it again.

use std::sync::OnceLock;
use std::time::Duration;

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::{header, Method, StatusCode};
use actix_web::middleware::Next;
use actix_web::{web, Error, HttpMessage, HttpResponse, ResponseError};
use futures_util::StreamExt;

use crate::db::{nodes, sessions};
use crate::domain::cluster::NodeState;
use crate::domain::ids::SessionId;
use crate::error::AppError;
use crate::http::AppState;

/// Carries the cluster secret on node-to-node requests.
pub const SECRET_HEADER: &str = "x-conduit-cluster-secret";
/// Names the node that forwarded a request (for the owner's logs).
const FORWARDED_BY: &str = "x-conduit-forwarded-by";
/// The largest body forwarded: the API's own JSON limit.
const MAX_BODY: usize = 1 << 20;

/// The middleware: forwards, or passes the request on to be answered here.
pub async fn to_owner(
    mut req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, Error> {
    let target = match req.app_data::<web::Data<AppState>>() {
        Some(state) if state.settings.cluster.is_some() && !req.headers().contains_key(SECRET_HEADER) => {
            let target = match session_action(req.method(), req.path(), upgrading(&req)) {
                Some(id) => Some(Target::Owner(id)),
                None => is_launch(req.method(), req.path()).then_some(Target::Placement),
            };
            target.map(|target| (state.clone(), target))
        }
        _ => None,
    };
    let Some((state, target)) = target else {
        return next.call(req).await.map(ServiceResponse::map_into_boxed_body);
    };
    let destination = match target {
        Target::Owner(id) => owner_address(&state, id).await,
        Target::Placement => least_loaded(&state).await,
    };
    match destination {
        Ok(None) => next.call(req).await.map(ServiceResponse::map_into_boxed_body),
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

/// Where a request goes: to the node running its session, or (a launch) to the node placement
/// picks.
enum Target {
    Owner(SessionId),
    Placement,
}

/// `POST /api/projects/{id}/sessions`.
fn is_launch(method: &Method, path: &str) -> bool {
    *method == Method::POST
        && path
            .strip_prefix("/api/projects/")
            .and_then(|rest| rest.strip_suffix("/sessions"))
            .is_some_and(|id| !id.is_empty() && !id.contains('/'))
}

/// The least-loaded live node (live sessions over capacity), this one on a tie; `None` when it
/// is this one. A node whose lease has run out is not a candidate.
async fn least_loaded(state: &AppState) -> Result<Option<(String, String)>, AppError> {
    let Some(me) = state.settings.cluster.as_ref().map(|c| c.node.clone()) else { return Ok(None) };
    let (rows, owned) = state.store.run(|conn| Ok((nodes::list(conn)?, nodes::live_by_owner(conn)?))).await?;
    let now = crate::domain::time::now();
    let load = |name: &str, capacity: i32| {
        let live = owned.iter().find(|(owner, _)| owner == name).map_or(0, |(_, n)| *n);
        live as f64 / f64::from(capacity.max(1))
    };
    let best = rows
        .iter()
        .filter(|n| n.state == NodeState::Live && n.lease_until >= now && i64::from(n.capacity) > 0)
        .map(|n| (load(&n.name, n.capacity), n.name != me, n))
        .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.name.cmp(&b.2.name)));
    Ok(best.filter(|(_, elsewhere, _)| *elsewhere).map(|(_, _, n)| (n.name.clone(), n.address.clone())))
}

/// The session an action is about, when it is one to forward.
fn session_action(method: &Method, path: &str, upgrading: bool) -> Option<SessionId> {
    let rest = path.strip_prefix("/api/sessions/")?;
    let (id, tail) = rest.split_once('/').unwrap_or((rest, ""));
    let stream = tail == "stream" || tail == "ws" || tail.ends_with("/stream") || tail.ends_with("/ws");
    let here = upgrading || stream || tail == "resume" || (*method == Method::GET && matches!(tail, "" | "messages"));
    if here {
        return None;
    }
    SessionId::parse(id).ok()
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

fn client() -> &'static reqwest::Client {
    static CLIENT: OnceLock<reqwest::Client> = OnceLock::new();
    CLIENT.get_or_init(|| {
        reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(2))
            .build()
            .unwrap_or_else(|_| reqwest::Client::new())
    })
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
    let mut outgoing = client()
        .request(method, format!("{address}{path}"))
        .header(SECRET_HEADER, &cluster.secret)
        .header(FORWARDED_BY, &cluster.node)
        .body(body);
    for name in [header::CONTENT_TYPE, header::ACCEPT] {
        if let Some(value) = req.headers().get(&name).and_then(|v| v.to_str().ok()) {
            outgoing = outgoing.header(name.as_str(), value);
        }
    }
    let answer = match outgoing.send().await {
        Ok(answer) => answer,
        Err(e) => return unreachable(owner, &e.without_url().to_string()).error_response(),
    };
    let status = StatusCode::from_u16(answer.status().as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
    let mut response = HttpResponse::build(status);
    for name in [header::CONTENT_TYPE, header::LOCATION, header::RETRY_AFTER] {
        if let Some(value) = answer.headers().get(name.as_str()).and_then(|v| v.to_str().ok()) {
            response.insert_header((name, value.to_string()));
        }
    }
    match answer.bytes().await {
        Ok(bytes) => response.body(bytes),
        Err(e) => unreachable(owner, &format!("its answer broke off: {}", e.without_url())).error_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_forwarded() {
        let id = "6f1c2a9e-1d3b-4c5a-8e7f-0a1b2c3d4e5f";
        let forwarded =
            |method: Method, tail: &str| session_action(&method, &format!("/api/sessions/{id}{tail}"), false);
        assert!(forwarded(Method::POST, "/message").is_some());
        assert!(forwarded(Method::POST, "/interrupt").is_some());
        assert!(forwarded(Method::DELETE, "").is_some());
        assert!(forwarded(Method::GET, "/diff").is_some());
        assert!(forwarded(Method::GET, "").is_none(), "a read of the database");
        assert!(forwarded(Method::GET, "/messages").is_none());
        assert!(forwarded(Method::POST, "/resume").is_none(), "any node resumes");
        assert!(forwarded(Method::GET, "/stream").is_none());
        assert!(forwarded(Method::GET, "/processes/x/stream").is_none());
        assert!(session_action(&Method::POST, &format!("/api/sessions/{id}/message"), true).is_none());
        assert!(session_action(&Method::GET, "/api/sessions/active", false).is_none());
        assert!(session_action(&Method::POST, "/api/projects/x/sessions", false).is_none());
    }

    #[test]
    fn launches_are_placed() {
        assert!(is_launch(&Method::POST, "/api/projects/p1/sessions"));
        assert!(!is_launch(&Method::GET, "/api/projects/p1/sessions"));
        assert!(!is_launch(&Method::POST, "/api/projects//sessions"));
        assert!(!is_launch(&Method::POST, "/api/projects/p1/x/sessions"));
        assert!(!is_launch(&Method::POST, "/api/projects/import"));
    }
}
