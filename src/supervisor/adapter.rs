//! The seam for agent kinds: everything that differs between one agent CLI and another, behind
//! one trait. The supervisor ([`super::process`]) drives any adapter the same way: it sends
//! [`AgentAdapter::handshake`] and each further step [`AgentAdapter::handshake_answered`] asks
//! for until the CLI is ready, hands every output line to [`AgentAdapter::decode`], matches
//! answers to its own requests by id, and answers every request of the CLI (tool calls through
//! the permission engine, the rest at once).
//!
//! Three implementations: Claude Code's stream-json ([`super::claude::ClaudeCode`]), Codex's
//! `app-server` JSON-RPC ([`super::codex::Codex`]) and the Agent Client Protocol
//! ([`super::acp::AcpClient`], Gemini CLI and any ACP agent the settings define). Whatever the
//! wire, a line decodes to what the supervisor acts on ([`Decoded`]), what conversations act on
//! ([`Incoming`]: the CLI's session id, a turn's result) and the normalized events it carries
//! ([`AgentEvent`]).

use serde_json::Value;

use crate::domain::agent_events::AgentEvent;
use crate::domain::agent_kind::AgentKind;
use crate::domain::decision::{ToolCall, Verdict};
use crate::domain::offers::Offers;
use crate::protocol::incoming::Incoming;
pub use crate::sandbox::fence::StatePath;

/// How the CLI reaches Conduit.
#[derive(Debug, Clone)]
pub enum Wire {
    /// Lines over the child's stdin and stdout.
    Stdio,
    /// The CLI connects to this WebSocket URL (Claude Code's `--sdk-url`).
    WebSocket { url: String },
}

/// A request Conduit makes of a running CLI (besides the handshake and user turns).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    Interrupt,
    SetModel(String),
    SetPermissionMode(String),
}

impl Command {
    /// Its name in logs and errors.
    pub fn name(&self) -> &'static str {
        match self {
            Command::Interrupt => "interrupt",
            Command::SetModel(_) => "set_model",
            Command::SetPermissionMode(_) => "set_permission_mode",
        }
    }
}

/// How a command goes to the CLI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outgoing {
    /// A request: the command is done when the CLI answers it (matched by id).
    Request(String),
    /// Nothing to wait for: a notification to write (or nothing, when the adapter applies the
    /// command itself, say a model for the next turn). Done once written.
    Done(Option<String>),
}

/// Where the handshake is after an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Handshake {
    /// The CLI takes turns now.
    Ready,
    /// Write these lines; the last is the next request (its id is the one the adapter was
    /// given), whose answer continues the handshake.
    Next(Vec<String>),
    /// The CLI cannot be used: why.
    Failed(String),
}

/// What the CLI asks of Conduit; it waits for the answer.
#[derive(Debug, Clone)]
pub enum Ask {
    /// Tool calls to allow or deny (one request may cover several: a patch touching several
    /// files); the permission engine decides each, and one denial denies the request.
    ToolCalls(Vec<ToolCall>),
    /// Anything else, answered at once with this line (never silence: an unanswered request
    /// blocks the CLI forever).
    Answered(String),
}

/// One output line, as the supervisor sees it.
#[derive(Debug)]
pub enum Decoded {
    /// The answer to one of Conduit's requests.
    Answer { request_id: String, outcome: Result<Value, String> },
    /// The CLI asks; `request_id` is what the answer must carry.
    Ask { request_id: String, ask: Ask },
    /// The CLI withdrew one of its requests: nothing may be sent for it.
    Withdrawn { request_id: String },
    /// Conversation content, for the conversation.
    Event,
}

/// A line, read.
#[derive(Debug)]
pub struct Read {
    pub decoded: Decoded,
    /// The line's type and subtype (as stored), and the fields conversations act on.
    pub msg: Incoming,
    /// What it says in the normalized vocabulary (often nothing: protocol plumbing).
    pub events: Vec<AgentEvent>,
}

impl Read {
    pub fn new(decoded: Decoded, msg: Incoming) -> Read {
        Read { decoded, msg, events: Vec::new() }
    }
}

/// How one agent CLI is driven: one value per process (it keeps the process's protocol state:
/// ids, the thread or session it talks in, the turn running).
pub trait AgentAdapter: Send + 'static {
    fn kind(&self) -> AgentKind;

    /// The first request, sent as soon as the CLI runs; it is ready once the handshake ends.
    fn handshake(&mut self, request_id: &str) -> String;

    /// The answer to the handshake's latest request: done, or the next step (whose request
    /// must carry `next_id`).
    fn handshake_answered(&mut self, outcome: &Result<Value, String>, _next_id: &str) -> Handshake {
        match outcome {
            Ok(_) => Handshake::Ready,
            Err(e) => Handshake::Failed(format!("the CLI refused initialize: {e}")),
        }
    }

    /// The models and permission modes this CLI said it takes (its kind's defaults until it
    /// says, or when its protocol has no such list).
    fn offers(&self) -> Offers {
        Offers::defaults(&self.kind())
    }

    /// The line starting a user turn, built when the turn is sent (the CLI is ready).
    fn user_turn(&mut self, content: &str) -> Result<String, String>;

    /// A request of Conduit's own; an error says why this agent cannot do it.
    fn command(&mut self, command: &Command, request_id: &str) -> Result<Outgoing, String>;

    /// Reads one output line.
    fn decode(&mut self, line: &str) -> Read;

    /// The answer line to request `request_id` about `calls`, given the verdict (the first
    /// denial, else the allow); `None` (no engine could decide) denies.
    fn answer(&mut self, request_id: &str, calls: &[ToolCall], verdict: Option<Verdict>) -> String;

    /// What this process's protocol state must keep across a restart of the service while the
    /// CLI runs on under its keeper (the thread or session it talks in, the turn running, what
    /// it said it offers). Stored with the session; `Null` when there is nothing to keep.
    fn snapshot(&self) -> Value {
        Value::Null
    }

    /// Continues from a [`AgentAdapter::snapshot`] after a restart: the handshake is long done.
    fn restore(&mut self, _state: &Value) {}
}
