//! Claude Code over stream-json: control requests and answers matched by `request_id`, the
//! `initialize` handshake registering a `PreToolUse` hook (so every tool call is decided by
//! Conduit), and `can_use_tool` / `hook_callback` requests answered from the rules. The wire
//! format itself lives in [`crate::protocol`].

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::Value;

use super::adapter::{AgentAdapter, Ask, Command, Decoded, Handshake, Outgoing, Read, StatePath, Wire};
use crate::domain::agent_events::{AgentEvent, TurnStatus};
use crate::domain::agent_kind::AgentKind;
use crate::domain::decision::{ToolCall, Verdict};
use crate::domain::launch::CliOptions;
use crate::domain::offers::{ModelChoice, Offers};
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
    /// The models the `initialize` answer listed (`None` before it, or when it lists none).
    models: Option<Vec<ModelChoice>>,
}

/// The `models` of Claude Code's `initialize` answer:
/// `[{"value":"sonnet","displayName":"Sonnet","description":"..."}]`. Entries without a value
/// are skipped; older CLIs send no list at all.
fn models_of(answer: &Value) -> Option<Vec<ModelChoice>> {
    let listed = answer.get("models")?.as_array()?;
    let models: Vec<ModelChoice> = listed
        .iter()
        .filter_map(|m| {
            let value = m.get("value")?.as_str()?.to_string();
            let name = m.get("displayName").and_then(Value::as_str).unwrap_or(&value).to_string();
            let description = m.get("description").and_then(Value::as_str).map(str::to_string);
            Some(ModelChoice { value, name, description })
        })
        .collect();
    (!models.is_empty()).then_some(models)
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
            Some("error_max_budget_usd") => TurnStatus::BudgetExhausted,
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

    fn handshake_answered(&mut self, outcome: &Result<Value, String>, _next_id: &str) -> Handshake {
        match outcome {
            Ok(answer) => {
                self.models = models_of(answer);
                Handshake::Ready
            }
            Err(e) => Handshake::Failed(format!("the CLI refused initialize: {e}")),
        }
    }

    fn offers(&self) -> Offers {
        match &self.models {
            // Claude Code lists no modes: its published set is what it takes.
            Some(models) => Offers::reported(models.clone(), Offers::defaults(&AgentKind::Claude).modes),
            None => Offers::defaults(&AgentKind::Claude),
        }
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

    fn snapshot(&self) -> Value {
        let kept =
            Kept { interrupting: self.interrupting, open_tools: self.open_tools.clone(), models: self.models.clone() };
        serde_json::to_value(kept).unwrap_or(Value::Null)
    }

    fn restore(&mut self, state: &Value) {
        if let Ok(kept) = Kept::deserialize(state) {
            self.interrupting = kept.interrupting;
            self.open_tools = kept.open_tools;
            self.models = kept.models;
        }
    }
}

/// What [`ClaudeCode`] keeps across a restart of the service.
#[derive(serde::Serialize, serde::Deserialize)]
struct Kept {
    interrupting: bool,
    open_tools: HashMap<String, String>,
    models: Option<Vec<ModelChoice>>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_models_come_from_the_initialize_answer() {
        let mut cli = ClaudeCode::default();
        assert_eq!(cli.offers().source, crate::domain::offers::OffersSource::Defaults);
        let answer = json!({"commands": [], "models": [
            {"value": "sonnet", "displayName": "Sonnet", "description": "Sonnet 5.5"},
            {"displayName": "no value"},
            {"value": "opus"}
        ]});
        assert_eq!(cli.handshake_answered(&Ok(answer), "x"), Handshake::Ready);
        let offers = cli.offers();
        let values: Vec<&str> = offers.models.iter().map(|m| m.value.as_str()).collect();
        assert_eq!(values, ["sonnet", "opus"]);
        assert_eq!(
            (offers.models[1].name.as_str(), offers.models[0].description.as_deref()),
            ("opus", Some("Sonnet 5.5"))
        );
        assert!(offers.modes.iter().any(|m| m == "auto") && !offers.modes.iter().any(|m| m == "delegate"));
    }

    #[test]
    fn an_answer_without_models_keeps_the_defaults() {
        let mut cli = ClaudeCode::default();
        cli.handshake_answered(&Ok(json!({"commands": []})), "x");
        assert_eq!(cli.offers(), Offers::defaults(&AgentKind::Claude));
    }
}
