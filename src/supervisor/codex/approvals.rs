//! Codex's requests of Conduit: approvals for commands and file changes become rule subjects;
//! anything else is answered at once.

use serde_json::{json, Value};

use super::{jsonrpc, Codex, D};
use crate::domain::agent_kind::AgentKind;
use crate::domain::decision::{DecisionPoint, ToolCall};
use crate::supervisor::adapter::Ask;

impl Codex {
    pub(super) fn on_request(&mut self, id: &str, method: &str, params: &Value) -> Ask {
        let call = |tool: &str, input: Value, point: DecisionPoint| ToolCall {
            request_id: id.to_string(),
            point,
            tool_name: tool.to_string(),
            input,
            tool_use_id: params.get("itemId").and_then(Value::as_str).map(str::to_string),
            agent: Some(AgentKind::Codex),
        };
        match method {
            "item/commandExecution/requestApproval" => {
                let input = json!({
                    "command": params.get("command").and_then(Value::as_str).unwrap_or(""),
                    "cwd": params.get("cwd"),
                    "description": params.get("reason"),
                });
                Ask::ToolCalls(vec![call("Bash", input, DecisionPoint::CodexCommandApproval)])
            }
            "item/fileChange/requestApproval" => {
                let item = params.get("itemId").and_then(Value::as_str).unwrap_or("");
                let files = self.changes.get(item).cloned().unwrap_or_default();
                let point = DecisionPoint::CodexFileChangeApproval;
                let mut calls: Vec<ToolCall> = files
                    .iter()
                    .map(|(path, tool)| call(tool, json!({ "file_path": self.absolute(path) }), point))
                    .collect();
                if calls.is_empty() {
                    // Files unknown: decided as a write to what Codex asks to be granted.
                    let root = params.get("grantRoot").and_then(Value::as_str).unwrap_or(&self.cwd).to_string();
                    calls.push(call("Write", json!({ "file_path": root }), point));
                }
                Ask::ToolCalls(calls)
            }
            // Questions for a person and MCP elicitations: nobody is there to answer.
            "item/tool/requestUserInput" => Ask::Answered(jsonrpc::result(D, id, json!({ "answers": {} }))),
            "mcpServer/elicitation/request" => Ask::Answered(jsonrpc::result(D, id, json!({ "action": "decline" }))),
            // More sandbox permissions: none granted (Conduit's sandbox is the one that counts).
            "item/permissions/requestApproval" => {
                Ask::Answered(jsonrpc::result(D, id, json!({ "permissions": {}, "scope": "turn" })))
            }
            // The legacy (v1) approvals: never used by a v2 thread; refused.
            "execCommandApproval" | "applyPatchApproval" => {
                Ask::Answered(jsonrpc::result(D, id, json!({ "decision": "denied" })))
            }
            other => Ask::Answered(jsonrpc::error(
                D,
                id,
                jsonrpc::METHOD_NOT_FOUND,
                &format!("Conduit does not provide {other}"),
            )),
        }
    }

    fn absolute(&self, path: &str) -> String {
        let p = std::path::Path::new(path);
        if p.is_absolute() {
            path.to_string()
        } else {
            std::path::Path::new(&self.cwd).join(p).to_string_lossy().into_owned()
        }
    }
}

/// A file change item's files, each with the rule subject it is decided as: a new or deleted
/// file is a `Write`, a changed one an `Edit` (a move also writes its destination).
pub(super) fn file_changes(item: &Value) -> Vec<(String, &'static str)> {
    let mut files = Vec::new();
    for change in item.get("changes").and_then(Value::as_array).into_iter().flatten() {
        let Some(path) = change.get("path").and_then(Value::as_str) else { continue };
        let kind = change.pointer("/kind/type").and_then(Value::as_str).unwrap_or("update");
        files.push((path.to_string(), if kind == "update" { "Edit" } else { "Write" }));
        if let Some(to) = change.pointer("/kind/move_path").and_then(Value::as_str) {
            files.push((to.to_string(), "Write"));
        }
    }
    files
}
