//! The folder browser: directories inside the project root, one level at a time.

use std::path::PathBuf;

use actix_web::{web, HttpResponse};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::AppState;
use crate::domain::folders::PathError;
use crate::domain::validate;
use crate::error::{AppError, AppResult, ErrorBody};

/// Resolves the folder a request names in `field` to a canonical directory inside the root,
/// on the blocking pool, and runs `then` on it there too (more file system work, such as
/// reading its markers). A folder that does not exist, or is not a directory, is a 422 naming
/// `field`; other folder problems read as every path's do.
pub async fn resolve_dir_field<T, F>(state: &AppState, field: &str, raw: String, then: F) -> AppResult<(String, T)>
where
    F: FnOnce(&std::path::Path) -> T + Send + 'static,
    T: Send + 'static,
{
    if raw.trim().is_empty() {
        return Err(AppError::validation(format!("`{field}` must not be empty")));
    }
    validate::path(field, &raw).map_err(AppError::validation)?;
    let root = state.root.clone();
    let resolved = web::block(move || root.resolve_dir(Some(&raw)).map(|path: PathBuf| (then(&path), path)))
        .await
        .map_err(AppError::internal)?;
    match resolved {
        Ok((found, path)) => Ok((path.to_string_lossy().into_owned(), found)),
        Err(PathError::NotFound(m)) | Err(PathError::NotADirectory(m)) => {
            Err(AppError::validation(format!("`{field}` must be an existing directory: {m}")))
        }
        Err(other) => Err(other.into()),
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
    .map_err(AppError::internal)??;
    Ok(HttpResponse::Ok().json(listing))
}
