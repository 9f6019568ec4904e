//! `POST /api/agents`: a scheduled agent, in a project's folder or a folder of its own.

use actix_web::http::header;
use actix_web::{web, HttpResponse};
use serde::Deserialize;
use utoipa::ToSchema;

use super::{ask, objective, schedule, timeout, vanishing, view, AgentView};
use crate::actors::agents::{self as registry, AgentError};
use crate::db::agents::Agent;
use crate::db::projects::Project;
use crate::domain::agent::AgentStatus;
use crate::domain::ids::{AgentId, ProjectId};
use crate::domain::{time, validate};
use crate::error::{AppError, AppResult, ErrorBody};
use crate::http::changes::{announce, Change, Entity};
use crate::http::fields::check;
use crate::http::folders::resolve_dir_field;
use crate::http::{projects, AppState};

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateAgent {
    #[schema(min_length = 1, max_length = 200)]
    pub name: String,
    /// The one user turn each run sends.
    #[schema(min_length = 1)]
    pub objective: String,
    /// Cron: 5 fields (`minute hour day-of-month month day-of-week`, UTC), or 6/7 with
    /// seconds first.
    #[schema(min_length = 1, max_length = 200)]
    pub schedule: String,
    /// The project it belongs to; its folder is the default `cwd`.
    pub project_id: Option<String>,
    /// Folder to run in (absolute or relative to the project root); defaults to the
    /// project's folder. At most 4096 bytes (PATH_MAX), 255 per folder name.
    #[schema(max_length = 4096)]
    pub cwd: Option<String>,
    #[schema(pattern = r"^[^\s-]\S*$", max_length = 200)]
    pub model: Option<String>,
    /// Default 300000 (5 min).
    #[schema(minimum = 1000, maximum = 86400000)]
    pub timeout_ms: Option<i64>,
    /// `shared` (default: runs work in `cwd`) or `worktree` (each run in a fresh git worktree
    /// of `cwd`, on a branch of its own; `cwd` must be a git repository's top level, else 422).
    pub workspace_mode: Option<crate::domain::workspace::WorkspaceMode>,
    /// The agent CLI each run starts: `claude`, `codex`, `gemini` or a configured ACP agent.
    /// Defaults to the project's `default_agent`, else `claude`.
    pub agent: Option<crate::domain::agent_kind::AgentKind>,
    /// The most one run may cost, in USD (`> 0`; absent: no cap). Claude Code gets it as
    /// `--max-budget-usd` and ends the run's turn over it.
    #[schema(exclusive_minimum = 0.0, exclusive_maximum = 1000000.0)]
    pub max_budget_usd: Option<f64>,
}

/// Create a scheduled agent.
#[utoipa::path(post, path = "/api/agents", tag = "agents", request_body = CreateAgent,
    responses(
        (status = 201, description = "Created; it fires on its schedule while `active`", body = AgentView),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 403, description = "`cwd` is outside the project root", body = ErrorBody),
        (status = 404, description = "No such project", body = ErrorBody),
        (status = 415, description = "Not JSON", body = ErrorBody),
        (status = 422, description = "Validation failed (an invalid schedule says the expected form), an unknown `agent` (`unknown_agent`), or `worktree` mode on a `cwd` that is not a git repository (`not_a_git_repository`)", body = ErrorBody),
        (status = 429, description = "CONDUIT_MAX_AGENTS reached", body = ErrorBody),
    ))]
pub async fn create(state: web::Data<AppState>, body: web::Json<CreateAgent>) -> AppResult<HttpResponse> {
    let b = body.into_inner();
    let fields = Fields::check(&b)?;
    let project = match &b.project_id {
        Some(raw) => Some(projects::load(&state, raw.parse::<ProjectId>()?).await?),
        None => None,
    };
    let cwd = cwd_for(&state, b.cwd, project.as_ref()).await?;
    let mode = b.workspace_mode.unwrap_or(crate::domain::workspace::WorkspaceMode::Shared);
    if mode == crate::domain::workspace::WorkspaceMode::Worktree {
        crate::workspace::worktree::require_repository(std::path::Path::new(&cwd)).await?;
    }
    let kind = b.agent.clone().or_else(|| project.as_ref().and_then(|p| p.default_agent.clone())).unwrap_or_default();
    let options = crate::domain::launch::CliOptions { model: fields.model.clone(), ..Default::default() };
    crate::supervisor::catalog::check_launch(&state.settings, &kind, &options, None)?;
    let mut agent = fields.agent(project.map(|p| p.id), cwd);
    agent.workspace_mode = mode;
    agent.agent = kind;
    agent.max_budget_usd = run_budget(b.max_budget_usd)?;
    let project_id = agent.project_id.clone();
    let created = match ask(&state, registry::Create(agent)).await? {
        Ok(created) => created,
        Err(AgentError::Store(e)) if vanishing(&state, &e, project_id.as_ref()).await => {
            let project_id = project_id.map(String::from).unwrap_or_default();
            return Err(AppError::not_found(format!("No project with id {project_id:?}.")));
        }
        Err(e) => return Err(e.into()),
    };
    // The actor stores its first fire time as it starts; show the fresh row.
    let id = created.id.clone();
    let current = view(ask(&state, registry::Get(id.clone())).await?.unwrap_or(created));
    announce(&state, Entity::Agent, Change::Created, &current);
    Ok(HttpResponse::Created().insert_header((header::LOCATION, format!("/api/agents/{id}"))).json(current))
}

/// The folder the agent runs in: `cwd` when given (resolved inside the root), else its
/// project's folder.
async fn cwd_for(state: &AppState, cwd: Option<String>, project: Option<&Project>) -> AppResult<String> {
    match (cwd, project) {
        (Some(raw), _) => Ok(resolve_dir_field(state, "cwd", raw, |_| ()).await?.0),
        (None, Some(p)) => Ok(p.folder_path.clone()),
        (None, None) => Err(AppError::validation("an agent needs a `project_id` or a `cwd` to run in")),
    }
}

/// The agent's own fields, checked.
struct Fields {
    name: String,
    objective: String,
    schedule: String,
    model: Option<String>,
    timeout_ms: i64,
}

impl Fields {
    fn check(b: &CreateAgent) -> AppResult<Fields> {
        Ok(Fields {
            name: check(validate::name("name", &b.name))?,
            objective: objective(&b.objective)?,
            schedule: schedule(&b.schedule)?,
            model: b
                .model
                .as_deref()
                .map(|m| validate::identifier("model", m))
                .transpose()
                .map_err(AppError::validation)?,
            timeout_ms: timeout(b.timeout_ms.unwrap_or(300_000))?,
        })
    }

    /// A new agent, active from now.
    fn agent(self, project_id: Option<ProjectId>, cwd: String) -> Agent {
        let now = time::now();
        Agent {
            id: AgentId::new(),
            project_id,
            name: self.name,
            objective: self.objective,
            schedule: self.schedule,
            cwd,
            model: self.model,
            timeout_ms: self.timeout_ms,
            status: AgentStatus::Active,
            consecutive_failures: 0,
            next_run_at: None,
            created_at: now.clone(),
            updated_at: now,
            workspace_mode: crate::domain::workspace::WorkspaceMode::Shared,
            agent: Default::default(),
            max_budget_usd: None,
        }
    }
}

/// A run's cap, checked ([`validate::spending_cap`]).
pub(super) fn run_budget(usd: Option<f64>) -> AppResult<Option<f64>> {
    usd.map(|v| validate::spending_cap("max_budget_usd", v)).transpose().map_err(AppError::validation)
}
