//! Claude Code over stream-json: control requests and answers matched by `request_id`, the
//! `initialize` handshake registering a `PreToolUse` hook (so every tool call is decided by
//! Conduit), and `can_use_tool` / `hook_callback` requests answered from the rules. The wire
//! format itself lives in [`crate::protocol`].

use super::adapter::{AgentAdapter, Ask, Command, Decoded, StatePath, Wire};
use crate::domain::decision::{ToolCall, Verdict};
use crate::domain::launch::CliOptions;
use crate::process::command::{stdio_args, websocket_args};
use crate::protocol::incoming::{self, Incoming, Kind};
use crate::protocol::outgoing;
use crate::protocol::requests::{self, CliRequest};

#[derive(Debug, Default, Clone, Copy)]
pub struct ClaudeCode;

impl AgentAdapter for ClaudeCode {
    fn arguments(&self, options: &CliOptions, wire: &Wire) -> Vec<String> {
        match wire {
            Wire::Stdio => stdio_args(options),
            Wire::WebSocket { url } => websocket_args(options, url),
        }
    }

    /// `~/.claude/` (settings, transcripts, todos) and `~/.claude.json` (its global config).
    fn state_paths(&self, home: &std::path::Path) -> Vec<StatePath> {
        vec![StatePath::Folder(home.join(".claude")), StatePath::File(home.join(".claude.json"))]
    }

    fn handshake(&mut self, request_id: &str) -> String {
        outgoing::initialize(request_id)
    }

    fn user_turn(&mut self, content: &str) -> String {
        outgoing::user_turn(content)
    }

    fn command(&mut self, command: &Command, request_id: &str) -> String {
        match command {
            Command::Interrupt => outgoing::interrupt(request_id),
            Command::SetModel(model) => outgoing::set_model(request_id, model),
            Command::SetPermissionMode(mode) => outgoing::set_permission_mode(request_id, mode),
        }
    }

    fn decode(&mut self, line: &str) -> (Decoded, Incoming) {
        let msg = incoming::parse(line);
        let decoded = match &msg.kind {
            Kind::ControlResponse { request_id, outcome } => {
                Decoded::Answer { request_id: request_id.clone(), outcome: outcome.clone() }
            }
            Kind::ControlRequest { request_id, subtype, request } => {
                let ask = match requests::classify(request_id, subtype, request) {
                    CliRequest::Decide(call) => Ask::ToolCall(call),
                    CliRequest::Answer(line) => Ask::Answered(line),
                };
                Decoded::Ask { request_id: request_id.clone(), ask }
            }
            Kind::ControlCancel { request_id } => Decoded::Withdrawn { request_id: request_id.clone() },
            _ => Decoded::Event,
        };
        (decoded, msg)
    }

    fn answer(&mut self, call: &ToolCall, verdict: Option<Verdict>) -> String {
        requests::answer(call, verdict)
    }
}
