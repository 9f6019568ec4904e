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

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use serde_json::Value;

pub use super::outbox::{Delivery, EventMeta, Outbox, Take, OUTBOX_BYTES};
use crate::domain::events::{self, Scope};

/// The default outbox bound in events (the `subscriber_outbox` setting).
pub const OUTBOX: usize = 1000;
/// The default bound of every topic's history together (the `stream_history_bytes` setting).
pub const HISTORY_BYTES: usize = 128 * 1024 * 1024;
/// How long a finished agent run's topic stays for replay when nobody follows it. A closed
/// session's goes at the next sweep: its store replays it.
const CLOSED_TOPIC_TTL: Duration = Duration::from_secs(600);
const SWEEP_EVERY: Duration = Duration::from_secs(10);
/// Histories longer than this are freed off the bus's thread (see `drop_topic`).
const FREE_HERE: usize = 1024;

/// One event, as publishers hand it over. `data` is serialized JSON.
#[derive(Debug)]
pub struct Event {
    pub kind: &'static str,
    pub name: String,
    pub session_id: Option<String>,
    /// Set on an agent run's events: they have a topic of their own, like a session's.
    pub execution_id: Option<String>,
    pub timestamp: String,
    pub data: String,
    /// The number in its session's topic, when the session numbered (and stored) it.
    pub topic_seq: Option<u64>,
}

impl Event {
    pub fn new(kind: &'static str, name: impl Into<String>, session_id: Option<String>, data: String) -> Event {
        Event {
            kind,
            name: name.into(),
            session_id,
            execution_id: None,
            timestamp: crate::domain::time::now(),
            data,
            topic_seq: None,
        }
    }

    /// An event of an agent run, on the run's own topic.
    pub fn for_execution(kind: &'static str, name: impl Into<String>, execution_id: &str, data: String) -> Event {
        Event { execution_id: Some(execution_id.to_string()), ..Event::new(kind, name, None, data) }
    }

    pub fn json(kind: &'static str, name: impl Into<String>, session_id: Option<String>, data: &Value) -> Event {
        Event::new(kind, name, session_id, data.to_string())
    }

    fn scope(&self) -> Scope {
        match (&self.session_id, &self.execution_id) {
            (Some(s), _) => Scope::Session(s.clone()),
            (None, Some(e)) => Scope::Execution(e.clone()),
            (None, None) => Scope::Global,
        }
    }

    /// The frame streams send for this event at `seq`.
    pub fn frame(&self, seq: u64) -> String {
        events::frame(&self.name, seq, self.kind, &self.scope(), &self.timestamp, &self.data)
    }
}

// ---------------------------------------------------------------------------------------------
// Messages

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

// ---------------------------------------------------------------------------------------------
// State

type TopicKey = Option<String>;

struct Topic {
    /// Tells a recreated topic's history apart from entries left by an earlier one.
    generation: u64,
    seq: u64,
    history: VecDeque<Delivery>,
    closed_at: Option<Instant>,
    /// A session's topic: what left the history can be read from the store.
    stored: bool,
}

impl Topic {
    fn first_retained(&self) -> u64 {
        self.history.front().map(|d| d.seq).unwrap_or(self.seq + 1)
    }
}

struct Sub {
    topic: TopicKey,
    outbox: Arc<Outbox>,
    internal: bool,
}

pub struct EventBus {
    budget: usize,
    held: usize,
    topics: HashMap<TopicKey, Topic>,
    /// Every retained event, oldest first, across topics: what the budget evicts.
    order: VecDeque<(TopicKey, u64, u64, usize)>,
    subscribers: HashMap<u64, Sub>,
    next_id: u64,
    generations: u64,
}

impl Default for EventBus {
    fn default() -> Self {
        EventBus::new(HISTORY_BYTES)
    }
}

impl EventBus {
    /// A bus whose histories hold at most `history_bytes` together.
    pub fn new(history_bytes: usize) -> EventBus {
        EventBus {
            budget: history_bytes.max(1),
            held: 0,
            topics: HashMap::new(),
            order: VecDeque::new(),
            subscribers: HashMap::new(),
            next_id: 0,
            generations: 0,
        }
    }

    fn topic(&mut self, key: &TopicKey, stored: bool) -> &mut Topic {
        let generations = &mut self.generations;
        self.topics.entry(key.clone()).or_insert_with(|| {
            *generations += 1;
            Topic { generation: *generations, seq: 0, history: VecDeque::new(), closed_at: None, stored }
        })
    }

    /// Numbers (unless numbered) and keeps an event in `key`'s topic; returns its delivery.
    fn record(&mut self, key: TopicKey, event: &Event, meta: &Arc<EventMeta>, stored: bool) -> Delivery {
        let topic = self.topic(&key, stored);
        let seq = match event.topic_seq.filter(|_| key.is_some()) {
            Some(seq) => seq,
            None => topic.seq + 1,
        };
        topic.seq = topic.seq.max(seq);
        if key.is_some() {
            // A resumed session's topic is live again.
            let ends = matches!(event.kind, "session.closed" | "agent.execution.finished");
            topic.closed_at = ends.then(Instant::now);
        }
        let d = Delivery { seq, meta: meta.clone(), frame: event.frame(seq).into() };
        topic.history.push_back(d.clone());
        let generation = topic.generation;
        self.held += d.cost();
        self.order.push_back((key, generation, seq, d.cost()));
        self.evict();
        d
    }

    /// Drops the oldest retained events, whichever topic holds them, until within budget.
    fn evict(&mut self) {
        while self.held > self.budget {
            let Some((key, generation, seq, cost)) = self.order.pop_front() else { break };
            let Some(topic) = self.topics.get_mut(&key) else { continue };
            if topic.generation == generation && topic.history.front().is_some_and(|d| d.seq == seq) {
                topic.history.pop_front();
                self.held -= cost;
            }
        }
    }

    fn drop_topic(&mut self, key: &TopicKey) {
        if let Some(topic) = self.topics.remove(key) {
            self.held -= topic.history.iter().map(Delivery::cost).sum::<usize>();
            // A long history is hundreds of thousands of small blocks: freeing them here held
            // every stream up for 50-70 ms (measured), so they are freed on the blocking pool.
            if topic.history.len() > FREE_HERE {
                tokio::task::spawn_blocking(move || drop(topic));
            }
        }
    }

    fn followed(&self, key: &TopicKey) -> bool {
        self.subscribers.values().any(|s| &s.topic == key)
    }
}

impl Actor for EventBus {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.run_interval(SWEEP_EVERY, |bus, _| {
            let ttl = |t: &Topic| if t.stored { Duration::ZERO } else { CLOSED_TOPIC_TTL };
            let expired: Vec<TopicKey> = bus
                .topics
                .iter()
                .filter(|(k, t)| t.closed_at.is_some_and(|at| at.elapsed() >= ttl(t)) && !bus.followed(k))
                .map(|(k, _)| k.clone())
                .collect();
            for key in expired {
                bus.drop_topic(&key);
            }
        });
    }
}

impl Handler<Publish> for EventBus {
    type Result = ();

    fn handle(&mut self, msg: Publish, _ctx: &mut Context<Self>) {
        let event = msg.0;
        let meta = Arc::new(EventMeta { kind: event.kind, name: event.name.clone() });
        let global = self.record(None, &event, &meta, false);
        let own = match event.scope() {
            Scope::Global => None,
            Scope::Session(id) => Some((Some(id.clone()), self.record(Some(id), &event, &meta, true))),
            Scope::Execution(id) => Some((Some(id.clone()), self.record(Some(id), &event, &meta, false))),
        };
        for sub in self.subscribers.values() {
            match (&sub.topic, &own) {
                (None, _) => sub.outbox.offer(&global),
                (Some(wanted), Some((key, d))) if Some(wanted) == key.as_ref() => sub.outbox.offer(d),
                _ => {}
            }
        }
    }
}

impl Handler<Subscribe> for EventBus {
    type Result = MessageResult<Subscribe>;

    fn handle(&mut self, msg: Subscribe, _ctx: &mut Context<Self>) -> Self::Result {
        self.next_id += 1;
        let outbox = Arc::new(Outbox::new(msg.outbox, OUTBOX_BYTES));
        let (key, stored, stored_head) = match msg.follow {
            Follow::Everything => (None, false, 0),
            Follow::Session { id, stored_head } => (Some(id), true, stored_head),
            Follow::Execution(id) => (Some(id), false, 0),
        };
        let topic = self.topic(&key, stored);
        // A session's topic not in memory starts where its store ends.
        topic.seq = topic.seq.max(stored_head);
        if let Some(since) = msg.since.filter(|s| *s < topic.seq) {
            outbox.set_behind(since + 1);
        }
        self.subscribers.insert(self.next_id, Sub { topic: key, outbox: outbox.clone(), internal: msg.internal });
        MessageResult(Subscription { id: self.next_id, outbox })
    }
}

impl Handler<CatchUp> for EventBus {
    type Result = MessageResult<CatchUp>;

    fn handle(&mut self, msg: CatchUp, _ctx: &mut Context<Self>) -> Self::Result {
        let Some(sub) = self.subscribers.get(&msg.subscriber) else { return MessageResult(CaughtUp::Gone) };
        let Some(topic) = self.topics.get(&sub.topic) else { return MessageResult(CaughtUp::Gone) };
        let mut from = msg.from;
        let first = topic.first_retained();
        let mut missed = 0;
        if from < first && from <= topic.seq {
            if topic.stored {
                return MessageResult(CaughtUp::FromStore { from, until: first });
            }
            missed = first - from;
            from = first;
        }
        let start = topic.history.partition_point(|d| d.seq < from);
        let (mut events, mut bytes) = (Vec::new(), 0);
        for d in topic.history.iter().skip(start) {
            if events.len() >= msg.max_events || (!events.is_empty() && bytes + d.cost() > msg.max_bytes) {
                break;
            }
            bytes += d.cost();
            events.push(d.clone());
        }
        match events.last() {
            Some(last) if last.seq < topic.seq => sub.outbox.set_behind(last.seq + 1),
            // Caught up (or nothing is left to catch up with): live from the next event on.
            _ => sub.outbox.rejoin(),
        }
        MessageResult(CaughtUp::Events { missed, events })
    }
}

impl Handler<Unsubscribe> for EventBus {
    type Result = ();

    fn handle(&mut self, msg: Unsubscribe, _ctx: &mut Context<Self>) {
        if let Some(sub) = self.subscribers.remove(&msg.0) {
            sub.outbox.close();
        }
    }
}

impl Handler<SubscriberCount> for EventBus {
    type Result = usize;

    fn handle(&mut self, _msg: SubscriberCount, _ctx: &mut Context<Self>) -> usize {
        self.subscribers.values().filter(|s| !s.internal).count()
    }
}

impl Handler<WatcherCount> for EventBus {
    type Result = usize;

    fn handle(&mut self, msg: WatcherCount, _ctx: &mut Context<Self>) -> usize {
        self.subscribers.values().filter(|s| !s.internal && s.topic.as_deref() == Some(msg.0.as_str())).count()
    }
}

impl Handler<HistoryBytes> for EventBus {
    type Result = usize;

    fn handle(&mut self, _msg: HistoryBytes, _ctx: &mut Context<Self>) -> usize {
        self.held
    }
}

#[cfg(test)]
#[path = "bus_tests.rs"]
mod tests;
