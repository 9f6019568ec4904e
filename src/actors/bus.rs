//! `EventBus`: every event, in order, to every subscriber, without a slow one hurting anyone.
//!
//! Topics: one per session, and one for everything. Each event gets the next sequence number
//! of its session's topic and of the global topic, and is kept in each topic's recent history
//! (for replay after a reconnect). Delivery never waits: each subscriber has a bounded
//! [`Outbox`]; when it is full the oldest undelivered events are dropped and counted, and the
//! subscriber reads one `warning` with the count before its next event.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use actix::prelude::*;
use serde_json::Value;

/// Events kept per topic for replay.
pub const HISTORY: usize = 1000;
/// The default outbox bound (the `subscriber_outbox` setting); webhooks take ten times it.
pub const OUTBOX: usize = 1000;
/// How long a closed session's history stays available for replay.
const CLOSED_TOPIC_TTL: Duration = Duration::from_secs(600);

/// One event. `data` is already serialized JSON, so fan-out never re-serializes it.
#[derive(Debug)]
pub struct Event {
    /// The bus type: `session.message`, `stream.event`, `permission.decision`, ...
    pub kind: &'static str,
    /// The name streams use: `assistant`, `stream_event`, `permission`, ...
    pub name: String,
    pub session_id: Option<String>,
    /// Set on an agent run's events: they have a topic of their own, like a session's.
    pub execution_id: Option<String>,
    pub timestamp: String,
    pub data: String,
}

impl Event {
    pub fn new(kind: &'static str, name: impl Into<String>, session_id: Option<String>, data: String) -> Event {
        Event { kind, name: name.into(), session_id, execution_id: None, timestamp: crate::domain::time::now(), data }
    }

    /// An event of an agent run, on the run's own topic.
    pub fn for_execution(kind: &'static str, name: impl Into<String>, execution_id: &str, data: String) -> Event {
        Event { execution_id: Some(execution_id.to_string()), ..Event::new(kind, name, None, data) }
    }

    /// The topic besides the global one: the session's, or the run's.
    fn topic(&self) -> Option<&String> {
        self.session_id.as_ref().or(self.execution_id.as_ref())
    }

    pub fn json(kind: &'static str, name: impl Into<String>, session_id: Option<String>, data: &Value) -> Event {
        Event::new(kind, name, session_id, data.to_string())
    }

    /// The frame streams send: `{"event","seq","type","session_id","timestamp","data"}`.
    pub fn frame(&self, seq: u64) -> String {
        let session = match &self.session_id {
            Some(s) => format!("\"{s}\""),
            None => "null".to_string(),
        };
        let execution = match &self.execution_id {
            Some(e) => format!(r#","execution_id":"{e}""#),
            None => String::new(),
        };
        format!(
            r#"{{"event":{},"seq":{seq},"type":"{}","session_id":{session}{execution},"timestamp":"{}","data":{}}}"#,
            Value::String(self.name.clone()),
            self.kind,
            self.timestamp,
            self.data
        )
    }
}

/// An event as one subscriber sees it: with the sequence number of the topic it follows, and
/// the frame rendered once for that topic (cloning it shares the bytes), so fan-out to many
/// subscribers costs no formatting.
#[derive(Debug, Clone)]
pub struct Delivery {
    pub seq: u64,
    pub event: Arc<Event>,
    pub frame: bytestring::ByteString,
}

#[derive(Debug, Default)]
struct OutboxState {
    queue: VecDeque<Delivery>,
    dropped: u64,
    closed: bool,
}

/// A subscriber's bounded queue: the bus pushes without waiting, the connection drains it.
#[derive(Debug)]
pub struct Outbox {
    state: Mutex<OutboxState>,
    ready: tokio::sync::Notify,
    cap: usize,
}

/// What a connection takes out of its outbox at once.
pub struct Batch {
    /// Events dropped since the last batch (report them before `events`).
    pub dropped: u64,
    pub events: Vec<Delivery>,
}

impl Outbox {
    pub fn new(cap: usize) -> Outbox {
        Outbox { state: Mutex::new(OutboxState::default()), ready: tokio::sync::Notify::new(), cap: cap.max(1) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, OutboxState> {
        // A poisoned lock only means a pusher panicked mid-push; the queue itself is intact.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn push(&self, d: Delivery) {
        {
            let mut s = self.lock();
            if s.closed {
                return;
            }
            if s.queue.len() >= self.cap {
                s.queue.pop_front();
                s.dropped += 1;
            }
            s.queue.push_back(d);
        }
        self.ready.notify_one();
    }

    /// Counts events that could not be replayed (gone from history) as dropped.
    pub fn note_missed(&self, n: u64) {
        self.lock().dropped += n;
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

    /// Waits up to `wait` for events; `None` once closed, an empty batch on timeout.
    pub async fn next(&self, max: usize, wait: Duration) -> Option<Batch> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            // Register for a wake-up before looking, so a push in between is not missed.
            let notified = self.ready.notified();
            {
                let mut s = self.lock();
                if !s.queue.is_empty() || s.dropped > 0 {
                    let n = s.queue.len().min(max);
                    let events = s.queue.drain(..n).collect();
                    return Some(Batch { dropped: std::mem::take(&mut s.dropped), events });
                }
                if s.closed {
                    return None;
                }
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return Some(Batch { dropped: 0, events: Vec::new() });
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Messages

#[derive(Message)]
#[rtype(result = "()")]
pub struct Publish(pub Event);

/// Follow one session or agent run (`Some(its id)`) or everything (`None`), replaying history
/// after `since`.
#[derive(Message)]
#[rtype(result = "Subscription")]
pub struct Subscribe {
    pub session_id: Option<String>,
    pub since: Option<u64>,
    pub outbox: usize,
    /// Conduit's own consumers (webhooks): not counted as clients.
    pub internal: bool,
}

pub struct Subscription {
    pub id: u64,
    pub outbox: Arc<Outbox>,
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

// ---------------------------------------------------------------------------------------------
// State

#[derive(Default)]
struct Topic {
    seq: u64,
    history: VecDeque<Delivery>,
    closed_at: Option<Instant>,
}

impl Topic {
    fn record(&mut self, event: Arc<Event>) -> Delivery {
        self.seq += 1;
        let d = Delivery { seq: self.seq, frame: event.frame(self.seq).into(), event };
        if self.history.len() >= HISTORY {
            self.history.pop_front();
        }
        self.history.push_back(d.clone());
        d
    }

    /// Replays into `outbox` what history still holds after `since`; counts what it lost.
    fn replay(&self, since: u64, outbox: &Outbox) {
        let first = self.history.front().map(|d| d.seq).unwrap_or(self.seq + 1);
        if since + 1 < first && since < self.seq {
            outbox.note_missed(first - since - 1);
        }
        for d in self.history.iter().filter(|d| d.seq > since) {
            outbox.push(d.clone());
        }
    }
}

struct Sub {
    session_id: Option<String>,
    outbox: Arc<Outbox>,
    internal: bool,
}

#[derive(Default)]
pub struct EventBus {
    global: Topic,
    sessions: HashMap<String, Topic>,
    subscribers: HashMap<u64, Sub>,
    next_id: u64,
}

impl Actor for EventBus {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.run_interval(Duration::from_secs(60), |bus, _| {
            bus.sessions.retain(|_, t| t.closed_at.is_none_or(|at| at.elapsed() < CLOSED_TOPIC_TTL));
        });
    }
}

impl Handler<Publish> for EventBus {
    type Result = ();

    fn handle(&mut self, msg: Publish, _ctx: &mut Context<Self>) {
        let event = Arc::new(msg.0);
        let global = self.global.record(event.clone());
        let session = event.topic().map(|id| {
            let topic = self.sessions.entry(id.clone()).or_default();
            if matches!(event.kind, "session.closed" | "agent.execution.finished") {
                topic.closed_at = Some(Instant::now());
            }
            topic.record(event.clone())
        });
        for sub in self.subscribers.values() {
            match (&sub.session_id, &session) {
                (None, _) => sub.outbox.push(global.clone()),
                (Some(wanted), Some(d)) if Some(wanted) == event.topic() => sub.outbox.push(d.clone()),
                _ => {}
            }
        }
    }
}

impl Handler<Subscribe> for EventBus {
    type Result = MessageResult<Subscribe>;

    fn handle(&mut self, msg: Subscribe, _ctx: &mut Context<Self>) -> Self::Result {
        self.next_id += 1;
        let outbox = Arc::new(Outbox::new(msg.outbox));
        if let Some(since) = msg.since {
            match &msg.session_id {
                None => self.global.replay(since, &outbox),
                Some(id) => {
                    if let Some(topic) = self.sessions.get(id) {
                        topic.replay(since, &outbox);
                    }
                }
            }
        }
        self.subscribers
            .insert(self.next_id, Sub { session_id: msg.session_id, outbox: outbox.clone(), internal: msg.internal });
        MessageResult(Subscription { id: self.next_id, outbox })
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
        self.subscribers.values().filter(|s| !s.internal && s.session_id.as_deref() == Some(msg.0.as_str())).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(session: &str, n: u32) -> Event {
        Event::new("stream.event", "stream_event", Some(session.to_string()), format!("{{\"n\":{n}}}"))
    }

    #[actix_rt::test]
    async fn subscribers_get_their_topic_in_order_with_per_topic_sequences() {
        let bus = EventBus::default().start();
        let a = bus
            .send(Subscribe { session_id: Some("a".into()), since: None, outbox: 100, internal: false })
            .await
            .expect("bus");
        let all =
            bus.send(Subscribe { session_id: None, since: None, outbox: 100, internal: false }).await.expect("bus");
        for n in 0..3 {
            bus.do_send(Publish(ev("a", n)));
            bus.do_send(Publish(ev("b", n)));
        }
        assert_eq!(bus.send(SubscriberCount).await.expect("bus"), 2);
        let got = a.outbox.next(100, Duration::from_secs(1)).await.expect("open");
        assert_eq!(got.events.iter().map(|d| d.seq).collect::<Vec<_>>(), [1, 2, 3]);
        assert!(got.events.iter().all(|d| d.event.session_id.as_deref() == Some("a")));
        let got = all.outbox.next(100, Duration::from_secs(1)).await.expect("open");
        assert_eq!(got.events.iter().map(|d| d.seq).collect::<Vec<_>>(), [1, 2, 3, 4, 5, 6]);
        let frame: Value = serde_json::from_str(&got.events[0].frame).expect("frame is JSON");
        assert_eq!(frame["data"]["n"], 0);
        assert_eq!(frame["event"], "stream_event");
    }

    #[actix_rt::test]
    async fn a_full_outbox_drops_the_oldest_and_says_how_many() {
        let bus = EventBus::default().start();
        let slow =
            bus.send(Subscribe { session_id: None, since: None, outbox: 10, internal: false }).await.expect("bus");
        for n in 0..25 {
            bus.do_send(Publish(ev("a", n)));
        }
        bus.send(SubscriberCount).await.expect("bus");
        let got = slow.outbox.next(100, Duration::from_secs(1)).await.expect("open");
        assert_eq!(got.dropped, 15);
        assert_eq!(got.events.first().map(|d| d.seq), Some(16), "the newest ten are kept");
    }

    #[actix_rt::test]
    async fn replay_after_since_and_missed_events_are_counted() {
        let bus = EventBus::default().start();
        for n in 0..(HISTORY as u32 + 5) {
            bus.do_send(Publish(ev("a", n)));
        }
        let late = bus
            .send(Subscribe {
                session_id: Some("a".into()),
                since: Some(HISTORY as u64),
                outbox: 2000,
                internal: false,
            })
            .await
            .expect("bus");
        let got = late.outbox.next(5000, Duration::from_secs(1)).await.expect("open");
        assert_eq!(
            got.events.iter().map(|d| d.seq).collect::<Vec<_>>(),
            (HISTORY as u64 + 1..=HISTORY as u64 + 5).collect::<Vec<_>>()
        );
        assert_eq!(got.dropped, 0);
        let ancient = bus
            .send(Subscribe { session_id: Some("a".into()), since: Some(0), outbox: 2000, internal: false })
            .await
            .expect("bus");
        let got = ancient.outbox.next(5000, Duration::from_secs(1)).await.expect("open");
        assert_eq!(got.dropped, 5, "five events fell out of history");
        assert_eq!(got.events.len(), HISTORY);
    }

    #[actix_rt::test]
    async fn unsubscribing_closes_the_outbox() {
        let bus = EventBus::default().start();
        let s = bus.send(Subscribe { session_id: None, since: None, outbox: 10, internal: false }).await.expect("bus");
        bus.send(Unsubscribe(s.id)).await.expect("bus");
        assert!(s.outbox.next(10, Duration::from_secs(1)).await.is_none());
        assert_eq!(bus.send(SubscriberCount).await.expect("bus"), 0);
        bus.send(Subscribe { session_id: None, since: None, outbox: 10, internal: true }).await.expect("bus");
        assert_eq!(bus.send(SubscriberCount).await.expect("bus"), 0, "internal consumers are not clients");
    }
}
