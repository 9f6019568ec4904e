//! The bus's state: each topic's numbered history, every history under one byte budget, and
//! who follows what.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Instant;

use super::{Delivery, Event, EventMeta, Outbox, HISTORY_BYTES};

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

    pub(super) fn topic(&mut self, key: &TopicKey, stored: bool) -> &mut Topic {
        let generations = &mut self.generations;
        self.topics.entry(key.clone()).or_insert_with(|| {
            *generations += 1;
            Topic { generation: *generations, seq: 0, history: VecDeque::new(), closed_at: None, stored }
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

    pub(super) fn followed(&self, key: &TopicKey) -> bool {
        self.subscribers.values().any(|s| &s.topic == key)
    }
}
