//! `EventBus`: every event, in order, to every subscriber, without a slow one hurting anyone
//! and without a subscriber that keeps reading ever missing one.
//!
//! Topics: one per session, one per agent run, and one for everything. Each event has a
//! sequence number per topic: a session numbers its own events (it stores them with their
//! numbers, so its stream can be replayed from storage); the bus numbers the rest. Each topic
//! keeps a recent history, bounded in bytes across all topics (the oldest events anywhere go
//! first). Delivery never waits: each subscriber has a bounded [`Outbox`]; a subscriber whose
//! outbox is full is marked behind and catches up ([`CatchUp`]) from the history and, for a
//! session, from the store, then rejoins the live feed. Only a subscriber behind by more than
//! the retention (an agent run's or the global topic's history; a session keeps everything
//! stored) learns that events were missed.

mod event;
mod handlers;
mod messages;
mod relayed;
mod state;

pub use super::outbox::{Delivery, EventMeta, Outbox, Take, OUTBOX_BYTES};
pub use event::{Event, Origin, Secrets};
pub use messages::{
    CatchUp, CaughtUp, CloseStreams, FeedGone, Follow, HistoryBytes, Publish, ReportWatches, Stored, Subscribe,
    SubscriberCount, Subscription, Unsubscribe, WatchChange, WatcherCount,
};
pub use state::EventBus;

/// The default outbox bound in events (the `subscriber_outbox` setting).
pub const OUTBOX: usize = 1000;
/// The default bound of every topic's history together (the `stream_history_bytes` setting).
pub const HISTORY_BYTES: usize = 128 * 1024 * 1024;

#[cfg(test)]
mod tests;
