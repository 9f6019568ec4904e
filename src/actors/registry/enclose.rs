//! What fences a CLI in before it starts (see [`crate::sandbox::enclosure`]): the registry's
//! view, which knows each agent kind's program and where it keeps state (the catalog).

use std::future::Future;

use super::SessionRegistry;
use crate::domain::agent_kind::AgentKind;
use crate::domain::ids::{ProjectId, SessionId};
use crate::domain::sandbox::SandboxMode;
use crate::sandbox::enclosure::{Enclosure, Guest};
use crate::sandbox::{Fence, FenceError};
use crate::supervisor::catalog;

/// Whom a CLI is enclosed for: the session it resumes (its CLI session id), the session whose
/// channel it gets, its WebSocket bridge's port, and a session's resolved kernel limits.
pub(super) type Whose =
    (Option<String>, Option<SessionId>, Option<i32>, Option<crate::domain::resources::SessionLimits>);

/// A CLI ready to be spawned: its cgroup and sandbox, and its program as found on disk.
pub(super) struct Enclosed {
    pub(super) enclosure: Enclosure,
    pub(super) program: std::path::PathBuf,
}

impl SessionRegistry {
    /// The sandbox of a CLI of `kind` working in `folder`, for a project asking for `mode`
    /// (`None`: the `sandbox` setting). An error when this machine cannot provide it.
    pub(super) fn fence(
        &self,
        mode: Option<SandboxMode>,
        folder: &str,
        kind: &AgentKind,
    ) -> Result<Option<Fence>, FenceError> {
        self.encloser.plan(mode, folder, catalog::state_paths(&self.settings, kind))
    }

    /// Finds the program of `kind` (and readies the session it resumes, if any), then creates
    /// the CLI's cgroup named `id`, builds its environment and prepares `fence` for it, off the
    /// executor. `session`: the session it runs, whose channel it gets (`None` for an agent's
    /// run); `bridge`: its WebSocket bridge's port; `limits`: a session's kernel limits (its
    /// resource cgroups are made then). A missing CLI is an error naming its setting.
    pub(super) fn enclose(
        &self,
        id: String,
        project: Option<ProjectId>,
        fence: Option<Fence>,
        kind: &AgentKind,
        (resume, session, bridge, limits): Whose,
    ) -> impl Future<Output = Result<Enclosed, String>> {
        let (settings, kind, encloser) = (self.settings.clone(), kind.clone(), self.encloser.clone());
        async move {
            let find_settings = settings.clone();
            let find_kind = kind.clone();
            let find = move || {
                if let Some(session) = &resume {
                    catalog::before_resume(&find_settings, &find_kind, session);
                }
                catalog::locate(&find_settings, &find_kind)
            };
            let located =
                tokio::task::spawn_blocking(find).await.map_err(|e| format!("the start was interrupted: {e}"))?;
            let program = located.map_err(|e| e.to_string())?;
            let extra = catalog::kind_env(&settings, &kind, &program);
            let bridge = bridge.and_then(|port| u16::try_from(port).ok());
            let guest = Guest { project, agent: Some(kind), session, extra, bridge, limits };
            let enclosure = encloser.enclose(id, guest, fence, program.to_string_lossy().into_owned()).await?;
            Ok(Enclosed { enclosure, program })
        }
    }
}
