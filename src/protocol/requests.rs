//! Requests the CLI makes of whoever drives it, and how each is answered. Shared by sessions
//! and agent runs, so both answer alike: tool calls (the `PreToolUse` hook and `can_use_tool`)
//! go to the permission engine, anything else gets an immediate answer (never silence: an
//! unanswered request blocks the CLI forever).

use serde_json::Value;

use super::outgoing;
use crate::actors::permissions::{DecisionPoint, Evaluate, Verdict};

/// What answering one CLI request takes.
pub enum CliRequest {
    /// A tool call: ask the engine ([`ToolCall::evaluate`]), then answer ([`ToolCall::answer`]).
    Decide(ToolCall),
    /// The answer line, needing no decision.
    Answer(String),
}

pub struct ToolCall {
    pub request_id: String,
    pub point: DecisionPoint,
    pub tool_name: String,
    pub input: Value,
    pub tool_use_id: Option<String>,
}

pub fn classify(request_id: &str, subtype: &str, request: &Value) -> CliRequest {
    let str_of = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
    let (point, tool_name, input, tool_use_id) = match subtype {
        "hook_callback" => {
            let hook = request.get("input").cloned().unwrap_or(Value::Null);
            if hook.get("hook_event_name").and_then(Value::as_str) != Some("PreToolUse") {
                // Only PreToolUse is registered; anything else just continues.
                return CliRequest::Answer(outgoing::control_success(request_id, serde_json::json!({})));
            }
            (
                DecisionPoint::Hook,
                str_of(hook.get("tool_name")),
                hook.get("tool_input").cloned(),
                str_of(hook.get("tool_use_id")),
            )
        }
        "can_use_tool" => (
            DecisionPoint::CanUseTool,
            str_of(request.get("tool_name")),
            request.get("input").cloned(),
            str_of(request.get("tool_use_id")),
        ),
        other => {
            return CliRequest::Answer(outgoing::control_error(
                request_id,
                &format!("Conduit does not handle `{other}` requests"),
            ))
        }
    };
    CliRequest::Decide(ToolCall {
        request_id: request_id.to_string(),
        point,
        tool_name: tool_name.unwrap_or_default(),
        input: input.unwrap_or(Value::Object(Default::default())),
        tool_use_id,
    })
}

impl ToolCall {
    pub fn evaluate(&self, project_id: Option<String>, session_id: Option<String>) -> Evaluate {
        Evaluate {
            project_id,
            session_id,
            request_id: self.request_id.clone(),
            tool_use_id: self.tool_use_id.clone(),
            point: self.point,
            tool_name: self.tool_name.clone(),
            input: self.input.clone(),
        }
    }

    /// The answer line for the engine's verdict; `None` (the engine is gone) denies.
    pub fn answer(&self, verdict: Option<Verdict>) -> String {
        let verdict = verdict.unwrap_or_else(|| Verdict {
            allow: false,
            reason: "denied: Conduit's permission engine is unavailable".to_string(),
            rule_id: None,
            updated_input: None,
            event: None,
        });
        match self.point {
            DecisionPoint::Hook => outgoing::hook_decision(
                &self.request_id,
                verdict.allow,
                &verdict.reason,
                verdict.updated_input.as_ref(),
            ),
            DecisionPoint::CanUseTool => outgoing::tool_permission(
                &self.request_id,
                verdict.allow,
                verdict.updated_input.as_ref().unwrap_or(&self.input),
                &verdict.reason,
            ),
        }
    }
}
