//! Claude Code over stream-json: control requests and answers matched by `request_id`, the
//! `initialize` handshake registering a `PreToolUse` hook (so every tool call is decided by
//! Conduit), and `can_use_tool` / `hook_callback` requests answered from the rules. The wire
//! format itself lives in [`crate::protocol`].

use std::collections::HashMap;

use super::adapter::{AgentAdapter, Ask, Command, Decoded, Outgoing, Read, StatePath, Wire};
use crate::domain::agent_events::{AgentEvent, TurnStatus};
use crate::domain::agent_kind::AgentKind;
use crate::domain::decision::{ToolCall, Verdict};
use crate::domain::launch::CliOptions;
use crate::process::command::{stdio_args, websocket_args};
use crate::protocol::incoming::{self, normalize, Kind, TurnResult};
use crate::protocol::outgoing;
use crate::protocol::requests::{self, CliRequest};

/// Tool calls whose names are remembered until their results arrive, at most (a CLI that
/// never reports results cannot grow this without bound).
const MAX_OPEN_TOOLS: usize = 1024;

#[derive(Debug, Default)]
pub struct ClaudeCode {
    /// An interrupt was asked for: the turn's `error_during_execution` result is its effect.
    interrupting: bool,
    /// Tool names by `tool_use_id`, for the results (which do not repeat them).
    open_tools: HashMap<String, String>,
}

/// The CLI's command line.
pub fn arguments(options: &CliOptions, wire: &Wire) -> Vec<String> {
    match wire {
        Wire::Stdio => stdio_args(options),
        Wire::WebSocket { url } => websocket_args(options, url),
    }
}

/// `~/.claude/` (settings, transcripts, todos) and `~/.claude.json` (its global config).
pub fn state_paths(home: &std::path::Path) -> Vec<StatePath> {
    vec![StatePath::Folder(home.join(".claude")), StatePath::File(home.join(".claude.json"))]
}

impl ClaudeCode {
    fn result_event(&mut self, r: &TurnResult) -> AgentEvent {
        let status = match r.subtype.as_deref() {
            _ if !r.is_error => TurnStatus::Completed,
            Some("error_during_execution") if self.interrupting => TurnStatus::Interrupted,
            Some(s) if s.starts_with("error_max") => TurnStatus::Limited,
            _ => TurnStatus::Failed,
        };
        self.interrupting = false;
        AgentEvent::TurnResult {
            status,
            text: r.text.clone(),
            input_tokens: r.input_tokens,
            output_tokens: r.output_tokens,
            cost_usd: r.total_cost_usd,
        }
    }
}

impl AgentAdapter for ClaudeCode {
    fn kind(&self) -> AgentKind {
        AgentKind::Claude
    }

    fn handshake(&mut self, request_id: &str) -> String {
        outgoing::initialize(request_id)
    }

    fn user_turn(&mut self, content: &str) -> Result<String, String> {
        Ok(outgoing::user_turn(content))
    }

    fn command(&mut self, command: &Command, request_id: &str) -> Result<Outgoing, String> {
        let line = match command {
            Command::Interrupt => {
                self.interrupting = true;
                outgoing::interrupt(request_id)
            }
            Command::SetModel(model) => outgoing::set_model(request_id, model),
            Command::SetPermissionMode(mode) => outgoing::set_permission_mode(request_id, mode),
        };
        Ok(Outgoing::Request(line))
    }

    fn decode(&mut self, line: &str) -> Read {
        let msg = incoming::parse(line);
        let decoded = match &msg.kind {
            Kind::ControlResponse { request_id, outcome } => {
                Decoded::Answer { request_id: request_id.clone(), outcome: outcome.clone() }
            }
            Kind::ControlRequest { request_id, subtype, request } => {
                let ask = match requests::classify(request_id, subtype, request) {
                    CliRequest::Decide(call) => Ask::ToolCalls(vec![call]),
                    CliRequest::Answer(line) => Ask::Answered(line),
                };
                Decoded::Ask { request_id: request_id.clone(), ask }
            }
            Kind::ControlCancel { request_id } => Decoded::Withdrawn { request_id: request_id.clone() },
            _ => Decoded::Event,
        };
        let events = match &msg.kind {
            Kind::Result(result) => vec![self.result_event(result)],
            Kind::Other => {
                let open = &self.open_tools;
                let events = normalize::events(&msg.message_type, line, |id| open.get(id).cloned());
                for event in &events {
                    match event {
                        AgentEvent::ToolStarted { tool_use_id: Some(id), tool, .. }
                            if self.open_tools.len() < MAX_OPEN_TOOLS =>
                        {
                            self.open_tools.insert(id.clone(), tool.clone());
                        }
                        AgentEvent::ToolFinished { tool_use_id: Some(id), .. } => {
                            self.open_tools.remove(id);
                        }
                        _ => {}
                    }
                }
                events
            }
            _ => Vec::new(),
        };
        Read { decoded, msg, events }
    }

    fn answer(&mut self, request_id: &str, calls: &[ToolCall], verdict: Option<Verdict>) -> String {
        // One tool call per request on this protocol.
        match calls.first() {
            Some(call) => requests::answer(call, verdict),
            None => outgoing::control_error(request_id, "no tool call to decide"),
        }
    }
}
