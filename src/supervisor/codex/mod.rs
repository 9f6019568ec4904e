//! Codex through `codex app-server`: JSON-RPC over stdio without the `jsonrpc` member.
//! `initialize` -> `initialized` -> `thread/start` (or `thread/resume`) is the handshake; a user
//! turn is `turn/start` in that thread; the server's approval requests for commands and file
//! changes are decided by Conduit's rules (commands as `Bash`, files as `Write`/`Edit`).
//!
//! The protocol of the pinned version is what `codex app-server generate-json-schema` writes;
//! the shapes read here are the ones Conduit acts on, and anything else is stored as it came.

use std::collections::HashMap;

use serde_json::{json, Value};

use super::adapter::{AgentAdapter, Command, Decoded, Handshake, Outgoing, Read};
use super::jsonrpc::{self, Dialect, Message};

mod approvals;
mod kept;
use crate::domain::agent_events::{AgentEvent, TurnStatus};
use crate::domain::agent_kind::AgentKind;
use crate::domain::decision::{ToolCall, Verdict};
use crate::domain::launch::CliOptions;
use crate::protocol::incoming::{Kind, TurnResult};
use approvals::file_changes;

const D: Dialect = Dialect::Lite;
/// Ids of the adapter's own requests (turns), apart from the supervisor's.
const TURN_ID_PREFIX: &str = "turn-request-";
/// File changes remembered until their approval, at most.
const MAX_OPEN_CHANGES: usize = 256;

/// Every command asks unless Codex knows it as read-only (`ls`, `cat`, ...): the strictest
/// policy this version has. Conduit's sandbox (when on) is the containment, so Codex's own is
/// not nested inside it.
const APPROVAL_POLICY: &str = "untrusted";
const SANDBOX: &str = "danger-full-access";

/// The command line: the app-server on stdio.
pub fn arguments() -> Vec<String> {
    vec!["app-server".to_string()]
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Initialize,
    Thread,
    Done,
}

#[derive(Debug)]
pub struct Codex {
    cwd: String,
    /// The model for the next turn (a switch applies from then on).
    model: Option<String>,
    base_instructions: Option<String>,
    developer_instructions: Option<String>,
    /// The thread to resume, then the thread in use.
    thread_id: Option<String>,
    resuming: bool,
    step: Step,
    /// The request id of the handshake's thread request: its answer names the thread.
    thread_request: Option<String>,
    /// The running turn's id, once Codex named it.
    turn_id: Option<String>,
    turn_requests: u64,
    interrupting: bool,
    /// This turn's tokens so far (each model response's `last` usage, summed).
    turn_tokens: (i64, i64),
    turn_text: Option<String>,
    /// A file change item's files, from its `item/started`, for its approval request.
    changes: HashMap<String, Vec<(String, &'static str)>>,
}

impl Codex {
    pub fn new(options: &CliOptions, cwd: &str) -> Codex {
        Codex {
            cwd: cwd.to_string(),
            model: options.model.clone(),
            base_instructions: options.system_prompt.clone(),
            developer_instructions: options.append_system_prompt.clone(),
            resuming: options.resume_session_id.is_some(),
            thread_id: options.resume_session_id.clone(),
            step: Step::Initialize,
            thread_request: None,
            turn_id: None,
            turn_requests: 0,
            interrupting: false,
            turn_tokens: (0, 0),
            turn_text: None,
            changes: HashMap::new(),
        }
    }

    fn thread_request(&mut self, id: &str) -> String {
        self.thread_request = Some(id.to_string());
        let mut params = json!({
            "cwd": self.cwd,
            "approvalPolicy": APPROVAL_POLICY,
            "approvalsReviewer": "user",
            "sandbox": SANDBOX,
        });
        if let Some(model) = &self.model {
            params["model"] = json!(model);
        }
        match (&self.thread_id, self.resuming) {
            (Some(thread), true) => {
                params["threadId"] = json!(thread);
                jsonrpc::request(D, id, "thread/resume", params)
            }
            _ => {
                if let Some(text) = &self.base_instructions {
                    params["baseInstructions"] = json!(text);
                }
                if let Some(text) = &self.developer_instructions {
                    params["developerInstructions"] = json!(text);
                }
                jsonrpc::request(D, id, "thread/start", params)
            }
        }
    }

    /// The turn's end: the result every conversation acts on, and its normalized event.
    fn turn_ended(&mut self, status: TurnStatus, subtype: &str) -> (Kind, AgentEvent) {
        let status =
            if self.interrupting && status != TurnStatus::Completed { TurnStatus::Interrupted } else { status };
        self.interrupting = false;
        self.turn_id = None;
        let (input, output) = std::mem::take(&mut self.turn_tokens);
        let text = self.turn_text.take();
        let result = TurnResult {
            subtype: Some(subtype.to_string()),
            is_error: status.is_error(),
            total_cost_usd: None,
            input_tokens: Some(input),
            output_tokens: Some(output),
            cumulative_tokens: None,
            session_id: self.thread_id.clone(),
            text: text.clone(),
            api_error: None,
            api_error_status: None,
        };
        let event = AgentEvent::TurnResult {
            status,
            text,
            input_tokens: Some(input),
            output_tokens: Some(output),
            cost_usd: None,
        };
        (Kind::Result(result), event)
    }

    fn on_notification(&mut self, method: &str, params: &Value) -> (Kind, Vec<AgentEvent>) {
        let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_string);
        match method {
            "turn/started" => {
                self.turn_id = params.pointer("/turn/id").and_then(Value::as_str).map(str::to_string);
                (Kind::Other, Vec::new())
            }
            "item/agentMessage/delta" => {
                let event = AgentEvent::AssistantDelta {
                    text: text(params, "delta").unwrap_or_default(),
                    item_id: text(params, "itemId"),
                };
                (Kind::Other, vec![event])
            }
            "item/started" => (Kind::Other, self.item_started(params.get("item").unwrap_or(&Value::Null))),
            "item/completed" => (Kind::Other, self.item_completed(params.get("item").unwrap_or(&Value::Null))),
            "thread/tokenUsage/updated" => {
                let last = params.pointer("/tokenUsage/last");
                let count = |key: &str| last.and_then(|l| l.get(key)).and_then(Value::as_i64).unwrap_or(0);
                self.turn_tokens.0 += count("inputTokens");
                self.turn_tokens.1 += count("outputTokens");
                (Kind::Other, Vec::new())
            }
            "error" if params.get("willRetry").and_then(Value::as_bool) != Some(true) => {
                let message =
                    params.pointer("/error/message").and_then(Value::as_str).unwrap_or("Codex reported an error");
                (Kind::Other, vec![AgentEvent::TurnError { message: message.to_string() }])
            }
            "turn/completed" => {
                let turn = params.get("turn").unwrap_or(&Value::Null);
                let raw = turn.get("status").and_then(Value::as_str).unwrap_or("failed");
                let status = match raw {
                    "completed" => TurnStatus::Completed,
                    "interrupted" => TurnStatus::Interrupted,
                    _ => TurnStatus::Failed,
                };
                let mut events = Vec::new();
                if let Some(message) = turn.pointer("/error/message").and_then(Value::as_str) {
                    events.push(AgentEvent::TurnError { message: message.to_string() });
                }
                let (kind, event) = self.turn_ended(status, raw);
                events.push(event);
                (kind, events)
            }
            _ => (Kind::Other, Vec::new()),
        }
    }

    fn item_started(&mut self, item: &Value) -> Vec<AgentEvent> {
        let id = item.get("id").and_then(Value::as_str).map(str::to_string);
        let (tool, input) = match item.get("type").and_then(Value::as_str) {
            Some("commandExecution") => {
                ("Bash".to_string(), json!({ "command": item.get("command"), "cwd": item.get("cwd") }))
            }
            Some("fileChange") => {
                let files = file_changes(item);
                if let Some(id) = &id {
                    if self.changes.len() < MAX_OPEN_CHANGES {
                        self.changes.insert(id.clone(), files.clone());
                    }
                }
                let tool = if files.iter().all(|(_, t)| *t == "Write") { "Write" } else { "Edit" };
                (tool.to_string(), json!({ "changes": item.get("changes") }))
            }
            Some("mcpToolCall") => {
                let name = |k: &str| item.get(k).and_then(Value::as_str).unwrap_or("unknown").to_string();
                (
                    format!("mcp__{}__{}", name("server"), name("tool")),
                    item.get("arguments").cloned().unwrap_or(Value::Null),
                )
            }
            Some("dynamicToolCall") => (
                item.get("tool").and_then(Value::as_str).unwrap_or("unknown").to_string(),
                item.get("arguments").cloned().unwrap_or(Value::Null),
            ),
            Some("webSearch") => ("WebSearch".to_string(), json!({ "query": item.get("query") })),
            _ => return Vec::new(),
        };
        vec![AgentEvent::ToolStarted { tool_use_id: id, tool, input }]
    }

    fn item_completed(&mut self, item: &Value) -> Vec<AgentEvent> {
        let id = item.get("id").and_then(Value::as_str).map(str::to_string);
        let status = item.get("status").and_then(Value::as_str).map(str::to_string);
        let failed = matches!(status.as_deref(), Some("failed" | "declined"));
        let (tool, output, is_error) = match item.get("type").and_then(Value::as_str) {
            Some("agentMessage") => {
                let text = item.get("text").and_then(Value::as_str).unwrap_or("").to_string();
                self.turn_text = Some(text.clone());
                return vec![AgentEvent::AssistantMessage { text, item_id: id }];
            }
            Some("commandExecution") => {
                let exit = item.get("exitCode").and_then(Value::as_i64);
                (
                    "Bash",
                    json!({ "output": item.get("aggregatedOutput"), "exit_code": exit }),
                    failed || exit.is_some_and(|c| c != 0),
                )
            }
            Some("fileChange") => {
                if let Some(id) = &id {
                    self.changes.remove(id);
                }
                ("Edit", json!({ "changes": item.get("changes") }), failed)
            }
            Some("mcpToolCall") => ("mcp", json!({ "result": item.get("result"), "error": item.get("error") }), failed),
            Some("dynamicToolCall") => ("dynamic", json!({ "content": item.get("contentItems") }), failed),
            Some("webSearch") => ("WebSearch", json!({ "results": item.get("results") }), false),
            _ => return Vec::new(),
        };
        let tool = match tool {
            "mcp" | "dynamic" => None,
            named => Some(named.to_string()),
        };
        vec![AgentEvent::ToolFinished { tool_use_id: id, tool, output, is_error, status }]
    }
}

impl AgentAdapter for Codex {
    fn kind(&self) -> AgentKind {
        AgentKind::Codex
    }

    fn handshake(&mut self, request_id: &str) -> String {
        let info = json!({ "name": "conduit", "title": "Conduit", "version": env!("CARGO_PKG_VERSION") });
        jsonrpc::request(D, request_id, "initialize", json!({ "clientInfo": info }))
    }

    fn handshake_answered(&mut self, outcome: &Result<Value, String>, next_id: &str) -> Handshake {
        match (self.step, outcome) {
            (Step::Initialize, Ok(_)) => {
                self.step = Step::Thread;
                Handshake::Next(vec![
                    jsonrpc::notification(D, "initialized", Value::Null),
                    self.thread_request(next_id),
                ])
            }
            (Step::Initialize, Err(e)) => Handshake::Failed(format!("Codex refused initialize: {e}")),
            (Step::Thread, Ok(_)) if self.thread_id.is_some() => {
                self.step = Step::Done;
                Handshake::Ready
            }
            (Step::Thread, Ok(_)) => Handshake::Failed("Codex started no thread".to_string()),
            (Step::Thread, Err(e)) if self.resuming => Handshake::Failed(format!(
                "Codex could not resume thread {:?}: {e}",
                self.thread_id.as_deref().unwrap_or("")
            )),
            (Step::Thread, Err(e)) => Handshake::Failed(format!("Codex could not start a thread: {e}")),
            (Step::Done, _) => Handshake::Ready,
        }
    }

    fn user_turn(&mut self, content: &str) -> Result<String, String> {
        let thread = self.thread_id.clone().ok_or("Codex has no thread yet")?;
        self.turn_requests += 1;
        self.turn_tokens = (0, 0);
        self.turn_text = None;
        let mut params = json!({ "threadId": thread, "input": [{ "type": "text", "text": content }] });
        if let Some(model) = &self.model {
            params["model"] = json!(model);
        }
        Ok(jsonrpc::request(D, &format!("{TURN_ID_PREFIX}{}", self.turn_requests), "turn/start", params))
    }

    fn command(&mut self, command: &Command, request_id: &str) -> Result<Outgoing, String> {
        match command {
            Command::Interrupt => {
                let (Some(thread), Some(turn)) = (&self.thread_id, &self.turn_id) else {
                    // No turn running (or not yet named): nothing to stop.
                    return Ok(Outgoing::Done(None));
                };
                self.interrupting = true;
                let params = json!({ "threadId": thread, "turnId": turn });
                Ok(Outgoing::Request(jsonrpc::request(D, request_id, "turn/interrupt", params)))
            }
            Command::SetModel(model) => {
                self.model = Some(model.clone());
                Ok(Outgoing::Done(None))
            }
            Command::SetPermissionMode(_) => {
                Err("Codex has no permission modes: Conduit's rules decide every command it asks to run".to_string())
            }
        }
    }

    fn decode(&mut self, line: &str) -> Read {
        let message = jsonrpc::read(line);
        let (decoded, kind, events) = match &message {
            Message::Response { id, outcome } if id.starts_with(TURN_ID_PREFIX) => match outcome {
                Ok(answer) => {
                    if let Some(turn) = answer.pointer("/turn/id").and_then(Value::as_str) {
                        self.turn_id = Some(turn.to_string());
                    }
                    (Decoded::Event, Kind::Other, Vec::new())
                }
                // A turn Codex refused ends here: the conversation must not wait for it.
                Err(e) => {
                    let (kind, event) = self.turn_ended(TurnStatus::Failed, "refused");
                    (
                        Decoded::Event,
                        kind,
                        vec![AgentEvent::TurnError { message: format!("Codex refused the turn: {e}") }, event],
                    )
                }
            },
            Message::Response { id, outcome } => {
                let mut kind = Kind::ControlResponse { request_id: id.clone(), outcome: outcome.clone() };
                if self.thread_request.as_deref() == Some(id.as_str()) {
                    self.thread_request = None;
                    if let Ok(answer) = outcome {
                        let thread = answer.pointer("/thread/id").and_then(Value::as_str).map(str::to_string);
                        self.thread_id = thread.or(self.thread_id.take());
                        let model = answer.get("model").and_then(Value::as_str).map(str::to_string);
                        kind = Kind::SystemInit { session_id: self.thread_id.clone(), model, permission_mode: None };
                    }
                }
                (Decoded::Answer { request_id: id.clone(), outcome: outcome.clone() }, kind, Vec::new())
            }
            Message::Request { id, method, params } => {
                let ask = self.on_request(id, method, params);
                let kind =
                    Kind::ControlRequest { request_id: id.clone(), subtype: method.clone(), request: params.clone() };
                (Decoded::Ask { request_id: id.clone(), ask }, kind, Vec::new())
            }
            Message::Notification { method, params } => {
                let (kind, events) = self.on_notification(method, params);
                (Decoded::Event, kind, events)
            }
            Message::Invalid(_) => (Decoded::Event, Kind::Other, Vec::new()),
        };
        Read { decoded, msg: jsonrpc::incoming(&message, kind), events }
    }

    fn answer(&mut self, request_id: &str, _calls: &[ToolCall], verdict: Option<Verdict>) -> String {
        // Codex's answer carries no reason: the model hears that the command was declined.
        let decision = if verdict.is_some_and(|v| v.allow) { "accept" } else { "decline" };
        jsonrpc::result(D, request_id, json!({ "decision": decision }))
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
