//! The seam for agent kinds: everything that differs between one agent CLI and another, behind
//! one trait. The supervisor ([`super::process`]) drives any adapter the same way: it spawns
//! the program with [`AgentAdapter::arguments`], sends [`AgentAdapter::handshake`] and waits
//! for its answer, hands every output line to [`AgentAdapter::decode`], matches answers to its
//! own requests by id, and answers every request of the CLI (tool calls through the permission
//! engine, the rest at once).
//!
//! Claude Code's stream-json ([`super::claude::ClaudeCode`]) is the first implementation. The
//! shape also fits JSON-RPC 2.0 agents (Codex `app-server`, the Agent Client Protocol): their
//! responses are [`Decoded::Answer`], their server requests (`requestApproval`,
//! `session/request_permission`) are [`Decoded::Ask`], and their notifications are
//! [`Decoded::Event`]s in the normalized vocabulary of [`Kind`].

use serde_json::Value;

use crate::domain::decision::{ToolCall, Verdict};
use crate::domain::launch::CliOptions;
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

/// What the CLI asks of Conduit; it waits for the answer.
#[derive(Debug, Clone)]
pub enum Ask {
    /// A tool call to allow or deny: the permission engine decides.
    ToolCall(ToolCall),
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

/// How one agent CLI is driven.
pub trait AgentAdapter: Send + 'static {
    /// The program's arguments (after the program itself).
    fn arguments(&self, options: &CliOptions, wire: &Wire) -> Vec<String>;

    /// Where the CLI keeps its own state under `home` (settings, transcripts): writable inside
    /// the sandbox, like the project folder.
    fn state_paths(&self, home: &std::path::Path) -> Vec<StatePath>;

    /// The first request, sent as soon as the CLI runs; it is ready once this is answered.
    fn handshake(&mut self, request_id: &str) -> String;

    /// A user turn.
    fn user_turn(&mut self, content: &str) -> String;

    /// A request of Conduit's own.
    fn command(&mut self, command: &Command, request_id: &str) -> String;

    /// Reads one output line: what the supervisor acts on, and the line's parsed form (its
    /// type, subtype and the fields conversations act on).
    fn decode(&mut self, line: &str) -> (Decoded, Incoming);

    /// The answer line for a tool call; `None` (no engine could decide) denies.
    fn answer(&mut self, call: &ToolCall, verdict: Option<Verdict>) -> String;
}
