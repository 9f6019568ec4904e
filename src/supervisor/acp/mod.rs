//! The Agent Client Protocol (JSON-RPC 2.0 over stdio), as a client: Gemini CLI (`gemini
//! --acp`) and any ACP agent the `acp_agents` setting defines. `initialize` -> `session/new`
//! (or `session/load` to resume) is the handshake; a user turn is `session/prompt`, whose
//! answer ends it; `session/cancel` interrupts; `session/request_permission` is decided by
//! Conduit's rules (a shell command as `Bash`, an edit as `Edit`/`Write` per file, ...).
//!
//! The client advertises no file system and no terminal: the agent works on its own files
//! itself, inside Conduit's sandbox.

use std::collections::HashMap;

use serde_json::{json, Value};

use super::adapter::{AgentAdapter, Ask, Command, Decoded, Handshake, Outgoing, Read};
use super::jsonrpc::{self, Dialect, Message};

mod kept;
mod subjects;
use crate::domain::agent_events::{AgentEvent, TurnStatus};
use crate::domain::agent_kind::AgentKind;
use crate::domain::decision::{DecisionPoint, ToolCall, Verdict};
use crate::domain::launch::CliOptions;
use crate::domain::offers::{ModelChoice, Offers};
use crate::protocol::incoming::{Kind, TurnResult};
use subjects::{locations, model_choice, tool_input, tool_name, usage, with_path};

const D: Dialect = Dialect::V2;
/// The protocol version this client speaks.
const PROTOCOL_VERSION: u64 = 1;
/// Ids of the adapter's own requests (prompts), apart from the supervisor's.
const PROMPT_ID_PREFIX: &str = "prompt-";
/// Requests whose options are remembered until answered, and tool calls until finished, at most.
const MAX_OPEN: usize = 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Initialize,
    Session,
    Done,
}

#[derive(Debug)]
pub struct AcpClient {
    kind: AgentKind,
    cwd: String,
    session_id: Option<String>,
    loading: bool,
    step: Step,
    session_request: Option<String>,
    /// A loaded session's history is replayed as updates until the first new prompt: stored,
    /// but not relayed again as news.
    replaying: bool,
    prompts: u64,
    interrupting: bool,
    turn_text: String,
    /// The modes the agent offers (`session/set_mode`).
    modes: Vec<String>,
    /// The models it offers (`session/set_model`); empty: it named none.
    models: Vec<ModelChoice>,
    /// Permission requests' options, by request id, for their answers.
    options: HashMap<String, Vec<(String, String)>>,
    /// Tool names by tool call id, for their updates.
    tools: HashMap<String, String>,
}

impl AcpClient {
    pub fn new(kind: AgentKind, options: &CliOptions, cwd: &str) -> AcpClient {
        AcpClient {
            kind,
            cwd: cwd.to_string(),
            loading: options.resume_session_id.is_some(),
            session_id: options.resume_session_id.clone(),
            step: Step::Initialize,
            session_request: None,
            replaying: false,
            prompts: 0,
            interrupting: false,
            turn_text: String::new(),
            modes: Vec::new(),
            models: Vec::new(),
            options: HashMap::new(),
            tools: HashMap::new(),
        }
    }

    fn session_request(&mut self, id: &str) -> String {
        self.session_request = Some(id.to_string());
        match (&self.session_id, self.loading) {
            (Some(session), true) => {
                self.replaying = true;
                let params = json!({ "sessionId": session, "cwd": self.cwd, "mcpServers": [] });
                jsonrpc::request(D, id, "session/load", params)
            }
            _ => jsonrpc::request(D, id, "session/new", json!({ "cwd": self.cwd, "mcpServers": [] })),
        }
    }

    fn prompt_answered(&mut self, outcome: &Result<Value, String>) -> (Kind, Vec<AgentEvent>) {
        let mut events = Vec::new();
        let text = std::mem::take(&mut self.turn_text);
        if !text.is_empty() {
            events.push(AgentEvent::AssistantMessage { text: text.clone(), item_id: None });
        }
        let (status, subtype) = match outcome {
            Ok(answer) => {
                let reason = answer.get("stopReason").and_then(Value::as_str).unwrap_or("end_turn").to_string();
                let status = match reason.as_str() {
                    "end_turn" => TurnStatus::Completed,
                    "cancelled" => TurnStatus::Interrupted,
                    "max_tokens" | "max_turn_requests" => TurnStatus::Limited,
                    "refusal" => TurnStatus::Refused,
                    _ => TurnStatus::Failed,
                };
                (status, reason)
            }
            Err(e) => {
                events.push(AgentEvent::TurnError { message: e.clone() });
                let status = if self.interrupting { TurnStatus::Interrupted } else { TurnStatus::Failed };
                (status, "error".to_string())
            }
        };
        self.interrupting = false;
        let (input, output) = outcome.as_ref().ok().map(usage).unwrap_or((None, None));
        let text = (!text.is_empty()).then_some(text);
        events.push(AgentEvent::TurnResult {
            status,
            text: text.clone(),
            input_tokens: input,
            output_tokens: output,
            cost_usd: None,
        });
        let result = TurnResult {
            subtype: Some(subtype),
            is_error: status.is_error(),
            total_cost_usd: None,
            input_tokens: input,
            output_tokens: output,
            cumulative_tokens: None,
            session_id: self.session_id.clone(),
            text,
            api_error: None,
            api_error_status: None,
        };
        (Kind::Result(result), events)
    }

    fn on_update(&mut self, params: &Value) -> Vec<AgentEvent> {
        let update = params.get("update").unwrap_or(&Value::Null);
        let id = update.get("toolCallId").and_then(Value::as_str).map(str::to_string);
        match update.get("sessionUpdate").and_then(Value::as_str) {
            Some("agent_message_chunk") => {
                let text = update.pointer("/content/text").and_then(Value::as_str).unwrap_or("").to_string();
                // Gemini CLI announces a mode switch as a text chunk: not the model's words.
                if text.starts_with("[MODE_UPDATE]") {
                    return Vec::new();
                }
                self.turn_text.push_str(&text);
                vec![AgentEvent::AssistantDelta { text, item_id: None }]
            }
            Some("tool_call") => {
                let tool = tool_name(update);
                if let Some(id) = &id {
                    if self.tools.len() < MAX_OPEN {
                        self.tools.insert(id.clone(), tool.clone());
                    }
                }
                vec![AgentEvent::ToolStarted { tool_use_id: id, tool, input: tool_input(update) }]
            }
            Some("tool_call_update") => {
                let status = update.get("status").and_then(Value::as_str).map(str::to_string);
                if !matches!(status.as_deref(), Some("completed" | "failed")) {
                    return Vec::new();
                }
                let tool = id.as_ref().and_then(|id| self.tools.remove(id));
                let output = update.get("rawOutput").or_else(|| update.get("content")).cloned().unwrap_or(Value::Null);
                let is_error = status.as_deref() == Some("failed");
                vec![AgentEvent::ToolFinished { tool_use_id: id, tool, output, is_error, status }]
            }
            _ => Vec::new(),
        }
    }

    fn on_request(&mut self, id: &str, method: &str, params: &Value) -> Ask {
        if method != "session/request_permission" {
            let why = format!("Conduit offers no {method}: the agent works on its files itself");
            return Ask::Answered(jsonrpc::error(D, id, jsonrpc::METHOD_NOT_FOUND, &why));
        }
        let choices = params
            .get("options")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|o| Some((o.get("optionId")?.as_str()?.to_string(), o.get("kind")?.as_str()?.to_string())))
            .collect();
        if self.options.len() < MAX_OPEN {
            self.options.insert(id.to_string(), choices);
        }
        let tool_call = params.get("toolCall").unwrap_or(&Value::Null);
        let tool_use_id = tool_call.get("toolCallId").and_then(Value::as_str).map(str::to_string);
        let call = |tool: String, input: Value| ToolCall {
            request_id: id.to_string(),
            point: DecisionPoint::AcpPermission,
            tool_name: tool,
            input,
            tool_use_id: tool_use_id.clone(),
            agent: Some(self.kind.clone()),
        };
        let tool = tool_name(tool_call);
        let input = tool_input(tool_call);
        let paths = locations(tool_call);
        if let Some(id) = &tool_use_id {
            if !self.tools.contains_key(id) && self.tools.len() < MAX_OPEN {
                self.tools.insert(id.clone(), tool.clone());
            }
        }
        let calls = match tool.as_str() {
            // One call per file an edit touches, each with its own path.
            "Edit" | "Write" if paths.len() > 1 => {
                paths.into_iter().map(|p| call(tool.clone(), with_path(&input, &p))).collect()
            }
            _ => vec![call(tool, input)],
        };
        Ask::ToolCalls(calls)
    }
}

impl AgentAdapter for AcpClient {
    fn kind(&self) -> AgentKind {
        self.kind.clone()
    }

    fn offers(&self) -> Offers {
        match self.step {
            Step::Done => Offers::reported(self.models.clone(), self.modes.clone()),
            Step::Initialize | Step::Session => Offers::defaults(&self.kind),
        }
    }

    fn handshake(&mut self, request_id: &str) -> String {
        let params = json!({
            "protocolVersion": PROTOCOL_VERSION,
            "clientCapabilities": { "fs": { "readTextFile": false, "writeTextFile": false }, "terminal": false },
            "clientInfo": { "name": "conduit", "version": env!("CARGO_PKG_VERSION") },
        });
        jsonrpc::request(D, request_id, "initialize", params)
    }

    fn handshake_answered(&mut self, outcome: &Result<Value, String>, next_id: &str) -> Handshake {
        match (self.step, outcome) {
            (Step::Initialize, Ok(answer)) => {
                let can_load = answer.pointer("/agentCapabilities/loadSession").and_then(Value::as_bool) == Some(true);
                if self.loading && !can_load {
                    return Handshake::Failed(format!(
                        "{} cannot resume a session (no loadSession capability)",
                        self.kind
                    ));
                }
                self.step = Step::Session;
                Handshake::Next(vec![self.session_request(next_id)])
            }
            (Step::Initialize, Err(e)) => Handshake::Failed(format!("{} refused initialize: {e}", self.kind)),
            (Step::Session, Ok(_)) if self.session_id.is_some() => {
                self.step = Step::Done;
                Handshake::Ready
            }
            (Step::Session, Ok(_)) => Handshake::Failed(format!("{} started no session", self.kind)),
            (Step::Session, Err(e)) if self.loading => Handshake::Failed(format!(
                "{} could not load session {:?}: {e}",
                self.kind,
                self.session_id.as_deref().unwrap_or("")
            )),
            (Step::Session, Err(e)) => Handshake::Failed(format!("{} could not start a session: {e}", self.kind)),
            (Step::Done, _) => Handshake::Ready,
        }
    }

    fn user_turn(&mut self, content: &str) -> Result<String, String> {
        let session = self.session_id.clone().ok_or_else(|| format!("{} has no session yet", self.kind))?;
        self.replaying = false;
        self.prompts += 1;
        self.turn_text.clear();
        let params = json!({ "sessionId": session, "prompt": [{ "type": "text", "text": content }] });
        Ok(jsonrpc::request(D, &format!("{PROMPT_ID_PREFIX}{}", self.prompts), "session/prompt", params))
    }

    fn command(&mut self, command: &Command, request_id: &str) -> Result<Outgoing, String> {
        let session = self.session_id.clone().unwrap_or_default();
        match command {
            Command::Interrupt => {
                self.interrupting = true;
                Ok(Outgoing::Done(Some(jsonrpc::notification(D, "session/cancel", json!({ "sessionId": session })))))
            }
            Command::SetPermissionMode(mode) if self.modes.contains(mode) => {
                let params = json!({ "sessionId": session, "modeId": mode });
                Ok(Outgoing::Request(jsonrpc::request(D, request_id, "session/set_mode", params)))
            }
            Command::SetPermissionMode(mode) => Err(format!(
                "{} offers no mode {mode:?} (its modes: {})",
                self.kind,
                if self.modes.is_empty() { "none".to_string() } else { self.modes.join(", ") }
            )),
            Command::SetModel(model) if self.models.is_empty() || self.models.iter().any(|m| &m.value == model) => {
                let params = json!({ "sessionId": session, "modelId": model });
                Ok(Outgoing::Request(jsonrpc::request(D, request_id, "session/set_model", params)))
            }
            Command::SetModel(model) => {
                let named: Vec<&str> = self.models.iter().map(|m| m.value.as_str()).collect();
                Err(format!("{} offers no model {model:?} (its models: {})", self.kind, named.join(", ")))
            }
        }
    }

    fn decode(&mut self, line: &str) -> Read {
        let message = jsonrpc::read(line);
        let (decoded, kind, events) = match &message {
            Message::Response { id, outcome } if id.starts_with(PROMPT_ID_PREFIX) => {
                let (kind, events) = self.prompt_answered(outcome);
                (Decoded::Event, kind, events)
            }
            Message::Response { id, outcome } => {
                let mut kind = Kind::ControlResponse { request_id: id.clone(), outcome: outcome.clone() };
                if self.session_request.as_deref() == Some(id.as_str()) {
                    self.session_request = None;
                    if let Ok(answer) = outcome {
                        if let Some(session) = answer.get("sessionId").and_then(Value::as_str) {
                            self.session_id = Some(session.to_string());
                        }
                        let modes = answer.pointer("/modes/availableModes").and_then(Value::as_array);
                        self.modes = modes
                            .into_iter()
                            .flatten()
                            .filter_map(|m| m.get("id").and_then(Value::as_str).map(str::to_string))
                            .collect();
                        let models = answer.pointer("/models/availableModels").and_then(Value::as_array);
                        self.models = models.into_iter().flatten().filter_map(model_choice).collect();
                        let mode = answer.pointer("/modes/currentModeId").and_then(Value::as_str).map(str::to_string);
                        let model =
                            answer.pointer("/models/currentModelId").and_then(Value::as_str).map(str::to_string);
                        kind = Kind::SystemInit { session_id: self.session_id.clone(), model, permission_mode: mode };
                    }
                }
                (Decoded::Answer { request_id: id.clone(), outcome: outcome.clone() }, kind, Vec::new())
            }
            Message::Request { id, method, params } => {
                // A call that asks first is announced by its permission request alone.
                let tool_call = params.get("toolCall").unwrap_or(&Value::Null);
                let call_id = tool_call.get("toolCallId").and_then(Value::as_str).map(str::to_string);
                let announced = call_id.as_ref().is_some_and(|c| self.tools.contains_key(c));
                let ask = self.on_request(id, method, params);
                let events = match (method == "session/request_permission", announced) {
                    (true, false) => vec![AgentEvent::ToolStarted {
                        tool_use_id: call_id,
                        tool: tool_name(tool_call),
                        input: tool_input(tool_call),
                    }],
                    _ => Vec::new(),
                };
                let kind =
                    Kind::ControlRequest { request_id: id.clone(), subtype: method.clone(), request: params.clone() };
                (Decoded::Ask { request_id: id.clone(), ask }, kind, events)
            }
            Message::Notification { method, params } if method == "session/update" && !self.replaying => {
                (Decoded::Event, Kind::Other, self.on_update(params))
            }
            Message::Notification { .. } | Message::Invalid(_) => (Decoded::Event, Kind::Other, Vec::new()),
        };
        let mut msg = jsonrpc::incoming(&message, kind);
        if self.replaying && matches!(message, Message::Notification { .. }) {
            // Stored as history, not relayed as news.
            msg.message_type = "session/replay".to_string();
        }
        Read { decoded, msg, events }
    }

    fn answer(&mut self, request_id: &str, _calls: &[ToolCall], verdict: Option<Verdict>) -> String {
        let choices = self.options.remove(request_id).unwrap_or_default();
        let allow = verdict.is_some_and(|v| v.allow);
        let wanted: &[&str] = if allow { &["allow_once", "allow_always"] } else { &["reject_once", "reject_always"] };
        let chosen = wanted.iter().find_map(|w| choices.iter().find(|(_, kind)| kind == w)).map(|(id, _)| id.clone());
        let outcome = match chosen {
            Some(option) => json!({ "outcome": "selected", "optionId": option }),
            // No option to say it with: the request is cancelled, which never runs the tool.
            None => json!({ "outcome": "cancelled" }),
        };
        jsonrpc::result(D, request_id, json!({ "outcome": outcome }))
    }

    fn snapshot(&self) -> Value {
        self.kept()
    }

    fn restore(&mut self, state: &Value) {
        self.take_back(state)
    }
}

#[cfg(test)]
mod tests;
