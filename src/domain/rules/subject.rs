//! What a rule is checked against for each tool: its commands, its paths, or its JSON text.

use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

use super::shell::{read_command, CommandPart};
use crate::domain::folders::normalize_lexically;

/// What a rule is checked against, for one tool call.
#[derive(Debug, PartialEq, Eq)]
pub enum Subject {
    /// Bash: the simple commands, read as a shell would run them.
    Commands(Arc<[CommandPart]>),
    /// File tools: normalized paths (Glob/Grep may have two).
    Paths(Vec<String>),
    /// Anything else: the input's JSON text.
    Json(String),
}

pub fn subject(tool_name: &str, input: &Value) -> Subject {
    let field = |k: &str| input.get(k).and_then(Value::as_str);
    match tool_name {
        "Bash" => Subject::Commands(read_command(field("command").unwrap_or("")).into()),
        "Read" | "Write" | "Edit" | "MultiEdit" => {
            Subject::Paths(field("file_path").map(normalize_path).into_iter().collect())
        }
        "NotebookEdit" => Subject::Paths(field("notebook_path").map(normalize_path).into_iter().collect()),
        "Glob" | "Grep" => Subject::Paths(
            [field("path").map(normalize_path), field("pattern").map(str::to_string)].into_iter().flatten().collect(),
        ),
        _ => Subject::Json(input.to_string()),
    }
}

fn normalize_path(p: &str) -> String {
    let normalized = normalize_lexically(Path::new(p)).to_string_lossy().into_owned();
    if normalized.is_empty() {
        p.to_string()
    } else {
        normalized
    }
}
