//! `POST /api/projects` and `POST /api/projects/import`: a project from a folder inside the root.

use actix_web::http::header;
use actix_web::{web, HttpResponse};
use serde::Deserialize;
use utoipa::ToSchema;

use super::{
    check_agent, check_defaults, conflict_on_folder, copy_list, node_list, project_env, resolve_folder,
    workspace_mode_for, Defaults,
};
use crate::actors::turn_gate::SetTurnCap;
use crate::db::{self, projects::Project, StoreError};
use crate::domain::agent_kind::AgentKind;
use crate::domain::cluster::NodeList;
use crate::domain::environment::ProjectEnv;
use crate::domain::ids::ProjectId;
use crate::domain::resources::{SessionLimits, StoredLimits};
use crate::domain::sandbox::SandboxMode;
use crate::domain::time;
use crate::domain::validate::{self, PermissionMode};
use crate::domain::workspace::{CopyList, WorkspaceMode};
use crate::error::{AppError, AppResult, ErrorBody};
use crate::http::changes::{announce, Change, Entity};
use crate::http::AppState;

const DEFAULT_MAX_SESSIONS: i32 = 5;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateProject {
    /// 1-200 characters after trimming.
    #[schema(min_length = 1, max_length = 200)]
    pub name: String,
    /// An existing directory inside the project root (absolute, or relative to the root); at
    /// most 4096 bytes (PATH_MAX), 255 per folder name.
    #[schema(min_length = 1, max_length = 4096)]
    pub folder_path: String,
    pub description: Option<String>,
    /// A model name; never starts with '-', no whitespace.
    #[schema(pattern = r"^[^\s-]\S*$", max_length = 200)]
    pub default_model: Option<String>,
    pub default_permission_mode: Option<PermissionMode>,
    pub default_system_prompt: Option<String>,
    pub default_append_system_prompt: Option<String>,
    /// Live sessions allowed at once in this project, 1-1000 (default 5).
    #[schema(minimum = 1, maximum = 1000)]
    pub max_sessions: Option<i32>,
    /// The OS sandbox its CLIs run in: `off`, `workspace` or `strict`; absent or `null`: the
    /// service's `sandbox` setting.
    pub sandbox: Option<SandboxMode>,
    /// `shared` (sessions work in the folder itself) or `worktree` (each session gets a git
    /// worktree of its own; the folder must be a git repository's top level, else 422).
    /// Absent: `worktree` when the folder is a git repository with a commit, else `shared`.
    pub workspace_mode: Option<WorkspaceMode>,
    /// Paths or globs relative to the folder (`.env`, `config/*.local.json`, `**/.env`)
    /// copied into each new worktree; at most 100.
    #[schema(max_items = 100)]
    pub workspace_copy: Option<Vec<String>>,
    /// Run with `bash -c` in each new worktree before the CLI starts (at most 100000 bytes).
    pub setup_script: Option<String>,
    /// The agent its sessions run when a launch names none (`claude`, `codex`, `gemini` or a
    /// configured ACP agent); absent: `claude`. The default model, permission mode and
    /// prompts apply to launches of this agent only.
    pub default_agent: Option<AgentKind>,
    /// What the project may spend per UTC day, in USD (absent or `null`: no cap). Once spent,
    /// its sessions are `paused`, messages and launches are refused (402 `budget_exhausted`)
    /// and its scheduled agents' fires are skipped, until the next day or a raise.
    #[schema(minimum = 0.0, exclusive_maximum = 1000000.0)]
    pub budget_daily_usd: Option<f64>,
    /// The same per UTC month.
    #[schema(minimum = 0.0, exclusive_maximum = 1000000.0)]
    pub budget_monthly_usd: Option<f64>,
    /// How many turns its sessions may run at once, 1-1000 (absent or `null`: no limit).
    /// Beyond it, turns wait first come, first served across its sessions.
    #[schema(minimum = 1, maximum = 1000)]
    pub max_running_turns: Option<i32>,
    /// A turn of its sessions with no output from the CLI for this long, in milliseconds, with
    /// no permission or approval waiting, is stalled: interrupted, then the CLI stopped (the
    /// session ends `stalled`; a message resumes it). 0: never; absent or `null`: the
    /// `turn_inactivity_timeout_ms` setting.
    #[schema(minimum = 0)]
    pub turn_inactivity_timeout_ms: Option<i64>,
    /// Cluster mode: the nodes (`node_name`) that have this folder; its sessions are placed on
    /// them only. Absent or empty: every node (shared storage). At most 64.
    #[schema(max_items = 64)]
    pub nodes: Option<Vec<String>>,
    /// Environment variables every process of the project gets (its CLIs, exec commands,
    /// background processes, terminals, setup scripts): at most 100, names
    /// `[A-Za-z_][A-Za-z0-9_]*` not starting with `CONDUIT_`, values up to 32 KiB. Stored as
    /// given; shown with each value as `[REDACTED:project_env]`.
    pub env: Option<std::collections::BTreeMap<String, String>>,
    /// Kernel limits on its sessions' CLIs, each where a launch sets none: `memory_max_mb`
    /// (at least 16), `pids_max` (at least 8), `cpu_weight` (1-10000). Absent or `null`: the
    /// `session_*` settings.
    pub session_limits: Option<SessionLimits>,
}

/// Like creating a project, but the name defaults to the folder's name and `source` is `imported`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ImportProject {
    /// At most 4096 bytes (PATH_MAX), 255 per folder name.
    #[schema(min_length = 1, max_length = 4096)]
    pub folder_path: String,
    /// Defaults to the folder's name.
    #[schema(min_length = 1, max_length = 200)]
    pub name: Option<String>,
    pub description: Option<String>,
    /// A model name; never starts with '-', no whitespace.
    #[schema(pattern = r"^[^\s-]\S*$", max_length = 200)]
    pub default_model: Option<String>,
    pub default_permission_mode: Option<PermissionMode>,
    pub default_system_prompt: Option<String>,
    pub default_append_system_prompt: Option<String>,
    #[schema(minimum = 1, maximum = 1000)]
    pub max_sessions: Option<i32>,
    /// The OS sandbox its CLIs run in: `off`, `workspace` or `strict`; absent or `null`: the
    /// service's `sandbox` setting.
    pub sandbox: Option<SandboxMode>,
    /// `shared` (sessions work in the folder itself) or `worktree` (each session gets a git
    /// worktree of its own; the folder must be a git repository's top level, else 422).
    /// Absent: `worktree` when the folder is a git repository with a commit, else `shared`.
    pub workspace_mode: Option<WorkspaceMode>,
    /// Paths or globs relative to the folder (`.env`, `config/*.local.json`, `**/.env`)
    /// copied into each new worktree; at most 100.
    #[schema(max_items = 100)]
    pub workspace_copy: Option<Vec<String>>,
    /// Run with `bash -c` in each new worktree before the CLI starts (at most 100000 bytes).
    pub setup_script: Option<String>,
    /// The agent its sessions run when a launch names none (`claude`, `codex`, `gemini` or a
    /// configured ACP agent); absent: `claude`. The default model, permission mode and
    /// prompts apply to launches of this agent only.
    pub default_agent: Option<AgentKind>,
    /// What the project may spend per UTC day, in USD (absent or `null`: no cap). Once spent,
    /// its sessions are `paused`, messages and launches are refused (402 `budget_exhausted`)
    /// and its scheduled agents' fires are skipped, until the next day or a raise.
    #[schema(minimum = 0.0, exclusive_maximum = 1000000.0)]
    pub budget_daily_usd: Option<f64>,
    /// The same per UTC month.
    #[schema(minimum = 0.0, exclusive_maximum = 1000000.0)]
    pub budget_monthly_usd: Option<f64>,
    /// How many turns its sessions may run at once, 1-1000 (absent or `null`: no limit).
    /// Beyond it, turns wait first come, first served across its sessions.
    #[schema(minimum = 1, maximum = 1000)]
    pub max_running_turns: Option<i32>,
    /// A turn of its sessions with no output from the CLI for this long, in milliseconds, with
    /// no permission or approval waiting, is stalled: interrupted, then the CLI stopped (the
    /// session ends `stalled`; a message resumes it). 0: never; absent or `null`: the
    /// `turn_inactivity_timeout_ms` setting.
    #[schema(minimum = 0)]
    pub turn_inactivity_timeout_ms: Option<i64>,
    /// Cluster mode: the nodes (`node_name`) that have this folder; its sessions are placed on
    /// them only. Absent or empty: every node (shared storage). At most 64.
    #[schema(max_items = 64)]
    pub nodes: Option<Vec<String>>,
    /// Environment variables every process of the project gets (its CLIs, exec commands,
    /// background processes, terminals, setup scripts): at most 100, names
    /// `[A-Za-z_][A-Za-z0-9_]*` not starting with `CONDUIT_`, values up to 32 KiB. Stored as
    /// given; shown with each value as `[REDACTED:project_env]`.
    pub env: Option<std::collections::BTreeMap<String, String>>,
    /// Kernel limits on its sessions' CLIs, each where a launch sets none: `memory_max_mb`
    /// (at least 16), `pids_max` (at least 8), `cpu_weight` (1-10000). Absent or `null`: the
    /// `session_*` settings.
    pub session_limits: Option<SessionLimits>,
}

/// Create a project.
#[utoipa::path(post, path = "/api/projects", tag = "projects", request_body = CreateProject,
    responses(
        (status = 201, description = "Created", body = Project),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 403, description = "Folder outside the project root", body = ErrorBody),
        (status = 409, description = "A project already uses this folder", body = ErrorBody),
        (status = 413, description = "Body over 1 MiB", body = ErrorBody),
        (status = 415, description = "Not JSON", body = ErrorBody),
        (status = 422, description = "Validation failed, or `worktree` mode on a folder that is not a git repository (`not_a_git_repository`)", body = ErrorBody),
    ))]
pub async fn create(state: web::Data<AppState>, body: web::Json<CreateProject>) -> AppResult<HttpResponse> {
    let b = body.into_inner();
    let name = validate::name("name", &b.name).map_err(AppError::validation)?;
    let defaults = Defaults {
        description: b.description.as_deref(),
        default_model: b.default_model.as_deref(),
        default_permission_mode: b.default_permission_mode,
        default_system_prompt: b.default_system_prompt.as_deref(),
        default_append_system_prompt: b.default_append_system_prompt.as_deref(),
        max_sessions: b.max_sessions,
        sandbox: b.sandbox,
        setup_script: b.setup_script.as_deref(),
        default_agent: b.default_agent.as_ref(),
        budgets: (b.budget_daily_usd, b.budget_monthly_usd),
        max_running_turns: b.max_running_turns,
        turn_inactivity_timeout_ms: b.turn_inactivity_timeout_ms,
        session_limits: b.session_limits.as_ref(),
    };
    check_defaults(&defaults)?;
    check_agent(&state, defaults.default_agent)?;
    let copy = copy_list(b.workspace_copy.as_deref())?;
    let nodes = node_list(b.nodes.as_deref())?;
    let env = project_env(b.env)?;
    let folder = resolve_folder(&state, b.folder_path.clone()).await?;
    let mode = workspace_mode_for(&folder.0, b.workspace_mode).await?;
    insert_project(&state, new_project(name, folder, "manual", &defaults, (mode, copy), (nodes, env))).await
}

/// Import an existing folder as a project.
#[utoipa::path(post, path = "/api/projects/import", tag = "projects", request_body = ImportProject,
    responses(
        (status = 201, description = "Imported", body = Project),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 403, description = "Folder outside the project root", body = ErrorBody),
        (status = 409, description = "A project already uses this folder", body = ErrorBody),
        (status = 413, description = "Body over 1 MiB", body = ErrorBody),
        (status = 415, description = "Not JSON", body = ErrorBody),
        (status = 422, description = "Validation failed, or `worktree` mode on a folder that is not a git repository (`not_a_git_repository`)", body = ErrorBody),
    ))]
pub async fn import(state: web::Data<AppState>, body: web::Json<ImportProject>) -> AppResult<HttpResponse> {
    let b = body.into_inner();
    let defaults = Defaults {
        description: b.description.as_deref(),
        default_model: b.default_model.as_deref(),
        default_permission_mode: b.default_permission_mode,
        default_system_prompt: b.default_system_prompt.as_deref(),
        default_append_system_prompt: b.default_append_system_prompt.as_deref(),
        max_sessions: b.max_sessions,
        sandbox: b.sandbox,
        setup_script: b.setup_script.as_deref(),
        default_agent: b.default_agent.as_ref(),
        budgets: (b.budget_daily_usd, b.budget_monthly_usd),
        max_running_turns: b.max_running_turns,
        turn_inactivity_timeout_ms: b.turn_inactivity_timeout_ms,
        session_limits: b.session_limits.as_ref(),
    };
    check_defaults(&defaults)?;
    check_agent(&state, defaults.default_agent)?;
    let copy = copy_list(b.workspace_copy.as_deref())?;
    let nodes = node_list(b.nodes.as_deref())?;
    let env = project_env(b.env)?;
    let folder = resolve_folder(&state, b.folder_path.clone()).await?;
    let mode = workspace_mode_for(&folder.0, b.workspace_mode).await?;
    let name = match &b.name {
        Some(n) => validate::name("name", n),
        None => {
            let base = std::path::Path::new(&folder.0).file_name().map(|n| n.to_string_lossy().into_owned());
            validate::name("name", base.as_deref().unwrap_or("root"))
        }
    }
    .map_err(AppError::validation)?;
    insert_project(&state, new_project(name, folder, "imported", &defaults, (mode, copy), (nodes, env))).await
}

/// Inserts a new project after checking the folder is free. Shared by create and import.
async fn insert_project(state: &AppState, project: Project) -> AppResult<HttpResponse> {
    let folder = project.folder_path.clone();
    let stored = project.clone();
    state
        .store
        .run(move |conn| {
            if let Some(existing) = db::projects::find_by_folder(conn, &stored.folder_path)? {
                return Err(StoreError::Conflict(existing.id.to_string()));
            }
            db::projects::insert(conn, &stored)
        })
        .await
        .map_err(|e| conflict_on_folder(e, &folder))?;
    if project.budget_daily_usd.is_some() || project.budget_monthly_usd.is_some() {
        crate::http::usage::reevaluate(state, project.id.clone()).await;
    }
    state.turn_gate.do_send(SetTurnCap::of(&project));
    announce(state, Entity::Project, Change::Created, &project);
    Ok(HttpResponse::Created().insert_header((header::LOCATION, format!("/api/projects/{}", project.id))).json(project))
}

/// A new project in `folder` (its canonical path and detected type).
fn new_project(
    name: String,
    folder: (String, &str),
    source: &str,
    d: &Defaults<'_>,
    workspace: (WorkspaceMode, CopyList),
    (nodes, env): (NodeList, ProjectEnv),
) -> Project {
    let now = time::now();
    let (folder_path, project_type) = folder;
    Project {
        id: ProjectId::new(),
        name,
        project_type: project_type.to_string(),
        folder_path,
        description: d.description.map(String::from),
        source: source.to_string(),
        default_model: d.default_model.map(String::from),
        default_permission_mode: d.default_permission_mode.map(|m| m.as_str().to_string()),
        default_system_prompt: d.default_system_prompt.map(String::from),
        default_append_system_prompt: d.default_append_system_prompt.map(String::from),
        max_sessions: d.max_sessions.unwrap_or(DEFAULT_MAX_SESSIONS),
        created_at: now.clone(),
        updated_at: now,
        sandbox: d.sandbox,
        workspace_mode: workspace.0,
        workspace_copy: workspace.1,
        setup_script: d.setup_script.map(String::from),
        default_agent: d.default_agent.cloned(),
        budget_daily_usd: d.budgets.0,
        budget_monthly_usd: d.budgets.1,
        max_running_turns: d.max_running_turns,
        turn_inactivity_timeout_ms: d.turn_inactivity_timeout_ms,
        session_limits: d.session_limits.filter(|l| !l.is_empty()).map(|l| StoredLimits::new(*l)),
        nodes,
        env,
    }
}
