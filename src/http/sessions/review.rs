//! Reviewing a worktree session's work: its diff against its base, a commit of everything, and
//! a merge of its branch into the base branch (see [`crate::workspace::review`]). Commits and
//! merges are published on the global stream (`workspace.committed`, `workspace.merged`) with
//! the session's id in their data: the session's own stream is numbered by its CLI's actor.

use std::path::PathBuf;

use actix_web::{web, HttpResponse};
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::{IntoParams, ToSchema};

use crate::actors::bus::{Event, Publish};
use crate::db::{self, sessions::SessionWorkspace};
use crate::domain::ids::{ProjectId, SessionId};
use crate::domain::workspace::WorkspaceMode;
use crate::error::{AppError, AppResult, ErrorBody, ErrorDetail};
use crate::http::fields::check;
use crate::http::AppState;
use crate::workspace::review::{self, DiffPage, FileChange, MergeStrategy};
use crate::workspace::WorkspaceError;

const DEFAULT_FILES: usize = 100;
const MAX_FILES: usize = 1000;
const DEFAULT_PATCH_BYTES: usize = 1 << 20;
const MAX_PATCH_BYTES: usize = 10 << 20;
const MAX_MESSAGE_BYTES: usize = 10_000;

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DiffQuery {
    /// Files per page (1-1000, default 100).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<usize>,
    /// Files to skip (default 0).
    #[param(minimum = 0)]
    pub offset: Option<usize>,
    /// The page's patch text, at most (1 KiB-10 MiB, default 1 MiB); beyond it `truncated`.
    #[param(minimum = 1024, maximum = 10485760)]
    pub max_patch_bytes: Option<usize>,
}

/// What a session changed against its base: files with status and line counts, and the
/// unified diff of this page's files.
#[derive(Debug, Serialize, ToSchema)]
pub struct SessionDiff {
    pub base_ref: Option<String>,
    pub base_commit: Option<String>,
    pub branch: Option<String>,
    /// Changed files in all (committed on the branch or not yet).
    pub total_files: usize,
    pub offset: usize,
    pub limit: usize,
    pub files: Vec<FileChange>,
    /// `git diff` of this page's files against the base commit.
    pub patch: String,
    /// The patch was cut at `max_patch_bytes` (on a line boundary).
    pub truncated: bool,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CommitRequest {
    /// The commit message (1-10000 bytes).
    #[schema(min_length = 1, max_length = 10000)]
    pub message: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Committed {
    pub commit: String,
    pub branch: String,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MergeRequest {
    /// `fast_forward` (refused unless the base has not moved) or `merge_commit` (default).
    pub strategy: Option<MergeStrategy>,
    /// The merge commit's message (default: "Merge branch '<branch>'").
    #[schema(min_length = 1, max_length = 10000)]
    pub message: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct MergeResult {
    /// The base branch's new tip.
    pub commit: String,
    pub strategy: MergeStrategy,
    pub base_ref: String,
    pub branch: String,
}

/// A 409 for a merge that would conflict: the usual error body, and the files.
#[derive(Serialize, ToSchema)]
pub struct MergeConflict {
    pub error: ErrorDetail,
    /// The files both sides changed in ways git cannot combine.
    pub files: Vec<String>,
}

/// The session's worktree: (workspace, worktree folder), or a 404/409 saying why none.
async fn worktree_of(state: &AppState, id: &SessionId) -> AppResult<(SessionWorkspace, PathBuf)> {
    let lookup = id.clone();
    let ws = state
        .store
        .run(move |conn| db::sessions::workspace(conn, &lookup))
        .await?
        .ok_or_else(|| AppError::not_found(format!("No session with id {id:?}.")))?;
    if ws.session.workspace_mode != WorkspaceMode::Worktree || ws.session.worktree_path.is_none() {
        return Err(WorkspaceError::Conflict(
            "the session shares its project's folder: it has no worktree to review".into(),
        )
        .into());
    }
    let folder = PathBuf::from(&ws.folder);
    if !tokio::fs::try_exists(folder.join(".git")).await.unwrap_or(false) {
        return Err(WorkspaceError::Conflict(
            "the session's worktree was archived (resume the session to get it back)".into(),
        )
        .into());
    }
    Ok((ws, folder))
}

/// Tells everyone's stream (not the session's own, which is its conversation), as the
/// session's project's.
fn publish(state: &AppState, project: &ProjectId, kind: &'static str, data: serde_json::Value) {
    let event = Event::new(kind, kind.replace('.', "_"), None, data.to_string()).in_project(Some(project.clone()));
    state.bus.do_send(Publish(event));
}

/// What a worktree session changed against its base.
#[utoipa::path(get, path = "/api/sessions/{id}/diff", tag = "review",
    params(("id" = String, Path, description = "Session id (UUID)"), DiffQuery),
    responses(
        (status = 200, description = "The diff (a page of files; the patch capped)", body = SessionDiff),
        (status = 400, description = "Bad query string", body = ErrorBody),
        (status = 404, description = "No such session", body = ErrorBody),
        (status = 409, description = "The session has no worktree, or it was archived", body = ErrorBody),
        (status = 422, description = "limit/offset/max_patch_bytes out of range", body = ErrorBody),
        (status = 503, description = "git failed", body = ErrorBody),
    ))]
pub async fn diff(
    state: web::Data<AppState>,
    id: web::Path<String>,
    q: web::Query<DiffQuery>,
) -> AppResult<HttpResponse> {
    let id: SessionId = id.parse()?;
    let limit = q.limit.unwrap_or(DEFAULT_FILES);
    let max_patch_bytes = q.max_patch_bytes.unwrap_or(DEFAULT_PATCH_BYTES);
    if !(1..=MAX_FILES).contains(&limit) {
        return Err(AppError::validation(format!("`limit` must be from 1 to {MAX_FILES}, got {limit}")));
    }
    if !(1024..=MAX_PATCH_BYTES).contains(&max_patch_bytes) {
        return Err(AppError::validation(format!("`max_patch_bytes` must be from 1024 to {MAX_PATCH_BYTES}")));
    }
    let offset = q.offset.unwrap_or(0);
    let (ws, folder) = worktree_of(&state, &id).await?;
    let base = ws.session.base_commit.clone().unwrap_or_default();
    let page = DiffPage { offset, limit, max_patch_bytes };
    let d = review::diff(&folder, &base, page).await?;
    let s = ws.session;
    Ok(HttpResponse::Ok().json(SessionDiff {
        base_ref: s.base_ref,
        base_commit: s.base_commit,
        branch: s.branch,
        total_files: d.total_files,
        offset,
        limit,
        files: d.files,
        patch: d.patch,
        truncated: d.truncated,
    }))
}

/// Stage everything in the session's worktree and commit it on its branch.
#[utoipa::path(post, path = "/api/sessions/{id}/commit", tag = "review", request_body = CommitRequest,
    params(("id" = String, Path, description = "Session id (UUID)")),
    responses(
        (status = 201, description = "Committed", body = Committed),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 404, description = "No such session", body = ErrorBody),
        (status = 409, description = "No worktree, archived, or nothing to commit", body = ErrorBody),
        (status = 413, description = "Body over 1 MiB", body = ErrorBody),
        (status = 415, description = "Not JSON", body = ErrorBody),
        (status = 422, description = "Validation failed", body = ErrorBody),
        (status = 503, description = "git failed", body = ErrorBody),
    ))]
pub async fn commit(
    state: web::Data<AppState>,
    id: web::Path<String>,
    body: web::Json<CommitRequest>,
) -> AppResult<HttpResponse> {
    let id: SessionId = id.parse()?;
    let message = message_of(&body.message)?;
    let (ws, folder) = worktree_of(&state, &id).await?;
    let commit = review::commit(&folder, &message).await?;
    let branch = ws.session.branch.unwrap_or_default();
    publish(
        &state,
        &ws.session.project_id,
        "workspace.committed",
        json!({"session_id": id.to_string(), "commit": commit, "branch": branch}),
    );
    Ok(HttpResponse::Created().json(Committed { commit, branch }))
}

fn message_of(raw: &str) -> AppResult<String> {
    let message = check(crate::domain::validate::free_text("message", raw, MAX_MESSAGE_BYTES))?;
    if message.trim().is_empty() {
        return Err(AppError::validation("`message` must not be empty"));
    }
    Ok(message)
}

/// Merge the session's branch into its base branch; a conflict changes nothing.
#[utoipa::path(post, path = "/api/sessions/{id}/merge", tag = "review", request_body = MergeRequest,
    params(("id" = String, Path, description = "Session id (UUID)")),
    responses(
        (status = 200, description = "Merged", body = MergeResult),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 404, description = "No such session", body = ErrorBody),
        (status = 409, description = "The merge would conflict: `merge_conflict`, nothing was changed, and the body also lists the conflicted files in `files` (the `MergeConflict` schema, an `ErrorBody` with `files`). Or `workspace_conflict`: no worktree, uncommitted changes, the base is not a branch, not a fast-forward", body = ErrorBody),
        (status = 413, description = "Body over 1 MiB", body = ErrorBody),
        (status = 415, description = "Not JSON", body = ErrorBody),
        (status = 422, description = "Validation failed", body = ErrorBody),
        (status = 503, description = "git failed", body = ErrorBody),
    ))]
pub async fn merge(
    state: web::Data<AppState>,
    id: web::Path<String>,
    body: web::Json<MergeRequest>,
) -> AppResult<HttpResponse> {
    let id: SessionId = id.parse()?;
    let b = body.into_inner();
    let given = b.message.as_deref().map(message_of).transpose()?;
    let strategy = b.strategy.unwrap_or(MergeStrategy::MergeCommit);
    let (ws, folder) = worktree_of(&state, &id).await?;
    if review::dirty(&folder).await? {
        return Err(WorkspaceError::Conflict(
            "the session's worktree has uncommitted changes; commit them first (POST /api/sessions/{id}/commit)".into(),
        )
        .into());
    }
    let (base, branch) =
        (ws.session.base_ref.clone().unwrap_or_default(), ws.session.branch.clone().unwrap_or_default());
    let message = given.unwrap_or_else(|| format!("Merge branch '{branch}'"));
    let repo = PathBuf::from(&ws.project.folder_path);
    match review::merge(&repo, &base, &branch, strategy, &message).await {
        Ok(merged) => {
            publish(
                &state,
                &ws.session.project_id,
                "workspace.merged",
                json!({"session_id": id.to_string(), "commit": merged.commit, "base_ref": base, "branch": branch, "strategy": merged.strategy}),
            );
            Ok(HttpResponse::Ok().json(MergeResult {
                commit: merged.commit,
                strategy: merged.strategy,
                base_ref: base,
                branch,
            }))
        }
        Err(WorkspaceError::MergeConflict { files }) => {
            let message =
                format!("Merging {branch} into {base} would conflict in: {}. Nothing was changed.", files.join(", "));
            let error = ErrorDetail { code: "merge_conflict".to_string(), message };
            Ok(HttpResponse::Conflict().json(MergeConflict { error, files }))
        }
        Err(e) => Err(e.into()),
    }
}

/// Archives a closed worktree session's worktree: its checkout removed (uncommitted work
/// committed on its branch first), its branch kept unless `delete_branch`. Nothing for a
/// shared session or one already archived.
pub(super) async fn archive(state: &AppState, id: &SessionId, delete_branch: bool) -> AppResult<()> {
    let lookup = id.clone();
    let Some(ws) = state.store.run(move |conn| db::sessions::workspace(conn, &lookup)).await? else {
        return Ok(());
    };
    let (Some(path), Some(branch)) = (&ws.session.worktree_path, &ws.session.branch) else { return Ok(()) };
    if ws.session.workspace_mode != WorkspaceMode::Worktree {
        return Ok(());
    }
    let (repo, path) = (PathBuf::from(&ws.project.folder_path), PathBuf::from(path));
    let present = tokio::fs::try_exists(&path).await.unwrap_or(false);
    crate::workspace::worktree::archive(&repo, &path, branch, delete_branch).await?;
    if present || delete_branch {
        publish(
            state,
            &ws.session.project_id,
            "workspace.archived",
            json!({"session_id": id.to_string(), "path": path, "branch": branch, "branch_deleted": delete_branch}),
        );
    }
    Ok(())
}
