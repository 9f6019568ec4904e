//! What fences a process in before it starts: its cgroup and its sandbox. Shared by everything
//! that starts processes in a project's folder or a session's workspace: CLI sessions, agent
//! runs, exec commands, background processes and terminals. Deciding the sandbox is cheap and
//! happens first, so a start the machine cannot sandbox is refused before anything is stored;
//! creating the cgroup and looking at the file system for the sandbox happen together, on the
//! blocking pool.

use std::future::Future;
use std::sync::Arc;

use super::fence::StatePath;
use super::{Fence, FenceError, SandboxSupport};
use crate::config::Settings;
use crate::db::{rules, Store};
use crate::domain::ids::ProjectId;
use crate::domain::sandbox::SandboxMode;
use crate::process::cgroup::{Cgroup, Containment};

/// A process's cgroup (when the service uses cgroups) and its sandbox (unless `off`).
pub struct Enclosure {
    pub cgroup: Option<Cgroup>,
    pub fence: Option<Fence>,
}

/// Builds [`Enclosure`]s. Cheap to clone: everything in it is shared.
#[derive(Clone)]
pub struct Encloser {
    settings: Arc<Settings>,
    store: Store,
    containment: Arc<Containment>,
    support: Arc<SandboxSupport>,
}

impl Encloser {
    pub fn new(
        settings: Arc<Settings>,
        store: Store,
        containment: Arc<Containment>,
        support: Arc<SandboxSupport>,
    ) -> Self {
        Encloser { settings, store, containment, support }
    }

    /// How the service contains process trees (a cgroup each, or process groups).
    pub fn containment(&self) -> &Arc<Containment> {
        &self.containment
    }

    /// The sandbox of a process working in `folder` for a project asking for `mode` (`None`:
    /// the `sandbox` setting); `state`: what it must be able to write outside `folder` (a CLI's
    /// state under HOME; nothing for a plain command). An error when this machine cannot
    /// provide it.
    pub fn plan(
        &self,
        mode: Option<SandboxMode>,
        folder: &str,
        state: Vec<StatePath>,
    ) -> Result<Option<Fence>, FenceError> {
        let mode = mode.unwrap_or(self.settings.sandbox.default_mode);
        let home = self.settings.home.as_deref();
        Fence::plan(mode, &self.support, &self.settings.sandbox, folder, home, state)
    }

    /// Creates the cgroup named `id` and prepares `fence` for `program`, off the executor: the
    /// deny rules of `project` on file-writing tools become read-only binds. A sandbox that
    /// cannot be prepared is an error (the cgroup is removed again).
    pub fn enclose(
        &self,
        id: String,
        project: Option<ProjectId>,
        fence: Option<Fence>,
        program: String,
    ) -> impl Future<Output = Result<Enclosure, String>> {
        let (containment, store) = (self.containment.clone(), self.store.clone());
        async move {
            let mut fence = fence;
            if let Some(f) = fence.as_mut() {
                share_worktree_repository(f).await?;
                let denied = store
                    .run(move |conn| rules::write_denials(conn, project.as_ref()))
                    .await
                    .map_err(|e| format!("the sandbox could not read the project's rules: {e}"))?;
                f.keep_read_only(&denied);
            }
            let work = move || {
                let cgroup = containment.cgroup_for(&id);
                if let Some(f) = fence.as_mut() {
                    if let Err(e) = f.prepare(&program) {
                        if let Some(cg) = cgroup {
                            let _ = cg.kill_and_remove(std::time::Duration::from_secs(1));
                        }
                        return Err(e);
                    }
                }
                Ok(Enclosure { cgroup, fence })
            };
            tokio::task::spawn_blocking(work).await.map_err(|e| format!("the start was interrupted: {e}"))?
        }
    }
}

/// A process working in a git worktree (a session's, whatever runs there: its CLI, exec
/// commands, processes, terminals) may commit on its branch: the parts of the repository a
/// commit writes are shared into its fence. A worktree is known by its `.git` being a file.
async fn share_worktree_repository(fence: &mut Fence) -> Result<(), String> {
    let folder = fence.folder().to_path_buf();
    let is_worktree = tokio::fs::symlink_metadata(folder.join(".git")).await.is_ok_and(|m| m.is_file());
    if is_worktree {
        let (common, own) = crate::workspace::worktree::git_dirs(&folder)
            .await
            .map_err(|e| format!("the worktree's repository could not be read: {e}"))?;
        fence.share_repository(&common, &own);
    }
    Ok(())
}
