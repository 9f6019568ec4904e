//! The bus's rules: per-topic order and numbering, no loss for a subscriber that falls behind
//! (it catches up from the history, or is sent to the store for a session), loss reported only
//! past retention, and a byte budget for every history together.

use std::time::Duration;

use actix::{Actor, Addr};
use serde_json::Value;

use super::*;

fn ev(session: &str, n: u32) -> Event {
    Event::new("stream.event", "stream_event", Some(session.to_string()), format!("{{\"n\":{n}}}"))
}

fn numbered(session: &str, seq: u64) -> Event {
    let mut e = ev(session, seq as u32);
    e.topic_seq = Some(seq);
    e
}

fn session(id: &str) -> Follow {
    Follow::Session { id: id.to_string(), stored_head: 0 }
}

async fn subscribe(bus: &Addr<EventBus>, follow: Follow, since: Option<u64>, outbox: usize) -> Subscription {
    bus.send(Subscribe { follow, since, outbox, internal: false }).await.expect("bus")
}

async fn take(sub: &Subscription) -> Take {
    sub.outbox.take(10_000, Duration::from_millis(200)).await
}

fn seqs(events: &[Delivery]) -> Vec<u64> {
    events.iter().map(|d| d.seq).collect()
}

#[actix_rt::test]
async fn subscribers_get_their_topic_in_order_with_per_topic_numbers() {
    let bus = EventBus::default().start();
    let a = subscribe(&bus, session("a"), None, 100).await;
    let all = subscribe(&bus, Follow::Everything, None, 100).await;
    for n in 1..=3 {
        bus.do_send(Publish(numbered("a", n)));
        bus.do_send(Publish(ev("b", n as u32)));
    }
    assert_eq!(bus.send(SubscriberCount).await.expect("bus"), 2);
    let Take::Events(got) = take(&a).await else { panic!("events") };
    assert_eq!(seqs(&got), [1, 2, 3]);
    let frame: Value = serde_json::from_str(&got[0].frame).expect("frame is JSON");
    assert_eq!((frame["data"]["n"].as_u64(), frame["event"].as_str()), (Some(1), Some("stream_event")));
    let Take::Events(got) = take(&all).await else { panic!("events") };
    assert_eq!(seqs(&got), [1, 2, 3, 4, 5, 6], "the global topic numbers everything itself");
}

#[actix_rt::test]
async fn a_subscriber_whose_outbox_overflows_catches_up_from_the_history_and_misses_nothing() {
    let bus = EventBus::default().start();
    let slow = subscribe(&bus, Follow::Execution("run".into()), None, 10).await;
    for n in 0..25 {
        bus.do_send(Publish(Event::for_execution("agent.execution.output", "assistant", "run", n.to_string())));
    }
    let Take::Events(first) = take(&slow).await else { panic!("events") };
    assert_eq!(seqs(&first), (1..=10).collect::<Vec<_>>());
    let Take::Behind(from) = take(&slow).await else { panic!("behind") };
    assert_eq!(from, 11);
    let ask = CatchUp { subscriber: slow.id, from, max_events: 100, max_bytes: 1 << 20 };
    let CaughtUp::Events { missed, events } = bus.send(ask).await.expect("bus") else { panic!("events") };
    assert_eq!((missed, seqs(&events)), (0, (11..=25).collect::<Vec<_>>()));
    // Caught up: live again.
    bus.do_send(Publish(Event::for_execution("agent.execution.output", "assistant", "run", "26".into())));
    let Take::Events(live) = take(&slow).await else { panic!("live") };
    assert_eq!(seqs(&live), [26]);
}

#[actix_rt::test]
async fn catching_up_in_steps_keeps_the_subscriber_behind_until_the_head() {
    let bus = EventBus::default().start();
    let slow = subscribe(&bus, Follow::Everything, Some(0), 1).await;
    for n in 0..10 {
        bus.do_send(Publish(ev("x", n)));
    }
    bus.send(SubscriberCount).await.expect("bus");
    let mut got = Vec::new();
    for _ in 0..50 {
        match take(&slow).await {
            Take::Events(v) => got.extend(seqs(&v)),
            Take::Behind(from) => {
                let ask = CatchUp { subscriber: slow.id, from, max_events: 3, max_bytes: 1 << 20 };
                let CaughtUp::Events { events, .. } = bus.send(ask).await.expect("bus") else { panic!() };
                got.extend(seqs(&events));
            }
            Take::Idle => break,
            Take::Closed => panic!("closed"),
        }
    }
    assert_eq!(got, (1..=10).collect::<Vec<_>>(), "every event once, in order");
}

#[actix_rt::test]
async fn a_session_subscriber_past_the_history_is_sent_to_the_store_and_others_hear_what_they_missed() {
    // A budget of one byte keeps nothing in memory.
    let bus = EventBus::new(1).start();
    for seq in 1..=5 {
        bus.do_send(Publish(numbered("s", seq)));
    }
    let replay = subscribe(&bus, session("s"), Some(1), 100).await;
    let Take::Behind(from) = take(&replay).await else { panic!("behind") };
    assert_eq!(from, 2);
    let ask = CatchUp { subscriber: replay.id, from, max_events: 100, max_bytes: 1 << 20 };
    match bus.send(ask).await.expect("bus") {
        CaughtUp::FromStore { from, until } => assert_eq!((from, until), (2, 6)),
        other => panic!("expected FromStore, got {other:?}"),
    }
    let global = subscribe(&bus, Follow::Everything, Some(0), 100).await;
    let Take::Behind(from) = take(&global).await else { panic!("behind") };
    let ask = CatchUp { subscriber: global.id, from, max_events: 100, max_bytes: 1 << 20 };
    let CaughtUp::Events { missed, events } = bus.send(ask).await.expect("bus") else { panic!("events") };
    assert_eq!((missed, seqs(&events)), (5, vec![]), "the global topic keeps no store: all five left retention");
}

#[actix_rt::test]
async fn histories_share_one_byte_budget_and_give_back_what_they_evict() {
    let bus = EventBus::new(64 * 1024).start();
    for n in 0..2_000 {
        bus.do_send(Publish(ev(&format!("s{}", n % 7), n)));
    }
    let held = bus.send(HistoryBytes).await.expect("bus");
    assert!(held <= 64 * 1024 && held > 32 * 1024, "held {held} bytes");
}

#[actix_rt::test]
async fn a_replay_of_a_session_unknown_in_memory_starts_where_its_store_ends() {
    let bus = EventBus::default().start();
    let sub = subscribe(&bus, Follow::Session { id: "old".into(), stored_head: 40 }, Some(30), 100).await;
    let Take::Behind(from) = take(&sub).await else { panic!("behind") };
    let ask = CatchUp { subscriber: sub.id, from, max_events: 100, max_bytes: 1 << 20 };
    match bus.send(ask).await.expect("bus") {
        CaughtUp::FromStore { from, until } => assert_eq!((from, until), (31, 41)),
        other => panic!("expected FromStore, got {other:?}"),
    }
    let fresh = subscribe(&bus, Follow::Session { id: "old".into(), stored_head: 40 }, Some(40), 100).await;
    assert!(matches!(take(&fresh).await, Take::Idle), "nothing after the head to replay");
}

#[actix_rt::test]
async fn unsubscribing_closes_the_outbox_and_internal_consumers_are_not_clients() {
    let bus = EventBus::default().start();
    let s = subscribe(&bus, Follow::Everything, None, 10).await;
    bus.send(Unsubscribe(s.id)).await.expect("bus");
    assert!(matches!(take(&s).await, Take::Closed));
    assert_eq!(bus.send(SubscriberCount).await.expect("bus"), 0);
    bus.send(Subscribe { follow: Follow::Everything, since: None, outbox: 10, internal: true }).await.expect("bus");
    assert_eq!(bus.send(SubscriberCount).await.expect("bus"), 0, "internal consumers are not clients");
}

fn relayed(session: &str, seq: u64) -> Event {
    from_node(session, seq, Origin::Stored)
}

fn live() -> Origin {
    Origin::Live(std::sync::Arc::from("a"))
}

fn from_node(session: &str, seq: u64, origin: Origin) -> Event {
    let mut e = numbered(session, seq);
    e.origin = origin;
    e
}

async fn catch_up(bus: &Addr<EventBus>, sub: &Subscription, from: u64) -> CaughtUp {
    bus.send(CatchUp { subscriber: sub.id, from, max_events: 100, max_bytes: 1 << 20 }).await.expect("bus")
}

#[actix_rt::test]
async fn a_relayed_event_past_a_hole_sends_the_sessions_followers_to_the_store_for_the_hole() {
    let bus = EventBus::default().start();
    let sub = subscribe(&bus, Follow::Session { id: "s".into(), stored_head: 3 }, None, 100).await;
    bus.do_send(Publish(relayed("s", 4)));
    bus.do_send(Publish(relayed("s", 8)));
    let Take::Events(got) = take(&sub).await else { panic!("events") };
    assert_eq!(seqs(&got), [4]);
    let Take::Behind(from) = take(&sub).await else { panic!("behind") };
    assert_eq!(from, 5);
    match catch_up(&bus, &sub, from).await {
        CaughtUp::FromStore { from, until } => assert_eq!((from, until), (5, 8), "5 to 7 from the store"),
        other => panic!("expected FromStore, got {other:?}"),
    }
    let CaughtUp::Events { missed, events } = catch_up(&bus, &sub, 8).await else { panic!("events") };
    assert_eq!((missed, seqs(&events)), (0, vec![8]));
    bus.do_send(Publish(relayed("s", 9)));
    let Take::Events(live) = take(&sub).await else { panic!("live again") };
    assert_eq!(seqs(&live), [9]);
}

#[actix_rt::test]
async fn a_stored_head_past_the_topic_sends_followers_to_the_store_and_one_behind_it_does_nothing() {
    let bus = EventBus::default().start();
    let sub = subscribe(&bus, Follow::Session { id: "s".into(), stored_head: 3 }, None, 100).await;
    bus.do_send(Stored { session: "s".into(), head: 3 });
    bus.do_send(Stored { session: "s".into(), head: 2 });
    assert!(matches!(take(&sub).await, Take::Idle), "the store holds nothing new");
    bus.do_send(Stored { session: "s".into(), head: 6 });
    let Take::Behind(from) = take(&sub).await else { panic!("behind") };
    match catch_up(&bus, &sub, from).await {
        CaughtUp::FromStore { from, until } => assert_eq!((from, until), (4, 7)),
        other => panic!("expected FromStore, got {other:?}"),
    }
    // A subscriber that comes after starts from the head the store reported.
    let late = subscribe(&bus, Follow::Session { id: "s".into(), stored_head: 3 }, Some(3), 100).await;
    let Take::Behind(from) = take(&late).await else { panic!("behind") };
    assert_eq!(from, 4);
}

#[actix_rt::test]
async fn the_watch_reporter_hears_clients_follow_sessions_and_everything_and_stop() {
    let bus = EventBus::default().start();
    let a = subscribe(&bus, session("a"), None, 10).await;
    subscribe(&bus, Follow::Execution("run".into()), None, 10).await;
    bus.send(Subscribe { follow: Follow::Everything, since: None, outbox: 10, internal: true }).await.expect("bus");
    let (report, changes) = std::sync::mpsc::channel();
    bus.send(ReportWatches(report)).await.expect("bus");
    subscribe(&bus, Follow::Everything, None, 10).await;
    bus.send(Unsubscribe(a.id)).await.expect("bus");
    bus.send(CloseStreams).await.expect("bus");
    let got: Vec<WatchChange> = changes.try_iter().collect();
    assert_eq!(
        got,
        [
            WatchChange::Follow(Some("a".into())),
            WatchChange::Follow(None),
            WatchChange::Unfollow(Some("a".into())),
            WatchChange::Unfollow(None),
        ],
        "only clients following a session or everything"
    );
}

#[actix_rt::test]
async fn each_relayed_event_is_published_once_whichever_way_brings_it_first() {
    let bus = EventBus::default().start();
    let sub = subscribe(&bus, Follow::Session { id: "s".into(), stored_head: 3 }, None, 100).await;
    bus.do_send(Publish(from_node("s", 4, live())));
    bus.do_send(Publish(from_node("s", 4, Origin::Stored)));
    bus.do_send(Publish(from_node("s", 5, Origin::Stored)));
    bus.do_send(Publish(from_node("s", 5, live())));
    bus.do_send(Publish(from_node("s", 6, live())));
    let Take::Events(got) = take(&sub).await else { panic!("events") };
    assert_eq!(seqs(&got), [4, 5, 6]);
    assert!(matches!(take(&sub).await, Take::Idle), "no copy, no hole");
}

#[actix_rt::test]
async fn the_live_feed_past_a_hole_is_left_to_the_store_and_so_is_what_nobody_here_follows() {
    let bus = EventBus::default().start();
    let sub = subscribe(&bus, Follow::Session { id: "s".into(), stored_head: 3 }, None, 100).await;
    // 4 and 5 may not be stored yet: the followers must not be sent to the store for them.
    bus.do_send(Publish(from_node("s", 6, live())));
    assert!(matches!(take(&sub).await, Take::Idle), "dropped, not a hole to catch up");
    for seq in 4..=6 {
        bus.do_send(Publish(from_node("s", seq, Origin::Stored)));
    }
    bus.do_send(Publish(from_node("s", 7, live())));
    let Take::Events(got) = take(&sub).await else { panic!("events") };
    assert_eq!(seqs(&got), [4, 5, 6, 7]);
    // A session nobody here follows: the feed's events are dropped (its store has them).
    bus.do_send(Stored { session: "t".into(), head: 1 });
    bus.do_send(Publish(from_node("t", 2, live())));
    let late = subscribe(&bus, Follow::Session { id: "t".into(), stored_head: 1 }, Some(1), 100).await;
    assert!(matches!(take(&late).await, Take::Idle), "nothing of t was kept");
    // Someone following everything takes every session's.
    let everything = subscribe(&bus, Follow::Everything, None, 100).await;
    bus.do_send(Publish(from_node("t", 2, live())));
    let Take::Events(got) = take(&everything).await else { panic!("events") };
    assert_eq!(got.len(), 1);
}

#[actix_rt::test]
async fn what_a_gone_node_fed_past_its_store_is_forgotten_and_its_numbers_come_again() {
    let bus = EventBus::default().start();
    let sub = subscribe(&bus, Follow::Session { id: "s".into(), stored_head: 3 }, None, 100).await;
    for seq in 4..=6 {
        bus.do_send(Publish(from_node("s", seq, live())));
    }
    bus.do_send(Stored { session: "s".into(), head: 4 });
    let Take::Events(got) = take(&sub).await else { panic!("events") };
    assert_eq!(seqs(&got), [4, 5, 6]);
    // Another node's going changes nothing here.
    bus.do_send(FeedGone(std::sync::Arc::from("b")));
    bus.do_send(Publish(from_node("s", 5, Origin::Stored)));
    assert!(matches!(take(&sub).await, Take::Idle), "5 is here already");
    // Node a dies with 6 never stored; 5 was (its commit notice came late).
    bus.do_send(FeedGone(std::sync::Arc::from("a")));
    // The session resumes elsewhere and numbers on from its store: 6 is a new event.
    bus.do_send(Publish(from_node("s", 6, Origin::Stored)));
    bus.do_send(Publish(from_node("s", 7, Origin::Live(std::sync::Arc::from("c")))));
    let Take::Events(got) = take(&sub).await else { panic!("events") };
    assert_eq!(seqs(&got), [6, 7]);
}
