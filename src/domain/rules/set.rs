//! Every rule, grouped and ordered, and the decision for one tool call.

use std::collections::HashMap;

use serde_json::Value;

use super::cache::ReadingCache;
use super::reading::CommandReading;
use super::rule::{Behavior, CompiledRule};
use super::shell::ShellAnalysis;
use super::subject::{subject, Subject};

#[derive(Debug, Default, Clone)]
struct Groups {
    deny: Vec<CompiledRule>,
    allow: Vec<CompiledRule>,
}

impl Groups {
    fn push(&mut self, rule: CompiledRule) {
        match rule.behavior {
            Behavior::Deny => self.deny.push(rule),
            Behavior::Allow => self.allow.push(rule),
        }
    }

    fn sort(&mut self) {
        let order = |a: &CompiledRule, b: &CompiledRule| {
            b.priority.cmp(&a.priority).then_with(|| a.created_at.cmp(&b.created_at)).then_with(|| a.id.cmp(&b.id))
        };
        self.deny.sort_by(order);
        self.allow.sort_by(order);
    }
}

/// Every rule, compiled and ordered, ready to decide.
#[derive(Debug, Default, Clone)]
pub struct RuleSet {
    global: Groups,
    projects: HashMap<String, Groups>,
    len: usize,
    shell_analysis: ShellAnalysis,
    readings: ReadingCache,
}

/// The outcome for one tool call.
#[derive(Debug, Clone)]
pub struct RuleMatch<'a> {
    pub behavior: Behavior,
    /// The rule that decided; `None` for the default. For a strict denial (see
    /// `not_analyzable`), the deny rule that put the call under strict analysis.
    pub rule: Option<&'a CompiledRule>,
    /// Strict shell analysis denied the call: what could not be analyzed.
    pub not_analyzable: Option<String>,
    /// How a Bash command was read; `None` for other tools.
    pub reading: Option<CommandReading>,
}

impl RuleSet {
    pub fn new(rules: Vec<CompiledRule>) -> RuleSet {
        let mut set = RuleSet { len: rules.len(), ..Default::default() };
        for rule in rules {
            match &rule.project_id {
                Some(p) => set.projects.entry(p.clone()).or_default().push(rule),
                None => set.global.push(rule),
            }
        }
        set.global.sort();
        set.projects.values_mut().for_each(Groups::sort);
        set
    }

    /// What to do with a Bash part that cannot be analyzed (strict by default).
    pub fn with_shell_analysis(mut self, mode: ShellAnalysis) -> RuleSet {
        self.shell_analysis = mode;
        self
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn evaluate(&self, project_id: Option<&str>, tool_name: &str, input: &Value) -> RuleMatch<'_> {
        let subject = match (tool_name, input.get("command").and_then(Value::as_str)) {
            ("Bash", Some(command)) => Subject::Commands(self.readings.read(command)),
            _ => subject(tool_name, input),
        };
        let mut reading = match &subject {
            Subject::Commands(parts) => Some(CommandReading::of(parts)),
            _ => None,
        };
        let project = project_id.and_then(|p| self.projects.get(p));
        let decided = |behavior, rule, not_analyzable, reading| RuleMatch { behavior, rule, not_analyzable, reading };

        let denies = [project.map(|g| &g.deny), Some(&self.global.deny)];
        for rule in denies.into_iter().flatten().flatten() {
            if let Some(hit) = rule.matches(tool_name, &subject) {
                if let Some(reading) = reading.as_mut() {
                    reading.matched = hit.part.map(str::to_string);
                }
                return decided(Behavior::Deny, Some(rule), None, reading);
            }
        }

        let allows = [project.map(|g| &g.allow), Some(&self.global.allow)];
        if let (ShellAnalysis::Strict, Subject::Commands(parts)) = (self.shell_analysis, &subject) {
            // Strict applies only where a deny rule could apply to this call.
            let in_scope = denies.into_iter().flatten().flatten().find(|r| r.tool_matches(tool_name));
            let unexplained = parts.iter().find(|part| {
                part.not_analyzable.is_some()
                    && !allows.into_iter().flatten().flatten().any(|rule| rule.explicitly_allows(part))
            });
            if let (Some(rule), Some(part)) = (in_scope, unexplained) {
                // The audit names the part that decided (an earlier one may have been allowed).
                if let Some(reading) = reading.as_mut() {
                    reading.not_analyzable.clone_from(&part.not_analyzable);
                }
                return decided(Behavior::Deny, Some(rule), part.not_analyzable.clone(), reading);
            }
        }

        for rule in allows.into_iter().flatten().flatten() {
            if rule.matches(tool_name, &subject).is_some() {
                return decided(Behavior::Allow, Some(rule), None, reading);
            }
        }
        decided(Behavior::Allow, None, None, reading)
    }
}
