//! One compiled rule and whether it matches a tool call.

use serde_json::Value;

use super::pattern::Pattern;
use super::shell::CommandPart;
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
    pub(super) fn tool_matches(&self, tool: &str) -> bool {
        self.tool_name == "*" || self.tool_name == tool
    }

    /// Whether this rule matches the call. Deny rules: any part (or any other reading of
    /// it); the answer names the part's text. Allow rules: every part (an interpreter's own
    /// invocation aside: its commands are parts).
    pub(super) fn matches<'s>(&self, tool: &str, subject: &'s Subject) -> Option<Hit<'s>> {
        if !self.tool_matches(tool) {
            return None;
        }
        let deny = self.behavior == Behavior::Deny;
        let any_input = matches!(self.pattern, Pattern::Any);
        let hit = |part: Option<&'s str>| Some(Hit { part });
        match subject {
            Subject::Commands(parts) if deny => {
                // The reading that matched: the part itself, or another reading of it.
                let matched = parts.iter().find_map(|p| {
                    if any_input || self.pattern.matches(&p.text) {
                        Some(p.text.as_str())
                    } else {
                        p.alternatives.iter().find(|a| self.pattern.matches(a)).map(String::as_str)
                    }
                });
                match matched {
                    Some(text) => hit(Some(text)),
                    None if any_input => hit(None),
                    None => None,
                }
            }
            _ if any_input => hit(None),
            Subject::Commands(parts) => {
                let mut runs = parts.iter().filter(|p| !p.deny_only).peekable();
                (runs.peek().is_some() && runs.all(|p| self.pattern.matches(&p.text))).then_some(Hit { part: None })
            }
            Subject::Paths(paths) if deny => {
                paths.iter().any(|p| self.pattern.matches(p)).then_some(Hit { part: None })
            }
            Subject::Paths(paths) => {
                (!paths.is_empty() && paths.iter().all(|p| self.pattern.matches(p))).then_some(Hit { part: None })
            }
            Subject::Json(text) => self.pattern.matches(text).then_some(Hit { part: None }),
        }
    }

    /// An allow rule that names this part explicitly (a non-empty `rule_content`), which lets
    /// a part strict shell analysis cannot read through.
    pub(super) fn explicitly_allows(&self, part: &CommandPart) -> bool {
        self.behavior == Behavior::Allow
            && self.tool_matches("Bash")
            && !matches!(self.pattern, Pattern::Any)
            && self.pattern.matches(&part.text)
    }
}

/// A rule matched; for a Bash deny, the command it matched.
#[derive(Debug, Clone, Copy)]
pub(super) struct Hit<'s> {
    pub part: Option<&'s str>,
}
