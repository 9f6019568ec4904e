//! One compiled rule and whether it matches a tool call.

use serde_json::Value;

use super::pattern::Pattern;
use super::subject::Subject;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Behavior {
    Allow,
    Deny,
}

#[derive(Debug, Clone)]
pub struct CompiledRule {
    pub id: String,
    pub project_id: Option<String>,
    pub tool_name: String,
    /// The rule's text as written, for reasons and the audit.
    pub content: String,
    pub pattern: Pattern,
    pub behavior: Behavior,
    pub priority: i32,
    pub created_at: String,
    /// Merged over the tool input when this allow rule decides.
    pub updated_input: Option<Value>,
}

impl CompiledRule {
    fn tool_matches(&self, tool: &str) -> bool {
        self.tool_name == "*" || self.tool_name == tool
    }

    /// Deny rules: any part (or any alternative reading of it). Allow rules: every part.
    pub(super) fn matches(&self, tool: &str, subject: &Subject) -> bool {
        if !self.tool_matches(tool) {
            return false;
        }
        if matches!(self.pattern, Pattern::Any) {
            return true;
        }
        let deny = self.behavior == Behavior::Deny;
        match subject {
            Subject::Commands(parts) if deny => parts
                .iter()
                .any(|p| self.pattern.matches(&p.primary) || p.alternatives.iter().any(|a| self.pattern.matches(a))),
            Subject::Commands(parts) => !parts.is_empty() && parts.iter().all(|p| self.pattern.matches(&p.primary)),
            Subject::Paths(paths) if deny => paths.iter().any(|p| self.pattern.matches(p)),
            Subject::Paths(paths) => !paths.is_empty() && paths.iter().all(|p| self.pattern.matches(p)),
            Subject::Json(text) => self.pattern.matches(text),
        }
    }
}
