//! The folder browser: directories inside the project root, one level at a time.

use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::AppState;
use crate::domain::folders::PathError;
use crate::domain::validate;
use crate::error::{AppError, AppResult, ErrorBody};

/// How a folder problem reads over HTTP. Shared by every endpoint that takes a path.
pub fn path_error(e: PathError) -> AppError {
    match e {
        PathError::Invalid(m) => AppError::validation(m),
        PathError::OutsideRoot => {
            AppError::forbidden("path_outside_root", "That path is outside the project root (CONDUIT_PROJECT_ROOT).")
        }
        PathError::NotFound(m) => AppError::not_found(m),
        PathError::NotADirectory(m) => AppError::new(StatusCode::UNPROCESSABLE_ENTITY, "not_a_directory", m),
        PathError::Denied(m) => AppError::forbidden("permission_denied", m),
        // The message may hold the client's path: bounded before it is logged.
        PathError::Io(m) => AppError::internal(validate::clip(&m, 300)),
    }
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct BrowseQuery {
    /// Folder to list (absolute, or relative to the project root); the root when absent. At
    /// most 4096 bytes (PATH_MAX), 255 per folder name.
    #[param(max_length = 4096)]
    pub path: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct FolderEntry {
    pub name: String,
    /// Absolute path, ready to pass back as `path`.
    pub path: String,
    /// The name starts with a dot.
    pub hidden: bool,
    /// The folder has `.claude/`, `CLAUDE.md` or `.git`.
    pub is_project: bool,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct FolderListing {
    /// The folder listed (canonical).
    pub path: String,
    /// Its parent, or null at the project root.
    pub parent: Option<String>,
    /// The project root everything is confined to.
    pub root: String,
    /// Sub-directories, sorted by name; files are not listed.
    pub entries: Vec<FolderEntry>,
}

/// List the sub-directories of a folder inside the project root.
#[utoipa::path(get, path = "/api/folders/browse", tag = "folders", params(BrowseQuery),
    responses(
        (status = 200, description = "The folder and its sub-directories", body = FolderListing),
        (status = 400, description = "Bad query string", body = ErrorBody),
        (status = 403, description = "Outside the project root, or unreadable", body = ErrorBody),
        (status = 404, description = "No such folder", body = ErrorBody),
        (status = 422, description = "Not a directory, or a malformed path", body = ErrorBody),
    ))]
pub async fn browse(state: web::Data<AppState>, query: web::Query<BrowseQuery>) -> AppResult<HttpResponse> {
    let root = state.root.clone();
    let raw = query.into_inner().path;
    if let Some(path) = &raw {
        validate::path("path", path).map_err(AppError::validation)?;
    }
    let listing = web::block(move || {
        let dir = root.resolve_dir(raw.as_deref())?;
        let entries = root.list_dirs(&dir)?;
        let parent = if root.is_root(&dir) { None } else { dir.parent().map(|p| p.to_string_lossy().into_owned()) };
        let root_path = root.resolve_dir(None)?;
        Ok::<_, PathError>(FolderListing {
            path: dir.to_string_lossy().into_owned(),
            parent,
            root: root_path.to_string_lossy().into_owned(),
            entries: entries
                .into_iter()
                .map(|e| FolderEntry { name: e.name, path: e.path, hidden: e.hidden, is_project: e.is_project })
                .collect(),
        })
    })
    .await
    .map_err(AppError::internal)?
    .map_err(path_error)?;
    Ok(HttpResponse::Ok().json(listing))
}
