//! The janitor's part: worktrees whose session is gone (deleted with its project, or a crash
//! between making a worktree and storing it) are removed, and so are agent runs' worktrees
//! no running execution owns.

use std::path::{Path, PathBuf};

use crate::db::{agents, sessions, Store};

/// Prefix of an agent run's worktree folder, followed by the execution's id.
pub const RUN_PREFIX: &str = "run-";

/// Removes the orphaned worktrees under `workspaces`; answers how many.
pub async fn prune(store: &Store, workspaces: &Path) -> Result<usize, String> {
    let dir = workspaces.to_path_buf();
    let names = tokio::task::spawn_blocking(move || list(&dir)).await.map_err(|e| e.to_string())?;
    if names.is_empty() {
        return Ok(0);
    }
    let wanted: Vec<String> = names.iter().filter(|n| !n.starts_with(RUN_PREFIX)).cloned().collect();
    let known = store
        .run(move |conn| {
            let sessions = sessions::existing(conn, wanted)?;
            let runs: Vec<String> =
                agents::running(conn, None)?.into_iter().map(|r| format!("{RUN_PREFIX}{}", r.id)).collect();
            Ok((sessions, runs))
        })
        .await
        .map_err(|e| e.to_string())?;
    let (sessions, runs) = known;
    let mut pruned = 0;
    for name in names {
        if sessions.contains(&name) || runs.contains(&name) {
            continue;
        }
        let path: PathBuf = workspaces.join(&name);
        match super::worktree::prune_orphan(&path).await {
            Ok(()) => {
                tracing::info!(worktree = %path.display(), "janitor: pruned a worktree whose session is gone");
                pruned += 1;
            }
            Err(e) => tracing::warn!(worktree = %path.display(), error = %e, "janitor: cannot prune a worktree"),
        }
    }
    Ok(pruned)
}

/// The worktree folders directly under `dir`: only what Conduit makes there (named by a
/// session's id or `run-<execution id>`, holding a worktree's `.git` file), so a
/// `workspaces_dir` shared with anything else never loses anything else.
fn list(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| e.file_name().to_str().map(String::from))
        .filter(|name| uuid::Uuid::parse_str(name.strip_prefix(RUN_PREFIX).unwrap_or(name)).is_ok())
        .filter(|name| dir.join(name).join(".git").is_file())
        .collect()
}
