//! Projects: CRUD, import, and discovery of project folders on disk.

use actix_web::http::header;
use actix_web::{web, HttpResponse};
use diesel::Connection;
use serde::{Deserialize, Deserializer, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::folders::path_error;
use super::pagination::Page;
use super::AppState;
use crate::actors::registry::CloseProject;
use crate::db::{self, projects::Project, StoreError};
use crate::domain::ids::{AgentId, ProjectId};
use crate::domain::validate::PermissionMode;
use crate::domain::{folders, time, validate};
use crate::error::{AppError, AppResult, ErrorBody};

const MAX_DESCRIPTION_BYTES: usize = 10_000;
const MAX_PROMPT_BYTES: usize = 100_000;
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
}

/// Absent fields keep their value; `null` clears an optional field.
pub(super) fn present<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

/// A field that may be left out of an update but not cleared: `null` is refused.
pub(super) fn required<T>(field: &str, value: Option<Option<T>>) -> Result<Option<T>, AppError> {
    match value {
        Some(None) => Err(AppError::validation(format!("`{field}` cannot be null; leave it out to keep its value"))),
        Some(Some(v)) => Ok(Some(v)),
        None => Ok(None),
    }
}

/// A partial update: only the fields given change; `null` clears an optional field.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateProject {
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = String, min_length = 1, max_length = 200)]
    pub name: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = String, min_length = 1, max_length = 4096)]
    pub folder_path: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>)]
    pub description: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>, pattern = r"^[^\s-]\S*$", max_length = 200)]
    pub default_model: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<PermissionMode>)]
    pub default_permission_mode: Option<Option<PermissionMode>>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>)]
    pub default_system_prompt: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>)]
    pub default_append_system_prompt: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = i32, minimum = 1, maximum = 1000)]
    pub max_sessions: Option<Option<i32>>,
}

/// Optional fields shared by create, import and update, validated together.
struct Defaults<'a> {
    description: Option<&'a str>,
    default_model: Option<&'a str>,
    default_permission_mode: Option<PermissionMode>,
    default_system_prompt: Option<&'a str>,
    default_append_system_prompt: Option<&'a str>,
    max_sessions: Option<i32>,
}

fn check_defaults(d: &Defaults<'_>) -> Result<(), AppError> {
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
    Ok(())
}

/// Resolves `folder_path` to a canonical directory inside the root, off the executor.
async fn resolve_folder(state: &AppState, raw: String) -> AppResult<String> {
    resolve_dir_field(state, "folder_path", raw).await
}

/// Resolves the folder a request names in `field` to a canonical directory inside the root,
/// off the executor.
pub(super) async fn resolve_dir_field(state: &AppState, field: &str, raw: String) -> AppResult<String> {
    if raw.trim().is_empty() {
        return Err(AppError::validation(format!("`{field}` must not be empty")));
    }
    validate::path(field, &raw).map_err(AppError::validation)?;
    let root = state.root.clone();
    let resolved = web::block(move || root.resolve_dir(Some(&raw))).await.map_err(AppError::internal)?;
    match resolved {
        Ok(path) => Ok(path.to_string_lossy().into_owned()),
        Err(folders::PathError::NotFound(m)) | Err(folders::PathError::NotADirectory(m)) => {
            Err(AppError::validation(format!("`{field}` must be an existing directory: {m}")))
        }
        Err(other) => Err(path_error(other)),
    }
}

fn conflict_on_folder(e: StoreError, folder: &str) -> AppError {
    match e {
        StoreError::Conflict(_) => AppError::conflict(format!("A project for the folder {folder} already exists.")),
        other => other.into(),
    }
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
    Ok(HttpResponse::Created().insert_header((header::LOCATION, format!("/api/projects/{}", project.id))).json(project))
}

fn new_project(name: String, folder_path: String, source: &str, d: &Defaults<'_>) -> Project {
    let now = time::now();
    Project {
        id: ProjectId::new(),
        name,
        project_type: folders::project_type(std::path::Path::new(&folder_path)).to_string(),
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
    }
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
        (status = 422, description = "Validation failed", body = ErrorBody),
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
    };
    check_defaults(&defaults)?;
    let folder = resolve_folder(&state, b.folder_path.clone()).await?;
    insert_project(&state, new_project(name, folder, "manual", &defaults)).await
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
        (status = 422, description = "Validation failed", body = ErrorBody),
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
    };
    check_defaults(&defaults)?;
    let folder = resolve_folder(&state, b.folder_path.clone()).await?;
    let name = match &b.name {
        Some(n) => validate::name("name", n),
        None => {
            let base = std::path::Path::new(&folder).file_name().map(|n| n.to_string_lossy().into_owned());
            validate::name("name", base.as_deref().unwrap_or("root"))
        }
    }
    .map_err(AppError::validation)?;
    insert_project(&state, new_project(name, folder, "imported", &defaults)).await
}

/// List projects, by name.
#[utoipa::path(get, path = "/api/projects", tag = "projects", params(Page),
    responses(
        (status = 200, description = "Projects", body = Vec<Project>),
        (status = 400, description = "Bad query string", body = ErrorBody),
        (status = 422, description = "limit/offset out of range", body = ErrorBody),
    ))]
pub async fn list(state: web::Data<AppState>, page: web::Query<Page>) -> AppResult<HttpResponse> {
    let (limit, offset) = page.bounds()?;
    let rows = state.store.run(move |conn| db::projects::list(conn, limit, offset)).await?;
    Ok(HttpResponse::Ok().json(rows))
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

async fn load(state: &AppState, id: ProjectId) -> AppResult<Project> {
    let lookup = id.clone();
    state
        .store
        .run(move |conn| db::projects::find(conn, &lookup))
        .await?
        .ok_or_else(|| AppError::not_found(format!("No project with id {id:?}.")))
}

/// Get one project.
#[utoipa::path(get, path = "/api/projects/{id}", tag = "projects",
    params(("id" = String, Path, description = "Project id (UUID)")),
    responses(
        (status = 200, description = "The project", body = Project),
        (status = 404, description = "No such project", body = ErrorBody),
    ))]
pub async fn get(state: web::Data<AppState>, id: web::Path<String>) -> AppResult<HttpResponse> {
    let id: ProjectId = id.parse()?;
    Ok(HttpResponse::Ok().json(load(&state, id).await?))
}

/// Update a project (partial: absent fields keep their value, `null` clears).
#[utoipa::path(put, path = "/api/projects/{id}", tag = "projects", request_body = UpdateProject,
    params(("id" = String, Path, description = "Project id (UUID)")),
    responses(
        (status = 200, description = "The updated project", body = Project),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 403, description = "Folder outside the project root", body = ErrorBody),
        (status = 404, description = "No such project", body = ErrorBody),
        (status = 409, description = "Another project already uses this folder", body = ErrorBody),
        (status = 413, description = "Body over 1 MiB", body = ErrorBody),
        (status = 415, description = "Not JSON", body = ErrorBody),
        (status = 422, description = "Validation failed", body = ErrorBody),
    ))]
pub async fn update(
    state: web::Data<AppState>,
    id: web::Path<String>,
    body: web::Json<UpdateProject>,
) -> AppResult<HttpResponse> {
    let id: ProjectId = id.parse()?;
    let b = body.into_inner();
    let name =
        required("name", b.name)?.map(|n| validate::name("name", &n)).transpose().map_err(AppError::validation)?;
    let folder_path = required("folder_path", b.folder_path)?;
    let max_sessions = required("max_sessions", b.max_sessions)?;
    let inner = |o: &Option<Option<String>>| o.as_ref().and_then(|v| v.as_deref()).map(|s| s.to_string());
    let (description, model, mode, system, append) = (
        inner(&b.description),
        inner(&b.default_model),
        b.default_permission_mode.flatten(),
        inner(&b.default_system_prompt),
        inner(&b.default_append_system_prompt),
    );
    check_defaults(&Defaults {
        description: description.as_deref(),
        default_model: model.as_deref(),
        default_permission_mode: mode,
        default_system_prompt: system.as_deref(),
        default_append_system_prompt: append.as_deref(),
        max_sessions,
    })?;
    let mut project = load(&state, id).await?;
    if let Some(raw) = folder_path {
        project.folder_path = resolve_folder(&state, raw).await?;
        project.project_type = folders::project_type(std::path::Path::new(&project.folder_path)).to_string();
    }
    if let Some(name) = name {
        project.name = name;
    }
    let apply = |field: &mut Option<String>, change: Option<Option<String>>| {
        if let Some(value) = change {
            *field = value;
        }
    };
    apply(&mut project.description, b.description);
    apply(&mut project.default_model, b.default_model);
    apply(&mut project.default_permission_mode, b.default_permission_mode.map(|m| m.map(|m| m.as_str().to_string())));
    apply(&mut project.default_system_prompt, b.default_system_prompt);
    apply(&mut project.default_append_system_prompt, b.default_append_system_prompt);
    if let Some(n) = max_sessions {
        project.max_sessions = n;
    }
    project.updated_at = time::now();

    let stored = project.clone();
    let folder = project.folder_path.clone();
    state
        .store
        .run(move |conn| {
            if let Some(other) = db::projects::find_by_folder(conn, &stored.folder_path)? {
                if other.id != stored.id {
                    return Err(StoreError::Conflict(other.id.to_string()));
                }
            }
            db::projects::update(conn, &stored)
        })
        .await
        .map_err(|e| match e {
            StoreError::NotFound => AppError::not_found(format!("No project with id {:?}.", project.id)),
            other => conflict_on_folder(other, &folder),
        })?;
    Ok(HttpResponse::Ok().json(project))
}

/// Delete a project: its live sessions are ended first, then everything recorded for it goes.
#[utoipa::path(delete, path = "/api/projects/{id}", tag = "projects",
    params(("id" = String, Path, description = "Project id (UUID)")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 404, description = "No such project", body = ErrorBody),
    ))]
pub async fn delete(state: web::Data<AppState>, id: web::Path<String>) -> AppResult<HttpResponse> {
    let id: ProjectId = id.parse()?;
    let project = load(&state, id.clone()).await?;
    state
        .registry
        .send(CloseProject(id.clone()))
        .await
        .map_err(|e| AppError::internal(format!("session registry unavailable: {e}")))?;
    // The sessions' final rows are written behind; let them land before the cascade. A failed
    // flush (some other row of its batch could not be stored) does not stop the delete: the
    // cascade removes whatever was stored.
    if let Err(e) = state.writer.flush().await {
        tracing::warn!(error = %e, "could not flush the session writer before deleting a project");
    }
    // The row's deletion cascades to its agents' rows; their actors (schedules, runs) must end
    // too, or they would keep firing and count against CONDUIT_MAX_AGENTS. They are listed and
    // the row deleted in one write transaction, so an agent created meanwhile is either listed
    // here or refused (its project is gone). Its first statement writes (the row as it was
    // loaded; it goes anyway), which takes the write lock at once: a transaction that read
    // first could not upgrade once another connection had written.
    let target = id.clone();
    let deleted = state
        .store
        .run(move |conn| {
            conn.transaction(|conn| {
                db::projects::update(conn, &project)?;
                let agents: Vec<AgentId> = db::agents::all(conn)?
                    .into_iter()
                    .filter(|a| a.project_id.as_ref() == Some(&target))
                    .map(|a| a.id)
                    .collect();
                db::projects::delete(conn, &target)?;
                Ok::<_, StoreError>(agents)
            })
        })
        .await;
    match deleted {
        Ok(agents) => {
            for agent in agents {
                // NotFound: it was being deleted by its own request meanwhile.
                if let Ok(Err(e)) = state.agents.send(crate::actors::agents::Delete(agent)).await {
                    tracing::debug!(error = %e, "an agent of a deleted project was already gone");
                }
            }
            Ok(HttpResponse::NoContent().finish())
        }
        Err(StoreError::NotFound) => Err(AppError::not_found(format!("No project with id {id:?}."))),
        Err(e) => Err(e.into()),
    }
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DiscoverQuery {
    /// Folder to scan (absolute, or relative to the project root); the root when absent. At
    /// most 4096 bytes (PATH_MAX), 255 per folder name.
    #[param(max_length = 4096)]
    pub path: Option<String>,
}

/// A project folder found on disk.
#[derive(Debug, Serialize, ToSchema)]
pub struct DiscoveredProject {
    pub folder_path: String,
    pub name: String,
    pub project_type: String,
    /// Which of `.claude`, `CLAUDE.md`, `.git` the folder has.
    pub markers: Vec<String>,
    /// A `.claude/` folder, or CLI transcripts for this folder under `~/.claude/projects`.
    pub has_claude_history: bool,
    /// The id of the project already registered for this folder, if any.
    #[schema(value_type = Option<String>)]
    pub project_id: Option<ProjectId>,
}

/// Scan for project folders up to `CONDUIT_SCAN_DEPTH` levels below `path`.
#[utoipa::path(get, path = "/api/projects/discover", tag = "projects", params(DiscoverQuery),
    responses(
        (status = 200, description = "Project folders found, sorted by path", body = Vec<DiscoveredProject>),
        (status = 400, description = "Bad query string", body = ErrorBody),
        (status = 403, description = "Path outside the project root", body = ErrorBody),
        (status = 404, description = "No such folder", body = ErrorBody),
        (status = 422, description = "Not a directory, or a malformed path", body = ErrorBody),
    ))]
pub async fn discover(state: web::Data<AppState>, query: web::Query<DiscoverQuery>) -> AppResult<HttpResponse> {
    let root = state.root.clone();
    let depth = state.settings.scan_depth;
    let home = state.settings.home.clone();
    let raw = query.into_inner().path;
    if let Some(path) = &raw {
        validate::path("path", path).map_err(AppError::validation)?;
    }
    let found = web::block(move || {
        let start = root.resolve_dir(raw.as_deref())?;
        Ok::<_, folders::PathError>(folders::discover(&start, depth, home.as_deref()))
    })
    .await
    .map_err(AppError::internal)?
    .map_err(path_error)?;

    let folders_found: Vec<String> = found.iter().map(|d| d.folder_path.clone()).collect();
    let known = state.store.run(move |conn| db::projects::ids_by_folder(conn, folders_found)).await?;
    let body: Vec<DiscoveredProject> = found
        .into_iter()
        .map(|d| DiscoveredProject {
            project_id: known.iter().find(|(f, _)| *f == d.folder_path).map(|(_, id)| id.clone()),
            folder_path: d.folder_path,
            name: d.name,
            project_type: d.project_type.to_string(),
            markers: d.markers.into_iter().map(String::from).collect(),
            has_claude_history: d.has_claude_history,
        })
        .collect();
    Ok(HttpResponse::Ok().json(body))
}
