//! Permission decisions as the product speaks of them: where a decision is asked for, the
//! question (one tool call), and the engine's answer. Plain data: the wire format builds the
//! question and encodes the answer, the permission engine decides, and neither knows the other.

use serde_json::Value;

/// Where in the CLI's flow a decision is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecisionPoint {
    /// The `PreToolUse` hook: sees every tool call.
    Hook,
    /// `can_use_tool`: the CLI's own permission prompt.
    CanUseTool,
}

impl DecisionPoint {
    pub fn as_str(self) -> &'static str {
        match self {
            DecisionPoint::Hook => "hook",
            DecisionPoint::CanUseTool => "can_use_tool",
        }
    }
}

/// One tool call the CLI asks about.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// The CLI's id for the request; the answer carries it back.
    pub request_id: String,
    pub point: DecisionPoint,
    pub tool_name: String,
    pub input: Value,
    pub tool_use_id: Option<String>,
}

/// The engine's answer to a [`ToolCall`].
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub allow: bool,
    /// Names the rule that decided, for the CLI (and so the model) and the audit.
    pub reason: String,
    pub rule_id: Option<String>,
    /// The input to run with (an allow rule's `updated_input` merged in), when it changed.
    pub updated_input: Option<Value>,
    /// The `permission.decision` event's data, for a session's call: the session publishes it
    /// on its own stream (numbered and stored with the rest). Other calls' decisions (agent
    /// runs) are published by the engine.
    pub event: Option<String>,
}

impl Verdict {
    /// What a call gets when no engine could decide it: never a silent allow.
    pub fn unavailable() -> Verdict {
        Verdict {
            allow: false,
            reason: "denied: Conduit's permission engine is unavailable".to_string(),
            rule_id: None,
            updated_input: None,
            event: None,
        }
    }
}
