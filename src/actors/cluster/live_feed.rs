//! `LiveFeeds`: this node reads every live peer's feed (`GET /api/cluster/feed`) and publishes
//! the events on its bus as they happen on their owner, ahead of the owner's commit.
//!
//! The store stays the source: the relay tells the bus how far each session is stored, and
//! what a feed dropped or delayed (a reconnect, a slow peer, a frame too large to carry) the
//! session's followers read from the store; the bus keeps whichever copy of an event comes
//! first (`EventBus::takes_relayed`). So a feed only ever saves time.
//!
//! One task per peer, kept by this actor: every second it reads the live nodes and starts the
//! missing tasks, and aborts those of nodes no longer live. A task reconnects on its own.
//! A node where nobody follows anything reads no feed: the relay says when that changes
//! ([`Watching`]), and the feeds stop after [`UNWATCHED_FOR`] without anyone.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use futures_util::StreamExt;
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::task::JoinHandle;

use crate::actors::bus::{Event, FeedGone, Origin, Publish};
use crate::config::ClusterSettings;
use crate::config::{FORWARDED_BY, SECRET_HEADER};
use crate::db::{nodes, Store};
use crate::domain::cluster::NodeState;
use crate::peer_tls::PeerTrust;

const PEERS_EVERY: Duration = Duration::from_secs(1);
/// How long the feeds stay with nobody following: a dashboard reloading, or a client
/// reconnecting, would otherwise close and reopen them.
const UNWATCHED_FOR: Duration = Duration::from_secs(30);
const RECONNECT_AFTER: Duration = Duration::from_millis(500);
/// The feed sends a line at least every 15 s: a connection silent for longer is dead.
const SILENT_LIMIT: Duration = Duration::from_secs(40);
/// A line longer than this is no frame (frames carry at most a bounded payload).
const MAX_LINE: usize = 64 << 20;

/// The client the feeds are read with: no pool timeout (a feed is one long response).
fn feed_client(trust: &PeerTrust) -> reqwest::Client {
    trust.http_builder().connect_timeout(Duration::from_secs(2)).tcp_nodelay(true).build().unwrap_or_else(|e| {
        tracing::error!(error = %e, "cluster: the feeds' client could not be built; reading feeds with the public roots only");
        reqwest::Client::new()
    })
}

pub struct LiveFeeds {
    cluster: ClusterSettings,
    store: Store,
    publish: Recipient<Publish>,
    client: reqwest::Client,
    /// Each peer's task, by node name, with the incarnation it reads.
    reading: HashMap<String, (Incarnation, JoinHandle<()>)>,
    /// The live peers as last read, read or not.
    known: Vec<Incarnation>,
    gone: Recipient<FeedGone>,
    /// Until when the feeds are read with nobody here following anything; `None` while
    /// someone does.
    wanted_until: Option<Instant>,
}

/// Whether any client here follows a session or everything (from the relay).
#[derive(Message)]
#[rtype(result = "()")]
pub struct Watching(pub bool);

impl LiveFeeds {
    /// `trust`: the roots `https://` peers' certificates are checked against.
    pub fn new(
        cluster: ClusterSettings,
        store: Store,
        publish: Recipient<Publish>,
        gone: Recipient<FeedGone>,
        trust: &PeerTrust,
    ) -> LiveFeeds {
        LiveFeeds {
            cluster,
            store,
            publish,
            client: feed_client(trust),
            reading: HashMap::new(),
            known: Vec::new(),
            gone,
            wanted_until: Some(Instant::now()),
        }
    }

    fn wanted(&self) -> bool {
        self.wanted_until.is_none_or(|until| Instant::now() < until)
    }

    /// Reads the live nodes, tells the bus of those gone (see [`Incarnation`]), and follows
    /// the live ones as wanted.
    fn refresh(&mut self, ctx: &mut Context<Self>) {
        let me = self.cluster.node.clone();
        let store = self.store.clone();
        async move { store.run(nodes::list).await.map(|rows| live_others(rows, &me)) }
            .into_actor(self)
            .map(|read, feeds, _| match read {
                Ok(live) => {
                    feeds.forget_gone(&live);
                    feeds.follow_peers(if feeds.wanted() { live } else { Vec::new() });
                }
                Err(e) => tracing::debug!(error = %e, "cluster: could not read the nodes for their feeds"),
            })
            .wait(ctx);
    }

    /// A node that is no longer live, or started again, took what it fed and never stored
    /// with it: the bus forgets that, before anything of the new incarnation is read.
    fn forget_gone(&mut self, live: &[Incarnation]) {
        let gone: Vec<Incarnation> = self.known.iter().filter(|known| !live.contains(known)).cloned().collect();
        for node in gone {
            self.gone.do_send(FeedGone(Arc::from(node.name.as_str())));
        }
        self.known = live.to_vec();
    }

    fn follow_peers(&mut self, live: Vec<Incarnation>) {
        self.reading.retain(|name, (known, task)| {
            let keep = live.iter().any(|node| &node.name == name && node == known) && !task.is_finished();
            if !keep {
                task.abort();
            }
            keep
        });
        for node in live {
            if self.reading.contains_key(&node.name) {
                continue;
            }
            let reader = Reader {
                client: self.client.clone(),
                url: format!("{}/api/cluster/feed", node.address.trim_end_matches('/')),
                secret: self.cluster.secret.clone(),
                me: self.cluster.node.clone(),
                peer: Arc::from(node.name.as_str()),
                publish: self.publish.clone(),
            };
            self.reading.insert(node.name.clone(), (node, tokio::spawn(reader.run())));
        }
    }
}

impl Actor for LiveFeeds {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.run_interval(PEERS_EVERY, |feeds, ctx| feeds.refresh(ctx));
    }

    fn stopped(&mut self, _ctx: &mut Context<Self>) {
        for (_, (_, task)) in self.reading.drain() {
            task.abort();
        }
    }
}

impl Handler<Watching> for LiveFeeds {
    type Result = ();

    fn handle(&mut self, msg: Watching, ctx: &mut Context<Self>) {
        let was = self.wanted();
        self.wanted_until = if msg.0 { None } else { self.wanted_until.or(Some(Instant::now() + UNWATCHED_FOR)) };
        if msg.0 && !was {
            // The first follower: read the feeds now, not at the next tick.
            self.refresh(ctx);
        }
    }
}

/// A live node as started once: a node that restarts is another incarnation, whose feed
/// carries nothing of the one before.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Incarnation {
    name: String,
    address: String,
    started_at: String,
}

fn live_others(rows: Vec<nodes::Node>, me: &str) -> Vec<Incarnation> {
    rows.into_iter()
        .filter(|n| n.state == NodeState::Live && n.name != me)
        .map(|n| Incarnation { name: n.name, address: n.address, started_at: n.started_at })
        .collect()
}

/// One peer's feed, read until this node stops following the peer.
struct Reader {
    client: reqwest::Client,
    url: String,
    secret: String,
    me: String,
    peer: Arc<str>,
    publish: Recipient<Publish>,
}

impl Reader {
    async fn run(self) {
        let mut failing = false;
        loop {
            let e = self.read(&mut failing).await;
            // Once per outage: the store carries the events meanwhile.
            if !failing {
                failing = true;
                tracing::info!(peer = %self.peer, error = %e, "cluster: a peer's live feed is down; its events come from the store until it is back");
            }
            tokio::time::sleep(RECONNECT_AFTER).await;
        }
    }

    /// Reads the feed until it fails; returns why. `failing` is cleared once connected.
    async fn read(&self, failing: &mut bool) -> String {
        match self.connected(failing).await {
            Err(e) => e,
            Ok(()) => "the feed ended".to_string(),
        }
    }

    async fn connected(&self, failing: &mut bool) -> Result<(), String> {
        let answer = self
            .client
            .get(&self.url)
            .header(SECRET_HEADER, &self.secret)
            .header(FORWARDED_BY, &self.me)
            .send()
            .await
            .map_err(|e| e.to_string())?;
        if !answer.status().is_success() {
            return Err(format!("the feed answered {}", answer.status()));
        }
        *failing = false;
        let mut body = answer.bytes_stream();
        let mut pending: Vec<u8> = Vec::new();
        loop {
            let chunk = match tokio::time::timeout(SILENT_LIMIT, body.next()).await {
                Err(_) => return Err("the feed went silent".to_string()),
                Ok(None) => return Ok(()),
                Ok(Some(chunk)) => chunk.map_err(|e| e.to_string())?,
            };
            pending.extend_from_slice(&chunk);
            let mut start = 0;
            while let Some(end) = pending[start..].iter().position(|b| *b == b'\n') {
                if let Some(event) = event_of(&pending[start..start + end], &self.peer) {
                    self.publish.do_send(Publish(event));
                }
                start += end + 1;
            }
            pending.drain(..start);
            if pending.len() > MAX_LINE {
                return Err("a line of the feed is too long".to_string());
            }
        }
    }
}

/// The fields of a global-stream frame a relayed event needs.
#[derive(Deserialize)]
struct Frame<'a> {
    event: String,
    session_seq: Option<u64>,
    #[serde(rename = "type", borrow)]
    kind: std::borrow::Cow<'a, str>,
    session_id: Option<String>,
    timestamp: String,
    #[serde(borrow)]
    data: Option<&'a RawValue>,
}

/// The event a feed line carries; `None` for a keep-alive, and for what a feed cannot carry
/// whole (a truncated frame): the read-back brings those.
fn event_of(line: &[u8], peer: &Arc<str>) -> Option<Event> {
    if line.is_empty() {
        return None;
    }
    let frame: Frame = serde_json::from_slice(line).ok()?;
    let (session, seq, data) = (frame.session_id?, frame.session_seq?, frame.data?);
    if data.get() == "null" {
        return None;
    }
    let kind = crate::actors::feed::static_kind(&frame.kind);
    let mut event = Event::new(kind, frame.event, Some(session), data.get().to_string());
    (event.timestamp, event.topic_seq, event.origin) = (frame.timestamp, Some(seq), Origin::Live(peer.clone()));
    Some(event)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::events::{frame, Numbers, Scope};

    #[test]
    fn a_feed_line_is_the_event_the_owner_published() {
        let line = frame(
            "assistant",
            Numbers { seq: 90, session_seq: Some(7) },
            "session.message",
            &Scope::Session("s1".into()),
            "2026-11-28T00:00:00.000Z",
            r#"{"text":"hi\nthere","n":[1,2]}"#,
        );
        let event = event_of(line.as_bytes(), &Arc::from("a")).expect("an event");
        assert_eq!(
            (event.kind, event.name.as_str(), event.session_id.as_deref()),
            ("session.message", "assistant", Some("s1"))
        );
        assert_eq!((event.topic_seq, event.origin.clone()), (Some(7), Origin::Live(Arc::from("a"))));
        assert_eq!(event.data, r#"{"text":"hi\nthere","n":[1,2]}"#);
        assert_eq!(event.timestamp, "2026-11-28T00:00:00.000Z");
        // The frame a subscriber here gets is the one it would have got on the owner.
        assert_eq!(
            event.frame(7, false),
            frame(
                "assistant",
                Numbers::of(7),
                "session.message",
                &Scope::Session("s1".into()),
                "2026-11-28T00:00:00.000Z",
                r#"{"text":"hi\nthere","n":[1,2]}"#
            )
        );
    }

    #[test]
    fn keep_alives_unnumbered_truncated_and_broken_lines_are_left_to_the_store() {
        let a: Arc<str> = Arc::from("a");
        assert!(event_of(b"", &a).is_none());
        assert!(event_of(b"{not json", &a).is_none());
        let unnumbered =
            frame("x", Numbers { seq: 1, session_seq: None }, "session.event", &Scope::Session("s".into()), "t", "{}");
        assert!(event_of(unnumbered.as_bytes(), &a).is_none());
        let truncated = r#"{"event":"x","seq":1,"session_seq":2,"type":"stream.event","session_id":"s","timestamp":"t","data":null,"truncated":true,"data_bytes":9000000}"#;
        assert!(event_of(truncated.as_bytes(), &a).is_none());
    }
}
