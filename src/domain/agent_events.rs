//! The normalized event vocabulary: what every agent CLI says, in one shape, whatever its wire
//! protocol. Each adapter reads its own lines into these; sessions and agent runs publish them
//! on the bus next to the raw lines (which are stored as they came), so streams, webhooks and
//! the dashboard read every agent alike.
//!
//! | bus type | stream name | data |
//! |---|---|---|
//! | `assistant.delta` | `assistant_delta` | `{agent, text, item_id}`: text as it streams |
//! | `assistant.message` | `assistant_message` | `{agent, text, item_id}`: one whole message |
//! | `tool.started` | `tool_started` | `{agent, tool_use_id, tool, input}` |
//! | `tool.finished` | `tool_finished` | `{agent, tool_use_id, tool, output, is_error, status}` |
//! | `turn.result` | `turn_result` | `{agent, status, is_error, text, input_tokens, output_tokens, cost_usd}` |
//! | `turn.error` | `turn_error` | `{agent, message}` |
//!
//! Permission decisions are the engine's `permission.decision` events (they name the agent).

use serde::Serialize;
use serde_json::{json, Value};

use super::agent_kind::AgentKind;

/// The bus types of the normalized events, for webhooks and stored-event replay.
pub const KINDS: [&str; 6] =
    ["assistant.delta", "assistant.message", "tool.started", "tool.finished", "turn.result", "turn.error"];

/// How a turn ended, in one vocabulary for every agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnStatus {
    /// The agent finished its answer.
    Completed,
    /// Stopped on request (an interrupt).
    Interrupted,
    /// The agent or its model API failed.
    Failed,
    /// A limit of the agent's stopped it (turns, tokens).
    Limited,
    /// The session's (or run's) budget, given to the agent, was spent (Claude Code's
    /// `error_max_budget_usd`).
    BudgetExhausted,
    /// The model refused.
    Refused,
}

impl TurnStatus {
    pub fn is_error(self) -> bool {
        matches!(self, TurnStatus::Failed | TurnStatus::Limited | TurnStatus::BudgetExhausted | TurnStatus::Refused)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum AgentEvent {
    AssistantDelta {
        text: String,
        item_id: Option<String>,
    },
    AssistantMessage {
        text: String,
        item_id: Option<String>,
    },
    ToolStarted {
        tool_use_id: Option<String>,
        tool: String,
        input: Value,
    },
    ToolFinished {
        tool_use_id: Option<String>,
        tool: Option<String>,
        output: Value,
        is_error: bool,
        /// The agent's own word for how it ended (`completed`, `declined`, `failed`, ...).
        status: Option<String>,
    },
    TurnResult {
        status: TurnStatus,
        text: Option<String>,
        /// This turn's tokens, when the agent reports them.
        input_tokens: Option<i64>,
        output_tokens: Option<i64>,
        /// The agent's reported cost (Claude Code's is cumulative for its process).
        cost_usd: Option<f64>,
    },
    TurnError {
        message: String,
    },
}

impl AgentEvent {
    /// `(bus type, stream name)`.
    pub fn names(&self) -> (&'static str, &'static str) {
        match self {
            AgentEvent::AssistantDelta { .. } => ("assistant.delta", "assistant_delta"),
            AgentEvent::AssistantMessage { .. } => ("assistant.message", "assistant_message"),
            AgentEvent::ToolStarted { .. } => ("tool.started", "tool_started"),
            AgentEvent::ToolFinished { .. } => ("tool.finished", "tool_finished"),
            AgentEvent::TurnResult { .. } => ("turn.result", "turn_result"),
            AgentEvent::TurnError { .. } => ("turn.error", "turn_error"),
        }
    }

    /// The event's data, naming the agent. Text over [`MAX_EVENT_TEXT`] is cut there (with
    /// `"truncated": true`): the whole of it stays in the raw line, stored next to the event.
    pub fn data(&self, agent: &AgentKind) -> String {
        let agent = agent.as_str();
        match self {
            AgentEvent::AssistantDelta { text, item_id } | AgentEvent::AssistantMessage { text, item_id } => {
                let (text, truncated) = capped(text);
                let mut data = json!({"agent": agent, "text": text, "item_id": item_id});
                if truncated {
                    data["truncated"] = json!(true);
                }
                data
            }
            AgentEvent::ToolStarted { tool_use_id, tool, input } => {
                json!({"agent": agent, "tool_use_id": tool_use_id, "tool": tool, "input": input})
            }
            AgentEvent::ToolFinished { tool_use_id, tool, output, is_error, status } => json!({
                "agent": agent, "tool_use_id": tool_use_id, "tool": tool, "output": output,
                "is_error": is_error, "status": status,
            }),
            AgentEvent::TurnResult { status, text, input_tokens, output_tokens, cost_usd } => json!({
                "agent": agent, "status": status, "is_error": status.is_error(),
                "text": text.as_deref().map(|t| capped(t).0),
                "input_tokens": input_tokens, "output_tokens": output_tokens, "cost_usd": cost_usd,
            }),
            AgentEvent::TurnError { message } => json!({"agent": agent, "message": message}),
        }
        .to_string()
    }
}

/// The most text a normalized event carries (a huge line would otherwise be copied whole
/// into its event, doubling what is held and stored).
pub const MAX_EVENT_TEXT: usize = 1 << 20;

/// `text` cut at [`MAX_EVENT_TEXT`] bytes (on a character boundary), and whether it was.
fn capped(text: &str) -> (&str, bool) {
    if text.len() <= MAX_EVENT_TEXT {
        return (text, false);
    }
    let mut end = MAX_EVENT_TEXT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    (&text[..end], true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_text_is_cut_in_the_event_not_copied_whole() {
        let text = "é".repeat(MAX_EVENT_TEXT); // two bytes each
        let data: Value =
            serde_json::from_str(&AgentEvent::AssistantMessage { text, item_id: None }.data(&AgentKind::Claude))
                .unwrap();
        assert_eq!(data["truncated"], true);
        assert!(data["text"].as_str().unwrap().len() <= MAX_EVENT_TEXT);
        let small: Value = serde_json::from_str(
            &AgentEvent::AssistantDelta { text: "hi".into(), item_id: None }.data(&AgentKind::Codex),
        )
        .unwrap();
        assert!(small.get("truncated").is_none());
    }

    #[test]
    fn every_event_names_its_agent_and_a_known_kind() {
        let events = [
            AgentEvent::AssistantDelta { text: "he".into(), item_id: None },
            AgentEvent::AssistantMessage { text: "hello".into(), item_id: Some("i".into()) },
            AgentEvent::ToolStarted {
                tool_use_id: Some("t".into()),
                tool: "Bash".into(),
                input: json!({"command": "ls"}),
            },
            AgentEvent::ToolFinished {
                tool_use_id: Some("t".into()),
                tool: Some("Bash".into()),
                output: json!("a\nb"),
                is_error: false,
                status: Some("completed".into()),
            },
            AgentEvent::TurnResult {
                status: TurnStatus::Interrupted,
                text: None,
                input_tokens: Some(3),
                output_tokens: None,
                cost_usd: None,
            },
            AgentEvent::TurnError { message: "boom".into() },
        ];
        for event in &events {
            let (kind, _) = event.names();
            assert!(KINDS.contains(&kind), "{kind}");
            let data: Value = serde_json::from_str(&event.data(&AgentKind::Codex)).expect("json");
            assert_eq!(data["agent"], "codex");
        }
        let result: Value = serde_json::from_str(&events[4].data(&AgentKind::Gemini)).expect("json");
        assert_eq!((result["status"].as_str(), result["is_error"].as_bool()), (Some("interrupted"), Some(false)));
    }
}
