//! What fences a CLI in before it starts: its cgroup and its sandbox. Deciding the sandbox is
//! cheap and happens first, so a launch the machine cannot sandbox is refused before anything
//! is stored; creating the cgroup and looking at the file system for the sandbox happen
//! together, on the blocking pool.

use std::future::Future;

use super::SessionRegistry;
use crate::db::rules;
use crate::domain::ids::ProjectId;
use crate::domain::sandbox::SandboxMode;
use crate::process::cgroup::Cgroup;
use crate::sandbox::{Fence, FenceError};
use crate::supervisor::adapter::AgentAdapter;

/// A CLI's cgroup (when the service uses cgroups) and its sandbox (unless `off`).
pub(super) struct Enclosure {
    pub(super) cgroup: Option<Cgroup>,
    pub(super) fence: Option<Fence>,
}

impl SessionRegistry {
    /// The sandbox of a CLI of `adapter`'s kind working in `folder`, for a project asking for
    /// `mode` (`None`: the `sandbox` setting). An error when this machine cannot provide it.
    pub(super) fn fence(
        &self,
        mode: Option<SandboxMode>,
        folder: &str,
        adapter: &dyn AgentAdapter,
    ) -> Result<Option<Fence>, FenceError> {
        let mode = mode.unwrap_or(self.settings.sandbox.default_mode);
        let home = self.settings.home.as_deref();
        let state = home.map(|h| adapter.state_paths(h)).unwrap_or_default();
        Fence::plan(mode, &self.sandbox, &self.settings.sandbox, folder, home, state)
    }

    /// Creates the cgroup named `id` and prepares `fence` for the CLI, off the executor: the
    /// deny rules of `project` on file-writing tools become read-only binds. A sandbox that
    /// cannot be prepared is an error (the cgroup is removed again).
    pub(super) fn enclose(
        &self,
        id: String,
        project: Option<ProjectId>,
        fence: Option<Fence>,
    ) -> impl Future<Output = Result<Enclosure, String>> {
        let (containment, store) = (self.containment.clone(), self.store.clone());
        let program = self.settings.cli_path.clone();
        async move {
            let mut fence = fence;
            if let Some(f) = fence.as_mut() {
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
            tokio::task::spawn_blocking(work).await.map_err(|e| format!("the launch was interrupted: {e}"))?
        }
    }
}
