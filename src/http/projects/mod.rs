//! Projects: CRUD, import, and discovery of project folders on disk. One file per group of
//! handlers; here, what they share: the optional fields checked together, the lookups, and
//! the folder a project is made from.

pub mod create;
pub mod delete;
pub mod discover;
pub mod read;
pub mod update;

use super::AppState;
use crate::db::{self, projects::Project, StoreError};
use crate::domain::agent_kind::AgentKind;
use crate::domain::cluster::NodeList;
use crate::domain::environment::ProjectEnv;
use crate::domain::folders;
use crate::domain::ids::ProjectId;
use crate::domain::sandbox::SandboxMode;
use crate::domain::validate::{self, PermissionMode};
use crate::domain::workspace::{CopyList, WorkspaceMode, MAX_SETUP_SCRIPT_BYTES};
use crate::error::{AppError, AppResult};

const MAX_DESCRIPTION_BYTES: usize = 10_000;
const MAX_PROMPT_BYTES: usize = 100_000;

/// Optional fields shared by create, import and update, validated together.
struct Defaults<'a> {
    description: Option<&'a str>,
    default_model: Option<&'a str>,
    default_permission_mode: Option<PermissionMode>,
    default_system_prompt: Option<&'a str>,
    default_append_system_prompt: Option<&'a str>,
    max_sessions: Option<i32>,
    sandbox: Option<SandboxMode>,
    setup_script: Option<&'a str>,
    default_agent: Option<&'a AgentKind>,
    /// Daily and monthly caps in USD.
    budgets: (Option<f64>, Option<f64>),
    max_running_turns: Option<i32>,
    turn_inactivity_timeout_ms: Option<i64>,
    session_limits: Option<&'a crate::domain::resources::SessionLimits>,
}

/// A budget is a sum of money: 0 (nothing may be spent) up to, not including, 1000000 USD (an
/// inclusive bound cannot be told apart from the numbers just above it once read as a double).
fn check_budget(field: &str, usd: Option<f64>) -> Result<(), AppError> {
    match usd {
        Some(v) if !(v.is_finite() && (0.0..1_000_000.0).contains(&v)) => {
            Err(AppError::validation(format!("`{field}` must be at least 0 and less than 1000000 (USD), got {v}")))
        }
        _ => Ok(()),
    }
}

/// A default agent must be one the settings know (422 otherwise).
fn check_agent(state: &AppState, agent: Option<&AgentKind>) -> Result<(), AppError> {
    match agent {
        Some(kind) => Ok(crate::supervisor::catalog::known(&state.settings, kind)?),
        None => Ok(()),
    }
}

fn check_defaults(d: &Defaults<'_>) -> Result<(), AppError> {
    if let Some(s) = d.setup_script {
        validate::free_text("setup_script", s, MAX_SETUP_SCRIPT_BYTES).map_err(AppError::validation)?;
    }
    let v = |r: Result<String, String>| r.map(drop).map_err(AppError::validation);
    if let Some(s) = d.description {
        v(validate::free_text("description", s, MAX_DESCRIPTION_BYTES))?;
        validate::display_text("description", s).map_err(AppError::validation)?;
    }
    if let Some(s) = d.default_model {
        v(validate::identifier("default_model", s))?;
    }
    if let Some(s) = d.default_system_prompt {
        v(validate::free_text("default_system_prompt", s, MAX_PROMPT_BYTES))?;
    }
    if let Some(s) = d.default_append_system_prompt {
        v(validate::free_text("default_append_system_prompt", s, MAX_PROMPT_BYTES))?;
    }
    if let Some(n) = d.max_sessions {
        if !(1..=1000).contains(&n) {
            return Err(AppError::validation(format!("`max_sessions` must be from 1 to 1000, got {n}")));
        }
    }
    if let Some(n) = d.max_running_turns {
        if !(1..=1000).contains(&n) {
            return Err(AppError::validation(format!("`max_running_turns` must be from 1 to 1000, got {n}")));
        }
    }
    if let Some(ms) = d.turn_inactivity_timeout_ms {
        validate::turn_inactivity(ms)
            .map_err(|why| AppError::validation(format!("`turn_inactivity_timeout_ms` {why}")))?;
    }
    if let Some(limits) = d.session_limits {
        limits.check("session_limits").map_err(AppError::validation)?;
    }
    check_budget("budget_daily_usd", d.budgets.0)?;
    check_budget("budget_monthly_usd", d.budgets.1)?;
    Ok(())
}

/// Resolves `folder_path` to a canonical directory inside the root and detects its project
/// type (from its marker files), both on the blocking pool.
async fn resolve_folder(state: &AppState, raw: String) -> AppResult<(String, &'static str)> {
    super::folders::resolve_dir_field(state, "folder_path", raw, folders::project_type).await
}

/// The checked `workspace_copy` list (absent: none).
fn copy_list(raw: Option<&[String]>) -> AppResult<CopyList> {
    CopyList::parse(raw.unwrap_or_default()).map_err(AppError::validation)
}

/// The checked `env` map (absent: none); a value sent as the redaction marker keeps what
/// `current` holds.
fn project_env_over(
    raw: Option<std::collections::BTreeMap<String, String>>,
    current: &ProjectEnv,
) -> AppResult<ProjectEnv> {
    ProjectEnv::parse(raw.unwrap_or_default(), current).map_err(AppError::validation)
}

/// The checked `env` map of a new project (absent: none).
fn project_env(raw: Option<std::collections::BTreeMap<String, String>>) -> AppResult<ProjectEnv> {
    project_env_over(raw, &ProjectEnv::default())
}

/// The checked `nodes` list (absent: every node).
fn node_list(raw: Option<&[String]>) -> AppResult<NodeList> {
    NodeList::parse(raw.unwrap_or_default()).map_err(AppError::validation)
}

/// The workspace mode of a project in `folder`: `worktree` only for a repository's top level
/// (a 422 otherwise); when none is asked for, `worktree` for a repository with a commit (new
/// git projects get a worktree per session), `shared` for anything else.
async fn workspace_mode_for(folder: &str, wanted: Option<WorkspaceMode>) -> AppResult<WorkspaceMode> {
    let folder = std::path::Path::new(folder);
    match wanted {
        Some(WorkspaceMode::Worktree) => {
            crate::workspace::worktree::require_repository(folder).await?;
            Ok(WorkspaceMode::Worktree)
        }
        Some(WorkspaceMode::Shared) => Ok(WorkspaceMode::Shared),
        None => match crate::workspace::worktree::inspect(folder).await {
            Ok(Some(true)) => Ok(WorkspaceMode::Worktree),
            _ => Ok(WorkspaceMode::Shared),
        },
    }
}

fn conflict_on_folder(e: StoreError, folder: &str) -> AppError {
    match e {
        StoreError::Conflict(_) => AppError::conflict(format!("A project for the folder {folder} already exists.")),
        other => other.into(),
    }
}

fn no_project(id: &ProjectId) -> AppError {
    AppError::not_found(format!("No project with id {id:?}."))
}

/// After a write that names a project failed: whether the project is gone (deleted meanwhile,
/// so the row's foreign key failed). That is the client's 404, not the service's failure.
pub(super) async fn vanished(state: &AppState, error: &StoreError, project_id: &ProjectId) -> bool {
    if matches!(error, StoreError::Busy(_)) {
        return false;
    }
    let lookup = project_id.clone();
    matches!(state.store.run(move |conn| db::projects::find(conn, &lookup)).await, Ok(None))
}

/// The project, or a 404 naming `id`.
pub(super) async fn load(state: &AppState, id: ProjectId) -> AppResult<Project> {
    let lookup = id.clone();
    state.store.run(move |conn| db::projects::find(conn, &lookup)).await?.ok_or_else(|| no_project(&id))
}
