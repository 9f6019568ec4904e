//! The other nodes' session events, once committed: a thread of its own listens on PostgreSQL's
//! `conduit_events` channel and tells this node's bus how far the store holds each session
//! ([`Stored`]), so a subscriber here misses nothing another node stored. The events
//! themselves come sooner, from the owners' live feeds (see [`super::live_feed`]): when a
//! stored head is past what a feed brought, the session's followers catch up from the store.
//!
//! Only a follower of everything (the global stream) has no store to catch up from: while one
//! is here, the stored ranges are read back and published ([`Origin::Stored`]); the bus keeps
//! whichever copy comes first. The relay also tells the live feeds whether anyone here follows
//! anything, as the bus reports it ([`WatchChange`]), so a node nobody watches reads no feed.
//! A subscriber that (re)connects catches up from the store by number as always.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Receiver;
use std::sync::Arc;
use std::time::Duration;

use actix::Recipient;
use diesel::RunQueryDsl;

use super::live_feed::Watching;
use crate::actors::bus::{Event, Origin, Publish, Stored, WatchChange};
use crate::db::backend::{open_postgres, PostgresUrl};
use crate::db::relay::{self, Range};
use crate::db::DbConnection;

/// The quickest poll, right after a notice; it slows down to [`IDLE_POLL`] while none come.
/// libpq reads notices without a blocking wait diesel could give, so the thread polls.
const BUSY_POLL: Duration = Duration::from_millis(1);
const IDLE_POLL: Duration = Duration::from_millis(8);

/// Stops the relay's thread when dropped.
pub struct RelayHandle {
    stop: Arc<AtomicBool>,
}

impl Drop for RelayHandle {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// The relay's side of this node's bus.
pub struct BusLink {
    pub publish: Recipient<Publish>,
    pub stored: Recipient<Stored>,
    /// What clients start and stop following (see `ReportWatches`).
    pub watches: Receiver<WatchChange>,
    /// Told whether anyone here follows anything, when that changes.
    pub feeds: Recipient<Watching>,
}

/// What this node's clients follow.
#[derive(Debug, Default)]
struct Watched {
    everything: usize,
    sessions: HashMap<String, usize>,
}

impl Watched {
    fn apply(&mut self, change: WatchChange) {
        match change {
            WatchChange::Follow(None) => self.everything += 1,
            WatchChange::Unfollow(None) => self.everything = self.everything.saturating_sub(1),
            WatchChange::Follow(Some(id)) => *self.sessions.entry(id).or_default() += 1,
            WatchChange::Unfollow(Some(id)) => {
                if let Some(n) = self.sessions.get_mut(&id) {
                    *n -= 1;
                    if *n == 0 {
                        self.sessions.remove(&id);
                    }
                }
            }
        }
    }

    /// Someone follows everything: the stored events are read back for them.
    fn reads_back(&self) -> bool {
        self.everything > 0
    }

    fn anyone(&self) -> bool {
        self.everything > 0 || !self.sessions.is_empty()
    }
}

pub fn start(url: PostgresUrl, busy_timeout_ms: u64, node: String, bus: BusLink) -> RelayHandle {
    let stop = Arc::new(AtomicBool::new(false));
    let stopping = stop.clone();
    let spawned = std::thread::Builder::new()
        .name("conduit-relay".to_string())
        .spawn(move || run(&url, busy_timeout_ms, &node, &bus, &stopping));
    if let Err(e) = spawned {
        tracing::error!(error = %e, "cluster: the event relay could not start; other nodes' events will not stream live here");
    }
    RelayHandle { stop }
}

fn run(url: &PostgresUrl, busy_timeout_ms: u64, node: &str, bus: &BusLink, stop: &AtomicBool) {
    let mut conn: Option<DbConnection> = None;
    let mut poll = IDLE_POLL;
    let mut watched = Watched::default();
    let mut listened_before = false;
    while !stop.load(Ordering::Relaxed) {
        watched_now(&mut watched, bus);
        let listening = match conn.as_mut() {
            Some(conn) => conn,
            None => match listen(url, busy_timeout_ms) {
                Ok(mut c) => {
                    if listened_before {
                        resync(&mut c, &watched, bus);
                    }
                    listened_before = true;
                    conn.insert(c)
                }
                Err(e) => {
                    tracing::warn!(error = %e, "cluster: the event relay cannot listen; retrying");
                    std::thread::sleep(Duration::from_secs(1));
                    continue;
                }
            },
        };
        match relay_pending(listening, node, bus, &watched) {
            Ok(0) => poll = (poll * 2).min(IDLE_POLL),
            Ok(_) => poll = BUSY_POLL,
            Err(e) => {
                tracing::warn!(error = %e, "cluster: the event relay lost its connection; listening again");
                conn = None;
            }
        }
        std::thread::sleep(poll);
    }
}

fn watched_now(watched: &mut Watched, bus: &BusLink) {
    let before = watched.anyone();
    for change in bus.watches.try_iter() {
        watched.apply(change);
    }
    if watched.anyone() != before {
        bus.feeds.do_send(Watching(watched.anyone()));
    }
}

/// After listening again: the notices sent meanwhile are lost, so the bus learns how far the
/// store holds each followed session, and their followers catch up from it. A follower of
/// everything has no store to catch up from.
fn resync(conn: &mut DbConnection, watched: &Watched, bus: &BusLink) {
    if watched.everything > 0 {
        tracing::warn!("cluster: the event relay listens again; followers of every event may have missed other nodes' events meanwhile (sessions' followers catch up)");
    }
    for session in watched.sessions.keys() {
        match crate::db::messages::last_seq(conn, session) {
            Ok(head) => bus.stored.do_send(Stored { session: session.clone(), head }),
            Err(e) => {
                tracing::warn!(error = %e, session = %session, "cluster: the relay could not read a session's head")
            }
        }
    }
}

fn listen(url: &PostgresUrl, busy_timeout_ms: u64) -> Result<DbConnection, String> {
    let mut conn = open_postgres(url, busy_timeout_ms).map_err(|e| e.to_string())?;
    diesel::sql_query(format!("LISTEN {}", relay::CHANNEL)).execute(&mut conn).map_err(|e| e.to_string())?;
    Ok(DbConnection::Pg(conn))
}

/// Publishes the events of every notice waiting; returns how many notices there were.
fn relay_pending(conn: &mut DbConnection, node: &str, bus: &BusLink, watched: &Watched) -> Result<usize, String> {
    let DbConnection::Pg(pg) = conn else { return Err("the relay needs PostgreSQL".to_string()) };
    let mut ranges: Vec<Range> = Vec::new();
    let mut notices = 0;
    for notice in pg.notifications_iter() {
        let notice = notice.map_err(|e| e.to_string())?;
        notices += 1;
        match relay::parse(&notice.payload) {
            // This node's own events reached its bus when they happened.
            Some((from, _)) if from == node => {}
            Some((_, found)) => ranges.extend(found),
            None => tracing::warn!(payload = %notice.payload, "cluster: an unreadable event notice"),
        }
    }
    for range in &ranges {
        if !watched.reads_back() {
            bus.stored.do_send(Stored { session: range.session_id.clone(), head: range.to.max(0) as u64 });
            continue;
        }
        for stored in relay::read(conn, range).map_err(|e| e.to_string())? {
            let kind = crate::actors::feed::static_kind(&stored.kind);
            let mut event = Event::new(kind, stored.name, Some(range.session_id.clone()), stored.data);
            (event.timestamp, event.topic_seq, event.origin) = (stored.timestamp, Some(stored.seq), Origin::Stored);
            bus.publish.do_send(Publish(event));
        }
    }
    Ok(notices)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mirror_counts_followers_and_reads_back_only_for_a_follower_of_everything() {
        let mut watched = Watched::default();
        let (a, b) = (Some("a".to_string()), Some("b".to_string()));
        for change in [WatchChange::Follow(a.clone()), WatchChange::Follow(a.clone()), WatchChange::Follow(b.clone())] {
            watched.apply(change);
        }
        watched.apply(WatchChange::Unfollow(a.clone()));
        watched.apply(WatchChange::Unfollow(b.clone()));
        watched.apply(WatchChange::Unfollow(b));
        assert!(watched.anyone() && !watched.reads_back());
        watched.apply(WatchChange::Follow(None));
        assert!(watched.reads_back());
        watched.apply(WatchChange::Unfollow(None));
        watched.apply(WatchChange::Unfollow(a));
        assert!(!watched.anyone() && !watched.reads_back());
    }
}
