//! `Janitor`: the one actor that tidies up on a timer.
//!
//! Every `janitor_interval_ms` it sweeps: live sessions quiet for `session_idle_timeout_ms`
//! are offered to the registry for closing (reason `idle_timeout`; a message to such a session
//! resumes it). Candidates come from an indexed query on the stored `last_active_at`, which only
//! ever lags the session's own clock; each candidate's actor then decides whether it is truly
//! idle (no turn, no control request either way, no queued turn, no background task, nobody
//! watching). A sweep never overlaps the previous one, logs its counts, and an error in one
//! step or one session never stops the rest.

use std::time::Duration;

use actix::prelude::*;

use super::bus::WatcherCount;
use super::registry::CloseIdle;
use crate::db::{sessions, Store};
use crate::domain::idleness::Busy;
use crate::domain::time;

/// Candidates looked at per sweep, at most; the rest wait for the next sweep.
const SWEEP_BATCH: i64 = 500;

// ---------------------------------------------------------------------------------------------
// Messages

/// Sweep now (the timer sends it too). Answers with what the sweep did; a sweep asked for while
/// one runs is skipped (`skipped: true`).
#[derive(Message)]
#[rtype(result = "SweepReport")]
pub struct Sweep;

/// Stops the timer (at shutdown, before the sessions are ended).
#[derive(Message)]
#[rtype(result = "()")]
pub struct StopJanitor;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SweepReport {
    /// Sessions the indexed query offered.
    pub checked: usize,
    /// Closed as idle.
    pub closed: usize,
    /// Left open: a turn, a control request, a queued turn, a background task, a watcher, or
    /// recent activity.
    pub busy: usize,
    /// Ended (or ending) meanwhile.
    pub gone: usize,
    pub errors: usize,
    pub skipped: bool,
}

// ---------------------------------------------------------------------------------------------
// State

pub struct Janitor {
    interval: Duration,
    idle_timeout: Duration,
    store: Store,
    registry: Recipient<CloseIdle>,
    bus: Recipient<WatcherCount>,
    sweeping: bool,
}

impl Janitor {
    pub fn new(
        interval: Duration,
        idle_timeout: Duration,
        store: Store,
        registry: Recipient<CloseIdle>,
        bus: Recipient<WatcherCount>,
    ) -> Self {
        Janitor { interval, idle_timeout, store, registry, bus, sweeping: false }
    }
}

/// Offers every quiet live session to the registry for closing.
async fn close_idle_sessions(
    store: Store,
    registry: Recipient<CloseIdle>,
    bus: Recipient<WatcherCount>,
    timeout: Duration,
    report: &mut SweepReport,
) {
    let cutoff = time::ago(timeout);
    let ids = match store.run(move |conn| sessions::quiet_since(conn, &cutoff, SWEEP_BATCH)).await {
        Ok(ids) => ids,
        Err(e) => {
            tracing::warn!(error = %e, "janitor: cannot list quiet sessions");
            report.errors += 1;
            return;
        }
    };
    for id in ids {
        report.checked += 1;
        let watchers = match bus.send(WatcherCount(id.clone())).await {
            Ok(n) => n,
            Err(e) => {
                tracing::warn!(session = %id, error = %e, "janitor: the event bus did not answer");
                report.errors += 1;
                continue;
            }
        };
        match registry.send(CloseIdle { id: id.clone(), timeout, watchers }).await {
            Ok(Ok(())) => report.closed += 1,
            Ok(Err(Busy::NotLive)) => report.gone += 1,
            Ok(Err(why)) => {
                tracing::debug!(session = %id, reason = why.as_str(), "janitor: session kept open");
                report.busy += 1;
            }
            Err(e) => {
                tracing::warn!(session = %id, error = %e, "janitor: the registry did not answer");
                report.errors += 1;
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Handlers

impl Actor for Janitor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        tracing::info!(interval = ?self.interval, idle_timeout = ?self.idle_timeout, "janitor started");
        ctx.run_interval(self.interval, |_act, ctx| ctx.notify(Sweep));
    }
}

impl Handler<Sweep> for Janitor {
    type Result = ResponseActFuture<Self, SweepReport>;

    fn handle(&mut self, _msg: Sweep, _ctx: &mut Context<Self>) -> Self::Result {
        if self.sweeping {
            return Box::pin(actix::fut::ready(SweepReport { skipped: true, ..Default::default() }));
        }
        self.sweeping = true;
        let (store, registry, bus, timeout) =
            (self.store.clone(), self.registry.clone(), self.bus.clone(), self.idle_timeout);
        let sweep = async move {
            let mut report = SweepReport::default();
            close_idle_sessions(store, registry, bus, timeout, &mut report).await;
            // Further steps run here, each on its own so one failing never stops the others:
            // - reap agent executions stuck past their timeout (the agents' actor, issue 7);
            // - prune empty `DirLockQueue` entries (the lock queue actor, issue 7).
            report
        };
        Box::pin(sweep.into_actor(self).map(|report, act, _ctx| {
            act.sweeping = false;
            if report.checked > 0 || report.errors > 0 {
                tracing::info!(
                    checked = report.checked,
                    closed = report.closed,
                    busy = report.busy,
                    gone = report.gone,
                    errors = report.errors,
                    "janitor sweep"
                );
            } else {
                tracing::debug!("janitor sweep: nothing to look at");
            }
            report
        }))
    }
}

impl Handler<StopJanitor> for Janitor {
    type Result = ();

    fn handle(&mut self, _msg: StopJanitor, ctx: &mut Context<Self>) {
        ctx.stop();
    }
}
