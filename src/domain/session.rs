//! A session's lifecycle as it is stored and shown: its status, and why it ended.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Where a session is in its life: `starting -> idle -> active -> idle ... -> closed | error`,
/// `compacting` while the CLI compacts its context.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SessionStatus {
    /// The CLI was started and has not finished its handshake yet.
    Starting,
    /// Ready for a turn.
    Idle,
    /// A turn is running.
    Active,
    /// The CLI is compacting its context.
    Compacting,
    /// The CLI met a usage limit: turns are accepted and queued, and delivered in order from
    /// `resumes_at` (the limit's reset), by the session itself.
    WaitingForLimit,
    /// A budget is spent: turns are refused until it is raised or its period rolls over
    /// (`status_reason` names it).
    Paused,
    /// Ended as asked (or closed by the janitor, the project's deletion, the shutdown).
    Closed,
    /// Ended otherwise: the CLI exited or failed, could not be started, or the service
    /// restarted under it.
    Error,
}

text_enum!(SessionStatus, "session status", {
    Starting => "starting",
    Idle => "idle",
    Active => "active",
    Compacting => "compacting",
    WaitingForLimit => "waiting_for_limit",
    Paused => "paused",
    Closed => "closed",
    Error => "error",
});

impl SessionStatus {
    /// The statuses of a session whose CLI is (or should be) running.
    pub const LIVE: [SessionStatus; 6] = [
        SessionStatus::Starting,
        SessionStatus::Idle,
        SessionStatus::Active,
        SessionStatus::Compacting,
        SessionStatus::WaitingForLimit,
        SessionStatus::Paused,
    ];

    /// Whether the session's CLI is (or should be) running: not closed, not errored.
    pub const fn is_live(self) -> bool {
        !self.has_ended()
    }

    /// Closed or errored: only such a session can be resumed.
    pub const fn has_ended(self) -> bool {
        matches!(self, SessionStatus::Closed | SessionStatus::Error)
    }
}

/// Why a session ended; stored as its `closed_reason` (null while it is live).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ClosedReason {
    /// `DELETE /api/sessions/{id}`.
    Requested,
    /// Closed by the janitor after the idle timeout; a message to it resumes it.
    IdleTimeout,
    /// Its project was deleted.
    ProjectDeleted,
    /// The service shut down.
    Shutdown,
    /// The CLI ended on its own (or failed).
    CliExited,
    /// The CLI could not be started.
    LaunchFailed,
    /// The service restarted (after a crash) while the session was live.
    ServiceRestarted,
    /// Cluster mode: the node running it stopped renewing its lease (crashed, or cut off).
    NodeLost,
    /// A turn had no output from the CLI for `turn_inactivity_timeout_ms` with nothing
    /// waiting for a decision: interrupted, then stopped.
    Stalled,
    /// The kernel killed the CLI itself for going over the session's memory limit.
    OutOfMemory,
    /// Its keeper was killed (or could not be found after a restart): the CLI went with it.
    Crashed,
}

impl ClosedReason {
    /// Ended by nothing the session did or was asked (the janitor, a stop or a crash of the
    /// service, a turn that stalled): its next message resumes it by itself.
    pub const fn resumes_on_message(self) -> bool {
        matches!(
            self,
            ClosedReason::IdleTimeout
                | ClosedReason::Shutdown
                | ClosedReason::ServiceRestarted
                | ClosedReason::Stalled
                | ClosedReason::Crashed
        )
    }
}

text_enum!(ClosedReason, "closed reason", {
    Requested => "requested",
    IdleTimeout => "idle_timeout",
    ProjectDeleted => "project_deleted",
    Shutdown => "shutdown",
    CliExited => "cli_exited",
    LaunchFailed => "launch_failed",
    ServiceRestarted => "service_restarted",
    NodeLost => "node_lost",
    Stalled => "stalled",
    OutOfMemory => "out_of_memory",
    Crashed => "crashed",
});

/// What the service does with live sessions when it stops (SIGTERM, SIGINT).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnShutdown {
    /// Leave each kept CLI running under its keeper; the next start attaches again.
    Detach,
    /// End every session (`closed`, reason `shutdown`); its next message resumes it.
    Stop,
}

text_enum!(OnShutdown, "shutdown behaviour", {
    Detach => "detach",
    Stop => "stop",
});

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::check_text_enum;

    #[test]
    fn session_statuses_round_trip_as_text() {
        check_text_enum(
            SessionStatus::ALL,
            &["starting", "idle", "active", "compacting", "waiting_for_limit", "paused", "closed", "error"],
        );
    }

    #[test]
    fn closed_reasons_round_trip_as_text() {
        check_text_enum(
            ClosedReason::ALL,
            &[
                "requested",
                "idle_timeout",
                "project_deleted",
                "shutdown",
                "cli_exited",
                "launch_failed",
                "service_restarted",
                "node_lost",
                "stalled",
                "out_of_memory",
                "crashed",
            ],
        );
    }

    #[test]
    fn live_means_not_ended() {
        for status in SessionStatus::ALL {
            assert_eq!(status.is_live(), SessionStatus::LIVE.contains(status), "{status}");
            assert_eq!(status.is_live(), !status.has_ended(), "{status}");
        }
    }

    #[test]
    fn unknown_stored_text_is_an_error() {
        let e = "hibernating".parse::<SessionStatus>().unwrap_err();
        assert_eq!(e.to_string(), "unknown session status \"hibernating\"");
        assert!("Idle".parse::<SessionStatus>().is_err(), "case matters, as stored");
        assert!("timeout".parse::<ClosedReason>().is_err());
    }
}
