//! Claude Code's lines in the normalized vocabulary ([`AgentEvent`]): assistant text and its
//! deltas, tool calls started (`assistant` `tool_use` blocks) and finished (`user`
//! `tool_result` blocks). Turn results come from the parsed [`super::TurnResult`]. Each line
//! type is read with a narrow struct, so the rest of a large line is skipped, not built.

use serde::Deserialize;
use serde_json::Value;

use crate::domain::agent_events::AgentEvent;

#[derive(Deserialize)]
struct AssistantLine {
    message: AssistantMessage,
}

#[derive(Deserialize)]
struct AssistantMessage {
    id: Option<String>,
    #[serde(default)]
    content: Vec<Block>,
}

#[derive(Deserialize)]
struct UserLine {
    message: UserMessage,
}

#[derive(Deserialize)]
struct UserMessage {
    // A plain user turn's content is a string; tool results come as blocks.
    #[serde(default)]
    content: Value,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block {
    Text {
        text: String,
    },
    ToolUse {
        id: Option<String>,
        name: String,
        #[serde(default)]
        input: Value,
    },
    ToolResult {
        tool_use_id: Option<String>,
        #[serde(default)]
        content: Value,
        #[serde(default)]
        is_error: bool,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct StreamLine<'a> {
    #[serde(borrow)]
    event: StreamEvent<'a>,
}

#[derive(Deserialize)]
struct StreamEvent<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    delta: Option<Delta>,
}

#[derive(Deserialize)]
struct Delta {
    #[serde(rename = "type")]
    kind: String,
    text: Option<String>,
}

/// The normalized events of one Claude Code line of `message_type`. `tool_name` finds the name
/// of a tool by its `tool_use_id` (results do not repeat it).
pub fn events(message_type: &str, line: &str, tool_name: impl Fn(&str) -> Option<String>) -> Vec<AgentEvent> {
    match message_type {
        "stream_event" => serde_json::from_str::<StreamLine>(line)
            .ok()
            .filter(|l| l.event.kind == "content_block_delta")
            .and_then(|l| l.event.delta)
            .filter(|d| d.kind == "text_delta")
            .and_then(|d| d.text)
            .map(|text| vec![AgentEvent::AssistantDelta { text, item_id: None }])
            .unwrap_or_default(),
        "assistant" => {
            let Ok(line) = serde_json::from_str::<AssistantLine>(line) else { return Vec::new() };
            let id = line.message.id;
            line.message
                .content
                .into_iter()
                .filter_map(|block| match block {
                    Block::Text { text } => Some(AgentEvent::AssistantMessage { text, item_id: id.clone() }),
                    Block::ToolUse { id, name, input } => {
                        Some(AgentEvent::ToolStarted { tool_use_id: id, tool: name, input })
                    }
                    _ => None,
                })
                .collect()
        }
        "user" => {
            let Ok(line) = serde_json::from_str::<UserLine>(line) else { return Vec::new() };
            let Value::Array(blocks) = line.message.content else { return Vec::new() };
            blocks
                .into_iter()
                .filter_map(|b| serde_json::from_value::<Block>(b).ok())
                .filter_map(|block| match block {
                    Block::ToolResult { tool_use_id, content, is_error } => Some(AgentEvent::ToolFinished {
                        tool: tool_use_id.as_deref().and_then(&tool_name),
                        tool_use_id,
                        output: content,
                        is_error,
                        status: Some(if is_error { "failed" } else { "completed" }.to_string()),
                    }),
                    _ => None,
                })
                .collect()
        }
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn assistant_text_tool_calls_results_and_deltas() {
        let line = json!({"type":"assistant","message":{"id":"m1","content":[
            {"type":"text","text":"Let me look."},
            {"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}},
            {"type":"thinking","thinking":"..."}
        ]}})
        .to_string();
        let got = events("assistant", &line, |_| None);
        assert_eq!(
            got,
            vec![
                AgentEvent::AssistantMessage { text: "Let me look.".into(), item_id: Some("m1".into()) },
                AgentEvent::ToolStarted {
                    tool_use_id: Some("t1".into()),
                    tool: "Bash".into(),
                    input: json!({"command":"ls"})
                },
            ]
        );
        let result = json!({"type":"user","message":{"role":"user","content":[
            {"type":"tool_result","tool_use_id":"t1","content":"a\nb","is_error":false}
        ]}})
        .to_string();
        let got = events("user", &result, |id| (id == "t1").then(|| "Bash".to_string()));
        assert!(matches!(&got[..], [AgentEvent::ToolFinished { tool: Some(t), is_error: false, .. }] if t == "Bash"));
        let plain = json!({"type":"user","message":{"role":"user","content":"hi"}}).to_string();
        assert!(events("user", &plain, |_| None).is_empty());
        let delta = json!({"type":"stream_event","event":{"type":"content_block_delta","index":0,
            "delta":{"type":"text_delta","text":"He"}}})
        .to_string();
        assert_eq!(
            events("stream_event", &delta, |_| None),
            vec![AgentEvent::AssistantDelta { text: "He".into(), item_id: None }]
        );
        let other = json!({"type":"stream_event","event":{"type":"message_start","message":{}}}).to_string();
        assert!(events("stream_event", &other, |_| None).is_empty());
        assert!(events("assistant", "not json", |_| None).is_empty());
    }
}
