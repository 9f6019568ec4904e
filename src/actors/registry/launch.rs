//! Launching a session: capacity, the transport, the row and its enclosure; the CLI itself is
//! started in spawn_cli.rs.

use actix::prelude::*;

use crate::actors::session::Snapshot;
use crate::db::projects::Project;
use crate::db::sessions::{self, Session};
use crate::db::writer::WriteError;
use crate::db::StoreError;
use crate::domain::agent_kind::AgentKind;
use crate::domain::ids::SessionId;
use crate::domain::launch::LaunchSpec;
use crate::domain::session::SessionStatus;
use crate::domain::validate::Transport;
use crate::domain::workspace::WorkspaceMode;
use crate::domain::{names, time};
use crate::process::version::{self};
use crate::sandbox::{Fence, FenceError};
use crate::transport::websocket;

use super::spawn_cli::SessionLaunch;
use super::{worktree_folder, SessionRegistry};

#[derive(Message)]
#[rtype(result = "Result<Launched, LaunchError>")]
pub struct Launch {
    pub project: Project,
    pub spec: LaunchSpec,
}

pub struct Launched {
    pub session: Session,
    /// False when an existing live session with the same external key was returned.
    pub created: bool,
    /// A worktree session whose worktree is being made and set up: the final answer (the row
    /// running, or in `error`) comes here, while the registry goes on with other launches.
    pub pending: Option<tokio::sync::oneshot::Receiver<Result<Session, LaunchError>>>,
}

#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    #[error("{0}")]
    Capacity(String),
    #[error("the service is shutting down")]
    ShuttingDown,
    /// The project is being deleted.
    #[error("the project is being deleted")]
    ProjectDeleted,
    /// Every port of the bridge range is taken.
    #[error("{0}")]
    NoPort(String),
    /// The project asks for a sandbox this machine cannot provide.
    #[error(transparent)]
    Sandbox(#[from] FenceError),
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The launch could not be recorded (storage is failing).
    #[error(transparent)]
    Storage(#[from] WriteError),
    /// The worktree cannot be made (not a repository, an unknown base ref).
    #[error(transparent)]
    Workspace(crate::workspace::WorkspaceError),
    /// The session asks for kernel limits this machine cannot apply (the message says which
    /// controllers are missing, and why).
    #[error("{0}")]
    Limits(String),
}

impl SessionRegistry {
    pub(super) fn capacity_error(&self, project: &Project) -> Option<String> {
        let max_global = self.settings.max_sessions_global as usize;
        let preparing = || self.preparing.values().map(|p| &p.row.project_id);
        if self.live.len() + self.preparing.len() >= max_global {
            return Some(format!(
                "the global limit of {max_global} live sessions is reached (CONDUIT_MAX_SESSIONS_GLOBAL); close a session first"
            ));
        }
        let in_project =
            self.live.values().map(|l| &l.project_id).chain(preparing()).filter(|p| **p == project.id).count();
        if in_project >= project.max_sessions.max(0) as usize {
            return Some(format!(
                "project {:?} already has its limit of {} live sessions (its max_sessions); close one first",
                project.name, project.max_sessions
            ));
        }
        None
    }

    /// Picks the transport: `auto` means the bridge only for CLI versions known to accept a
    /// local `--sdk-url`.
    pub(super) fn resolve_transport(&self, wanted: Transport) -> Transport {
        match wanted {
            Transport::Auto => match self.cli_version.flatten() {
                Some(v) if v.accepts_local_sdk_url() => Transport::Websocket,
                _ => Transport::Stdio,
            },
            other => other,
        }
    }

    pub(super) fn new_row(project: &Project, spec: &LaunchSpec, owner_node: Option<String>) -> Session {
        let now = time::now();
        let o = &spec.options;
        Session {
            id: SessionId::new(),
            project_id: project.id.clone(),
            session_id: None,
            external_key: spec.external_key.clone(),
            name: spec.name.clone().unwrap_or_else(names::friendly),
            status: SessionStatus::Starting,
            model: o.model.clone(),
            permission_mode: o.permission_mode.clone(),
            system_prompt: o.system_prompt.clone(),
            append_system_prompt: o.append_system_prompt.clone(),
            resume_session_id: o.resume_session_id.clone(),
            fork_session: o.fork_session,
            transport: "stdio".to_string(),
            ws_port: None,
            cli_pid: None,
            cli_started_at: None,
            total_cost_usd: 0.0,
            total_input_tokens: 0,
            total_output_tokens: 0,
            num_turns: 0,
            error_message: None,
            created_at: now.clone(),
            last_active_at: now,
            closed_at: None,
            closed_reason: None,
            workspace_mode: project.workspace_mode,
            worktree_path: None,
            branch: None,
            base_ref: None,
            base_commit: None,
            agent: spec.agent.clone(),
            resumes_at: None,
            status_reason: None,
            max_budget_usd: o.max_budget_usd,
            owner_node,
            limits: (!spec.limits.is_empty()).then(|| crate::domain::resources::StoredLimits::new(spec.limits)),
        }
    }
}

type LaunchFuture = std::pin::Pin<Box<dyn ActorFuture<SessionRegistry, Output = Result<Launched, LaunchError>>>>;

impl Handler<Launch> for SessionRegistry {
    type Result = AtomicResponse<Self, Result<Launched, LaunchError>>;

    fn handle(&mut self, msg: Launch, _ctx: &mut Context<Self>) -> Self::Result {
        if self.shutting_down {
            return AtomicResponse::new(Box::pin(actix::fut::ready(Err(LaunchError::ShuttingDown))));
        }
        if self.closing.contains(&msg.project.id) {
            return AtomicResponse::new(Box::pin(actix::fut::ready(Err(LaunchError::ProjectDeleted))));
        }
        if let Some(key) = &msg.spec.external_key {
            let existing =
                self.live.iter().find(|(_, l)| l.project_id == msg.project.id && l.external_key.as_ref() == Some(key));
            if let Some((id, live)) = existing {
                let (addr, store, id) = (live.addr.clone(), self.store.clone(), id.clone());
                let found = async move {
                    match addr.send(Snapshot).await {
                        Ok(session) => Ok(session),
                        // It ended while being asked: its row, as stored, is the answer.
                        Err(_) => store.run(move |conn| sessions::find(conn, &id)).await?.ok_or(StoreError::NotFound),
                    }
                };
                return AtomicResponse::new(Box::pin(
                    found
                        .into_actor(self)
                        .map(|found, _, _| Ok(Launched { session: found?, created: false, pending: None })),
                ));
            }
        }
        if let Some(key) = &msg.spec.external_key {
            let existing = self
                .preparing
                .values()
                .find(|p| p.row.project_id == msg.project.id && p.row.external_key.as_ref() == Some(key));
            if let Some(p) = existing {
                let session = p.row.clone();
                return AtomicResponse::new(Box::pin(actix::fut::ready(Ok(Launched {
                    session,
                    created: false,
                    pending: None,
                }))));
            }
        }
        if let Some(reason) = self.capacity_error(&msg.project) {
            return AtomicResponse::new(Box::pin(actix::fut::ready(Err(LaunchError::Capacity(reason)))));
        }
        let mut row = Self::new_row(&msg.project, &msg.spec, self.node_name());
        let in_worktree = msg.project.workspace_mode == WorkspaceMode::Worktree;
        let supervision = self.supervision(&msg.project);
        let folder = match in_worktree {
            true => worktree_folder(&self.settings.workspaces(), row.id.as_str()).to_string_lossy().into_owned(),
            false => msg.project.folder_path.clone(),
        };
        let fence: Option<Fence> = match self.fence(msg.project.sandbox, &folder, &msg.spec.agent) {
            Ok(fence) => fence,
            Err(e) => return AtomicResponse::new(Box::pin(actix::fut::ready(Err(e.into())))),
        };
        // Limits this machine cannot apply refuse the launch before anything is stored.
        let limits = match self.session_limits(msg.spec.limits, &msg.project) {
            Ok(limits) => limits,
            Err(e) => return AtomicResponse::new(Box::pin(actix::fut::ready(Err(e)))),
        };
        // Only Claude Code has another transport: the `transport` setting is its default, and
        // every other agent speaks over its pipes (one asking for `websocket` was refused).
        let wanted = match msg.spec.agent {
            AgentKind::Claude => msg.spec.transport.unwrap_or(self.settings.transport),
            _ => Transport::Stdio,
        };
        // `auto` reads the CLI's version once; launches wait for it in order.
        let probe = (wanted == Transport::Auto && self.cli_version.is_none()).then(|| {
            let cli = self.settings.cli_path.clone();
            async move { version::probe(&cli).await }
        });
        let probed = async move {
            match probe {
                Some(probe) => Some(probe.await),
                None => None,
            }
        };
        AtomicResponse::new(Box::pin(probed.into_actor(self).then(move |probed, act, _ctx| {
            if let Some(result) = probed {
                match &result {
                    Ok(v) => tracing::info!(version = %v, bridge = v.accepts_local_sdk_url(), "CLI version read for the auto transport"),
                    Err(e) => tracing::warn!(error = %e, "the CLI's version is unknown; auto means stdio"),
                }
                act.cli_version = Some(result.ok());
            }
            let transport = act.resolve_transport(wanted);
            let bridge = match transport {
                Transport::Websocket => {
                    match websocket::allocate_port(act.settings.ws_port_range_start, act.settings.ws_port_range_end) {
                        Ok(bound) => Some(bound),
                        Err(reason) => return Box::pin(actix::fut::ready(Err(LaunchError::NoPort(reason)))) as LaunchFuture,
                    }
                }
                _ => None,
            };
            row.transport = transport.as_str().to_string();
            row.ws_port = bridge.as_ref().map(|(_, port)| i32::from(*port));
            let stored = row.clone();
            let store = act.store.clone();
            if in_worktree {
                let stored = insert_or_existing(store, act.writer.clone(), stored);
                return Box::pin(stored.into_actor(act).map(move |inserted, act, ctx| {
                    if let Some(existing) = inserted? {
                        return Ok(Launched { session: existing, created: false, pending: None });
                    }
                    let project = msg.project;
                    let pending = act.launch_in_worktree(row.clone(), project, msg.spec, bridge, fence, ctx);
                    Ok(Launched { session: row, created: true, pending: Some(pending) })
                })) as LaunchFuture;
            }
            let whose = (row.resume_session_id.clone(), Some(row.id.clone()), row.ws_port, Some(limits));
            let enclose = act.enclose(row.id.to_string(), Some(row.project_id.clone()), fence, &row.agent, whose);
            // The row, then its cgroup and sandbox (off the executor).
            let writer = act.writer.clone();
            let prepare = async move {
                if let Some(existing) = insert_or_existing(store, writer, stored).await? {
                    return Ok(Err(existing));
                }
                Ok::<_, StoreError>(Ok((row, enclose.await)))
            };
            let options = msg.spec.options.clone();
            Box::pin(prepare.into_actor(act).then(move |prepared, act, _ctx| {
                let (row, enclosure) = match prepared {
                    Ok(Ok(prepared)) => prepared,
                    Ok(Err(existing)) => {
                        let launched = Launched { session: existing, created: false, pending: None };
                        return Box::pin(actix::fut::ready(Ok(launched))) as LaunchFuture;
                    }
                    Err(e) => return Box::pin(actix::fut::ready(Err(e.into()))) as LaunchFuture,
                };
                let req = SessionLaunch {
                    row,
                    folder,
                    options,
                    bridge,
                    resumed: false,
                    last_seq: 0,
                    enclosure,
                    carried: Vec::new(),
                    supervision,
                };
                Box::pin(
                    act.launch_cli(req, true)
                        .map(|launched, _, _| launched.map(|session| Launched { session, created: true, pending: None })),
                ) as LaunchFuture
            })) as LaunchFuture
        })))
    }
}

/// Inserts a new session's row. When the database already has a live session with its
/// `external_key` in the project (another node won the race: a unique index decides), answers
/// with that session instead, and nothing is started here. A row that only looks live (its
/// session ended here, its last status not yet written) is waited for once.
async fn insert_or_existing(
    store: crate::db::Store,
    writer: crate::db::writer::Writer,
    row: Session,
) -> Result<Option<Session>, StoreError> {
    let mut flushed = false;
    loop {
        let attempt = row.clone();
        let outcome = store
            .run(move |conn| match sessions::insert(conn, &attempt) {
                Ok(()) => Ok(Ok(None)),
                Err(StoreError::Conflict(why)) => match &attempt.external_key {
                    Some(key) => Ok(sessions::live_with_key(conn, &attempt.project_id, key)?.map(Some).ok_or(why)),
                    None => Err(StoreError::Conflict(why)),
                },
                Err(e) => Err(e),
            })
            .await?;
        match outcome {
            Ok(found) => return Ok(found),
            Err(why) if flushed => return Err(StoreError::Conflict(why)),
            Err(_) => {
                let _ = writer.flush().await;
                flushed = true;
            }
        }
    }
}
