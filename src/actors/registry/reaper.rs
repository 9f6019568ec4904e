//! Reaping orphans. The service is a child subreaper, so a tool process that detached from its
//! CLI is re-parented here when its parent dies, and must be reaped here. The CLIs themselves
//! are waited for by tokio, and must never be reaped by this sweep (tokio's wait would find no
//! child, and the exit status would be lost).
//!
//! The `/proc` walk runs on the blocking pool; the reaping itself (one `waitpid(pid, WNOHANG)`
//! per zombie) runs back on the registry, against its set of CLI pids at that moment. A CLI is
//! added to that set in the same handler that spawns it, so no sweep can see it unlisted; and a
//! zombie cannot change identity before someone reaps it, so the walk's answer stays true.

use std::time::Duration;

use actix::prelude::*;
use futures_util::StreamExt;

use super::SessionRegistry;
use crate::process::{kill, own};

/// Signals coalesce: the sweep also runs this often.
const SWEEP_EVERY: Duration = Duration::from_secs(5);

/// Where the sweep is: at most one walk runs, and a signal during it asks for one more.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub enum Sweep {
    #[default]
    Idle,
    Walking,
    WalkingThenAgain,
}

#[derive(Message)]
#[rtype(result = "()")]
struct ChildSignal;

impl SessionRegistry {
    /// Watches SIGCHLD and sweeps now and then (only when the service is a subreaper).
    pub(super) fn watch_orphans(&mut self, ctx: &mut Context<Self>) {
        if !self.reap_orphans {
            return;
        }
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::child()) {
            Ok(signal) => {
                let signals =
                    futures_util::stream::unfold(signal, |mut s| async move { s.recv().await.map(|_| ((), s)) });
                ctx.add_stream(signals.map(|_| ChildSignal));
            }
            Err(e) => tracing::warn!(error = %e, "cannot watch SIGCHLD; orphans are reaped every few seconds only"),
        }
        ctx.run_interval(SWEEP_EVERY, |act, ctx| act.sweep(ctx));
    }

    fn sweep(&mut self, ctx: &mut Context<Self>) {
        match self.sweep {
            Sweep::Idle => {}
            Sweep::Walking | Sweep::WalkingThenAgain => {
                self.sweep = Sweep::WalkingThenAgain;
                return;
            }
        }
        self.sweep = Sweep::Walking;
        let me = std::process::id() as i32;
        let walk = tokio::task::spawn_blocking(move || kill::zombie_children(me));
        ctx.spawn(walk.into_actor(self).map(|zombies, act, ctx| {
            let zombies = zombies.unwrap_or_default();
            let reaped = own::reaping(|listed| {
                zombies
                    .into_iter()
                    .filter(|pid| !act.children.contains(pid) && !listed(*pid) && kill::reap(*pid))
                    .count()
            });
            if reaped > 0 {
                tracing::debug!(reaped, "reaped orphaned descendants");
            }
            let again = act.sweep == Sweep::WalkingThenAgain;
            act.sweep = Sweep::Idle;
            if again {
                act.sweep(ctx);
            }
        }));
    }
}

impl StreamHandler<ChildSignal> for SessionRegistry {
    fn handle(&mut self, _: ChildSignal, ctx: &mut Context<Self>) {
        self.sweep(ctx);
    }

    fn finished(&mut self, _ctx: &mut Context<Self>) {}
}
