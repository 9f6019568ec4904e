//! `GET /api/projects/discover`: project folders on disk, and which are projects already.

use actix_web::{web, HttpResponse};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::db;
use crate::domain::folders;
use crate::domain::ids::ProjectId;
use crate::domain::validate;
use crate::error::{AppError, AppResult, ErrorBody};
use crate::http::AppState;

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
    .map_err(AppError::internal)??;

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
