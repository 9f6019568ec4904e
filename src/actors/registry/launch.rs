//! Launching a session: capacity, the transport, the row, the CLI (spawned here, its pid
//! stored before anyone hears of the session) and its actor.

use std::time::Duration;

use actix::prelude::*;

use crate::actors::bus::{Event, Publish};
use crate::actors::session::{self, SessionDeps, Snapshot, Started};
use crate::db::backlog::Backlog;
use crate::db::messages::{NewSessionEvent, PendingTurn};
use crate::db::projects::Project;
use crate::db::sessions::{self, Session, SessionPatch};
use crate::db::writer::{WriteError, WriteOp};
use crate::db::StoreError;
use crate::domain::agent_kind::AgentKind;
use crate::domain::ids::SessionId;
use crate::domain::launch::{CliOptions, LaunchSpec};
use crate::domain::session::{ClosedReason, SessionStatus};
use crate::domain::validate::Transport;
use crate::domain::workspace::WorkspaceMode;
use crate::domain::{names, time};
use crate::process::version::{self};
use crate::sandbox::{Fence, FenceError};
use crate::supervisor::catalog;
use crate::supervisor::spawn::{spawn, SpawnRequest};
use crate::transport::websocket;

use super::enclose::Enclosed;
use super::{worktree_folder, Live, SessionRegistry};
use crate::actors::session::limits::LimitPolicy;
use crate::sandbox::enclosure::Enclosure;

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

    pub(super) fn new_row(project: &Project, spec: &LaunchSpec) -> Session {
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
        }
    }

    /// Starts the actor of a spawned CLI and records it as live.
    pub(super) fn start_session(&mut self, started: Started, ctx: &mut Context<Self>) -> Session {
        let row = started.row.clone();
        let deps = SessionDeps {
            writer: self.writer.clone(),
            bus: self.bus.clone(),
            engine: self.engine.clone(),
            registry: ctx.address().recipient(),
            limits: LimitPolicy::new(&self.settings, self.limit_board.clone()),
            budgets: self.budget_link.clone(),
            gate: self.gate.clone(),
        };
        let addr = session::start(started, &deps);
        self.preparing.remove(&row.id);
        self.live.insert(
            row.id.clone(),
            Live { addr, project_id: row.project_id.clone(), external_key: row.external_key.clone() },
        );
        row
    }

    /// The CLI could not be started: the row records why (and a new session's stream says it
    /// was created, as its first event).
    pub(super) fn launch_failed(&self, mut row: Session, reason: String, announce: Option<u64>) -> Session {
        let now = time::now();
        row.status = SessionStatus::Error;
        row.error_message = Some(reason);
        row.closed_at = Some(now);
        row.closed_reason = Some(ClosedReason::LaunchFailed);
        self.writer.persist(WriteOp::Session {
            id: row.id.clone(),
            patch: SessionPatch {
                status: Some(row.status),
                error_message: Some(row.error_message.clone()),
                closed_at: Some(row.closed_at.clone()),
                closed_reason: Some(row.closed_reason),
                ..Default::default()
            },
        });
        if let Some(seq) = announce {
            let data = serde_json::to_string(&row).unwrap_or_else(|_| "null".to_string());
            let mut event = Event::new("session.created", "session_created", Some(row.id.to_string()), data.clone());
            event.topic_seq = Some(seq);
            self.writer.persist(WriteOp::Event(NewSessionEvent {
                session_id: row.id.to_string(),
                seq: seq as i64,
                kind: event.kind.to_string(),
                name: event.name.clone(),
                data,
                timestamp: event.timestamp.clone(),
            }));
            self.bus.do_send(Publish(event));
        }
        row
    }

    /// Spawns the CLI of `launch`, stores its pid and start time (before anyone can hear of
    /// the session as running, so a crash at any moment leaves a recoverable record), then
    /// starts its actor. Resolves with the row: running, or `error` when the CLI could not start.
    pub(super) fn launch_cli(
        &mut self,
        launch: SessionLaunch,
        announce: bool,
    ) -> std::pin::Pin<Box<dyn ActorFuture<Self, Output = Result<Session, LaunchError>>>> {
        let SessionLaunch { mut row, folder, options, bridge, resumed, last_seq, enclosure, carried } = launch;
        let backlog = Backlog::new(self.settings.session_backlog_bytes);
        let settings = self.settings.clone();
        let spawned = enclosure.and_then(|Enclosed { enclosure: Enclosure { cgroup, fence }, program }| {
            let (agent, adapter) =
                catalog::prepare(&settings, &row.agent, &program, &options, &folder).map_err(|e| e.to_string())?;
            let spawned = spawn(SpawnRequest {
                marker: row.id.to_string(),
                program: agent.program,
                arguments: agent.arguments,
                folder,
                env: agent.env,
                bridge,
                cgroup,
                fence,
                backlog: Some(backlog.clone()),
            })?;
            Ok((spawned, adapter))
        });
        let (spawned, adapter) = match spawned {
            Ok(spawned) => spawned,
            Err(reason) => {
                let row = self.launch_failed(row, reason, announce.then_some(last_seq + 1));
                // A read right after the answer must see the failure: wait for it to be stored.
                let writer = self.writer.clone();
                return Box::pin(
                    async move {
                        let _ = writer.flush().await;
                        Ok(row)
                    }
                    .into_actor(self),
                );
            }
        };
        // tokio waits for this child itself: the orphan sweep must leave it alone from now on.
        self.children.insert(spawned.pid);
        row.cli_pid = Some(spawned.pid);
        row.cli_started_at = spawned.started_at.clone();
        row.ws_port = spawned.bridge.as_ref().map(|(_, port)| i32::from(*port));
        let patch = SessionPatch {
            cli_pid: Some(row.cli_pid),
            cli_started_at: Some(row.cli_started_at.clone()),
            ws_port: Some(row.ws_port),
            ..Default::default()
        };
        let (writer, id) = (self.writer.clone(), row.id.clone());
        let stored = async move { writer.persist_acked(WriteOp::Session { id, patch }).await };
        let started = Started { row, spawned, adapter, last_seq, backlog, resumed, carried };
        Box::pin(stored.into_actor(self).map(move |stored, act, ctx| match stored {
            Ok(()) => Ok(act.start_session(started, ctx)),
            Err(e) => {
                // Unrecorded, the CLI could outlive a crash unseen: end it, answer 503.
                tracing::error!(session = %started.row.id, error = %e, "the CLI's pid could not be stored; ending it");
                act.children.remove(&started.spawned.pid);
                let tree = started.spawned.tree.clone();
                tokio::task::spawn_blocking(move || tree.end(Duration::from_secs(2)));
                let _ = act.launch_failed(started.row, format!("the session could not be recorded: {e}"), None);
                Err(LaunchError::Storage(e))
            }
        }))
    }
}

/// A session's CLI to start.
pub(super) struct SessionLaunch {
    pub(super) row: Session,
    pub(super) folder: String,
    pub(super) options: CliOptions,
    /// A bound port: the WebSocket transport.
    pub(super) bridge: Option<(std::net::TcpListener, u16)>,
    /// It brings back an ended session (`--resume`).
    pub(super) resumed: bool,
    /// The last event number stored for the session.
    pub(super) last_seq: u64,
    /// Its cgroup, sandbox and program, or why they could not be prepared.
    pub(super) enclosure: Result<Enclosed, String>,
    /// User turns it takes over from before a restart (a session parked at a usage limit).
    pub(super) carried: Vec<PendingTurn>,
}

type LaunchFuture = std::pin::Pin<Box<dyn ActorFuture<SessionRegistry, Output = Result<Launched, LaunchError>>>>;

impl Handler<Launch> for SessionRegistry {
    type Result = AtomicResponse<Self, Result<Launched, LaunchError>>;

    fn handle(&mut self, msg: Launch, _ctx: &mut Context<Self>) -> Self::Result {
        if self.shutting_down {
            return AtomicResponse::new(Box::pin(actix::fut::ready(Err(LaunchError::ShuttingDown))));
        }
        if let Some(key) = &msg.spec.external_key {
            let existing =
                self.live.values().find(|l| l.project_id == msg.project.id && l.external_key.as_ref() == Some(key));
            if let Some(live) = existing {
                let addr = live.addr.clone();
                return AtomicResponse::new(Box::pin(async move { addr.send(Snapshot).await }.into_actor(self).map(
                    |snapshot, _, _| {
                        snapshot.map(|session| Launched { session, created: false, pending: None }).map_err(|_| {
                            LaunchError::Store(StoreError::Other("the session ended while being looked up".into()))
                        })
                    },
                )));
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
        let mut row = Self::new_row(&msg.project, &msg.spec);
        let in_worktree = msg.project.workspace_mode == WorkspaceMode::Worktree;
        let folder = match in_worktree {
            true => worktree_folder(&self.settings.workspaces(), row.id.as_str()).to_string_lossy().into_owned(),
            false => msg.project.folder_path.clone(),
        };
        let fence: Option<Fence> = match self.fence(msg.project.sandbox, &folder, &msg.spec.agent) {
            Ok(fence) => fence,
            Err(e) => return AtomicResponse::new(Box::pin(actix::fut::ready(Err(e.into())))),
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
                let stored = async move { store.run(move |conn| sessions::insert(conn, &stored)).await };
                return Box::pin(stored.into_actor(act).map(move |inserted, act, ctx| {
                    inserted?;
                    let project = msg.project;
                    let pending = act.launch_in_worktree(row.clone(), project, msg.spec, bridge, fence, ctx);
                    Ok(Launched { session: row, created: true, pending: Some(pending) })
                })) as LaunchFuture;
            }
            let enclose = act.enclose(row.id.to_string(), Some(row.project_id.clone()), fence, &row.agent, row.resume_session_id.clone());
            // The row, then its cgroup and sandbox (off the executor).
            let prepare = async move {
                store.run(move |conn| sessions::insert(conn, &stored)).await?;
                Ok::<_, StoreError>((row, enclose.await))
            };
            let options = msg.spec.options.clone();
            Box::pin(prepare.into_actor(act).then(move |prepared, act, _ctx| {
                let (row, enclosure) = match prepared {
                    Ok(prepared) => prepared,
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
                };
                Box::pin(
                    act.launch_cli(req, true)
                        .map(|launched, _, _| launched.map(|session| Launched { session, created: true, pending: None })),
                ) as LaunchFuture
            })) as LaunchFuture
        })))
    }
}
