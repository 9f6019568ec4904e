//! Live streams: Server-Sent Events per session and for everything, and a WebSocket per session.

use std::collections::VecDeque;
use std::time::Duration;

use actix_web::web::Bytes;
use actix_web::{web, HttpMessage, HttpRequest, HttpResponse};
use serde::Deserialize;
use utoipa::IntoParams;

use super::stream_filter::ProjectFilter;
use super::AppState;
use crate::actors::bus::{Follow, Subscribe};
use crate::actors::feed::{Feed, FeedItem, StoredLog};
use crate::actors::subscriber::{Subscriber, WsLink, MAX_FRAME_BYTES};
use crate::db;
use crate::domain::access::Identity;
use crate::domain::ids::SessionId;
use crate::error::{AppError, AppResult, ErrorBody};

const KEEP_ALIVE: Duration = Duration::from_secs(15);

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct StreamQuery {
    /// Replay events after this sequence number (same as the `Last-Event-ID` header).
    #[param(minimum = 0)]
    pub since: Option<u64>,
    /// The API token, for clients that cannot send headers (only when one is configured).
    pub token: Option<String>,
}

/// What a session's stream follows: the session (404 if there is none), from where its stored
/// log ends.
async fn session_follow(state: &AppState, id: &SessionId) -> AppResult<Follow> {
    let lookup = id.clone();
    let found = state
        .store
        .run(move |conn| {
            let Some(_) = db::sessions::find(conn, &lookup)? else { return Ok(None) };
            Ok(Some(db::messages::last_seq(conn, lookup.as_str())?))
        })
        .await?;
    match found {
        Some(stored_head) => Ok(Follow::Session { id: id.to_string(), stored_head }),
        None => Err(AppError::not_found(format!("No session with id {id:?}."))),
    }
}

fn resume_point(req: &HttpRequest, query: &StreamQuery) -> AppResult<Option<u64>> {
    if query.since.is_some() {
        return Ok(query.since);
    }
    match req.headers().get("last-event-id") {
        None => Ok(None),
        Some(v) => {
            v.to_str().ok().and_then(|s| s.trim().parse::<u64>().ok()).map(Some).ok_or_else(|| {
                AppError::bad_request("invalid_last_event_id", "`Last-Event-ID` must be a sequence number")
            })
        }
    }
}

/// Subscribes to `follow` and returns the subscriber's feed (catching up from the store when
/// it follows a session).
pub async fn feed(state: &AppState, follow: Follow, since: Option<u64>) -> AppResult<Feed> {
    let stored = match &follow {
        Follow::Session { id, .. } => Some(StoredLog {
            store: state.store.clone(),
            writer: state.writer.clone(),
            session_id: id.clone(),
            redacts: state.settings.redaction.in_flight(),
        }),
        _ => None,
    };
    let sub = state
        .bus
        .send(Subscribe { follow, since, outbox: state.settings.subscriber_outbox, internal: false })
        .await
        .map_err(|e| AppError::internal(format!("event bus unavailable: {e}")))?;
    Ok(Feed::new(state.bus.clone(), sub.id, sub.outbox, stored))
}

/// The SSE body: one message per event (`event`, `id`, `data`), in order and without gaps
/// (a `warning` with the number of events missed only for what left retention), and a comment
/// every 15 s while idle.
fn sse(feed: Feed, filter: Option<ProjectFilter>) -> HttpResponse {
    let state = (feed, filter, VecDeque::<Bytes>::new());
    let body = futures_util::stream::unfold(state, |(mut feed, mut filter, mut pending)| async move {
        loop {
            if let Some(chunk) = pending.pop_front() {
                return Some((Ok::<_, actix_web::Error>(chunk), (feed, filter, pending)));
            }
            let items = feed.next(KEEP_ALIVE).await?;
            if items.is_empty() {
                pending.push_back(Bytes::from_static(b": keep-alive\n\n"));
            }
            for item in items {
                let keep = match (&item, filter.as_mut()) {
                    (FeedItem::Event(d), Some(filter)) => filter.keeps(&d.meta).await,
                    _ => Ok(true),
                };
                pending.push_back(match (item, keep) {
                    (_, Ok(false)) => continue,
                    (FeedItem::Event(d), Ok(true)) => {
                        Bytes::from(format!("event: {}\nid: {}\ndata: {}\n\n", d.meta.name, d.seq, d.frame))
                    }
                    (FeedItem::Missed(n), _) => warning(serde_json::json!({"event": "warning", "dropped": n})),
                    // Not sent when its project is unknown; the client is told it missed one.
                    (FeedItem::Event(_), Err(e)) => {
                        warning(serde_json::json!({"event": "warning", "dropped": 1, "reason": e.to_string()}))
                    }
                });
            }
        }
    });
    HttpResponse::Ok()
        .content_type("text/event-stream")
        .insert_header(("cache-control", "no-cache"))
        .insert_header(("x-accel-buffering", "no"))
        .streaming(body)
}

fn warning(data: serde_json::Value) -> Bytes {
    Bytes::from(format!("event: warning\ndata: {data}\n\n"))
}

/// A session's events as Server-Sent Events.
#[utoipa::path(get, path = "/api/sessions/{id}/stream", tag = "streams",
    params(("id" = String, Path, description = "Session id (UUID)"), StreamQuery,
        ("Last-Event-ID" = Option<String>, Header, description = "Replay events after this sequence number")),
    responses(
        (status = 200, description = "text/event-stream: `event: <name>`, `id: <sequence>`, `data: <JSON>`", content_type = "text/event-stream"),
        (status = 400, description = "Bad query string or Last-Event-ID", body = ErrorBody),
        (status = 404, description = "No such session", body = ErrorBody),
    ))]
pub async fn session_stream(
    state: web::Data<AppState>,
    id: web::Path<String>,
    query: web::Query<StreamQuery>,
    req: HttpRequest,
) -> AppResult<HttpResponse> {
    let id: SessionId = id.parse()?;
    let since = resume_point(&req, &query)?;
    let follow = session_follow(&state, &id).await?;
    Ok(sse(feed(&state, follow, since).await?, None))
}

/// SSE of one topic other than a session's (an agent run's), which the caller checked exists.
pub async fn topic_stream(
    state: &AppState,
    topic: String,
    req: &HttpRequest,
    query: &StreamQuery,
) -> AppResult<HttpResponse> {
    let since = resume_point(req, query)?;
    Ok(sse(feed(state, Follow::Execution(topic), since).await?, None))
}

/// Every event of every session as Server-Sent Events (what the dashboard listens to).
///
/// A token bound to a project gets that project's events only.
#[utoipa::path(get, path = "/api/events/stream", tag = "streams",
    params(StreamQuery, ("Last-Event-ID" = Option<String>, Header, description = "Replay events after this sequence number")),
    responses(
        (status = 200, description = "text/event-stream: `event: <name>`, `id: <sequence>`, `data: <JSON>`", content_type = "text/event-stream"),
        (status = 400, description = "Bad query string or Last-Event-ID", body = ErrorBody),
    ))]
pub async fn events_stream(
    state: web::Data<AppState>,
    query: web::Query<StreamQuery>,
    req: HttpRequest,
) -> AppResult<HttpResponse> {
    let since = resume_point(&req, &query)?;
    let bound = req.extensions().get::<Identity>().and_then(|who| who.project().cloned());
    let filter = bound.map(|project| ProjectFilter::new(project, state.store.clone(), state.writer.clone()));
    Ok(sse(feed(&state, Follow::Everything, since).await?, filter))
}

/// A session over WebSocket: events out, actions in (`message`, `interrupt`, `set_model`,
/// `set_permission_mode`).
#[utoipa::path(get, path = "/api/sessions/{id}/ws", tag = "streams",
    params(("id" = String, Path, description = "Session id (UUID)"), StreamQuery),
    responses(
        (status = 101, description = "Switching to the WebSocket protocol"),
        (status = 400, description = "Not a WebSocket upgrade request", body = ErrorBody),
        (status = 404, description = "No such session", body = ErrorBody),
    ))]
pub async fn session_ws(
    state: web::Data<AppState>,
    id: web::Path<String>,
    query: web::Query<StreamQuery>,
    req: HttpRequest,
    body: web::Payload,
) -> AppResult<HttpResponse> {
    let id: SessionId = id.parse()?;
    let follow = session_follow(&state, &id).await?;
    let (response, socket, frames) = actix_ws::handle(&req, body)
        .map_err(|e| AppError::bad_request("not_a_websocket", format!("This endpoint speaks WebSocket: {e}")))?;
    let frames = frames.max_frame_size(MAX_FRAME_BYTES);
    let feed = feed(&state, follow, query.since).await?;
    let link = WsLink { socket, session_id: id, registry: state.registry.clone() };
    Subscriber::for_ws(feed, link, frames);
    Ok(response)
}
