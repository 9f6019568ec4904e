//! `POST /api/projects/{id}/sessions`: a new CLI process in a project.

use actix_web::http::header;
use actix_web::{web, HttpResponse};
use serde::Deserialize;
use utoipa::ToSchema;

use crate::actors::registry::{Launch, LaunchError};
use crate::db::projects::Project;
use crate::db::sessions::Session;
use crate::domain::agent_kind::AgentKind;
use crate::domain::ids::ProjectId;
use crate::domain::launch::{CliOptions, LaunchSpec};
use crate::domain::resources::SessionLimits;
use crate::domain::validate::{self, PermissionMode, Transport};
use crate::domain::workspace::WorkspaceMode;
use crate::error::{AppError, AppResult, ErrorBody};
use crate::http::fields::check;
use crate::http::{projects, AppState};
use crate::supervisor::catalog;

const MAX_PROMPT_BYTES: usize = 100_000;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LaunchSession {
    /// Display name; a friendly two-word name when absent.
    #[schema(min_length = 1, max_length = 200)]
    pub name: Option<String>,
    /// Defaults to the project's `default_model`.
    #[schema(pattern = r"^[^\s-]\S*$", max_length = 200)]
    pub model: Option<String>,
    /// Defaults to the project's `default_permission_mode`.
    pub permission_mode: Option<PermissionMode>,
    /// A CLI session id to continue (`--resume`).
    #[schema(pattern = r"^[^\s-]\S*$", max_length = 200)]
    pub resume_session_id: Option<String>,
    /// With `resume_session_id`: continue in a new CLI session id.
    pub fork_session: Option<bool>,
    /// Defaults to the project's `default_system_prompt`.
    pub system_prompt: Option<String>,
    /// Defaults to the project's `default_append_system_prompt`.
    pub append_system_prompt: Option<String>,
    /// Idempotency key: while a live session of this project holds it, launching with it
    /// again returns that session (200) instead of starting another.
    #[schema(min_length = 1, max_length = 200)]
    pub external_key: Option<String>,
    /// How the CLI is reached: `stdio` (its pipes), `websocket` (a bridge it connects to with
    /// `--sdk-url`; older CLIs only) or `auto` (websocket for CLI versions known to accept
    /// it). Defaults to the `transport` setting.
    pub transport: Option<Transport>,
    /// For a project in `worktree` mode: the branch, tag or commit the session's worktree
    /// starts from (default: what the project folder has checked out). 422 when it names no
    /// commit, or for a `shared` project.
    #[schema(max_length = 256, pattern = r"^[^\s-]\S*$")]
    pub base_ref: Option<String>,
    /// The agent CLI: `claude`, `codex`, `gemini` or an ACP agent of the `acp_agents`
    /// setting. Defaults to the project's `default_agent` (else `claude`). The project's
    /// default model, permission mode and prompts apply only when this is its default agent.
    pub agent: Option<AgentKind>,
    /// The most this session may cost in USD, across resumes (`> 0`). Claude Code gets what
    /// is left as `--max-budget-usd` and ends a turn over it with `error_max_budget_usd`;
    /// for every agent, Conduit pauses the session once its cost reaches the cap (further
    /// messages: 402 `budget_exhausted`).
    #[schema(exclusive_minimum = 0.0, exclusive_maximum = 1000000.0)]
    pub max_budget_usd: Option<f64>,
    /// Kernel limits on the session's CLI and everything it starts: `memory_max_mb` (at
    /// least 16), `pids_max` (at least 8), `cpu_weight` (1-10000). Each field absent comes
    /// from the project's `session_limits`, then the `session_*` settings. A limit this
    /// machine cannot apply is refused (503 `limits_unavailable`).
    pub limits: Option<SessionLimits>,
}

/// Launch an agent CLI session (Claude Code, Codex, Gemini CLI or a configured ACP agent) in
/// a project.
#[utoipa::path(post, path = "/api/projects/{id}/sessions", tag = "sessions", request_body = LaunchSession,
    params(("id" = String, Path, description = "Project id (UUID)")),
    responses(
        (status = 201, description = "Launched; status `starting` (or `error` when the CLI cannot be started, or its worktree's setup failed). A `worktree` session answers once its worktree is made and set up.", body = Session),
        (status = 200, description = "A live session with this `external_key` already exists", body = Session),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 402, description = "A budget covering it is spent (`budget_exhausted`: the message names the budget and when it resets; `Retry-After` gives the seconds)", body = ErrorBody),
        (status = 404, description = "No such project", body = ErrorBody),
        (status = 413, description = "Body over 1 MiB", body = ErrorBody),
        (status = 415, description = "Not JSON", body = ErrorBody),
        (status = 422, description = "Validation failed; an unknown `agent` (`unknown_agent`) or one that cannot do what the launch asks (`unsupported_by_agent`); the project is in `worktree` mode and its folder is no longer a git repository (`not_a_git_repository`), has no commit (`no_commit`), or `base_ref` names no commit (`unknown_base_ref`)", body = ErrorBody),
        (status = 429, description = "The project's or the global session limit is reached", body = ErrorBody),
        (status = 503, description = "The agent's CLI cannot be found (`agent_unavailable`, naming its setting), the service is shutting down, no port is free for a WebSocket bridge, the project asks for a sandbox this machine cannot provide (`sandbox_unavailable`), or the session's kernel limits cannot be applied here (`limits_unavailable`: the message names the missing controllers and why)", body = ErrorBody),
    ))]
pub async fn launch(
    state: web::Data<AppState>,
    id: web::Path<String>,
    body: web::Json<LaunchSession>,
) -> AppResult<HttpResponse> {
    let project_id: ProjectId = id.parse()?;
    let wanted = Wanted::check(body.into_inner())?;
    let project = projects::load(&state, project_id.clone()).await?;
    check_workspace(&project, wanted.base_ref.as_deref()).await?;
    crate::http::usage::within_budget(&state, Some(project.id.clone())).await?;
    let spec = wanted.spec_in(&project);
    check_agent(&state, &spec).await?;
    let launched = match state
        .registry
        .send(Launch { project, spec })
        .await
        .map_err(|e| AppError::internal(format!("session registry unavailable: {e}")))?
    {
        Ok(launched) => launched,
        Err(LaunchError::Store(e)) if projects::vanished(&state, &e, &project_id).await => {
            return Err(AppError::not_found(format!("No project with id {project_id:?}.")));
        }
        Err(e) => return Err(e.into()),
    };
    let mut response = if launched.created { HttpResponse::Created() } else { HttpResponse::Ok() };
    let session = match launched.pending {
        // A worktree being made and set up: the answer is the session once its CLI started
        // (or failed to, setup included).
        Some(pending) => {
            pending.await.map_err(|_| AppError::unavailable("shutting_down", "The service is shutting down."))??
        }
        None => launched.session,
    };
    Ok(response.insert_header((header::LOCATION, format!("/api/sessions/{}", session.id))).json(session))
}

/// The agent must exist, take what the launch asks for, and have its CLI installed.
async fn check_agent(state: &AppState, spec: &LaunchSpec) -> AppResult<()> {
    catalog::check_launch(&state.settings, &spec.agent, &spec.options, spec.transport)?;
    let (settings, kind) = (state.settings.clone(), spec.agent.clone());
    web::block(move || catalog::locate(&settings, &kind))
        .await
        .map_err(|e| AppError::internal(format!("the agent's CLI could not be looked for: {e}")))??;
    Ok(())
}

/// A worktree launch needs the project folder to still be a repository, and `base_ref` to
/// name a commit there; a shared one takes no `base_ref`.
async fn check_workspace(project: &Project, base_ref: Option<&str>) -> AppResult<()> {
    if project.workspace_mode != WorkspaceMode::Worktree {
        return match base_ref {
            Some(_) => Err(AppError::validation("`base_ref` applies to projects in `worktree` workspace mode only")),
            None => Ok(()),
        };
    }
    let folder = std::path::Path::new(&project.folder_path);
    match base_ref {
        // Naming a commit there says it is a repository too.
        Some(reference) => {
            crate::workspace::worktree::require_repository(folder).await?;
            crate::workspace::worktree::resolve(folder, reference).await?;
        }
        // A launch waits for this: a look for `.git`, not a git command (git itself says
        // more when the worktree is made, should `.git` be broken).
        None => {
            let marker = folder.join(".git");
            if !tokio::fs::try_exists(&marker).await.unwrap_or(false) {
                return Err(crate::workspace::WorkspaceError::NotARepository(format!(
                    "{} is no longer a git repository (no .git), so the session cannot get a git worktree; restore it, or set the project's workspace_mode to `shared`",
                    folder.display()
                ))
                .into());
            }
        }
    }
    Ok(())
}

/// A launch whose fields passed their checks; what it leaves out comes from the project.
struct Wanted {
    name: Option<String>,
    external_key: Option<String>,
    model: Option<String>,
    resume_session_id: Option<String>,
    base_ref: Option<String>,
    body: LaunchSession,
}

impl Wanted {
    fn check(b: LaunchSession) -> AppResult<Wanted> {
        let name = b.name.as_deref().map(|n| validate::name("name", n)).transpose().map_err(AppError::validation)?;
        let external_key = b
            .external_key
            .as_deref()
            .map(|k| validate::name("external_key", k))
            .transpose()
            .map_err(AppError::validation)?;
        let model =
            b.model.as_deref().map(|m| validate::identifier("model", m)).transpose().map_err(AppError::validation)?;
        let resume_session_id = b
            .resume_session_id
            .as_deref()
            .map(|r| validate::identifier("resume_session_id", r))
            .transpose()
            .map_err(AppError::validation)?;
        if let Some(p) = &b.system_prompt {
            check(validate::free_text("system_prompt", p, MAX_PROMPT_BYTES))?;
        }
        if let Some(p) = &b.append_system_prompt {
            check(validate::free_text("append_system_prompt", p, MAX_PROMPT_BYTES))?;
        }
        if b.fork_session == Some(true) && resume_session_id.is_none() {
            return Err(AppError::validation("`fork_session` needs `resume_session_id`"));
        }
        let base_ref =
            b.base_ref.as_deref().map(crate::domain::workspace::base_ref).transpose().map_err(AppError::validation)?;
        if let Some(usd) = b.max_budget_usd {
            validate::spending_cap("max_budget_usd", usd).map_err(AppError::validation)?;
        }
        if let Some(limits) = &b.limits {
            limits.check("limits").map_err(AppError::validation)?;
        }
        Ok(Wanted { name, external_key, model, resume_session_id, base_ref, body: b })
    }

    /// The launch, with the project's defaults for what it leaves out.
    fn spec_in(self, project: &Project) -> LaunchSpec {
        let b = self.body;
        let project_agent = project.default_agent.clone().unwrap_or_default();
        let agent = b.agent.unwrap_or_else(|| project_agent.clone());
        // The project's defaults were written for its own agent: another one does not get them.
        let defaults = (agent == project_agent).then_some(project);
        let default = |f: fn(&Project) -> &Option<String>| defaults.and_then(|p| f(p).clone());
        let options = CliOptions {
            model: self.model.or_else(|| default(|p| &p.default_model)),
            permission_mode: b
                .permission_mode
                .map(|m| m.as_str().to_string())
                .or_else(|| default(|p| &p.default_permission_mode)),
            resume_session_id: self.resume_session_id,
            fork_session: b.fork_session.unwrap_or(false),
            system_prompt: b.system_prompt.or_else(|| default(|p| &p.default_system_prompt)),
            append_system_prompt: b.append_system_prompt.or_else(|| default(|p| &p.default_append_system_prompt)),
            max_budget_usd: b.max_budget_usd,
        };
        LaunchSpec {
            name: self.name,
            external_key: self.external_key,
            options,
            transport: b.transport,
            base_ref: self.base_ref,
            agent,
            limits: b.limits.unwrap_or_default(),
        }
    }
}
