//! Workspaces: a session's own git worktree (made, set up, archived, pruned) and the review of
//! what it changed (diff, commit, merge). Everything is done by the `git` program
//! ([`git::Git`]), off the executor (child processes through tokio, file copies on the
//! blocking pool).

pub mod git;
pub mod prune;
pub mod review;
pub mod setup;
pub mod worktree;

use actix_web::http::StatusCode;

use crate::error::AppError;

/// Why a workspace operation could not be done.
#[derive(Debug, Clone, thiserror::Error)]
pub enum WorkspaceError {
    /// `worktree` mode on a folder that is not a repository's top level.
    #[error("{0}")]
    NotARepository(String),
    /// The repository has no commit to start a worktree from.
    #[error("{0}")]
    NoCommit(String),
    /// `base_ref` names no commit.
    #[error("{0}")]
    UnknownRef(String),
    /// The request does not fit the workspace's state (nothing to commit, base not a branch,
    /// uncommitted changes in the way, not a fast-forward, a shared session).
    #[error("{0}")]
    Conflict(String),
    /// Merging would conflict in these files; nothing was changed.
    #[error("the merge would conflict in {}", files.join(", "))]
    MergeConflict { files: Vec<String> },
    /// A git command failed unexpectedly.
    #[error(transparent)]
    Git(#[from] git::GitError),
    #[error("{0}")]
    Io(String),
}

impl From<WorkspaceError> for AppError {
    fn from(e: WorkspaceError) -> Self {
        let message = e.to_string();
        match e {
            WorkspaceError::NotARepository(_) => {
                AppError::new(StatusCode::UNPROCESSABLE_ENTITY, "not_a_git_repository", message)
            }
            WorkspaceError::NoCommit(_) => AppError::new(StatusCode::UNPROCESSABLE_ENTITY, "no_commit", message),
            WorkspaceError::UnknownRef(_) => {
                AppError::new(StatusCode::UNPROCESSABLE_ENTITY, "unknown_base_ref", message)
            }
            WorkspaceError::Conflict(_) => AppError::new(StatusCode::CONFLICT, "workspace_conflict", message),
            WorkspaceError::MergeConflict { .. } => AppError::new(StatusCode::CONFLICT, "merge_conflict", message),
            // git's own words may name paths: a sentence for the client, the rest in the log.
            WorkspaceError::Git(_) | WorkspaceError::Io(_) => AppError {
                cause: Some(message),
                ..AppError::unavailable(
                    "git_failed",
                    "A git command failed in the workspace; the details are in the service's log.",
                )
            },
        }
    }
}
