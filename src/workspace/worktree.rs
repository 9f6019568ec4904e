//! A session's git worktree: made on a branch of its own from a base, archived (checkout
//! removed, branch kept) when the session is deleted, made again from its branch when an
//! archived session is resumed, and pruned when its session is gone.

use std::path::{Path, PathBuf};

use super::git::{self, Git, GitError};
use super::WorkspaceError;

/// A worktree made for a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Worktree {
    pub path: String,
    pub branch: String,
    /// What it was made from: the ref given, or the branch checked out in the project folder
    /// (`HEAD` when detached).
    pub base_ref: String,
    pub base_commit: String,
}

/// What a new worktree should be.
pub struct WorktreePlan {
    /// The project folder (a repository's top level).
    pub repo: PathBuf,
    /// Where the checkout goes (absolute; must not exist).
    pub path: PathBuf,
    /// The branch wanted; a suffix is added when it exists already.
    pub branch: String,
    /// A unique suffix for the branch (the session's short id).
    pub suffix: String,
    /// The ref to start from; `None`: the project folder's current HEAD.
    pub base_ref: Option<String>,
}

/// Whether `folder` is the top level of a git repository, and whether it has a commit (one
/// git command: the top level is printed even when `HEAD` names no commit yet).
pub async fn inspect(folder: &Path) -> Result<Option<bool>, GitError> {
    let out =
        Git::new(folder).args(["rev-parse", "--show-toplevel", "--verify", "-q", "HEAD^{commit}"]).output().await?;
    let Some(top) = out.stdout.lines().next().filter(|l| !l.trim().is_empty()) else {
        return Ok(None);
    };
    let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    if canonical(Path::new(top.trim())) != canonical(folder) {
        return Ok(None);
    }
    Ok(Some(out.status == Some(0)))
}

/// Refuses `worktree` mode for a folder that is not a repository's top level (422).
pub async fn require_repository(folder: &Path) -> Result<(), WorkspaceError> {
    match inspect(folder).await? {
        Some(_) => Ok(()),
        None => Err(WorkspaceError::NotARepository(format!(
            "{} is not the top folder of a git repository, so its sessions cannot each get a git worktree; run `git init` (and commit) there, or use workspace_mode `shared`",
            folder.display()
        ))),
    }
}

/// The commit `reference` names in `repo`, or a 422 saying it names none.
pub async fn resolve(repo: &Path, reference: &str) -> Result<String, WorkspaceError> {
    commit_of(repo, reference).await
}

async fn commit_of(repo: &Path, reference: &str) -> Result<String, WorkspaceError> {
    let spec = format!("{reference}^{{commit}}");
    let out = Git::new(repo).args(["rev-parse", "--verify", "-q", "--end-of-options", &spec]).output().await?;
    match out.status {
        Some(0) => Ok(out.stdout.trim().to_string()),
        _ => Err(WorkspaceError::UnknownRef(format!("`base_ref` {reference:?} names no commit of the repository"))),
    }
}

/// `git worktree add -b <branch> <path> <base commit>`: two git commands when all goes well
/// (what the base is, then the worktree), as a launch waits for them.
pub async fn create(plan: WorktreePlan) -> Result<Worktree, WorkspaceError> {
    let repo = plan.repo.as_path();
    let (base_ref, base_commit) = match &plan.base_ref {
        Some(reference) => (reference.clone(), commit_of(repo, reference).await?),
        None => {
            // The commit, then the branch checked out (`HEAD` when detached).
            let head =
                Git::new(repo).args(["rev-parse", "HEAD^{commit}", "--symbolic-full-name", "HEAD"]).output().await?;
            let mut lines = head.stdout.lines();
            let (Some(commit), Some(name), Some(0)) = (lines.next(), lines.next(), head.status) else {
                return Err(WorkspaceError::NoCommit(format!(
                    "the repository at {} has no commit yet: a worktree needs one to start from",
                    repo.display()
                )));
            };
            let name = name.trim();
            (name.strip_prefix("refs/heads/").unwrap_or(name).to_string(), commit.trim().to_string())
        }
    };
    if let Some(parent) = plan.path.parent() {
        let parent = parent.to_path_buf();
        tokio::task::spawn_blocking(move || std::fs::create_dir_all(parent))
            .await
            .map_err(|e| WorkspaceError::Io(e.to_string()))?
            .map_err(|e| WorkspaceError::Io(format!("cannot create the workspaces folder: {e}")))?;
    }
    let path = plan.path.to_string_lossy().into_owned();
    let add = |branch: String| {
        let (path, base_commit) = (path.clone(), base_commit.clone());
        async move {
            let out = Git::new(repo)
                .args(["worktree", "add", "--no-track", "-b", &branch, "--", &path, &base_commit])
                .output()
                .await?;
            Ok::<_, GitError>((out, branch))
        }
    };
    let (mut out, mut branch) = add(plan.branch.clone()).await?;
    if out.status != Some(0) && out.stderr.contains("already exists") {
        // Another session had this name: the branch gets the session's short id.
        (out, branch) = add(format!("{}-{}", plan.branch, plan.suffix)).await?;
    }
    if out.status != Some(0) {
        return Err(GitError { args: "worktree add".into(), status: out.status, stderr: out.stderr }.into());
    }
    Ok(Worktree { path, branch, base_ref, base_commit })
}

pub async fn branch_exists(repo: &Path, branch: &str) -> Result<bool, GitError> {
    Git::new(repo).args(["show-ref", "--verify", "-q", &format!("refs/heads/{branch}")]).check().await
}

/// Makes an archived worktree's checkout again from its branch (a resumed session finds its
/// work where it left it). Nothing to do when the checkout is there.
pub async fn restore(repo: &Path, path: &Path, branch: &str) -> Result<(), WorkspaceError> {
    if tokio::fs::try_exists(path.join(".git")).await.unwrap_or(false) {
        return Ok(());
    }
    if !branch_exists(repo, branch).await? {
        return Err(WorkspaceError::Conflict(format!(
            "the session's branch {branch} is gone, so its worktree cannot be made again"
        )));
    }
    Git::new(repo).args(["worktree", "prune"]).run().await?;
    let path = path.to_string_lossy().into_owned();
    Git::new(repo).args(["worktree", "add", "--", &path, branch]).run().await?;
    Ok(())
}

/// Removes a worktree's checkout. Work left uncommitted is committed on its branch first, so
/// archiving never loses what the model wrote; the branch is deleted only when asked.
pub async fn archive(repo: &Path, path: &Path, branch: &str, delete_branch: bool) -> Result<(), WorkspaceError> {
    if tokio::fs::try_exists(path.join(".git")).await.unwrap_or(false) {
        let dirty = !Git::new(path).args(["status", "--porcelain"]).run().await?.trim().is_empty();
        if dirty && !delete_branch {
            let identity = git::identity(path).await;
            Git::new(path).args(["add", "-A"]).run().await?;
            let commit = Git::new(path).args([
                "commit",
                "--no-verify",
                "-q",
                "-m",
                "Conduit: work left uncommitted when the session was archived",
            ]);
            git::with_identity(commit, &identity).run().await?;
        }
        let target = path.to_string_lossy().into_owned();
        Git::new(repo).args(["worktree", "remove", "--force", "--force", "--", &target]).run().await?;
    } else if tokio::fs::try_exists(path).await.unwrap_or(false) {
        remove_folder(path.to_path_buf()).await?;
    }
    Git::new(repo).args(["worktree", "prune"]).run().await?;
    if delete_branch && branch_exists(repo, branch).await? {
        Git::new(repo).args(["branch", "-D", "--", branch]).run().await?;
    }
    Ok(())
}

/// Removes a worktree whose session is gone: through its repository when that still exists
/// (so git forgets it), else just the folder.
pub async fn prune_orphan(path: &Path) -> Result<(), WorkspaceError> {
    let common = Git::new(path).args(["rev-parse", "--path-format=absolute", "--git-common-dir"]).output().await?;
    if common.status == Some(0) {
        let common = PathBuf::from(common.stdout.trim());
        if let Some(repo) = common.parent().filter(|_| common.ends_with(".git")) {
            let target = path.to_string_lossy().into_owned();
            let removed = Git::new(repo).args(["worktree", "remove", "--force", "--force", "--", &target]).run().await;
            if removed.is_ok() {
                return Ok(());
            }
        }
    }
    remove_folder(path.to_path_buf()).await
}

async fn remove_folder(path: PathBuf) -> Result<(), WorkspaceError> {
    tokio::task::spawn_blocking(move || std::fs::remove_dir_all(&path))
        .await
        .map_err(|e| WorkspaceError::Io(e.to_string()))?
        .map_err(|e| WorkspaceError::Io(format!("cannot remove a worktree folder: {e}")))
}

/// The repository's shared git folder and this worktree's own admin folder
/// (`.git/worktrees/<name>`): what a sandboxed CLI committing in the worktree must write.
pub async fn git_dirs(worktree: &Path) -> Result<(PathBuf, PathBuf), GitError> {
    let out =
        Git::new(worktree).args(["rev-parse", "--path-format=absolute", "--git-common-dir", "--git-dir"]).run().await?;
    let mut lines = out.lines();
    match (lines.next(), lines.next()) {
        (Some(common), Some(own)) => Ok((PathBuf::from(common.trim()), PathBuf::from(own.trim()))),
        _ => Err(GitError { args: "rev-parse --git-common-dir --git-dir".into(), status: None, stderr: out }),
    }
}
