//! `GET /api/cluster/feed`: this node's own session events, live, for the other nodes.
//!
//! A peer that has clients following sessions reads this feed to relay their events as they
//! happen, without waiting for them to be committed (the commit's fsync was most of the
//! cross-node latency, and all of its tail). The store stays the source: a peer also reads
//! each committed range back, and its bus keeps whichever copy comes first (see
//! `EventBus::takes_relayed`), so whatever this feed drops or delays costs time, never an event.
//!
//! The body is one line per event, the frame the global stream sends (with `session_seq`),
//! and an empty line every 15 s while idle, so a peer can tell a quiet node from a dead one.

use std::time::Duration;

use actix_web::web::Bytes;
use actix_web::{web, HttpRequest, HttpResponse};

use super::peers;
use crate::actors::bus::{Follow, Subscribe};
use crate::actors::feed::{Feed, FeedItem};
use crate::error::{AppError, AppResult, ErrorBody};
use crate::http::AppState;

const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// This node's session events, live, as lines of JSON: for the other nodes only, which send
/// the cluster secret in `x-conduit-cluster-secret`.
#[utoipa::path(get, path = "/api/cluster/feed", tag = "cluster",
    responses(
        (status = 200, description = "application/x-ndjson: one line per session event of this node, as the global stream frames it (with `session_seq`); an empty line every 15 s while idle", content_type = "application/x-ndjson"),
        (status = 401, description = "Wrong cluster secret", body = ErrorBody),
        (status = 403, description = "Not asked by a node (no cluster secret)", body = ErrorBody),
        (status = 404, description = "Cluster mode is off", body = ErrorBody),
    ))]
pub async fn feed(state: web::Data<AppState>, req: HttpRequest) -> AppResult<HttpResponse> {
    if !peers::from_peer(req.headers()) {
        return Err(AppError::forbidden(
            "peers_only",
            "Only the cluster's nodes read this feed (with the cluster secret).",
        ));
    }
    if state.settings.cluster.is_none() {
        return Err(AppError::not_found("Cluster mode is off: there is no node feed."));
    }
    // Internal: not a client, so it neither counts as one nor makes this node read back what
    // its peers store.
    let sub = state
        .bus
        .send(Subscribe {
            follow: Follow::Everything,
            since: None,
            outbox: state.settings.subscriber_outbox,
            internal: true,
        })
        .await
        .map_err(|e| AppError::internal(format!("event bus unavailable: {e}")))?;
    let feed = Feed::new(state.bus.clone(), sub.id, sub.outbox, None);
    let body = futures_util::stream::unfold(feed, |mut feed| async move {
        let items = feed.next(KEEP_ALIVE).await?;
        Some((Ok::<_, actix_web::Error>(lines(items)), feed))
    });
    Ok(HttpResponse::Ok()
        .content_type("application/x-ndjson")
        .insert_header(("cache-control", "no-cache"))
        .streaming(body))
}

/// The batch's own session events, a line each; a lone newline for an idle wait. What this
/// node relays from others, and what left retention, is not its to send (peers read it back).
fn lines(items: Vec<FeedItem>) -> Bytes {
    let mut out = Vec::new();
    for item in items {
        if let FeedItem::Event(d) = item {
            if !d.meta.relayed && d.frame.contains("\"session_seq\":") {
                out.extend_from_slice(d.frame.as_bytes());
                out.push(b'\n');
            }
        }
    }
    if out.is_empty() {
        out.push(b'\n');
    }
    Bytes::from(out)
}
