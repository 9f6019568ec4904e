//! The actor: one handler per message, and the sweep that drops finished topics nobody
//! follows.

use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;

use super::event::{Origin, Secrets};
use super::state::{Sub, Topic, TopicKey};
use super::{
    CatchUp, CaughtUp, CloseStreams, EventBus, EventMeta, FeedGone, Follow, HistoryBytes, Outbox, Publish,
    ReportWatches, Stored, Subscribe, SubscriberCount, Subscription, Unsubscribe, WatcherCount, OUTBOX_BYTES,
};
use crate::domain::events::Scope;

/// How long a finished agent run's topic stays for replay when nobody follows it. A closed
/// session's goes at the next sweep: its store replays it.
const CLOSED_TOPIC_TTL: Duration = Duration::from_secs(600);
/// How long a session's topic with nothing in memory stays unfollowed. Only its number is
/// left, and a subscriber learns that from the store; it lasts past the moment between a
/// subscriber reading the store's head and subscribing, when a `Stored` may come.
const EMPTY_TOPIC_TTL: Duration = Duration::from_secs(60);
const SWEEP_EVERY: Duration = Duration::from_secs(10);

impl Actor for EventBus {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.run_interval(SWEEP_EVERY, |bus, _| {
            let ttl = |t: &Topic| if t.stored { Duration::ZERO } else { CLOSED_TOPIC_TTL };
            let closed = |t: &Topic| t.closed_at.is_some_and(|at| at.elapsed() >= ttl(t));
            // In cluster mode, the topics of other nodes' sessions nobody here follows.
            let empty = |t: &Topic| t.stored && t.history.is_empty() && t.touched.elapsed() >= EMPTY_TOPIC_TTL;
            let expired: Vec<TopicKey> = bus
                .topics
                .iter()
                .filter(|(k, t)| (closed(t) || empty(t)) && !bus.followed(k))
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
        let mut event = msg.0;
        // This node's own events are always taken: only another node's are looked at.
        if let (false, Some(id), Some(seq)) = (event.origin == Origin::Here, &event.session_id, event.topic_seq) {
            if !self.takes_relayed(id, seq, &event.origin) {
                return;
            }
        }
        // Every stream, webhook and peer feed reads what this frames: one place keeps secrets
        // out of all of them (the store keeps them only in `in_flight` mode).
        if self.redacts && event.secrets == Secrets::Unchecked {
            crate::secrets::scrub_json(&mut event.data);
        }
        let meta = Arc::new(EventMeta {
            kind: event.kind,
            name: event.name.clone(),
            relayed: event.relayed(),
            scope: event.scope(),
            project: event.project_id.clone(),
        });
        let global = (!event.topic_only).then(|| self.record(None, &event, &meta, false));
        let own = match &meta.scope {
            Scope::Global => None,
            Scope::Session(id) => Some((Some(id.clone()), self.record(Some(id.clone()), &event, &meta, true))),
            Scope::Execution(id) | Scope::Process(id) => {
                Some((Some(id.clone()), self.record(Some(id.clone()), &event, &meta, false)))
            }
        };
        for sub in self.subscribers.values() {
            match (&sub.topic, &own) {
                (None, _) => {
                    if let Some(global) = &global {
                        sub.outbox.offer(global)
                    }
                }
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
        let watches = !msg.internal && matches!(msg.follow, Follow::Everything | Follow::Session { .. });
        let (key, stored, stored_head) = match msg.follow {
            Follow::Everything => (None, false, 0),
            Follow::Session { id, stored_head } => (Some(id), true, stored_head),
            Follow::Execution(id) | Follow::Process(id) => (Some(id), false, 0),
        };
        let topic = self.topic(&key, stored);
        // A session's topic not in memory starts where its store ends.
        topic.seq = topic.seq.max(stored_head);
        topic.confirmed = topic.confirmed.max(stored_head);
        if let Some(since) = msg.since.filter(|s| *s < topic.seq) {
            outbox.set_behind(since + 1);
        }
        if watches {
            self.watch(&key, true);
        }
        self.subscribers
            .insert(self.next_id, Sub { topic: key, outbox: outbox.clone(), internal: msg.internal, watches });
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
            if sub.watches {
                self.watch(&sub.topic, false);
            }
        }
    }
}

impl Handler<CloseStreams> for EventBus {
    type Result = ();

    fn handle(&mut self, _msg: CloseStreams, _ctx: &mut Context<Self>) {
        // Conduit's own followers (webhook delivery) stay to the end.
        let mut unfollowed = Vec::new();
        self.subscribers.retain(|_, sub| {
            if !sub.internal {
                sub.outbox.close();
                if sub.watches {
                    unfollowed.push(sub.topic.clone());
                }
            }
            sub.internal
        });
        for key in unfollowed {
            self.watch(&key, false);
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

impl Handler<Stored> for EventBus {
    type Result = ();

    fn handle(&mut self, msg: Stored, _ctx: &mut Context<Self>) {
        self.stored_up_to(&Some(msg.session), msg.head);
    }
}

impl Handler<ReportWatches> for EventBus {
    type Result = ();

    fn handle(&mut self, msg: ReportWatches, _ctx: &mut Context<Self>) {
        let followed: Vec<TopicKey> =
            self.subscribers.values().filter(|s| s.watches).map(|s| s.topic.clone()).collect();
        self.watch_report = Some(msg.0);
        for key in followed {
            self.report(&key, true);
        }
    }
}

impl Handler<FeedGone> for EventBus {
    type Result = ();

    fn handle(&mut self, msg: FeedGone, _ctx: &mut Context<Self>) {
        self.forget_unconfirmed(&msg.0);
    }
}
