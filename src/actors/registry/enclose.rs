//! What fences a CLI in before it starts (see [`crate::sandbox::enclosure`]): the registry's
//! view, which knows the CLI's program and where its adapter keeps state.

use std::future::Future;

use super::SessionRegistry;
use crate::domain::ids::ProjectId;
use crate::domain::sandbox::SandboxMode;
use crate::sandbox::enclosure::Enclosure;
use crate::sandbox::{Fence, FenceError};
use crate::supervisor::adapter::AgentAdapter;

impl SessionRegistry {
    /// The sandbox of a CLI of `adapter`'s kind working in `folder`, for a project asking for
    /// `mode` (`None`: the `sandbox` setting). An error when this machine cannot provide it.
    pub(super) fn fence(
        &self,
        mode: Option<SandboxMode>,
        folder: &str,
        adapter: &dyn AgentAdapter,
    ) -> Result<Option<Fence>, FenceError> {
        let state = self.settings.home.as_deref().map(|h| adapter.state_paths(h)).unwrap_or_default();
        self.encloser.plan(mode, folder, state)
    }

    /// Creates the CLI's cgroup named `id` and prepares `fence` for it, off the executor.
    pub(super) fn enclose(
        &self,
        id: String,
        project: Option<ProjectId>,
        fence: Option<Fence>,
    ) -> impl Future<Output = Result<Enclosure, String>> {
        self.encloser.enclose(id, project, fence, self.settings.cli_path.clone())
    }
}
