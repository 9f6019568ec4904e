//! The bus's messages: publishing, following a topic, catching up, and the counts health asks
//! for.

use std::sync::Arc;

use actix::prelude::*;

use super::{Delivery, Event, Outbox};

#[derive(Message)]
#[rtype(result = "()")]
pub struct Publish(pub Event);

/// What a subscriber follows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Follow {
    Everything,
    /// A session; `stored_head` is the last sequence number its store holds, for a topic the
    /// bus no longer (or not yet) has in memory.
    Session {
        id: String,
        stored_head: u64,
    },
    Execution(String),
    /// A command's or background process's topic (its output chunks, its start and end).
    Process(String),
}

/// Follow a topic, replaying what comes after `since` first (from the history and the store).
#[derive(Message)]
#[rtype(result = "Subscription")]
pub struct Subscribe {
    pub follow: Follow,
    pub since: Option<u64>,
    /// The outbox bound in events.
    pub outbox: usize,
    /// Conduit's own consumers (webhooks): not counted as clients.
    pub internal: bool,
}

pub struct Subscription {
    pub id: u64,
    pub outbox: Arc<Outbox>,
}

/// A subscriber behind from `from` asks for the next events it missed.
#[derive(Message)]
#[rtype(result = "CaughtUp")]
pub struct CatchUp {
    pub subscriber: u64,
    pub from: u64,
    pub max_events: usize,
    pub max_bytes: usize,
}

#[derive(Debug)]
pub enum CaughtUp {
    /// The next events (after `missed` ones that left retention). If they reach the topic's
    /// head, the subscriber is live again and its outbox fills from the next event on.
    Events { missed: u64, events: Vec<Delivery> },
    /// `from..until` left the history: read them from the session's store, then ask again.
    FromStore { from: u64, until: u64 },
    /// Not subscribed (any more).
    Gone,
}

#[derive(Message)]
#[rtype(result = "()")]
pub struct Unsubscribe(pub u64);

/// The service is stopping: every stream ends once it has sent what it holds, so clients learn
/// at once (instead of at the HTTP server's shutdown timeout) and reconnect to what comes next.
#[derive(Message)]
#[rtype(result = "()")]
pub struct CloseStreams;

#[derive(Message)]
#[rtype(result = "usize")]
pub struct SubscriberCount;

/// How many live clients follow a session (the janitor must not reap a watched session).
#[derive(Message)]
#[rtype(result = "usize")]
pub struct WatcherCount(pub String);

/// Bytes held in topic histories (for health and benchmarks).
#[derive(Message)]
#[rtype(result = "usize")]
pub struct HistoryBytes;

/// Cluster mode: the store holds `session`'s events up to `head`. When the bus has seen fewer,
/// the ones between were never published here (the relay did not read them back, or missed
/// their notice), so the session's followers catch up from the store.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Stored {
    pub session: String,
    pub head: u64,
}

/// A client starts or stops following a session (`Some`) or everything (`None`). Sent to the
/// reporter registered with [`ReportWatches`], so the relay reads back only what is followed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WatchChange {
    Follow(Option<String>),
    Unfollow(Option<String>),
}

/// Registers where [`WatchChange`]s go; the bus first sends what is followed already.
#[derive(Message)]
#[rtype(result = "()")]
pub struct ReportWatches(pub std::sync::mpsc::Sender<WatchChange>);

/// Cluster mode: the node that fed these events live is gone (lost, or restarted). What it fed
/// past its store may never be stored, and the session, resumed, numbers its next events from
/// where its store ends: those numbers must not look like copies of events already here.
#[derive(Message)]
#[rtype(result = "()")]
pub struct FeedGone(pub Arc<str>);
