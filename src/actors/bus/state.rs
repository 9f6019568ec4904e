//! The bus's state: each topic's numbered history, every history under one byte budget, and
//! who follows what.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Instant;

use super::{Delivery, Event, EventMeta, Outbox, WatchChange, HISTORY_BYTES};

/// Histories longer than this are freed off the bus's thread (see `drop_topic`).
const FREE_HERE: usize = 1024;

pub(super) type TopicKey = Option<String>;

pub(super) struct Topic {
    /// Tells a recreated topic's history apart from entries left by an earlier one.
    generation: u64,
    pub(super) seq: u64,
    pub(super) history: VecDeque<Delivery>,
    pub(super) closed_at: Option<Instant>,
    /// A session's topic: what left the history can be read from the store.
    pub(super) stored: bool,
    /// When an event or a stored head last came: a topic idle, empty and unfollowed is dropped.
    pub(super) touched: Instant,
    /// Cluster mode: how far the store is known to hold the session (`seq` may be past it,
    /// with events an owner's live feed brought), and the node whose feed brought them.
    pub(super) confirmed: u64,
    pub(super) fed_by: Option<Arc<str>>,
}

impl Topic {
    pub(super) fn first_retained(&self) -> u64 {
        self.history.front().map(|d| d.seq).unwrap_or(self.seq + 1)
    }
}

pub(super) struct Sub {
    pub(super) topic: TopicKey,
    pub(super) outbox: Arc<Outbox>,
    pub(super) internal: bool,
    /// A client following a session or everything: reported to the watch reporter.
    pub(super) watches: bool,
}

pub struct EventBus {
    budget: usize,
    pub(super) held: usize,
    pub(super) topics: HashMap<TopicKey, Topic>,
    /// Every retained event, oldest first, across topics: what the budget evicts.
    order: VecDeque<(TopicKey, u64, u64, usize)>,
    pub(super) subscribers: HashMap<u64, Sub>,
    pub(super) next_id: u64,
    generations: u64,
    /// Cluster mode: the relay's mirror of what clients follow here.
    pub(super) watch_report: Option<std::sync::mpsc::Sender<WatchChange>>,
    /// How many clients (no internal subscriber) follow each topic, `None` for everything:
    /// whether a peer's live event is wanted here, answered without a scan of the subscribers.
    watchers: HashMap<TopicKey, usize>,
    /// Whether published events lose their secrets (not in the `off` redaction mode).
    pub(super) redacts: bool,
}

impl Default for EventBus {
    fn default() -> Self {
        EventBus::new(HISTORY_BYTES)
    }
}

impl EventBus {
    /// This bus publishes events as they come, secrets and all (the `off` redaction mode).
    pub fn without_redaction(mut self) -> EventBus {
        self.redacts = false;
        self
    }

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
            watch_report: None,
            watchers: HashMap::new(),
            redacts: true,
        }
    }

    pub(super) fn topic(&mut self, key: &TopicKey, stored: bool) -> &mut Topic {
        let generations = &mut self.generations;
        self.topics.entry(key.clone()).or_insert_with(|| {
            *generations += 1;
            Topic {
                generation: *generations,
                seq: 0,
                history: VecDeque::new(),
                closed_at: None,
                stored,
                touched: Instant::now(),
                confirmed: 0,
                fed_by: None,
            }
        })
    }

    /// Numbers (unless numbered) and keeps an event in `key`'s topic; returns its delivery.
    pub(super) fn record(&mut self, key: TopicKey, event: &Event, meta: &Arc<EventMeta>, stored: bool) -> Delivery {
        let topic = self.topic(&key, stored);
        let seq = match event.topic_seq.filter(|_| key.is_some()) {
            Some(seq) => seq,
            None => topic.seq + 1,
        };
        topic.seq = topic.seq.max(seq);
        topic.touched = Instant::now();
        if key.is_some() {
            // A resumed session's topic is live again.
            let ends = matches!(event.kind, "session.closed" | "agent.execution.finished" | "process.exited");
            topic.closed_at = ends.then(Instant::now);
        }
        let d = Delivery { seq, meta: meta.clone(), frame: event.frame(seq, key.is_none()).into() };
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

    pub(super) fn drop_topic(&mut self, key: &TopicKey) {
        if let Some(topic) = self.topics.remove(key) {
            self.held -= topic.history.iter().map(Delivery::cost).sum::<usize>();
            // A long history is hundreds of thousands of small blocks: freeing them here held
            // every stream up for 50-70 ms (measured), so they are freed on the blocking pool.
            if topic.history.len() > FREE_HERE {
                tokio::task::spawn_blocking(move || drop(topic));
            }
        }
    }

    /// The store holds `key`'s events up to `head`. Past what the topic has seen, the events
    /// between were never published here: its history (now with a hole) is set aside, and
    /// its followers catch up from the store from the first one missing.
    pub(super) fn stored_up_to(&mut self, key: &TopicKey, head: u64) {
        let topic = self.topic(key, true);
        topic.touched = Instant::now();
        topic.confirmed = topic.confirmed.max(head);
        if head <= topic.seq {
            return;
        }
        let missing = topic.seq + 1;
        topic.seq = head;
        // Their entries in `order` no longer match the history's front: eviction skips them.
        let set_aside: usize = topic.history.drain(..).map(|d| d.cost()).sum();
        self.held -= set_aside;
        for sub in self.subscribers.values().filter(|s| &s.topic == key) {
            if !sub.outbox.is_behind() {
                sub.outbox.set_behind(missing);
            }
        }
    }

    /// Empties `key`'s history under a new generation: the numbers it held may come again,
    /// and eviction must not take their new events for the old ones.
    pub(super) fn restart_history(&mut self, key: &TopicKey) {
        self.generations += 1;
        let Some(topic) = self.topics.get_mut(key) else { return };
        topic.generation = self.generations;
        let dropped: usize = topic.history.drain(..).map(|d| d.cost()).sum();
        self.held -= dropped;
    }

    /// A client starts (`follows`) or stops following `key`: counted, and reported to the relay.
    pub(super) fn watch(&mut self, key: &TopicKey, follows: bool) {
        if follows {
            *self.watchers.entry(key.clone()).or_insert(0) += 1;
        } else if let Some(n) = self.watchers.get_mut(key) {
            *n -= 1;
            if *n == 0 {
                self.watchers.remove(key);
            }
        }
        self.report(key, follows);
    }

    /// Whether a client here follows `key`'s session or everything.
    pub(super) fn watched(&self, key: &TopicKey) -> bool {
        self.watchers.contains_key(&None) || self.watchers.contains_key(key)
    }

    /// Tells the watch reporter (if any) that a client follows `key`, or no longer does.
    pub(super) fn report(&mut self, key: &TopicKey, follows: bool) {
        let Some(report) = &self.watch_report else { return };
        let change = if follows { WatchChange::Follow(key.clone()) } else { WatchChange::Unfollow(key.clone()) };
        if report.send(change).is_err() {
            // The relay stopped; nobody reads the mirror any more.
            self.watch_report = None;
        }
    }

    /// Whether any subscriber follows `key` itself, Conduit's own included: such a topic is
    /// kept. [`EventBus::watched`] is another question (is a peer's live event wanted here?),
    /// answered for clients only, and a follower of everything counts there.
    pub(super) fn followed(&self, key: &TopicKey) -> bool {
        self.subscribers.values().any(|s| &s.topic == key)
    }
}
