//! Reviewing a session's worktree: what changed against its base (committed or not, new files
//! included), committing everything, and merging its branch into the base branch.
//!
//! The diff reads the working tree through a throwaway copy of the worktree's index
//! (`GIT_INDEX_FILE`), so looking never stages anything. A merge is computed first with
//! `git merge-tree --write-tree`, which touches no working tree and lists conflicted files: a
//! conflict is refused before anything changes. The merge itself is `git merge` in the checkout
//! that has the base branch (so that checkout follows), or, when no checkout has it, the same
//! merge-tree result committed with `git commit-tree` and the branch moved with
//! `git update-ref <new> <old>` (which fails if the branch moved meanwhile).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::git::{self, nul_fields, Git};
use super::WorkspaceError;

/// One changed file.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct FileChange {
    pub path: String,
    /// For a rename or copy: where it came from.
    pub old_path: Option<String>,
    /// `added`, `modified`, `deleted`, `renamed`, `copied` or `type_changed`.
    pub status: String,
    /// Lines added; `null` for a binary file.
    pub additions: Option<u64>,
    /// Lines deleted; `null` for a binary file.
    pub deletions: Option<u64>,
}

/// Which files, and how much patch text.
pub struct DiffPage {
    pub offset: usize,
    pub limit: usize,
    pub max_patch_bytes: usize,
}

/// The page of a diff.
pub struct Diff {
    pub total_files: usize,
    pub files: Vec<FileChange>,
    pub patch: String,
    pub truncated: bool,
}

/// How a merge goes in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum MergeStrategy {
    /// Move the base branch to the session's branch; refused unless the base is an ancestor.
    FastForward,
    /// A merge commit with both as parents, even when a fast-forward were possible.
    MergeCommit,
}

/// A merge that went in.
pub struct Merged {
    pub commit: String,
    pub strategy: MergeStrategy,
}

/// A private copy of the worktree's index with every change of its working tree added.
struct ScratchIndex {
    path: PathBuf,
}

impl ScratchIndex {
    async fn of(worktree: &Path) -> Result<ScratchIndex, WorkspaceError> {
        let real =
            Git::new(worktree).args(["rev-parse", "--path-format=absolute", "--git-path", "index"]).run().await?;
        let path = std::env::temp_dir().join(format!("conduit-index-{}", uuid::Uuid::new_v4()));
        let (from, to) = (PathBuf::from(real.trim()), path.clone());
        // No index yet (nothing checked out) is fine: `add -A` builds one from scratch.
        let _ = tokio::fs::copy(&from, &to).await;
        let index = ScratchIndex { path };
        index.git(worktree).args(["add", "-A"]).run().await?;
        Ok(index)
    }

    fn git(&self, worktree: &Path) -> Git {
        Git::new(worktree).env("GIT_INDEX_FILE", self.path.to_string_lossy().into_owned())
    }
}

impl Drop for ScratchIndex {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// What changed in `worktree` since `base` (a commit), committed or not.
pub async fn diff(worktree: &Path, base: &str, page: DiffPage) -> Result<Diff, WorkspaceError> {
    let index = ScratchIndex::of(worktree).await?;
    let statuses =
        index.git(worktree).args(["diff", "--cached", "-z", "-M", "--name-status", base, "--"]).run().await?;
    let numstat = index.git(worktree).args(["diff", "--cached", "-z", "-M", "--numstat", base, "--"]).run().await?;
    let mut files = parse_name_status(&statuses);
    let stats = parse_numstat(&numstat);
    for file in &mut files {
        if let Some((added, deleted)) = stats.iter().find(|(path, _)| path == &file.path).map(|(_, s)| *s) {
            file.additions = added;
            file.deletions = deleted;
        }
    }
    let total_files = files.len();
    let files: Vec<FileChange> = files.into_iter().skip(page.offset).take(page.limit).collect();
    if files.is_empty() {
        return Ok(Diff { total_files, files, patch: String::new(), truncated: false });
    }
    let mut args: Vec<String> = ["diff", "--cached", "-M", base, "--"].map(String::from).to_vec();
    for file in &files {
        args.extend(file.old_path.clone());
        args.push(file.path.clone());
    }
    let out =
        index.git(worktree).env("GIT_LITERAL_PATHSPECS", "1").args(args).cap(page.max_patch_bytes).output().await?;
    let mut patch = out.stdout;
    if out.truncated {
        // Cut on a line boundary so the marker stands on its own line.
        if let Some(end) = patch.rfind('\n') {
            patch.truncate(end + 1);
        }
    }
    Ok(Diff { total_files, files, patch, truncated: out.truncated })
}

fn status_name(code: char) -> &'static str {
    match code {
        'A' => "added",
        'D' => "deleted",
        'R' => "renamed",
        'C' => "copied",
        'T' => "type_changed",
        _ => "modified",
    }
}

/// `--name-status -z`: `M\0path\0`, `R100\0old\0new\0`.
fn parse_name_status(text: &str) -> Vec<FileChange> {
    let mut fields = nul_fields(text);
    let mut files = Vec::new();
    while let Some(code) = fields.next() {
        let kind = code.chars().next().unwrap_or('M');
        let (old_path, path) = if matches!(kind, 'R' | 'C') {
            let old = fields.next().map(String::from);
            (old, fields.next().unwrap_or_default().to_string())
        } else {
            (None, fields.next().unwrap_or_default().to_string())
        };
        files.push(FileChange {
            path,
            old_path,
            status: status_name(kind).to_string(),
            additions: None,
            deletions: None,
        });
    }
    files
}

/// Lines added and deleted (`None` for a binary file).
type LineCounts = (Option<u64>, Option<u64>);

/// `--numstat -z`: `added\tdeleted\tpath\0`, or for a rename `added\tdeleted\t\0old\0new\0`.
fn parse_numstat(text: &str) -> Vec<(String, LineCounts)> {
    let mut fields = nul_fields(text);
    let mut stats = Vec::new();
    while let Some(head) = fields.next() {
        let mut parts = head.splitn(3, '\t');
        let added = parts.next().and_then(|n| n.parse().ok());
        let deleted = parts.next().and_then(|n| n.parse().ok());
        let path = match parts.next() {
            Some(p) if !p.is_empty() => p.to_string(),
            _ => {
                let _old = fields.next();
                fields.next().unwrap_or_default().to_string()
            }
        };
        stats.push((path, (added, deleted)));
    }
    stats
}

/// Stages everything in `worktree` and commits it; answers the new commit.
pub async fn commit(worktree: &Path, message: &str) -> Result<String, WorkspaceError> {
    Git::new(worktree).args(["add", "-A"]).run().await?;
    let staged = Git::new(worktree).args(["diff", "--cached", "--quiet"]).check().await?;
    if staged {
        return Err(WorkspaceError::Conflict("there is nothing to commit: the worktree has no changes".to_string()));
    }
    let identity = git::identity(worktree).await;
    // The message is one argument: no shell, no editor ever sees it.
    let made = Git::new(worktree).args(["commit", "--no-verify", "-q", "-m", message]);
    git::with_identity(made, &identity).run().await?;
    Ok(Git::new(worktree).args(["rev-parse", "HEAD"]).run().await?.trim().to_string())
}

/// Whether `worktree` has changes not committed (new files included).
pub async fn dirty(worktree: &Path) -> Result<bool, WorkspaceError> {
    Ok(!Git::new(worktree).args(["status", "--porcelain"]).run().await?.trim().is_empty())
}

/// The checkout (main folder or a worktree) that has `branch` checked out, if any.
async fn checkout_of(repo: &Path, branch: &str) -> Result<Option<PathBuf>, WorkspaceError> {
    let list = Git::new(repo).args(["worktree", "list", "--porcelain", "-z"]).run().await?;
    let wanted = format!("branch refs/heads/{branch}");
    let mut current: Option<&str> = None;
    for field in list.split('\0') {
        if let Some(path) = field.strip_prefix("worktree ") {
            current = Some(path);
        } else if field == wanted {
            return Ok(current.map(PathBuf::from));
        }
    }
    Ok(None)
}

/// Merges `branch` into the branch `base` of `repo`, or refuses with nothing changed: a
/// conflict lists its files, a base that is not a branch or whose checkout has uncommitted
/// changes is a conflict too.
pub async fn merge(
    repo: &Path,
    base: &str,
    branch: &str,
    strategy: MergeStrategy,
    message: &str,
) -> Result<Merged, WorkspaceError> {
    let base_ref = format!("refs/heads/{base}");
    let old = Git::new(repo).args(["rev-parse", "--verify", "-q", &base_ref]).output().await?;
    if old.status != Some(0) {
        return Err(WorkspaceError::Conflict(format!(
            "the session's base {base:?} is not a branch of the repository, so there is nothing to merge into"
        )));
    }
    let old = old.stdout.trim().to_string();
    let tip = Git::new(repo).args(["rev-parse", "--verify", &format!("refs/heads/{branch}")]).run().await?;
    let tip = tip.trim().to_string();
    let fast_forward = Git::new(repo).args(["merge-base", "--is-ancestor", &old, &tip]).check().await?;
    if strategy == MergeStrategy::FastForward && !fast_forward {
        return Err(WorkspaceError::Conflict(format!(
            "{base} has moved on since {branch} was made from it, so it cannot be fast-forwarded; merge with a merge commit"
        )));
    }
    // The preflight: the merged tree, or the conflicted files, without touching any checkout.
    let tree = Git::new(repo)
        .args(["merge-tree", "--write-tree", "-z", "--name-only", "--no-messages", &old, &tip])
        .output()
        .await?;
    match tree.status {
        Some(0) => {}
        Some(1) => {
            let mut fields = nul_fields(&tree.stdout);
            let _tree = fields.next();
            let mut files: Vec<String> = fields.map(String::from).collect();
            files.dedup();
            return Err(WorkspaceError::MergeConflict { files });
        }
        status => return Err(super::git::GitError { args: "merge-tree".into(), status, stderr: tree.stderr }.into()),
    }
    let tree = tree.stdout.split('\0').next().unwrap_or_default().trim().to_string();
    let identity = git::identity(repo).await;
    match checkout_of(repo, base).await? {
        Some(checkout) => {
            if Git::new(&checkout).args(["status", "--porcelain", "--untracked-files=no"]).run().await?.trim() != "" {
                return Err(WorkspaceError::Conflict(format!(
                    "the checkout of {base} at {} has uncommitted changes; commit or stash them first",
                    checkout.display()
                )));
            }
            let mut args = vec!["merge", "--no-verify", "-q"];
            args.push(if strategy == MergeStrategy::FastForward { "--ff-only" } else { "--no-ff" });
            args.extend(["-m", message, "--end-of-options", &tip]);
            let merged = git::with_identity(Git::new(&checkout).args(args), &identity).output().await?;
            if merged.status != Some(0) {
                // Whatever git began, it is undone: the base is as it was.
                let _ = Git::new(&checkout).args(["merge", "--abort"]).output().await;
                return Err(WorkspaceError::Conflict(format!("git refused the merge: {}", merged.stderr)));
            }
        }
        None => {
            let new = if strategy == MergeStrategy::FastForward {
                tip.clone()
            } else {
                let made = Git::new(repo).args(["commit-tree", &tree, "-p", &old, "-p", &tip, "-m", message]);
                git::with_identity(made, &identity).run().await?.trim().to_string()
            };
            let reason = format!("conduit: merge {branch}");
            Git::new(repo).args(["update-ref", "-m", &reason, &base_ref, &new, &old]).run().await?;
        }
    }
    let commit = Git::new(repo).args(["rev-parse", &base_ref]).run().await?.trim().to_string();
    let strategy =
        if fast_forward && strategy == MergeStrategy::FastForward { strategy } else { MergeStrategy::MergeCommit };
    Ok(Merged { commit, strategy })
}

#[cfg(test)]
mod tests {
    use super::{parse_name_status, parse_numstat};

    #[test]
    fn name_status_and_numstat_are_read_from_nul_separated_output() {
        let files = parse_name_status("M\0a.txt\0R087\0old name\0new name\0A\0dir/b\0");
        let summary: Vec<_> =
            files.iter().map(|f| (f.status.as_str(), f.path.as_str(), f.old_path.as_deref())).collect();
        assert_eq!(
            summary,
            vec![("modified", "a.txt", None), ("renamed", "new name", Some("old name")), ("added", "dir/b", None)]
        );
        let stats = parse_numstat("1\t2\ta.txt\0-\t-\tbin.png\0" /* binary */);
        assert_eq!(stats[0], ("a.txt".to_string(), (Some(1), Some(2))));
        assert_eq!(stats[1], ("bin.png".to_string(), (None, None)));
        let renamed = parse_numstat("3\t0\t\0old\0new\0");
        assert_eq!(renamed[0], ("new".to_string(), (Some(3), Some(0))));
    }
}
