//! A rule's `rule_content`, compiled: any input, a `word:*` prefix, or a glob.

use globset::{GlobBuilder, GlobMatcher};

#[derive(Debug, Clone)]
pub enum Pattern {
    Any,
    /// `word:*`
    Prefix(String),
    Glob(GlobMatcher),
}

/// Tools whose subject is a file path (globs respect `/`).
fn is_path_tool(tool: &str) -> bool {
    matches!(tool, "Read" | "Write" | "Edit" | "MultiEdit" | "NotebookEdit" | "Glob" | "Grep")
}

/// Compiles `rule_content` for `tool_name`; the error is a sentence for a 422.
pub fn compile_pattern(tool_name: &str, content: &str) -> Result<Pattern, String> {
    let content = content.trim();
    if content.is_empty() {
        return Ok(Pattern::Any);
    }
    if let Some(prefix) = content.strip_suffix(":*") {
        let prefix = prefix.trim();
        if !prefix.is_empty() && !prefix.contains(['*', '?', '[', ']', '{', '}']) {
            return Ok(Pattern::Prefix(collapse_spaces(prefix)));
        }
    }
    GlobBuilder::new(content)
        .literal_separator(is_path_tool(tool_name))
        .backslash_escape(true)
        .build()
        .map(|g| Pattern::Glob(g.compile_matcher()))
        .map_err(|e| format!("`rule_content` is not a valid glob: {e}"))
}

fn collapse_spaces(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

impl Pattern {
    pub(super) fn matches(&self, subject: &str) -> bool {
        match self {
            Pattern::Any => true,
            Pattern::Prefix(p) => {
                subject == p || subject.strip_prefix(p.as_str()).is_some_and(|rest| rest.starts_with(' '))
            }
            Pattern::Glob(g) => g.is_match(subject),
        }
    }
}
