//! Permission decisions as the product speaks of them: where a decision is asked for, the
//! question (one tool call), and the engine's answer, and how the audit log names each. Plain
//! data: the wire format builds the question and encodes the answer, the permission engine
//! decides, and neither knows the other.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::agent_kind::AgentKind;
use super::rules::Behavior;

/// Where in the CLI's flow a decision is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DecisionPoint {
    /// The `PreToolUse` hook: sees every tool call.
    Hook,
    /// `can_use_tool`: the CLI's own permission prompt.
    CanUseTool,
    /// A command or background process started through the API (the exec API), decided as a
    /// `Bash` call.
    Exec,
    /// Codex's `item/commandExecution/requestApproval`: a command, decided as a `Bash` call.
    CodexCommandApproval,
    /// Codex's `item/fileChange/requestApproval`: a patch, decided as a `Write`/`Edit` call
    /// per file.
    CodexFileChangeApproval,
    /// The Agent Client Protocol's `session/request_permission` (Gemini CLI, ACP agents).
    AcpPermission,
}

text_enum!(DecisionPoint, "decision point", {
    Hook => "hook",
    CanUseTool => "can_use_tool",
    Exec => "exec",
    CodexCommandApproval => "codex_command_approval",
    CodexFileChangeApproval => "codex_file_change_approval",
    AcpPermission => "acp_permission",
});

/// A tool call allowed or denied: what a rule says (its `behavior`) and what the audit log
/// records (its `decision`).
// Its schema is named `AllowOrDeny`: in the API, `Decision` names an audit log row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
#[schema(as = AllowOrDeny)]
pub enum Decision {
    Allow,
    Deny,
}

text_enum!(Decision, "decision", {
    Allow => "allow",
    Deny => "deny",
});

impl Decision {
    pub const fn allows(self) -> bool {
        matches!(self, Decision::Allow)
    }
}

impl From<Decision> for Behavior {
    fn from(d: Decision) -> Behavior {
        match d {
            Decision::Allow => Behavior::Allow,
            Decision::Deny => Behavior::Deny,
        }
    }
}

impl From<Behavior> for Decision {
    fn from(b: Behavior) -> Decision {
        match b {
            Behavior::Allow => Decision::Allow,
            Behavior::Deny => Decision::Deny,
        }
    }
}

/// What decided: a rule that matched, or the default (allow) when none did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DecisionSource {
    AutoRule,
    AutoDefault,
}

text_enum!(DecisionSource, "decision source", {
    AutoRule => "auto_rule",
    AutoDefault => "auto_default",
});

/// One tool call the CLI asks about.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// The CLI's id for the request; the answer carries it back.
    pub request_id: String,
    pub point: DecisionPoint,
    pub tool_name: String,
    pub input: Value,
    pub tool_use_id: Option<String>,
    /// The agent CLI that asks (`None`: a command of the exec API).
    pub agent: Option<AgentKind>,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::check_text_enum;

    #[test]
    fn decision_points_round_trip_as_text() {
        check_text_enum(
            DecisionPoint::ALL,
            &["hook", "can_use_tool", "exec", "codex_command_approval", "codex_file_change_approval", "acp_permission"],
        );
    }

    #[test]
    fn decisions_round_trip_as_text_and_as_rule_behaviors() {
        check_text_enum(Decision::ALL, &["allow", "deny"]);
        for d in Decision::ALL {
            assert_eq!(Decision::from(Behavior::from(*d)), *d);
        }
        assert!(Decision::Allow.allows() && !Decision::Deny.allows());
    }

    #[test]
    fn decision_sources_round_trip_as_text() {
        check_text_enum(DecisionSource::ALL, &["auto_rule", "auto_default"]);
    }

    #[test]
    fn unknown_stored_text_is_an_error() {
        assert_eq!("ask".parse::<Decision>().unwrap_err().to_string(), "unknown decision \"ask\"");
        assert!("PreToolUse".parse::<DecisionPoint>().is_err());
        assert!("manual".parse::<DecisionSource>().is_err());
    }
}
