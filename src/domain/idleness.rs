//! When a session is truly idle, and so may be closed by the janitor.
//!
//! A session is idle only when nothing could still be going on in it: no turn running, no
//! control request in either direction waiting for an answer, no message queued, no background
//! task the CLI started and has not reported finished, nobody watching its stream, and no
//! activity for the whole timeout. Any one of these keeps it open.

use std::time::Duration;

/// What a session knows about itself, and the bus about its watchers, at one instant.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Activity {
    /// The session is live (not starting, closing or ended).
    pub live: bool,
    pub turn_running: bool,
    /// Conduit's own control requests waiting for the CLI's answer.
    pub pending_controls: usize,
    /// The CLI's requests (tool permissions) being decided.
    pub inflight_requests: usize,
    pub queued_turns: usize,
    /// Background tasks the CLI reported as started and not yet finished.
    pub background_tasks: usize,
    /// WebSocket/SSE clients following this session.
    pub watchers: usize,
    /// Since the last line in either direction, message, or control traffic.
    pub quiet_for: Duration,
}

/// Why a session is not closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Busy {
    NotLive,
    TurnRunning,
    ControlPending,
    RequestInflight,
    TurnsQueued,
    BackgroundTasks,
    Watched,
    RecentlyActive,
}

impl Busy {
    pub fn as_str(self) -> &'static str {
        match self {
            Busy::NotLive => "not_live",
            Busy::TurnRunning => "turn_running",
            Busy::ControlPending => "control_pending",
            Busy::RequestInflight => "request_inflight",
            Busy::TurnsQueued => "turns_queued",
            Busy::BackgroundTasks => "background_tasks",
            Busy::Watched => "watched",
            Busy::RecentlyActive => "recently_active",
        }
    }
}

/// `Ok` when the session has been truly idle for at least `timeout`; otherwise the first
/// reason it is not.
pub fn verdict(a: &Activity, timeout: Duration) -> Result<(), Busy> {
    let checks = [
        (!a.live, Busy::NotLive),
        (a.turn_running, Busy::TurnRunning),
        (a.pending_controls > 0, Busy::ControlPending),
        (a.inflight_requests > 0, Busy::RequestInflight),
        (a.queued_turns > 0, Busy::TurnsQueued),
        (a.background_tasks > 0, Busy::BackgroundTasks),
        (a.watchers > 0, Busy::Watched),
        (a.quiet_for < timeout, Busy::RecentlyActive),
    ];
    match checks.into_iter().find(|(busy, _)| *busy) {
        Some((_, why)) => Err(why),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TIMEOUT: Duration = Duration::from_secs(60);

    fn idle() -> Activity {
        Activity { live: true, quiet_for: TIMEOUT, ..Default::default() }
    }

    #[test]
    fn a_quiet_session_with_nothing_going_on_is_idle() {
        assert_eq!(verdict(&idle(), TIMEOUT), Ok(()));
        assert_eq!(verdict(&Activity { quiet_for: TIMEOUT * 10, ..idle() }, TIMEOUT), Ok(()));
    }

    #[test]
    fn each_kind_of_activity_alone_keeps_a_session_open() {
        let cases = [
            (Activity { live: false, ..idle() }, Busy::NotLive),
            (Activity { turn_running: true, ..idle() }, Busy::TurnRunning),
            (Activity { pending_controls: 1, ..idle() }, Busy::ControlPending),
            (Activity { inflight_requests: 1, ..idle() }, Busy::RequestInflight),
            (Activity { queued_turns: 2, ..idle() }, Busy::TurnsQueued),
            (Activity { background_tasks: 1, ..idle() }, Busy::BackgroundTasks),
            (Activity { watchers: 1, ..idle() }, Busy::Watched),
            (Activity { quiet_for: TIMEOUT - Duration::from_millis(1), ..idle() }, Busy::RecentlyActive),
        ];
        for (activity, why) in cases {
            assert_eq!(verdict(&activity, TIMEOUT), Err(why), "{activity:?}");
        }
    }

    #[test]
    fn a_long_running_turn_is_never_idle_however_quiet() {
        let a = Activity { turn_running: true, quiet_for: Duration::from_secs(86_400), ..idle() };
        assert_eq!(verdict(&a, TIMEOUT), Err(Busy::TurnRunning));
    }
}
