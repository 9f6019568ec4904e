//! `PUT /api/agents/{id}`: a partial update.

use actix_web::{web, HttpResponse};
use serde::Deserialize;
use utoipa::ToSchema;

use super::{ask, objective, schedule, timeout, view, AgentView};
use crate::actors::agent::{AgentEdit, Change};
use crate::actors::agents as registry;
use crate::domain::ids::AgentId;
use crate::domain::validate;
use crate::error::{AppResult, ErrorBody};
use crate::http::changes::{self as told, announce, Entity};
use crate::http::fields::{check, present, required};
use crate::http::folders::resolve_dir_field;
use crate::http::AppState;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateAgent {
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = String, min_length = 1, max_length = 200)]
    pub name: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = String, min_length = 1)]
    pub objective: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = String, min_length = 1, max_length = 200)]
    pub schedule: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = String, min_length = 1, max_length = 4096)]
    pub cwd: Option<Option<String>>,
    /// `null` clears it.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>, pattern = r"^[^\s-]\S*$", max_length = 200)]
    pub model: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = i64, minimum = 1000, maximum = 86400000)]
    pub timeout_ms: Option<Option<i64>>,
    /// `shared` or `worktree` (the agent's folder must be a git repository's top level).
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = crate::domain::workspace::WorkspaceMode)]
    pub workspace_mode: Option<Option<crate::domain::workspace::WorkspaceMode>>,
    /// The agent CLI its runs start (`claude`, `codex`, `gemini`, or a configured ACP agent).
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = crate::domain::agent_kind::AgentKind)]
    pub agent: Option<Option<crate::domain::agent_kind::AgentKind>>,
    /// The most one run may cost, in USD; `null`: no cap.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<f64>, exclusive_minimum = 0.0, exclusive_maximum = 1000000.0)]
    pub max_budget_usd: Option<Option<f64>>,
}

/// Change an agent (partial): given fields change.
#[utoipa::path(put, path = "/api/agents/{id}", tag = "agents", request_body = UpdateAgent,
    params(("id" = String, Path, description = "Agent id (UUID)")),
    responses(
        (status = 200, description = "Updated", body = AgentView),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 403, description = "`cwd` is outside the project root", body = ErrorBody),
        (status = 404, description = "No such agent", body = ErrorBody),
        (status = 415, description = "Not JSON", body = ErrorBody),
        (status = 422, description = "Validation failed, or `worktree` mode on a folder that is not a git repository (`not_a_git_repository`)", body = ErrorBody),
    ))]
pub async fn update(
    state: web::Data<AppState>,
    id: web::Path<String>,
    body: web::Json<UpdateAgent>,
) -> AppResult<HttpResponse> {
    let id: AgentId = id.parse()?;
    let mut b = body.into_inner();
    let cwd = b.cwd.take();
    let mut edit = edit(b)?;
    // Unknown agents are 404 before any folder is looked at.
    let current = ask(&state, registry::Get(id.clone())).await??;
    if let Some(raw) = required("cwd", cwd)? {
        edit.cwd = Some(resolve_dir_field(&state, "cwd", raw, |_| ()).await?.0);
    }
    let kind = edit.agent.clone().unwrap_or_else(|| current.agent.clone());
    let model = edit.model.clone().unwrap_or_else(|| current.model.clone());
    let options = crate::domain::launch::CliOptions { model, ..Default::default() };
    crate::supervisor::catalog::check_launch(&state.settings, &kind, &options, None)?;
    let mode = edit.workspace_mode.unwrap_or(current.workspace_mode);
    if mode == crate::domain::workspace::WorkspaceMode::Worktree {
        let folder = edit.cwd.clone().unwrap_or(current.cwd);
        crate::workspace::worktree::require_repository(std::path::Path::new(&folder)).await?;
    }
    let agent = view(ask(&state, registry::Update { id, change: Change::Edit(edit) }).await??);
    announce(&state, Entity::Agent, told::Change::Updated, &agent);
    Ok(HttpResponse::Ok().json(agent))
}

/// The change, its fields checked (all but the folder, resolved once the agent is known).
fn edit(b: UpdateAgent) -> AppResult<AgentEdit> {
    let mut edit = AgentEdit::default();
    if let Some(name) = required("name", b.name)? {
        edit.name = Some(check(validate::name("name", &name))?);
    }
    if let Some(text) = required("objective", b.objective)? {
        edit.objective = Some(objective(&text)?);
    }
    if let Some(expr) = required("schedule", b.schedule)? {
        edit.schedule = Some(schedule(&expr)?);
    }
    edit.workspace_mode = required("workspace_mode", b.workspace_mode)?;
    edit.agent = required("agent", b.agent)?;
    if let Some(ms) = required("timeout_ms", b.timeout_ms)? {
        edit.timeout_ms = Some(timeout(ms)?);
    }
    edit.max_budget_usd = match b.max_budget_usd {
        Some(usd) => Some(super::create::run_budget(usd)?),
        None => None,
    };
    edit.model = match b.model {
        Some(Some(m)) => Some(Some(check(validate::identifier("model", &m))?)),
        Some(None) => Some(None),
        None => None,
    };
    Ok(edit)
}
