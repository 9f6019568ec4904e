//! Commands and background processes started in a workspace through the API: whose they are,
//! their kinds and statuses, and the names of exec contexts. Plain data.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::ids::{ProjectId, SessionId};

/// Whose workspace a command runs in: a session's (it ends with the session) or a project's
/// folder (it ends when the project is deleted, or on shutdown).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Owner {
    Session(SessionId),
    Project(ProjectId),
}

impl Owner {
    pub fn as_str(&self) -> &str {
        match self {
            Owner::Session(id) => id.as_str(),
            Owner::Project(id) => id.as_str(),
        }
    }

    pub fn session(&self) -> Option<&SessionId> {
        match self {
            Owner::Session(id) => Some(id),
            Owner::Project(_) => None,
        }
    }

    /// "session" or "project", as messages say it.
    pub fn kind(&self) -> &'static str {
        match self {
            Owner::Session(_) => "session",
            Owner::Project(_) => "project",
        }
    }
}

/// A command answered when it ends (`exec`), or a background process answered at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProcessKind {
    Exec,
    Background,
}

text_enum!(ProcessKind, "process kind", {
    Exec => "exec",
    Background => "background",
});

/// Where a process is in its life. Only `running` is live.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProcessStatus {
    Running,
    /// Ended on its own (any exit code).
    Exited,
    /// Ended by a kill, a timeout, its session's end or shutdown.
    Killed,
    /// Still running when the service stopped without ending it (a crash); ended at restart.
    Lost,
}

text_enum!(ProcessStatus, "process status", {
    Running => "running",
    Exited => "exited",
    Killed => "killed",
    Lost => "lost",
});

impl ProcessStatus {
    pub const fn is_live(self) -> bool {
        matches!(self, ProcessStatus::Running)
    }
}

/// Why a process was ended, when Conduit ended it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndReason {
    Requested,
    Timeout,
    OwnerEnded,
    Shutdown,
}

impl EndReason {
    pub const fn as_str(self) -> &'static str {
        match self {
            EndReason::Requested => "requested",
            EndReason::Timeout => "timeout",
            EndReason::OwnerEnded => "owner_ended",
            EndReason::Shutdown => "shutdown",
        }
    }
}

/// The name of an exec context: 1-64 of `A-Z a-z 0-9 _ . -`, not starting with a dot.
pub fn context_name(raw: &str) -> Result<String, String> {
    let ok = !raw.is_empty()
        && raw.len() <= 64
        && !raw.starts_with('.')
        && raw.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'));
    if ok {
        Ok(raw.to_string())
    } else {
        Err(format!("`context` must be 1-64 of A-Z, a-z, 0-9, `_`, `.`, `-` (not starting with `.`), got {raw:?}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::check_text_enum;

    #[test]
    fn text_forms_agree() {
        check_text_enum(ProcessKind::ALL, &["exec", "background"]);
        check_text_enum(ProcessStatus::ALL, &["running", "exited", "killed", "lost"]);
        assert!(ProcessStatus::Running.is_live() && !ProcessStatus::Lost.is_live());
    }

    #[test]
    fn context_names_are_plain_words() {
        assert_eq!(context_name("build-1.x_y"), Ok("build-1.x_y".to_string()));
        for bad in ["", ".hidden", "a/b", "../x", "a b", &"x".repeat(65)] {
            assert!(context_name(bad).is_err(), "{bad:?}");
        }
    }
}
