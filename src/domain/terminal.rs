//! Terminals as plain data: their size, what ended them, the control messages of their
//! WebSocket, and the checks on what a client asks a terminal to start with.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Widest terminal accepted, in columns.
pub const MAX_COLS: u16 = 1000;
/// Tallest terminal accepted, in rows.
pub const MAX_ROWS: u16 = 500;
/// Environment variables a start may add.
pub const MAX_ENV_VARS: usize = 100;

/// A terminal's size in character cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Size {
    pub cols: u16,
    pub rows: u16,
}

impl Size {
    pub const DEFAULT: Size = Size { cols: 80, rows: 24 };

    /// A size within 1..=[`MAX_COLS`] by 1..=[`MAX_ROWS`], or the sentence saying why not.
    pub fn new(cols: i64, rows: i64) -> Result<Size, String> {
        let within = |v: i64, max: u16| (1..=i64::from(max)).contains(&v);
        if !within(cols, MAX_COLS) {
            return Err(format!("`cols` must be from 1 to {MAX_COLS}, got {cols}"));
        }
        if !within(rows, MAX_ROWS) {
            return Err(format!("`rows` must be from 1 to {MAX_ROWS}, got {rows}"));
        }
        Ok(Size { cols: cols as u16, rows: rows as u16 })
    }
}

/// Where a terminal is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum TerminalStatus {
    /// Its shell runs.
    Running,
    /// Asked to end: its shell got SIGHUP and is given a moment before SIGKILL.
    Ending,
}

text_enum!(TerminalStatus, "terminal status", {
    Running => "running",
    Ending => "ending",
});

/// Why a terminal ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum EndReason {
    /// Its shell exited on its own (`exit`, end of input, a signal from inside).
    Exited,
    /// `DELETE /api/terminals/{id}`.
    Closed,
    /// No input and no attached client for `terminal_idle_timeout_ms`.
    IdleTimeout,
    /// The session it belongs to ended.
    SessionEnded,
    /// Its project was deleted.
    ProjectDeleted,
    /// The service shut down.
    Shutdown,
}

text_enum!(EndReason, "terminal end reason", {
    Exited => "exited",
    Closed => "closed",
    IdleTimeout => "idle_timeout",
    SessionEnded => "session_ended",
    ProjectDeleted => "project_deleted",
    Shutdown => "shutdown",
});

/// A text frame from a WebSocket client. Binary frames are the keyboard; text frames are these.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum ClientControl {
    /// `{"type":"resize","cols":120,"rows":40}`.
    Resize { cols: i64, rows: i64 },
}

impl ClientControl {
    /// A text frame read as a control message, or the sentence the client gets back.
    pub fn parse(text: &str) -> Result<ClientControl, String> {
        serde_json::from_str(text).map_err(|e| {
            format!("text frames are control messages such as {{\"type\":\"resize\",\"cols\":120,\"rows\":40}}: {e}")
        })
    }
}

/// A text frame to a WebSocket client.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ServerControl {
    /// The terminal ended; the connection closes right after. `code`: the shell's exit status
    /// (`null` when it was killed by a signal, then named in `signal`).
    Exit { code: Option<i32>, signal: Option<i32>, reason: EndReason },
    /// A control message that could not be applied; the connection stays open.
    Error { message: String },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_forms_agree() {
        crate::domain::check_text_enum(TerminalStatus::ALL, &["running", "ending"]);
        crate::domain::check_text_enum(
            EndReason::ALL,
            &["exited", "closed", "idle_timeout", "session_ended", "project_deleted", "shutdown"],
        );
    }

    #[test]
    fn sizes_are_bounded() {
        assert_eq!(Size::new(120, 40), Ok(Size { cols: 120, rows: 40 }));
        assert_eq!(Size::new(1, 1), Ok(Size { cols: 1, rows: 1 }));
        assert!(Size::new(0, 24).is_err_and(|e| e.contains("cols")));
        assert!(Size::new(80, 501).is_err_and(|e| e.contains("rows")));
        assert!(Size::new(-1, 24).is_err());
        assert!(Size::new(i64::MAX, 24).is_err());
    }

    #[test]
    fn control_messages_parse_or_say_why_not() {
        assert_eq!(
            ClientControl::parse(r#"{"type":"resize","cols":120,"rows":40}"#),
            Ok(ClientControl::Resize { cols: 120, rows: 40 })
        );
        for bad in [r#"{"type":"resize","cols":"x","rows":1}"#, r#"{"type":"nope"}"#, "[]", "", r#"{"type":"resize"}"#]
        {
            assert!(ClientControl::parse(bad).is_err_and(|e| e.contains("resize")), "{bad}");
        }
        let exit = ServerControl::Exit { code: Some(0), signal: None, reason: EndReason::Exited };
        assert_eq!(
            serde_json::to_string(&exit).unwrap(),
            r#"{"type":"exit","code":0,"signal":null,"reason":"exited"}"#
        );
    }
}
