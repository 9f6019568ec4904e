//! A subscriber's cursor on its topic: what a connection (WebSocket, SSE, the webhook
//! dispatcher) reads, in order, exactly once.
//!
//! Live events come through the outbox. When the outbox overflowed (or a reconnect asked for a
//! replay), the feed catches up: it asks the bus for the next events from the topic's history;
//! for a session, what left the history is read from the store (the stored log is the source).
//! Then the bus puts the subscriber back on the live feed. Only events that left retention
//! altogether (an agent run's or the global topic's history) are reported as missed.

use std::sync::Arc;
use std::time::Duration;

use actix::Addr;

use super::bus::{CatchUp, CaughtUp, Delivery, EventBus, EventMeta, Outbox, Take, Unsubscribe};
use crate::db::messages::{self, StoredEvent};
use crate::db::writer::Writer;
use crate::db::Store;
use crate::domain::events::{self, Scope};

/// Events per catch-up step.
const STEP_EVENTS: usize = 512;
const STEP_BYTES: usize = 4 * 1024 * 1024;
/// After storage failed during a catch-up, before trying again.
const STORE_RETRY: Duration = Duration::from_millis(500);

#[derive(Debug, Clone)]
pub enum FeedItem {
    Event(Delivery),
    /// This many events left retention before the subscriber could read them.
    Missed(u64),
}

/// Where a session's stored events come from.
#[derive(Clone)]
pub struct StoredLog {
    pub store: Store,
    pub writer: Writer,
    pub session_id: String,
    /// Whether replayed events lose their secrets, as the live ones do (not in the `off` mode).
    pub redacts: bool,
}

pub struct Feed {
    bus: Addr<EventBus>,
    subscriber: u64,
    outbox: Arc<Outbox>,
    stored: Option<StoredLog>,
}

impl Feed {
    pub fn new(bus: Addr<EventBus>, subscriber: u64, outbox: Arc<Outbox>, stored: Option<StoredLog>) -> Feed {
        Feed { bus, subscriber, outbox, stored }
    }

    /// The next events, waiting up to `wait` (an empty batch then); `None` once the
    /// subscription is over.
    pub async fn next(&mut self, wait: Duration) -> Option<Vec<FeedItem>> {
        match self.outbox.take(256, wait).await {
            Take::Closed => None,
            Take::Idle => Some(Vec::new()),
            Take::Events(events) => Some(events.into_iter().map(FeedItem::Event).collect()),
            Take::Behind(from) => self.catch_up(from).await,
        }
    }

    async fn catch_up(&mut self, from: u64) -> Option<Vec<FeedItem>> {
        let ask = CatchUp { subscriber: self.subscriber, from, max_events: STEP_EVENTS, max_bytes: STEP_BYTES };
        match self.bus.send(ask).await.ok()? {
            CaughtUp::Gone => None,
            CaughtUp::Events { missed, events } => {
                let mut items = Vec::with_capacity(events.len() + 1);
                if missed > 0 {
                    items.push(FeedItem::Missed(missed));
                }
                items.extend(events.into_iter().map(FeedItem::Event));
                Some(items)
            }
            CaughtUp::FromStore { from, until } => Some(self.read_store(from, until).await),
        }
    }

    /// Reads `from..until` of the session's stored log (a step of it), and moves the cursor.
    async fn read_store(&mut self, from: u64, until: u64) -> Vec<FeedItem> {
        let Some(log) = self.stored.clone() else {
            // Not a session: nothing to read; count the range as missed.
            self.outbox.set_behind(until);
            return vec![FeedItem::Missed(until - from)];
        };
        // What the history dropped may still wait for the writer: store it first.
        let read = async {
            log.writer.flush().await.map_err(|e| e.to_string())?;
            let id = log.session_id.clone();
            let redacts = log.redacts;
            log.store
                .run(move |conn| {
                    let mut rows = messages::events_between(conn, &id, from, until, STEP_EVENTS as i64)?;
                    // Stored with their secrets in `in_flight` mode (and before `at_rest` was
                    // kept): replayed as the live stream sent them, without.
                    for row in rows.iter_mut().filter(|_| redacts) {
                        crate::secrets::scrub_json(&mut row.data);
                    }
                    Ok(rows)
                })
                .await
                .map_err(|e| e.to_string())
        };
        let rows = match read.await {
            Ok(rows) => rows,
            Err(e) => {
                tracing::warn!(session = %log.session_id, error = %e, "a stream could not catch up from storage; retrying");
                tokio::time::sleep(STORE_RETRY).await;
                self.outbox.set_behind(from);
                return Vec::new();
            }
        };
        // A full step ends at its last row; a short one covers the whole range.
        let next = match rows.last() {
            Some(last) if rows.len() >= STEP_EVENTS => last.seq + 1,
            _ => until,
        };
        self.outbox.set_behind(next);
        render(&log.session_id, from, next, rows)
    }
}

impl Drop for Feed {
    /// The connection went away: so does the subscription.
    fn drop(&mut self) {
        self.bus.do_send(Unsubscribe(self.subscriber));
    }
}

/// Frames for stored events, exactly as the live stream rendered them; a sequence number with
/// no stored event in `from..next` (it was never stored: a crash) is reported as missed.
fn render(session_id: &str, from: u64, next: u64, rows: Vec<StoredEvent>) -> Vec<FeedItem> {
    let scope = Scope::Session(session_id.to_string());
    let mut items = Vec::with_capacity(rows.len());
    let mut expected = from;
    for row in rows {
        if row.seq > expected {
            items.push(FeedItem::Missed(row.seq - expected));
        }
        expected = row.seq + 1;
        let kind = static_kind(&row.kind);
        let frame = events::frame(&row.name, events::Numbers::of(row.seq), kind, &scope, &row.timestamp, &row.data);
        let meta = Arc::new(EventMeta { kind, name: row.name, relayed: false, scope: scope.clone(), project: None });
        items.push(FeedItem::Event(Delivery { seq: row.seq, meta, frame: frame.into() }));
    }
    if next > expected {
        items.push(FeedItem::Missed(next - expected));
    }
    items
}

/// The bus types are a closed set; a stored one outside it (a newer version's) keeps a
/// generic name.
pub(crate) fn static_kind(kind: &str) -> &'static str {
    const KINDS: [&str; 13] = [
        "session.created",
        "session.status",
        "session.message",
        "stream.event",
        "session.result",
        "session.error",
        "session.closed",
        "permission.decision",
        "session.event",
        "workspace.created",
        "workspace.setup_output",
        "workspace.setup_failed",
        "workspace.ready",
    ];
    KINDS.iter().chain(&crate::domain::agent_events::KINDS).find(|k| **k == kind).copied().unwrap_or("session.event")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(seq: u64) -> StoredEvent {
        StoredEvent {
            seq,
            kind: "stream.event".into(),
            name: "stream_event".into(),
            timestamp: "t".into(),
            data: "{}".into(),
        }
    }

    #[test]
    fn gaps_in_the_stored_log_are_reported_as_missed_in_place() {
        let items = render("s", 1, 8, vec![row(1), row(2), row(5)]);
        let shape: Vec<String> = items
            .iter()
            .map(|i| match i {
                FeedItem::Event(d) => format!("e{}", d.seq),
                FeedItem::Missed(n) => format!("m{n}"),
            })
            .collect();
        assert_eq!(shape, ["e1", "e2", "m2", "e5", "m2"]);
    }

    #[test]
    fn stored_kinds_stay_within_the_known_set() {
        assert_eq!(static_kind("session.status"), "session.status");
        assert_eq!(static_kind("tool.finished"), "tool.finished");
        assert_eq!(static_kind("something.new"), "session.event");
    }
}
