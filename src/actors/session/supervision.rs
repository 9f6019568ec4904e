//! What watches over a session beside its conversation: the turn watchdog.
//!
//! A turn whose CLI writes nothing for the inactivity timeout, while nothing waits for a
//! decision (a permission being evaluated, an approval), is stalled: a hung tool or a stuck
//! network call would otherwise hold the session, and its project's turn slot, forever. The
//! watchdog publishes `session.stalled`, asks the CLI to interrupt the turn, and stops the CLI
//! after the close grace; the session ends `stalled`, and a message resumes it. Output of any
//! kind (a tool that prints as it works, stderr included) keeps a turn alive.

use std::time::Duration;

use actix::prelude::*;

use super::{CliSession, CLOSE_GRACE};
use crate::domain::session::ClosedReason;
use crate::supervisor::adapter::Command;
use crate::supervisor::conversation::Ctx;

/// How a session is watched, resolved from its project and the settings when its CLI starts.
#[derive(Debug, Clone, Copy, Default)]
pub struct Supervision {
    /// A running turn quiet this long is stalled; `None`: never.
    pub turn_inactivity: Option<Duration>,
}

impl Supervision {
    /// The project's own timeout (milliseconds; 0: never), else the setting's.
    pub fn resolve(project_ms: Option<i64>, setting_ms: u64) -> Supervision {
        let ms = project_ms.map_or(setting_ms, |ms| u64::try_from(ms).unwrap_or(0));
        Supervision { turn_inactivity: (ms > 0).then(|| Duration::from_millis(ms)) }
    }
}

/// Checks often enough that a stall is seen within a tenth of the timeout (at most every 30 s).
fn check_every(timeout: Duration) -> Duration {
    (timeout / 10).clamp(Duration::from_millis(20), Duration::from_secs(30))
}

/// Starts the watchdog of a session whose CLI just started.
pub(super) fn watch(p: &mut CliSession, ctx: &mut Ctx<super::Chat>) {
    let Some(timeout) = p.conv.supervision.turn_inactivity else { return };
    ctx.run_interval(check_every(timeout), move |p, ctx| {
        if p.conv.stalled || !stalled(p, timeout) {
            return;
        }
        p.conv.stalled = true;
        let quiet = p.cli.quiet_for();
        tracing::warn!(session = %p.conv.row.id, ?quiet, "the turn stalled: interrupting it, then stopping the CLI");
        let data = serde_json::json!({
            "quiet_ms": u64::try_from(quiet.as_millis()).unwrap_or(u64::MAX),
            "turn_inactivity_timeout_ms": u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
        });
        p.conv.publish("session.stalled", "session_stalled", data.to_string());
        // The interrupt gives the CLI a chance to end the turn cleanly (its result is stored);
        // whatever it answers, the CLI is stopped after the grace, as a hung tool may ignore it.
        drop(p.command(Command::Interrupt, ctx));
        ctx.run_later(CLOSE_GRACE, |p, ctx| p.stop(libc::SIGTERM, Some(ClosedReason::Stalled), ctx));
    });
}

/// A turn runs, its CLI has been quiet for `timeout`, nothing waits for a decision, and the
/// session is not paused (a frozen CLI is quiet because it was asked to be).
fn stalled(p: &CliSession, timeout: Duration) -> bool {
    p.conv.turn_running
        && p.conv.paused_since.is_none()
        && p.cli.is_live()
        && p.cli.asks_in_flight() == 0
        && p.cli.quiet_for() >= timeout
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_project_value_wins_and_zero_means_never() {
        assert_eq!(Supervision::resolve(None, 900_000).turn_inactivity, Some(Duration::from_secs(900)));
        assert_eq!(Supervision::resolve(Some(1500), 900_000).turn_inactivity, Some(Duration::from_millis(1500)));
        assert_eq!(Supervision::resolve(Some(0), 900_000).turn_inactivity, None);
        assert_eq!(Supervision::resolve(None, 0).turn_inactivity, None);
    }

    #[test]
    fn checks_come_within_a_tenth_of_the_timeout() {
        assert_eq!(check_every(Duration::from_millis(1000)), Duration::from_millis(100));
        assert_eq!(check_every(Duration::from_secs(900)), Duration::from_secs(30));
        assert_eq!(check_every(Duration::from_millis(100)), Duration::from_millis(20));
    }
}
