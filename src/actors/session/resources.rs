//! What a session's CLI uses, read from its resource cgroups (see [`crate::process::limits`])
//! at most once a second, on the blocking pool (cgroupfs reads never run on the executor).
//! The latest reading answers `GET /api/sessions/{id}`, the live list and `/metrics`; an OOM
//! kill count that rose is published as `session.resource` (a tool went over the memory limit
//! and the kernel killed it: the session goes on); and at the end it tells whether the kernel
//! killed the CLI itself ([`Watch::killed_cli`]).

use std::time::{Duration, Instant};

use actix::prelude::*;
use serde_json::json;

use super::{Chat, CliSession};
use crate::domain::resources::Resources;
use crate::domain::session::ClosedReason;
use crate::supervisor::conversation::{Ctx, ProcessEnd};

/// Between two readings of a session's cgroups.
pub const READ_EVERY: Duration = Duration::from_secs(1);
/// A CLI SIGKILLed this soon after an OOM kill was seen was (most likely) that kill: the count
/// does not say which process went, and the reading that saw it may come just before the end.
const OOM_WINDOW: Duration = Duration::from_secs(5);

/// The latest reading of a session's cgroups.
#[derive(Message)]
#[rtype(result = "Option<Resources>")]
pub struct Readings;

/// The session's side of its readings.
#[derive(Debug, Default)]
pub struct Watch {
    latest: Option<Resources>,
    /// A read is under way (a slow cgroupfs never piles reads up).
    reading: bool,
    /// The OOM kill count already told; `None` until the first reading of a CLI the service
    /// attached to again (its count started before this service).
    told: Option<u64>,
    /// When the count was last seen to rise.
    rose_at: Option<Instant>,
}

impl Watch {
    /// A new CLI's cgroups count from zero; a reattached one's from what they hold.
    pub fn new(reattached: bool) -> Watch {
        Watch { told: (!reattached).then_some(0), ..Default::default() }
    }

    pub fn latest(&self) -> Option<Resources> {
        self.latest
    }

    /// Whether the kernel's OOM killer ended the CLI itself: it died of SIGKILL that nobody
    /// here sent (no stop was asked, its keeper lives), and the OOM kill count rose at its end
    /// or just before.
    pub fn killed_cli(&self, end: &ProcessEnd<ClosedReason>) -> bool {
        let rose_at_end = end.oom_kills.is_some_and(|n| n > self.told.unwrap_or(0));
        let rose_just_before = self.rose_at.is_some_and(|at| at.elapsed() < OOM_WINDOW);
        end.exit.signal == Some(libc::SIGKILL)
            && end.asked.is_none()
            && !end.keeper_lost
            && (rose_at_end || rose_just_before)
    }
}

/// Starts reading, once a second, when the CLI has resource cgroups.
pub(super) fn watch(p: &mut CliSession, ctx: &mut Ctx<Chat>) {
    if p.cli.resources().is_none() {
        return;
    }
    read(p, ctx);
    ctx.run_interval(READ_EVERY, read);
}

fn read(p: &mut CliSession, ctx: &mut Ctx<Chat>) {
    let Some(groups) = p.cli.resources().cloned() else { return };
    if p.conv.resources.reading || !p.cli.is_live() {
        return;
    }
    p.conv.resources.reading = true;
    let reading = tokio::task::spawn_blocking(move || groups.read());
    ctx.spawn(async move { reading.await.ok() }.into_actor(p).map(|reading, p, _ctx| {
        p.conv.resources.reading = false;
        if let Some(reading) = reading {
            seen(&mut p.conv, reading);
        }
    }));
}

/// Keeps a reading (with the most memory seen, where the kernel keeps no peak), and tells an
/// OOM kill count that rose.
fn seen(chat: &mut Chat, mut reading: Resources) {
    let before = chat.resources.latest;
    if reading.memory_peak_bytes.is_none() {
        let seen = before.and_then(|b| b.memory_peak_bytes);
        reading.memory_peak_bytes = seen.max(reading.memory_bytes);
    }
    chat.resources.latest = Some(reading);
    if let Some(count) = reading.oom_kills {
        chat.tell_oom_kills(count);
    }
}

impl Chat {
    /// Publishes `session.resource` when the OOM kill count passed what was told.
    pub(super) fn tell_oom_kills(&mut self, count: u64) {
        let Some(told) = self.resources.told else {
            // The first reading of a reattached CLI: what happened before is not news.
            self.resources.told = Some(count);
            return;
        };
        if count <= told {
            return;
        }
        self.resources.told = Some(count);
        self.resources.rose_at = Some(Instant::now());
        if let Some(latest) = self.resources.latest.as_mut() {
            latest.oom_kills = Some(count);
        }
        tracing::warn!(session = %self.row.id, oom_kills = count, "the kernel's OOM killer ended a process of the session");
        let data = json!({"oom_kills": count, "new_oom_kills": count - told, "resources": self.resources.latest});
        self.publish("session.resource", "session_resource", data.to_string());
    }
}

impl Handler<Readings> for CliSession {
    type Result = Option<Resources>;

    fn handle(&mut self, _msg: Readings, _ctx: &mut Ctx<Chat>) -> Self::Result {
        self.conv.resources.latest()
    }
}
