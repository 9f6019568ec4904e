//! Resuming an ended session: a new CLI with `--resume`, same id, history and totals.

use actix::prelude::*;

use crate::db::messages::{self};
use crate::db::projects::{self, Project};
use crate::db::sessions::{self, Session, SessionPatch};
use crate::db::StoreError;
use crate::domain::launch::CliOptions;
use crate::domain::time;
use crate::domain::validate::Transport;
use crate::sandbox::Fence;
use crate::transport::websocket;

use super::launch::LaunchError;
use super::spawn_cli::SessionLaunch;
use super::workspace::reuse;
use super::SessionRegistry;
use crate::domain::ids::SessionId;
use crate::domain::session::SessionStatus;
use crate::domain::workspace::WorkspaceMode;

/// Brings back an ended session (closed or errored): a new CLI process with
/// `--resume=<the CLI's session id>`, in the same folder, with the same options and transport;
/// same Conduit id, history and totals. Capacity limits apply as for a launch.
#[derive(Message)]
#[rtype(result = "Result<Session, ResumeError>")]
pub struct Resume(pub SessionId);

#[derive(Debug, thiserror::Error)]
pub enum ResumeError {
    #[error("{0}")]
    NotFound(String),
    /// The session is live (or not in a state a resume applies to).
    #[error("{0}")]
    Conflict(String),
    /// The CLI never reported a session id: there is no conversation to continue.
    #[error("{0}")]
    NotResumable(String),
    #[error(transparent)]
    Launch(#[from] LaunchError),
}

impl From<StoreError> for ResumeError {
    fn from(e: StoreError) -> Self {
        ResumeError::Launch(LaunchError::Store(e))
    }
}

/// A resume under way, answering with the session's row.
pub(super) type ResumeFuture =
    std::pin::Pin<Box<dyn ActorFuture<SessionRegistry, Output = Result<Session, ResumeError>>>>;

/// A resume that passed its checks, ready to start its CLI.
struct Relaunch {
    row: Session,
    folder: String,
    options: CliOptions,
    bridge: Option<(std::net::TcpListener, u16)>,
    fence: Option<Fence>,
    /// A worktree session: its project folder and branch (the worktree is `folder`).
    worktree: Option<(String, Option<String>)>,
    /// The row's change back to `starting`.
    patch: SessionPatch,
    /// How it is watched, from its project as it is now.
    supervision: crate::actors::session::supervision::Supervision,
    /// Its kernel limits: its launch's own, over its project's and the settings' as they are now.
    limits: crate::domain::resources::SessionLimits,
}

impl SessionRegistry {
    /// Checks a stored row can be resumed now, and marks it starting again. A revival (of a
    /// session parked at a usage limit when the service stopped) keeps its wait.
    fn relaunch(
        &mut self,
        row: Option<Session>,
        project: Option<Project>,
        revive: bool,
    ) -> Result<Relaunch, ResumeError> {
        let mut row = row.ok_or_else(|| ResumeError::NotFound("No such session.".to_string()))?;
        if self.live.contains_key(&row.id) || !row.status.has_ended() {
            return Err(ResumeError::Conflict(format!(
                "The session is {}; only a closed or errored session can be resumed.",
                row.status
            )));
        }
        if revive && row.resumes_at.is_none() {
            return Err(ResumeError::Conflict("The session was not waiting for a usage limit.".to_string()));
        }
        let Some(cli_session) = row.session_id.clone() else {
            return Err(ResumeError::NotResumable(
                "The CLI never reported a session id (no turn ever ran), so there is no conversation to resume; launch a new session instead.".to_string(),
            ));
        };
        let project = project.ok_or_else(|| ResumeError::NotFound("The session's project is gone.".to_string()))?;
        if self.shutting_down {
            return Err(LaunchError::ShuttingDown.into());
        }
        if let Some(reason) = self.capacity_error(&project) {
            return Err(LaunchError::Capacity(reason).into());
        }
        // A worktree session goes back to its own worktree (the same folder, the same branch).
        let (folder, worktree) = match (&row.workspace_mode, &row.worktree_path) {
            (WorkspaceMode::Worktree, Some(path)) => {
                (path.clone(), Some((project.folder_path.clone(), row.branch.clone())))
            }
            _ => (project.folder_path.clone(), None),
        };
        let fence = self.fence(project.sandbox, &folder, &row.agent).map_err(LaunchError::from)?;
        let own = row.limits.as_ref().map(crate::domain::resources::StoredLimits::limits).unwrap_or_default();
        let limits = self.session_limits(own, &project)?;
        let bridge = match Transport::parse(&row.transport) {
            Some(Transport::Websocket) => Some(
                websocket::allocate_port(self.settings.ws_port_range_start, self.settings.ws_port_range_end)
                    .map_err(LaunchError::NoPort)?,
            ),
            _ => None,
        };
        let options = CliOptions {
            model: row.model.clone(),
            permission_mode: row.permission_mode.clone(),
            resume_session_id: Some(cli_session),
            fork_session: false,
            system_prompt: row.system_prompt.clone(),
            append_system_prompt: row.append_system_prompt.clone(),
            // What is left of the session's cap: the new process counts from zero.
            max_budget_usd: row.max_budget_usd.map(|cap| (cap - row.total_cost_usd).max(0.0001)),
        };
        let now = time::now();
        row.status = SessionStatus::Starting;
        row.error_message = None;
        row.closed_at = None;
        row.closed_reason = None;
        if !revive {
            row.resumes_at = None;
            row.status_reason = None;
        }
        row.cli_pid = None;
        row.cli_started_at = None;
        row.ws_port = bridge.as_ref().map(|(_, port)| i32::from(*port));
        row.last_active_at = now.clone();
        // A session lost with its node is taken over by the one resuming it.
        row.owner_node = self.node_name();
        // Stored by `take_over`, once the writes of the previous process are in.
        let patch = SessionPatch {
            status: Some(row.status),
            error_message: Some(None),
            closed_at: Some(None),
            closed_reason: Some(None),
            resumes_at: Some(row.resumes_at.clone()),
            status_reason: Some(row.status_reason.clone()),
            parked_from_seq: if revive { None } else { Some(None) },
            last_active_at: Some(now),
            owner_node: Some(row.owner_node.clone()),
            ..Default::default()
        };
        tracing::info!(session = %row.id, transport = %row.transport, revive, "resuming a session");
        let supervision = self.supervision(&project);
        Ok(Relaunch { row, folder, options, bridge, fence, worktree, patch, supervision, limits })
    }
}

impl Handler<Resume> for SessionRegistry {
    type Result = AtomicResponse<Self, Result<Session, ResumeError>>;

    fn handle(&mut self, msg: Resume, _ctx: &mut Context<Self>) -> Self::Result {
        // Atomic: two resumes of one session cannot both start a CLI; the second sees it live.
        AtomicResponse::new(self.resume(msg.0, false))
    }
}

impl SessionRegistry {
    /// Loads, checks and relaunches session `id`; a revival also takes over the user turns it
    /// still had to deliver.
    pub(super) fn resume(&mut self, id: SessionId, revive: bool) -> ResumeFuture {
        let store = self.store.clone();
        let load = async move {
            store
                .run(move |conn| {
                    let row = sessions::find(conn, &id)?;
                    let project = match &row {
                        Some(r) => projects::find(conn, &r.project_id)?,
                        None => None,
                    };
                    let last_seq = messages::last_seq(conn, id.as_str())?;
                    // Only a revival takes over the turns a park left undelivered.
                    let parked_from = if revive { sessions::parked_from(conn, &id)? } else { None };
                    let carried = match parked_from {
                        Some(from) => messages::turns_from(conn, id.as_str(), from)?,
                        None => Vec::new(),
                    };
                    Ok((row, project, last_seq, carried))
                })
                .await
        };
        Box::pin(load.into_actor(self).then(move |loaded, act, _ctx| {
            let checked = loaded.map_err(ResumeError::from).and_then(|(row, project, last_seq, carried)| {
                act.relaunch(row, project, revive).map(|relaunch| (relaunch, last_seq, carried))
            });
            let (relaunch, last_seq, carried) = match checked {
                Ok(checked) => checked,
                Err(e) => return Box::pin(actix::fut::ready(Err(e))) as ResumeFuture,
            };
            let mut relaunch = relaunch;
            let patch = std::mem::take(&mut relaunch.patch);
            let (writer, store, id) = (act.writer.clone(), act.store.clone(), relaunch.row.id.clone());
            let claimed = async move {
                // What the previous process wrote goes in first; then the row is taken over
                // only if it is still ended (another node may have resumed it meanwhile).
                let _ = writer.flush().await;
                take_over(&store, id, patch).await
            };
            Box::pin(claimed.into_actor(act).then(move |claimed, act, _ctx| {
                if let Err(e) = claimed {
                    return Box::pin(actix::fut::ready(Err(e))) as ResumeFuture;
                }
                act.relaunch_cli(relaunch, last_seq, carried)
            })) as ResumeFuture
        }))
    }
}

impl SessionRegistry {
    /// Starts the CLI of a session taken over: its worktree again (if it has one), its cgroup
    /// and sandbox, then the process.
    fn relaunch_cli(
        &mut self,
        relaunch: Relaunch,
        last_seq: u64,
        carried: Vec<crate::db::messages::PendingTurn>,
    ) -> ResumeFuture {
        let Relaunch { row, folder, options, bridge, fence, worktree, patch: _, supervision, limits } = relaunch;
        let reused = match worktree {
            Some((repo, branch)) => {
                futures_util::future::Either::Left(reuse(repo.into(), folder.clone().into(), branch, fence))
            }
            None => futures_util::future::Either::Right(std::future::ready(Ok(fence))),
        };
        let (id, project_id, agent) = (row.id.to_string(), row.project_id.clone(), row.agent.clone());
        let whose = (options.resume_session_id.clone(), Some(row.id.clone()), row.ws_port, Some(limits));
        let enclose = reused.into_actor(self).then(move |fence, act, _ctx| {
            let enclose = fence.map(|fence| act.enclose(id, Some(project_id), fence, &agent, whose));
            async move { enclose?.await }.into_actor(act)
        });
        Box::pin(enclose.then(move |enclosure, act, _ctx| {
            let req = SessionLaunch {
                row,
                folder,
                options,
                bridge,
                resumed: true,
                last_seq,
                enclosure,
                carried,
                supervision,
            };
            act.launch_cli(req, false).map(|launched, _, _| launched.map_err(ResumeError::from))
        }))
    }
}

/// Marks an ended session starting again, unless it is no longer ended (resumed meanwhile,
/// here or on another node) or a live session already has its `external_key`.
async fn take_over(store: &crate::db::Store, id: SessionId, patch: SessionPatch) -> Result<(), ResumeError> {
    match store.run(move |conn| sessions::take_over(conn, &id, &patch)).await {
        Ok(true) => Ok(()),
        Ok(false) => Err(ResumeError::Conflict("The session was resumed meanwhile.".to_string())),
        Err(StoreError::Conflict(_)) => Err(ResumeError::Conflict(
            "A live session of the project already has this session's external_key.".to_string(),
        )),
        Err(e) => Err(e.into()),
    }
}
