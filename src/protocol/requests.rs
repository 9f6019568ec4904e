//! Requests the CLI makes of whoever drives it, and how each is answered. Shared by sessions
//! and agent runs, so both answer alike: tool calls (the `PreToolUse` hook and `can_use_tool`)
//! go to the permission engine, anything else gets an immediate answer (never silence: an
//! unanswered request blocks the CLI forever).

use serde_json::Value;

use super::outgoing;
use crate::domain::agent_kind::AgentKind;
use crate::domain::decision::{DecisionPoint, ToolCall, Verdict};

/// What answering one CLI request takes.
pub enum CliRequest {
    /// A tool call: ask the engine, then answer with [`answer`].
    Decide(ToolCall),
    /// The answer line, needing no decision.
    Answer(String),
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
        agent: Some(AgentKind::Claude),
    })
}

/// The answer line for the engine's verdict on `call`; `None` (the engine is gone) denies.
pub fn answer(call: &ToolCall, verdict: Option<Verdict>) -> String {
    let verdict = verdict.unwrap_or_else(Verdict::unavailable);
    match call.point {
        DecisionPoint::Hook => {
            outgoing::hook_decision(&call.request_id, verdict.allow, &verdict.reason, verdict.updated_input.as_ref())
        }
        // Other points' decisions never reach Claude Code; answered like its own prompt if
        // one ever did.
        _ => outgoing::tool_permission(
            &call.request_id,
            verdict.allow,
            verdict.updated_input.as_ref().unwrap_or(&call.input),
            &verdict.reason,
        ),
    }
}
