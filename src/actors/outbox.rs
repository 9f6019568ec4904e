//! A subscriber's bounded outbox, and the events that travel through it.
//!
//! The bus pushes without ever waiting; the connection drains. When the outbox is full (in
//! events or bytes), nothing is dropped: the subscriber is marked *behind* from the first event
//! it could not take, the bus stops pushing to it, and once the connection has sent what the
//! outbox holds it catches up from the topic's history and the store (see [`super::feed`]),
//! then rejoins the live feed. So a slow client costs the others nothing and misses nothing
//! that is still retained.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::domain::events::Scope;
use crate::domain::ids::ProjectId;

/// The bytes an outbox may hold, whatever its event count (frames are at most about 1 MiB).
pub const OUTBOX_BYTES: usize = 4 * 1024 * 1024;

/// What an event is, without its data (which only the rendered frame needs).
#[derive(Debug)]
pub struct EventMeta {
    /// The bus type: `session.message`, `stream.event`, `permission.decision`, ...
    pub kind: &'static str,
    /// The name streams use: `assistant`, `stream_event`, `permission`, ...
    pub name: String,
    /// Relayed from another node (cluster mode): that node's webhooks carry it.
    pub relayed: bool,
    /// Who it is about: a session, an agent run, a process, or no one in particular.
    pub scope: Scope,
    /// Its project, when the publisher named it (what a project-bound stream goes by for an
    /// event about no session, run or process).
    pub project: Option<ProjectId>,
}

/// An event as one topic's subscribers see it: with that topic's sequence number and the frame
/// rendered once for it (cloning shares the bytes), so fan-out costs no formatting.
#[derive(Debug, Clone)]
pub struct Delivery {
    pub seq: u64,
    pub meta: Arc<EventMeta>,
    pub frame: bytestring::ByteString,
}

impl Delivery {
    /// What the delivery costs in memory, for byte bounds.
    pub fn cost(&self) -> usize {
        self.frame.len() + 64
    }
}

#[derive(Debug, Default)]
struct State {
    queue: VecDeque<Delivery>,
    bytes: usize,
    /// The first sequence number the subscriber still needs from the history or the store.
    behind_from: Option<u64>,
    closed: bool,
}

/// What a connection takes out of its outbox.
#[derive(Debug)]
pub enum Take {
    Events(Vec<Delivery>),
    /// Everything queued was taken; the subscriber must catch up from this sequence number.
    Behind(u64),
    /// Nothing came within the wait.
    Idle,
    Closed,
}

#[derive(Debug)]
pub struct Outbox {
    state: Mutex<State>,
    ready: tokio::sync::Notify,
    max_events: usize,
    max_bytes: usize,
}

impl Outbox {
    pub fn new(max_events: usize, max_bytes: usize) -> Outbox {
        Outbox {
            state: Mutex::new(State::default()),
            ready: tokio::sync::Notify::new(),
            max_events: max_events.max(1),
            max_bytes: max_bytes.max(1),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A poisoned lock only means a pusher panicked mid-push; the queue itself is intact.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Called by the bus for each live event. A full outbox marks the subscriber behind from
    /// this event instead of dropping anything.
    pub fn offer(&self, d: &Delivery) {
        {
            let mut s = self.lock();
            if s.closed || s.behind_from.is_some() {
                return;
            }
            let full = s.queue.len() >= self.max_events || (!s.queue.is_empty() && s.bytes + d.cost() > self.max_bytes);
            if full {
                s.behind_from = Some(d.seq);
            } else {
                s.bytes += d.cost();
                s.queue.push_back(d.clone());
            }
        }
        self.ready.notify_one();
    }

    /// The subscriber needs events from `seq` on before anything live (a replay, or the next
    /// part of a catch-up).
    pub fn set_behind(&self, seq: u64) {
        self.lock().behind_from = Some(seq);
        self.ready.notify_one();
    }

    /// Caught up: live events go into the outbox again. Called by the bus, which pushes.
    pub fn rejoin(&self) {
        self.lock().behind_from = None;
    }

    pub fn is_behind(&self) -> bool {
        self.lock().behind_from.is_some()
    }

    pub fn close(&self) {
        self.lock().closed = true;
        self.ready.notify_one();
    }

    pub fn len(&self) -> usize {
        self.lock().queue.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Waits up to `wait` for something to do: queued events first (at most `max`), then the
    /// need to catch up.
    pub async fn take(&self, max: usize, wait: Duration) -> Take {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            // Register for a wake-up before looking, so a push in between is not missed.
            let notified = self.ready.notified();
            {
                let mut s = self.lock();
                if !s.queue.is_empty() {
                    let n = s.queue.len().min(max.max(1));
                    let events: Vec<Delivery> = s.queue.drain(..n).collect();
                    s.bytes -= events.iter().map(Delivery::cost).sum::<usize>();
                    return Take::Events(events);
                }
                if s.closed {
                    return Take::Closed;
                }
                if let Some(seq) = s.behind_from {
                    return Take::Behind(seq);
                }
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return Take::Idle;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(seq: u64, bytes: usize) -> Delivery {
        Delivery {
            seq,
            meta: Arc::new(EventMeta {
                kind: "stream.event",
                name: "stream_event".into(),
                relayed: false,
                scope: Scope::Global,
                project: None,
            }),
            frame: "x".repeat(bytes).into(),
        }
    }

    #[tokio::test]
    async fn a_full_outbox_marks_the_subscriber_behind_and_keeps_what_it_has() {
        let outbox = Outbox::new(2, OUTBOX_BYTES);
        for seq in 1..=5 {
            outbox.offer(&d(seq, 10));
        }
        match outbox.take(10, Duration::from_millis(10)).await {
            Take::Events(v) => assert_eq!(v.iter().map(|d| d.seq).collect::<Vec<_>>(), [1, 2]),
            other => panic!("{other:?}"),
        }
        assert!(matches!(outbox.take(10, Duration::from_millis(10)).await, Take::Behind(3)));
        outbox.offer(&d(6, 10));
        assert!(matches!(outbox.take(10, Duration::from_millis(10)).await, Take::Behind(3)), "no pushes while behind");
        outbox.rejoin();
        outbox.offer(&d(7, 10));
        assert!(matches!(outbox.take(10, Duration::from_millis(10)).await, Take::Events(v) if v[0].seq == 7));
    }

    #[tokio::test]
    async fn bytes_bound_the_outbox_too_but_one_large_event_always_fits() {
        let outbox = Outbox::new(100, 1000);
        outbox.offer(&d(1, 5000));
        outbox.offer(&d(2, 10));
        assert!(matches!(outbox.take(10, Duration::from_millis(10)).await, Take::Events(v) if v.len() == 1));
        assert!(matches!(outbox.take(10, Duration::from_millis(10)).await, Take::Behind(2)));
        outbox.close();
        assert!(matches!(outbox.take(10, Duration::from_millis(10)).await, Take::Closed));
    }
}
