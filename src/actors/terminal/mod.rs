//! Terminals: one [`Terminal`] actor per shell in a PTY, the [`TerminalRegistry`] that owns the
//! map of them, and the WebSocket [`client`] loop that attaches a browser to one.
//!
//! - Output: a task reads the PTY master (an `AsyncFd`, never a blocking read) and hands each
//!   chunk to the terminal, which keeps it in the bounded scrollback and queues it for every
//!   attached client (a bounded queue each); the next chunk is read once every client took this
//!   one. A client whose queue stays full for 2 s is detached (its connection closes with 1013
//!   "try again later"; reconnecting repaints it from the scrollback): a client that stopped
//!   reading holds the shell and the other clients back for 2 s at most, once, while a fast
//!   program is held back the way a real terminal holds it back, by its writes blocking.
//! - Input: a client's bytes go through the actor (which notes the activity) to a writer task
//!   that owns the master's write half; when the shell does not read, that task waits, its
//!   queue fills and the client's socket stops being read (TCP back-pressure).
//! - End: SIGHUP to the tree and the master closed (a hangup), then SIGKILL after a grace,
//!   the cgroup killed and removed; clients get `{"type":"exit",...}` and a close.

pub mod client;
mod pty_io;
mod registry;
#[allow(clippy::module_inception)]
mod terminal;

use serde::Serialize;
use utoipa::ToSchema;

pub use self::registry::{
    EndProjectTerminals, EndTerminal, FindTerminal, ListTerminals, SessionLink, ShutdownTerminals, StartError,
    StartTerminal, TerminalRegistry, Workspace,
};
pub use self::terminal::{
    Attach, Attached, ClientQueue, Describe, Detach, End, Input, Outgoing, Resize, Terminal, CLIENT_QUEUE,
    SLOW_CLIENT_WAIT,
};
use crate::domain::ids::{ProjectId, SessionId, TerminalId};
use crate::domain::terminal::TerminalStatus;

/// A terminal as the API shows it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TerminalView {
    /// UUID.
    #[schema(value_type = String)]
    pub id: TerminalId,
    /// The session whose workspace it runs in; `null` for a project's terminal.
    #[schema(value_type = Option<String>)]
    pub session_id: Option<SessionId>,
    #[schema(value_type = String)]
    pub project_id: ProjectId,
    /// The folder the shell started in.
    pub folder: String,
    /// The shell's executable.
    pub shell: String,
    /// The pid of the process started (bubblewrap's when sandboxed).
    pub pid: i32,
    pub cols: u16,
    pub rows: u16,
    pub status: TerminalStatus,
    /// Whether it runs in the project's OS sandbox.
    pub sandboxed: bool,
    /// WebSocket clients attached right now.
    pub clients: usize,
    pub started_at: String,
}
