//! What an ACP tool call is decided as: the rule subject (`Bash`, `Write`, `Edit`, ...) and the
//! input the rules read; and a prompt answer's token counts.

use serde_json::{json, Value};

use crate::domain::offers::ModelChoice;

/// The rule subject a tool call is decided as, from its ACP `kind` (and, for edits, whether it
/// makes a new file); a kind ACP does not define is decided under the agent's own title.
pub(super) fn tool_name(tool_call: &Value) -> String {
    // Gemini CLI's ids start with its tool's name (`run_shell_command__...`).
    let id = tool_call.get("toolCallId").and_then(Value::as_str).unwrap_or("");
    let by_id = match id.split("__").next().unwrap_or("") {
        "run_shell_command" => "Bash",
        "write_file" => "Write",
        "replace" => "Edit",
        "read_file" => "Read",
        "web_fetch" => "WebFetch",
        "glob" => "Glob",
        "grep_search" | "search_file_content" => "Grep",
        "list_directory" => "LS",
        _ => "",
    };
    if !by_id.is_empty() {
        return by_id.to_string();
    }
    let raw = tool_call.get("rawInput").unwrap_or(&Value::Null);
    let kind = tool_call.get("kind").and_then(Value::as_str).unwrap_or("other");
    let name = match kind {
        "execute" => "Bash",
        "edit" if raw.get("old_string").is_some() => "Edit",
        "edit" if raw.get("content").is_some() => "Write",
        "edit" => "Edit",
        "delete" | "move" => "Write",
        "read" => "Read",
        "search" => "Grep",
        "fetch" => "WebFetch",
        _ => "",
    };
    if !name.is_empty() {
        return name.to_string();
    }
    tool_call.get("title").and_then(Value::as_str).unwrap_or("unknown").to_string()
}

/// The input the rules read: the agent's raw input, with the fields rule subjects look for
/// (`command`, `file_path`, `url`) filled in where ACP carries them elsewhere.
pub(super) fn tool_input(tool_call: &Value) -> Value {
    let mut input = match tool_call.get("rawInput") {
        Some(Value::Object(o)) => Value::Object(o.clone()),
        _ => json!({}),
    };
    let title = tool_call.get("title").and_then(Value::as_str);
    match tool_call.get("kind").and_then(Value::as_str) {
        // Gemini CLI carries a shell command only as the call's title.
        Some("execute") if input.get("command").is_none() => input["command"] = json!(title.unwrap_or("")),
        Some("edit" | "delete" | "move" | "read") if input.get("file_path").is_none() => {
            let path = locations(tool_call).into_iter().next().or_else(|| {
                ["absolute_path", "path"].iter().find_map(|k| input.get(*k).and_then(Value::as_str).map(str::to_string))
            });
            if let Some(path) = path {
                input["file_path"] = json!(path);
            }
        }
        _ => {}
    }
    if let Some(title) = title {
        input["description"] = json!(title);
    }
    input
}

pub(super) fn locations(tool_call: &Value) -> Vec<String> {
    let found = tool_call.get("locations").and_then(Value::as_array).into_iter().flatten();
    found.filter_map(|l| l.get("path").and_then(Value::as_str).map(str::to_string)).collect()
}

pub(super) fn with_path(input: &Value, path: &str) -> Value {
    let mut input = input.clone();
    input["file_path"] = json!(path);
    input
}

/// A prompt answer's token counts, where the agent reports them (`_meta`; Gemini CLI's
/// `quota.token_count`, or a `usage` object).
pub(super) fn usage(answer: &Value) -> (Option<i64>, Option<i64>) {
    let meta = answer.get("_meta").unwrap_or(&Value::Null);
    let candidates = [meta.pointer("/quota/token_count"), meta.get("usage"), answer.get("usage")];
    for found in candidates.into_iter().flatten() {
        let read = |keys: &[&str]| keys.iter().find_map(|k| found.get(*k).and_then(Value::as_i64));
        let input = read(&["input_tokens", "inputTokens", "prompt_tokens", "promptTokenCount"]);
        let output = read(&["output_tokens", "outputTokens", "completion_tokens", "candidatesTokenCount"]);
        if input.is_some() || output.is_some() {
            return (input, output);
        }
    }
    (None, None)
}

/// One of `session/new`'s `models.availableModels`: `{"modelId","name","description"}`.
pub(super) fn model_choice(m: &Value) -> Option<ModelChoice> {
    let value = m.get("modelId")?.as_str()?.to_string();
    let name = m.get("name").and_then(Value::as_str).unwrap_or(&value).to_string();
    let description = m.get("description").and_then(Value::as_str).map(str::to_string);
    Some(ModelChoice { value, name, description })
}
