//! Scheduled agents and their runs as they are stored and shown.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Whether an agent fires on its schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum AgentStatus {
    /// Fires on its schedule.
    Active,
    /// Paused on request; fires again once resumed.
    Paused,
    /// Failed too often in a row; fires again once resumed.
    Error,
}

text_enum!(AgentStatus, "agent status", {
    Active => "active",
    Paused => "paused",
    Error => "error",
});

/// What started a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum TriggerKind {
    /// The agent's schedule fired.
    Cron,
    /// `POST /api/agents/{id}/trigger`.
    Manual,
}

text_enum!(TriggerKind, "trigger", {
    Cron => "cron",
    Manual => "manual",
});

/// Where a run of an agent is, and how it ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ExecutionStatus {
    /// Waiting for its folder's lock.
    Queued,
    /// Its CLI runs.
    Running,
    /// The CLI exited with status 0.
    Success,
    /// The CLI exited otherwise, could not start, or refused the handshake (or the service
    /// restarted under the run).
    Failure,
    /// Ended after passing the agent's timeout.
    Timeout,
    /// Ended on request (or by the agent's deletion, or the shutdown).
    Cancelled,
    /// A scheduled fire that did not run, or a run that did not go again after a usage limit: a
    /// budget covering it was spent (`error` says which).
    Skipped,
    /// The run met a usage limit (`error` says which): it goes back to `queued` at
    /// `resumes_at` and runs again. Neither a failure nor an end.
    WaitingForLimit,
}

text_enum!(ExecutionStatus, "execution status", {
    Queued => "queued",
    Running => "running",
    Success => "success",
    Failure => "failure",
    Timeout => "timeout",
    Cancelled => "cancelled",
    Skipped => "skipped",
    WaitingForLimit => "waiting_for_limit",
});

impl ExecutionStatus {
    /// The statuses of a run the service is carrying out: a restart interrupts it.
    pub const LIVE: [ExecutionStatus; 2] = [ExecutionStatus::Queued, ExecutionStatus::Running];

    /// The statuses of a run that has not ended: the live ones, and a run waiting for a limit
    /// (which outlives a restart).
    pub const UNENDED: [ExecutionStatus; 3] =
        [ExecutionStatus::Queued, ExecutionStatus::Running, ExecutionStatus::WaitingForLimit];

    pub const fn is_live(self) -> bool {
        matches!(self, ExecutionStatus::Queued | ExecutionStatus::Running)
    }

    pub const fn has_ended(self) -> bool {
        !matches!(self, ExecutionStatus::Queued | ExecutionStatus::Running | ExecutionStatus::WaitingForLimit)
    }

    /// Counts towards the failures in a row that put an agent in `error`.
    pub const fn is_failure(self) -> bool {
        matches!(self, ExecutionStatus::Failure | ExecutionStatus::Timeout)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::check_text_enum;

    #[test]
    fn agent_statuses_round_trip_as_text() {
        check_text_enum(AgentStatus::ALL, &["active", "paused", "error"]);
    }

    #[test]
    fn triggers_round_trip_as_text() {
        check_text_enum(TriggerKind::ALL, &["cron", "manual"]);
    }

    #[test]
    fn execution_statuses_round_trip_as_text() {
        check_text_enum(
            ExecutionStatus::ALL,
            &["queued", "running", "success", "failure", "timeout", "cancelled", "skipped", "waiting_for_limit"],
        );
        for status in ExecutionStatus::ALL {
            assert_eq!(status.is_live(), ExecutionStatus::LIVE.contains(status), "{status}");
            assert_eq!(status.has_ended(), !ExecutionStatus::UNENDED.contains(status), "{status}");
            assert!(!status.is_failure() || status.has_ended(), "a failure has ended: {status}");
        }
        assert!(!ExecutionStatus::WaitingForLimit.is_failure() && !ExecutionStatus::WaitingForLimit.is_live());
    }

    #[test]
    fn unknown_stored_text_is_an_error() {
        assert!("postponed".parse::<ExecutionStatus>().is_err());
        assert!("waiting_for_limits".parse::<ExecutionStatus>().is_err());
        assert!("ACTIVE".parse::<AgentStatus>().is_err());
        assert_eq!("webhook".parse::<TriggerKind>().unwrap_err().what, "trigger");
    }
}
