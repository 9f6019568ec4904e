//! `RequestLimits`: how much one client may ask of the service, beyond passwords (those are
//! the [`LoginGuard`](super::login_guard::LoginGuard)'s). It keeps:
//! - per client address, the state-changing requests of the last minute: more than
//!   `writes_per_minute` in a sliding minute are refused until the oldest leaves it;
//! - per credential, the live streams (WebSocket connections and SSE streams) it holds: more
//!   than `streams_per_credential` at once are refused until one ends.
//!
//! The guard asks before a request goes on ([`MayWrite`], [`OpenStream`]); a stream's
//! [`StreamSlot`] tells this actor when the stream ends, whichever way it ends (it is dropped
//! with the response body, which lives as long as the connection).

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::time::{Duration, Instant};

use actix::prelude::*;

use crate::config::RequestLimitSettings;

const WINDOW: Duration = Duration::from_secs(60);
const SWEEP_EVERY: Duration = Duration::from_secs(60);

/// May the client at `address` send a state-changing request now? `Err`: wait this long.
#[derive(Message)]
#[rtype(result = "Result<(), Duration>")]
pub struct MayWrite {
    pub address: IpAddr,
}

/// Who holds a stream: one credential (a token, a sign-in, a user's password, the configured
/// token).
pub type Holder = String;

/// May `holder` open one more stream? `Ok` with the slot that keeps it counted; `Err` with the
/// limit it is at.
#[derive(Message)]
#[rtype(result = "Result<StreamSlot, u32>")]
pub struct OpenStream {
    pub holder: Holder,
}

/// A stream ended: its slot was dropped.
#[derive(Message)]
#[rtype(result = "()")]
struct StreamClosed {
    holder: Holder,
}

/// One counted stream. Dropping it (with the response body it is kept in) frees its place.
pub struct StreamSlot {
    holder: Holder,
    limits: Addr<RequestLimits>,
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        self.limits.do_send(StreamClosed { holder: std::mem::take(&mut self.holder) });
    }
}

impl std::fmt::Debug for StreamSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamSlot").field("holder", &self.holder).finish_non_exhaustive()
    }
}

pub struct RequestLimits {
    settings: RequestLimitSettings,
    writes: HashMap<IpAddr, VecDeque<Instant>>,
    streams: HashMap<Holder, u32>,
}

impl RequestLimits {
    pub fn new(settings: RequestLimitSettings) -> RequestLimits {
        RequestLimits { settings, writes: HashMap::new(), streams: HashMap::new() }
    }

    /// Whether a write from `address` at `now` is within the limit (it is counted if so).
    fn may_write(&mut self, address: IpAddr, now: Instant) -> Result<(), Duration> {
        let limit = self.settings.writes_per_minute as usize;
        if limit == 0 {
            return Ok(());
        }
        let times = self.writes.entry(address).or_default();
        while times.front().is_some_and(|t| now.duration_since(*t) >= WINDOW) {
            times.pop_front();
        }
        if times.len() >= limit {
            let oldest = times.front().copied().unwrap_or(now);
            return Err((oldest + WINDOW).saturating_duration_since(now));
        }
        times.push_back(now);
        Ok(())
    }

    /// Counts one more stream for `holder`, unless it holds the most it may.
    fn open(&mut self, holder: &str) -> Result<(), u32> {
        let limit = self.settings.streams_per_credential;
        let open = self.streams.entry(holder.to_string()).or_default();
        if limit != 0 && *open >= limit {
            return Err(limit);
        }
        *open += 1;
        Ok(())
    }

    fn closed(&mut self, holder: &str) {
        if let Some(open) = self.streams.get_mut(holder) {
            *open = open.saturating_sub(1);
            if *open == 0 {
                self.streams.remove(holder);
            }
        }
    }

    /// Forgets addresses with no write in the last minute.
    fn sweep(&mut self, now: Instant) {
        self.writes.retain(|_, times| times.back().is_some_and(|t| now.duration_since(*t) < WINDOW));
    }
}

impl Actor for RequestLimits {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.run_interval(SWEEP_EVERY, |limits, _| limits.sweep(Instant::now()));
    }
}

impl Handler<MayWrite> for RequestLimits {
    type Result = Result<(), Duration>;

    fn handle(&mut self, msg: MayWrite, _ctx: &mut Context<Self>) -> Self::Result {
        self.may_write(msg.address, Instant::now())
    }
}

impl Handler<OpenStream> for RequestLimits {
    type Result = Result<StreamSlot, u32>;

    fn handle(&mut self, msg: OpenStream, ctx: &mut Context<Self>) -> Self::Result {
        self.open(&msg.holder)?;
        Ok(StreamSlot { holder: msg.holder, limits: ctx.address() })
    }
}

impl Handler<StreamClosed> for RequestLimits {
    type Result = ();

    fn handle(&mut self, msg: StreamClosed, _ctx: &mut Context<Self>) {
        self.closed(&msg.holder);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HERE: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 1));
    const THERE: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 2));

    fn limits(writes_per_minute: u32, streams_per_credential: u32) -> RequestLimits {
        RequestLimits::new(RequestLimitSettings { writes_per_minute, streams_per_credential, limit_loopback: false })
    }

    #[test]
    fn writes_beyond_the_minute_s_limit_wait_for_the_oldest_to_leave_it() {
        let (mut l, t0) = (limits(3, 0), Instant::now());
        for s in 0..3 {
            assert_eq!(l.may_write(HERE, t0 + Duration::from_secs(s)), Ok(()));
        }
        assert_eq!(l.may_write(HERE, t0 + Duration::from_secs(10)), Err(Duration::from_secs(50)));
        assert_eq!(l.may_write(THERE, t0 + Duration::from_secs(10)), Ok(()), "another address");
        assert_eq!(l.may_write(HERE, t0 + Duration::from_secs(60)), Ok(()), "the oldest left the window");
        assert!(l.may_write(HERE, t0 + Duration::from_secs(60)).is_err(), "a refusal is not counted");
    }

    #[test]
    fn no_limit_when_it_is_zero() {
        let (mut l, t0) = (limits(0, 0), Instant::now());
        assert!((0..1000).all(|_| l.may_write(HERE, t0).is_ok()));
        assert!((0..1000).all(|_| l.open("token:a").is_ok()));
    }

    #[test]
    fn streams_are_counted_per_holder_and_freed_when_closed() {
        let mut l = limits(0, 2);
        assert_eq!((l.open("token:a"), l.open("token:a")), (Ok(()), Ok(())));
        assert_eq!(l.open("token:a"), Err(2));
        assert_eq!(l.open("token:b"), Ok(()), "another credential");
        l.closed("token:a");
        assert_eq!(l.open("token:a"), Ok(()));
        l.closed("token:b");
        assert!(!l.streams.contains_key("token:b"), "a holder with no stream is forgotten");
    }

    #[test]
    fn the_sweep_forgets_quiet_addresses() {
        let (mut l, t0) = (limits(5, 0), Instant::now());
        l.may_write(HERE, t0).ok();
        l.may_write(THERE, t0 + Duration::from_secs(30)).ok();
        l.sweep(t0 + Duration::from_secs(61));
        assert!(!l.writes.contains_key(&HERE) && l.writes.contains_key(&THERE));
    }

    #[actix_rt::test]
    async fn dropping_a_slot_frees_its_place() {
        let limits = limits(0, 1).start();
        let slot = limits.send(OpenStream { holder: "user:1".into() }).await.expect("alive");
        let slot = slot.expect("first stream");
        assert_eq!(limits.send(OpenStream { holder: "user:1".into() }).await.expect("alive").err(), Some(1));
        drop(slot);
        let again = limits.send(OpenStream { holder: "user:1".into() }).await.expect("alive");
        assert!(again.is_ok(), "the dropped slot's place is free again");
    }
}
