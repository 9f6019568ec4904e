//! `PermissionEngine`: decides every tool call from the rules, at once, and audits it.
//!
//! It holds the compiled [`RuleSet`]; rules are reloaded from the database only when they
//! change ([`Reload`], sent by the rules API before it answers), never per call. Each decision
//! is answered synchronously from memory and its audit row queued on the write-behind writer.

use actix::prelude::*;

use super::bus::{Event, Publish};
use crate::db::permission_log::NewDecision;
use crate::db::rules::{self as rule_rows, RuleRow};
use crate::db::writer::{WriteOp, Writer};
use crate::db::{Store, StoreError};
use crate::domain::decision::{Decision, DecisionSource, ToolCall, Verdict};
use crate::domain::ids::{ProjectId, RuleId, SessionId};
use crate::domain::rules::{self, Behavior, CompiledRule, RuleSet, ShellAnalysis};
use crate::domain::time;

// ---------------------------------------------------------------------------------------------
// Messages

#[derive(Message, Debug, Clone)]
#[rtype(result = "Verdict")]
pub struct Evaluate {
    pub project_id: Option<ProjectId>,
    pub session_id: Option<SessionId>,
    pub call: ToolCall,
}

/// Re-reads and recompiles every rule. Answers with how many are loaded.
#[derive(Message)]
#[rtype(result = "Result<usize, StoreError>")]
pub struct Reload;

// ---------------------------------------------------------------------------------------------
// State

pub struct PermissionEngine {
    rules: RuleSet,
    store: Store,
    writer: Writer,
    bus: Option<Recipient<Publish>>,
    shell_analysis: ShellAnalysis,
}

impl PermissionEngine {
    /// `bus`: where decisions are published (`permission.decision`), when there is one.
    /// Shell analysis is strict unless [`PermissionEngine::with_shell_analysis`] says otherwise.
    pub fn new(store: Store, writer: Writer, bus: Option<Recipient<Publish>>) -> Self {
        PermissionEngine { rules: RuleSet::default(), store, writer, bus, shell_analysis: ShellAnalysis::Strict }
    }

    /// The `shell_analysis` setting: what a Bash part that cannot be analyzed means.
    pub fn with_shell_analysis(mut self, mode: ShellAnalysis) -> Self {
        self.shell_analysis = mode;
        self.rules = std::mem::take(&mut self.rules).with_shell_analysis(mode);
        self
    }
}

/// Compiles stored rows. A row that no longer compiles (it was valid when stored) is skipped
/// with an error in the log rather than taking every other rule down with it.
pub fn compile_rows(rows: Vec<RuleRow>) -> Vec<CompiledRule> {
    rows.into_iter()
        .filter_map(|row| {
            let pattern = match rules::compile_pattern(&row.tool_name, &row.rule_content) {
                Ok(p) => p,
                Err(e) => {
                    tracing::error!(rule = %row.id, error = %e, "a stored rule does not compile; it is ignored");
                    return None;
                }
            };
            Some(CompiledRule {
                behavior: Behavior::from(row.behavior),
                updated_input: row.updated_input.as_deref().and_then(|t| serde_json::from_str(t).ok()),
                id: row.id.into(),
                project_id: row.project_id.map(String::from),
                tool_name: row.tool_name,
                content: row.rule_content,
                pattern,
                priority: row.priority,
                created_at: row.created_at,
            })
        })
        .collect()
}

fn describe(rule: &CompiledRule) -> String {
    let content = rule.content.trim();
    let what = if content.is_empty() { "any input".to_string() } else { format!("{content:?}") };
    let scope = if rule.project_id.is_some() { "project" } else { "global" };
    format!("{scope} rule {} ({} {what})", rule.id, rule.tool_name)
}

// ---------------------------------------------------------------------------------------------
// Handlers

impl Actor for PermissionEngine {
    type Context = Context<Self>;
}

impl Handler<Evaluate> for PermissionEngine {
    type Result = MessageResult<Evaluate>;

    fn handle(&mut self, msg: Evaluate, _ctx: &mut Context<Self>) -> Self::Result {
        let Evaluate { project_id, session_id, call } = msg;
        let decided = self.rules.evaluate(project_id.as_ref().map(ProjectId::as_str), &call.tool_name, &call.input);
        let allow = decided.behavior == Behavior::Allow;
        let (reason, rule_id, updated_input) = match (decided.rule, &decided.not_analyzable) {
            (Some(rule), Some(unseen)) => {
                let reason = format!(
                    "denied: not analyzable under a deny rule (strict shell analysis): {unseen}; Conduit {} applies to this call",
                    describe(rule)
                );
                (reason, Some(rule.id.clone()), None)
            }
            (Some(rule), None) => {
                let verb = if allow { "allowed" } else { "denied" };
                let updated = rule.updated_input.as_ref().filter(|_| allow).map(|u| rules::merge_input(&call.input, u));
                (format!("{verb} by Conduit {}", describe(rule)), Some(rule.id.clone()), updated)
            }
            (None, _) => ("allowed: no Conduit rule matched".to_string(), None, None),
        };
        let row = NewDecision {
            project_id,
            session_id,
            request_id: call.request_id,
            tool_use_id: call.tool_use_id,
            decision_point: call.point,
            tool_name: call.tool_name,
            tool_input: rules::redact(&call.input).to_string(),
            decision: Decision::from(decided.behavior),
            decision_source: if rule_id.is_some() { DecisionSource::AutoRule } else { DecisionSource::AutoDefault },
            rule_id: rule_id.clone().map(RuleId::from_stored),
            reason: Some(reason.clone()),
            decided_at: time::now(),
            command_reading: decided.reading.as_ref().and_then(|r| serde_json::to_string(r).ok()),
            agent: call.agent,
        };
        let data = serde_json::json!({
            "session_id": row.session_id, "project_id": row.project_id, "request_id": row.request_id,
            "tool_use_id": row.tool_use_id, "decision_point": row.decision_point, "tool_name": row.tool_name,
            "tool_input": row.tool_input, "decision": row.decision, "decision_source": row.decision_source,
            "rule_id": row.rule_id, "reason": row.reason, "decided_at": row.decided_at,
            "command_reading": decided.reading, "agent": row.agent,
        });
        let event = match (&row.session_id, &self.bus) {
            (Some(_), _) => Some(data.to_string()),
            (None, Some(bus)) => {
                let event = Event::json("permission.decision", "permission", None, &data);
                bus.do_send(Publish(event.in_project(row.project_id.clone())));
                None
            }
            (None, None) => None,
        };
        self.writer.persist(WriteOp::Decision(row));
        MessageResult(Verdict { allow, reason, rule_id, updated_input, event })
    }
}

impl Handler<Reload> for PermissionEngine {
    type Result = ResponseActFuture<Self, Result<usize, StoreError>>;

    fn handle(&mut self, _msg: Reload, _ctx: &mut Context<Self>) -> Self::Result {
        let store = self.store.clone();
        let load = async move { store.run(rule_rows::all).await };
        Box::pin(load.into_actor(self).map(|rows, act, _ctx| {
            let set = RuleSet::new(compile_rows(rows?)).with_shell_analysis(act.shell_analysis);
            let n = set.len();
            act.rules = set;
            tracing::debug!(rules = n, "permission rules loaded");
            Ok(n)
        }))
    }
}
