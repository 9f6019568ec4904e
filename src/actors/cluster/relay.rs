//! The other nodes' session events, live: a thread of its own listens on PostgreSQL's
//! `conduit_events` channel, reads each range another node stored, and publishes the events on
//! this node's bus with their stored numbers, so a subscriber here follows a session running
//! anywhere, in order. A subscriber that (re)connects catches up from the store by number as
//! always; the relay only carries what happens while it listens.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use actix::Recipient;
use diesel::RunQueryDsl;

use crate::actors::bus::{Event, Publish};
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

pub fn start(url: PostgresUrl, busy_timeout_ms: u64, node: String, bus: Recipient<Publish>) -> RelayHandle {
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

fn run(url: &PostgresUrl, busy_timeout_ms: u64, node: &str, bus: &Recipient<Publish>, stop: &AtomicBool) {
    let mut conn: Option<DbConnection> = None;
    let mut poll = IDLE_POLL;
    while !stop.load(Ordering::Relaxed) {
        let listening = match conn.as_mut() {
            Some(conn) => conn,
            None => match listen(url, busy_timeout_ms) {
                Ok(c) => conn.insert(c),
                Err(e) => {
                    tracing::warn!(error = %e, "cluster: the event relay cannot listen; retrying");
                    std::thread::sleep(Duration::from_secs(1));
                    continue;
                }
            },
        };
        match relay_pending(listening, node, bus) {
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

fn listen(url: &PostgresUrl, busy_timeout_ms: u64) -> Result<DbConnection, String> {
    let mut conn = open_postgres(url, busy_timeout_ms).map_err(|e| e.to_string())?;
    diesel::sql_query(format!("LISTEN {}", relay::CHANNEL)).execute(&mut conn).map_err(|e| e.to_string())?;
    Ok(DbConnection::Pg(conn))
}

/// Publishes the events of every notice waiting; returns how many notices there were.
fn relay_pending(conn: &mut DbConnection, node: &str, bus: &Recipient<Publish>) -> Result<usize, String> {
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
        for stored in relay::read(conn, range).map_err(|e| e.to_string())? {
            let kind = crate::actors::feed::static_kind(&stored.kind);
            let mut event = Event::new(kind, stored.name, Some(range.session_id.clone()), stored.data);
            (event.timestamp, event.topic_seq, event.relayed) = (stored.timestamp, Some(stored.seq), true);
            bus.do_send(Publish(event));
        }
    }
    Ok(notices)
}
