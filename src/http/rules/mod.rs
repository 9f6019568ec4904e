//! Permission rules (per project and global) and the audit log of decisions. One file per
//! group of handlers; here, what they share: the rule as shown, the check of a rule as a
//! whole, and the engine's reload after every change.

pub mod create;
pub mod log;
pub mod read;
pub mod update;

use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::AppState;
use crate::actors::permissions::Reload;
use crate::db::{self, rules::RuleRow};
// A rule's behavior is the decision it makes.
use crate::domain::decision::Decision as Behavior;
use crate::domain::ids::{ProjectId, RuleId};
use crate::domain::{rules, validate};
use crate::error::{AppError, AppResult};

const MAX_RULE_CONTENT_BYTES: usize = 10_000;

/// A permission rule. `project_id` null means global.
#[derive(Debug, Serialize, ToSchema)]
pub struct Rule {
    #[schema(value_type = String)]
    pub id: RuleId,
    #[schema(value_type = Option<String>)]
    pub project_id: Option<ProjectId>,
    /// A tool name (`Bash`, `Read`, ...) or `*`.
    pub tool_name: String,
    /// Empty (any input), `word:*` (a command that is `word` or starts with `word `), or a glob.
    pub rule_content: String,
    /// `allow` or `deny`.
    pub behavior: Behavior,
    /// Higher first within a group.
    pub priority: i32,
    /// Allow rules only: merged over the tool input.
    #[schema(value_type = Option<Object>)]
    pub updated_input: Option<Value>,
    pub created_at: String,
    pub updated_at: String,
}

impl From<RuleRow> for Rule {
    fn from(r: RuleRow) -> Self {
        Rule {
            updated_input: r.updated_input.as_deref().and_then(|t| serde_json::from_str(t).ok()),
            id: r.id,
            project_id: r.project_id,
            tool_name: r.tool_name,
            rule_content: r.rule_content,
            behavior: r.behavior,
            priority: r.priority,
            created_at: r.created_at,
            updated_at: r.updated_at,
        }
    }
}

/// A rule as a request leaves it, before it is checked: `behavior` is still the client's text.
struct Draft<'a> {
    tool_name: &'a str,
    rule_content: &'a str,
    behavior: &'a str,
    has_updated_input: bool,
}

/// The longest `tool_name` (characters), as the schema says.
const MAX_TOOL_NAME_CHARS: usize = 200;

/// A `tool_name` as given, trimmed; refused when the text sent is longer than the schema
/// allows, even if what is left after trimming is not.
fn tool_name(given: &str) -> AppResult<String> {
    if given.chars().count() > MAX_TOOL_NAME_CHARS {
        return Err(AppError::validation(format!("`tool_name` must be at most {MAX_TOOL_NAME_CHARS} characters")));
    }
    Ok(given.trim().to_string())
}

/// Checks a rule as a whole (the pattern must compile for its tool); answers its behavior.
fn check_rule(rule: &Draft<'_>) -> AppResult<Behavior> {
    let tool = rule.tool_name;
    let odd = |c: char| c.is_whitespace() || c.is_control() || validate::is_format_char(c);
    // Its length was checked in characters, as the schema counts, by `tool_name`.
    if tool.is_empty() || tool.chars().any(odd) {
        return Err(AppError::validation("`tool_name` must be a tool name such as Bash or Read, or *, without spaces"));
    }
    let behavior = match rule.behavior {
        "ask" => {
            return Err(AppError::validation(
                "`behavior` cannot be `ask`: Conduit never waits for a human; every tool call is decided at once. Use allow or deny.",
            ))
        }
        other => other
            .parse::<Behavior>()
            .map_err(|_| AppError::validation(format!("`behavior` must be allow or deny, got {other:?}")))?,
    };
    if rule.rule_content.len() > MAX_RULE_CONTENT_BYTES || rule.rule_content.contains('\0') {
        return Err(AppError::validation(format!(
            "`rule_content` must be at most {MAX_RULE_CONTENT_BYTES} bytes, without NUL"
        )));
    }
    rules::compile_pattern(tool, rule.rule_content).map_err(AppError::validation)?;
    if rule.has_updated_input && behavior != Behavior::Allow {
        return Err(AppError::validation("`updated_input` only applies to allow rules"));
    }
    Ok(behavior)
}

fn input_text(value: Option<Value>) -> AppResult<Option<String>> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(v @ Value::Object(_)) => Ok(Some(v.to_string())),
        Some(_) => Err(AppError::validation("`updated_input` must be a JSON object")),
    }
}

/// After any change: the engine recompiles before the client hears back, so the very next
/// tool call sees the new rules.
pub(super) async fn reload(state: &AppState) -> AppResult<()> {
    state
        .engine
        .send(Reload)
        .await
        .map_err(|e| AppError::internal(format!("permission engine unavailable: {e}")))?
        .map_err(AppError::from)?;
    Ok(())
}

async fn project_exists(state: &AppState, id: &ProjectId) -> AppResult<()> {
    let lookup = id.clone();
    match state.store.run(move |conn| db::projects::find(conn, &lookup)).await? {
        Some(_) => Ok(()),
        None => Err(AppError::not_found(format!("No project with id {id:?}."))),
    }
}
