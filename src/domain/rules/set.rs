//! Every rule, grouped and ordered, and the decision for one tool call.

use std::collections::HashMap;

use serde_json::Value;

use super::rule::{Behavior, CompiledRule};
use super::subject::subject;

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
}

/// The outcome for one tool call.
#[derive(Debug, Clone)]
pub struct RuleMatch<'a> {
    pub behavior: Behavior,
    /// The rule that decided; `None` for the default.
    pub rule: Option<&'a CompiledRule>,
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

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn evaluate(&self, project_id: Option<&str>, tool_name: &str, input: &Value) -> RuleMatch<'_> {
        let subject = subject(tool_name, input);
        let project = project_id.and_then(|p| self.projects.get(p));
        let groups =
            [project.map(|g| &g.deny), Some(&self.global.deny), project.map(|g| &g.allow), Some(&self.global.allow)];
        for rule in groups.into_iter().flatten().flatten() {
            if rule.matches(tool_name, &subject) {
                return RuleMatch { behavior: rule.behavior, rule: Some(rule) };
            }
        }
        RuleMatch { behavior: Behavior::Allow, rule: None }
    }
}
