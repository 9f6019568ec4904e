//! `SessionRegistry`: the one actor that launches, finds and ends sessions.
//!
//! It owns the map of live sessions (id -> actor, project, external key, pid), enforces the
//! global and per-project capacity, and is the only place CLI processes are spawned, so the set
//! of pids tokio waits for is always known here. Launches are handled one at a time
//! (`AtomicResponse`), which makes `external_key` idempotent without a check-then-spawn race.
//! When the service is a child subreaper it also reaps orphaned descendants that were
//! re-parented to it, skipping the CLI pids tokio reaps itself.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use futures_util::StreamExt;

use super::bus::{Event, Publish};
use super::permissions::Evaluate;
use super::session::{CliSession, Close, CloseIfIdle, SessionTerminated, Snapshot, Spawned};
use super::spawn::{spawn_cli, SpawnRequest};
use crate::config::Settings;
use crate::db::messages::{self, NewSessionEvent};
use crate::db::projects::{self, Project};
use crate::db::sessions::{self, Session, SessionPatch};
use crate::db::writer::{WriteError, WriteOp, Writer};
use crate::db::{Store, StoreError};
use crate::domain::idleness::Busy;
use crate::domain::ids::{ProjectId, SessionId};
use crate::domain::launch::{CliOptions, LaunchSpec};
use crate::domain::session::{ClosedReason, SessionStatus};
use crate::domain::validate::Transport;
use crate::domain::{names, time};
use crate::process::cgroup::Containment;
use crate::process::kill;
use crate::process::version::{self, CliVersion};
use crate::transport::websocket;

// ---------------------------------------------------------------------------------------------
// Messages

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
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The launch could not be recorded (storage is failing).
    #[error(transparent)]
    Storage(#[from] WriteError),
}

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

/// The janitor's request: close session `id` if it has been truly idle for `timeout`. Answers
/// `Err(Busy::NotLive)` when it is not live.
#[derive(Message)]
#[rtype(result = "Result<(), Busy>")]
pub struct CloseIdle {
    pub id: SessionId,
    pub timeout: Duration,
    /// Stream clients following it, as the bus counts them.
    pub watchers: usize,
}

/// The actor of a live session, if there is one.
#[derive(Message)]
#[rtype(result = "Option<Addr<CliSession>>")]
pub struct Find(pub SessionId);

/// How many sessions are live.
#[derive(Message)]
#[rtype(result = "usize")]
pub struct LiveCount;

/// Ends every live session of a project (before the project is deleted). Answers when all are
/// gone.
#[derive(Message)]
#[rtype(result = "()")]
pub struct CloseProject(pub ProjectId);

/// Ends every session (stdin closed, SIGINT to each group, grace, SIGKILL) and refuses new
/// launches. Answers when all are gone.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Shutdown;

#[derive(Message)]
#[rtype(result = "()")]
struct ChildSignal;

// ---------------------------------------------------------------------------------------------
// State

struct Live {
    addr: Addr<CliSession>,
    project_id: ProjectId,
    external_key: Option<String>,
    pid: i32,
}

pub struct SessionRegistry {
    settings: Arc<Settings>,
    store: Store,
    writer: Writer,
    engine: Recipient<Evaluate>,
    bus: Recipient<Publish>,
    live: HashMap<SessionId, Live>,
    /// The installed CLI's version, read once for the `auto` transport (`Some(None)`: it
    /// could not be read, so `auto` means stdio).
    cli_version: Option<Option<CliVersion>>,
    shutting_down: bool,
    /// Reap orphans re-parented to this process (only when it is a subreaper).
    reap_orphans: bool,
    /// How each CLI's process tree is contained (a cgroup each, or process groups).
    containment: Arc<Containment>,
}

impl SessionRegistry {
    pub fn new(
        settings: Arc<Settings>,
        store: Store,
        writer: Writer,
        engine: Recipient<Evaluate>,
        bus: Recipient<Publish>,
        reap_orphans: bool,
        containment: Arc<Containment>,
    ) -> Self {
        SessionRegistry {
            settings,
            store,
            writer,
            engine,
            bus,
            live: HashMap::new(),
            cli_version: None,
            shutting_down: false,
            reap_orphans,
            containment,
        }
    }

    fn capacity_error(&self, project: &Project) -> Option<String> {
        let max_global = self.settings.max_sessions_global as usize;
        if self.live.len() >= max_global {
            return Some(format!(
                "the global limit of {max_global} live sessions is reached (CONDUIT_MAX_SESSIONS_GLOBAL); close a session first"
            ));
        }
        let in_project = self.live.values().filter(|l| l.project_id == project.id).count();
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
    fn resolve_transport(&self, wanted: Transport) -> Transport {
        match wanted {
            Transport::Auto => match self.cli_version.flatten() {
                Some(v) if v.accepts_local_sdk_url() => Transport::Websocket,
                _ => Transport::Stdio,
            },
            other => other,
        }
    }

    fn new_row(project: &Project, spec: &LaunchSpec) -> Session {
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
        }
    }

    /// Starts the actor of a spawned CLI and records it as live.
    fn start_session(&mut self, spawned: Spawned, ctx: &mut Context<Self>) -> Session {
        let row = spawned.row.clone();
        let pid = spawned.pid;
        let addr = CliSession::start(
            spawned,
            self.writer.clone(),
            ctx.address().recipient(),
            self.engine.clone(),
            self.bus.clone(),
        );
        self.live.insert(
            row.id.clone(),
            Live { addr, project_id: row.project_id.clone(), external_key: row.external_key.clone(), pid },
        );
        row
    }

    /// The CLI could not be started: the row records why (and a new session's stream says it
    /// was created, as its first event).
    fn launch_failed(&self, mut row: Session, reason: String, announce: bool) -> Session {
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
        if announce {
            let data = serde_json::to_string(&row).unwrap_or_else(|_| "null".to_string());
            let mut event = Event::new("session.created", "session_created", Some(row.id.to_string()), data.clone());
            event.topic_seq = Some(1);
            self.writer.persist(WriteOp::Event(NewSessionEvent {
                session_id: row.id.to_string(),
                seq: 1,
                kind: event.kind.to_string(),
                name: event.name.clone(),
                data,
                timestamp: event.timestamp.clone(),
            }));
            self.bus.do_send(Publish(event));
        }
        row
    }

    /// Spawns the CLI of `req`, stores its pid and start time (before anyone can hear of the
    /// session as running, so a crash at any moment leaves a recoverable record), then starts
    /// its actor. Resolves with the row: running, or `error` when the CLI could not start.
    fn launch_cli(
        &mut self,
        req: SpawnRequest<'_>,
        announce: bool,
    ) -> std::pin::Pin<Box<dyn ActorFuture<Self, Output = Result<Session, LaunchError>>>> {
        let spawned = match spawn_cli(&self.settings, req) {
            Ok(spawned) => spawned,
            Err(failure) => {
                let (row, reason) = *failure;
                let row = self.launch_failed(row, reason, announce);
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
        let patch = SessionPatch {
            cli_pid: Some(spawned.row.cli_pid),
            cli_started_at: Some(spawned.row.cli_started_at.clone()),
            ws_port: Some(spawned.row.ws_port),
            ..Default::default()
        };
        let (writer, id) = (self.writer.clone(), spawned.row.id.clone());
        let stored = async move { writer.persist_acked(WriteOp::Session { id, patch }).await };
        Box::pin(stored.into_actor(self).map(move |stored, act, ctx| match stored {
            Ok(()) => Ok(act.start_session(spawned, ctx)),
            Err(e) => {
                // Unrecorded, the CLI could outlive a crash unseen: end it, answer 503.
                tracing::error!(session = %spawned.row.id, error = %e, "the CLI's pid could not be stored; ending it");
                let tree = spawned.tree.clone();
                tokio::task::spawn_blocking(move || tree.end(Duration::from_secs(2)));
                let _ = act.launch_failed(spawned.row, format!("the session could not be recorded: {e}"), false);
                Err(LaunchError::Storage(e))
            }
        }))
    }

    fn reap(&self) {
        if self.reap_orphans {
            let keep: Vec<i32> = self.live.values().map(|l| l.pid).collect();
            let reaped = kill::reap_zombie_children(&keep);
            if reaped > 0 {
                tracing::debug!(reaped, "reaped orphaned descendants");
            }
        }
    }
}

type LaunchFuture = std::pin::Pin<Box<dyn ActorFuture<SessionRegistry, Output = Result<Launched, LaunchError>>>>;

// ---------------------------------------------------------------------------------------------
// Handlers

impl Actor for SessionRegistry {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        if self.reap_orphans {
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::child()) {
                Ok(signal) => {
                    let signals =
                        futures_util::stream::unfold(signal, |mut s| async move { s.recv().await.map(|_| ((), s)) });
                    ctx.add_stream(signals.map(|_| ChildSignal));
                }
                Err(e) => tracing::warn!(error = %e, "cannot watch SIGCHLD; orphans are reaped every few seconds only"),
            }
            // Signals coalesce; sweep now and then as well.
            ctx.run_interval(Duration::from_secs(5), |act, _| act.reap());
        }
    }
}

impl StreamHandler<ChildSignal> for SessionRegistry {
    fn handle(&mut self, _: ChildSignal, _ctx: &mut Context<Self>) {
        self.reap();
    }

    fn finished(&mut self, _ctx: &mut Context<Self>) {}
}

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
                        snapshot.map(|session| Launched { session, created: false }).map_err(|_| {
                            LaunchError::Store(StoreError::Other("the session ended while being looked up".into()))
                        })
                    },
                )));
            }
        }
        if let Some(reason) = self.capacity_error(&msg.project) {
            return AtomicResponse::new(Box::pin(actix::fut::ready(Err(LaunchError::Capacity(reason)))));
        }
        let wanted = msg.spec.transport.unwrap_or(self.settings.transport);
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
            let mut row = Self::new_row(&msg.project, &msg.spec);
            row.transport = transport.as_str().to_string();
            row.ws_port = bridge.as_ref().map(|(_, port)| i32::from(*port));
            let stored = row.clone();
            let (store, containment) = (act.store.clone(), act.containment.clone());
            // The row, then its cgroup (cgroupfs work, off the executor).
            let prepare = async move {
                store.run(move |conn| sessions::insert(conn, &stored)).await?;
                let id = row.id.to_string();
                let cgroup = tokio::task::spawn_blocking(move || containment.cgroup_for(&id)).await.ok().flatten();
                Ok::<_, StoreError>((row, cgroup))
            };
            let folder = msg.project.folder_path.clone();
            let options = msg.spec.options.clone();
            Box::pin(prepare.into_actor(act).then(move |prepared, act, _ctx| {
                let (row, cgroup) = match prepared {
                    Ok(prepared) => prepared,
                    Err(e) => return Box::pin(actix::fut::ready(Err(e.into()))) as LaunchFuture,
                };
                let req = SpawnRequest {
                    row,
                    folder: &folder,
                    options: &options,
                    bridge,
                    resumed: false,
                    last_seq: 0,
                    cgroup,
                };
                Box::pin(
                    act.launch_cli(req, true).map(|launched, _, _| launched.map(|session| Launched { session, created: true })),
                ) as LaunchFuture
            })) as LaunchFuture
        })))
    }
}

impl Handler<Find> for SessionRegistry {
    type Result = Option<Addr<CliSession>>;

    fn handle(&mut self, msg: Find, _ctx: &mut Context<Self>) -> Self::Result {
        self.live.get(&msg.0).map(|l| l.addr.clone())
    }
}

impl Handler<LiveCount> for SessionRegistry {
    type Result = usize;

    fn handle(&mut self, _msg: LiveCount, _ctx: &mut Context<Self>) -> usize {
        self.live.len()
    }
}

impl Handler<SessionTerminated> for SessionRegistry {
    type Result = ();

    fn handle(&mut self, msg: SessionTerminated, _ctx: &mut Context<Self>) {
        if self.live.remove(&msg.id).is_some() {
            tracing::debug!(session = %msg.id, pid = msg.pid, "session ended");
        }
        self.reap();
    }
}

/// Sends `Close` to each session and waits for all of them.
fn close_all(sessions: Vec<Addr<CliSession>>, signal: i32, reason: ClosedReason) -> ResponseFuture<()> {
    let closing: Vec<_> = sessions.iter().map(|addr| addr.send(Close { signal, reason })).collect();
    Box::pin(async move {
        for outcome in futures_util::future::join_all(closing).await {
            if let Ok(Err(e)) = outcome {
                tracing::warn!(error = %e, "a session did not close cleanly");
            }
        }
    })
}

impl Handler<CloseProject> for SessionRegistry {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, msg: CloseProject, _ctx: &mut Context<Self>) -> Self::Result {
        let sessions = self.live.values().filter(|l| l.project_id == msg.0).map(|l| l.addr.clone()).collect();
        close_all(sessions, libc::SIGTERM, ClosedReason::ProjectDeleted)
    }
}

impl Handler<Shutdown> for SessionRegistry {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, _msg: Shutdown, _ctx: &mut Context<Self>) -> Self::Result {
        self.shutting_down = true;
        tracing::info!(sessions = self.live.len(), "ending every session");
        close_all(self.live.values().map(|l| l.addr.clone()).collect(), libc::SIGINT, ClosedReason::Shutdown)
    }
}

impl Handler<CloseIdle> for SessionRegistry {
    type Result = ResponseFuture<Result<(), Busy>>;

    fn handle(&mut self, msg: CloseIdle, _ctx: &mut Context<Self>) -> Self::Result {
        let Some(live) = self.live.get(&msg.id) else {
            return Box::pin(async { Err(Busy::NotLive) });
        };
        let asked = live.addr.send(CloseIfIdle { timeout: msg.timeout, watchers: msg.watchers });
        // A session that stopped meanwhile is simply not live any more.
        Box::pin(async move { asked.await.unwrap_or(Err(Busy::NotLive)) })
    }
}

type ResumeFuture = std::pin::Pin<Box<dyn ActorFuture<SessionRegistry, Output = Result<Session, ResumeError>>>>;

/// A resume that passed its checks, ready to start its CLI.
struct Relaunch {
    row: Session,
    folder: String,
    options: CliOptions,
    bridge: Option<(std::net::TcpListener, u16)>,
}

impl SessionRegistry {
    /// Checks a stored row can be resumed now, and marks it starting again.
    fn relaunch(&mut self, row: Option<Session>, project: Option<Project>) -> Result<Relaunch, ResumeError> {
        let mut row = row.ok_or_else(|| ResumeError::NotFound("No such session.".to_string()))?;
        if self.live.contains_key(&row.id) || !row.status.has_ended() {
            return Err(ResumeError::Conflict(format!(
                "The session is {}; only a closed or errored session can be resumed.",
                row.status
            )));
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
        };
        let now = time::now();
        row.status = SessionStatus::Starting;
        row.error_message = None;
        row.closed_at = None;
        row.closed_reason = None;
        row.cli_pid = None;
        row.cli_started_at = None;
        row.ws_port = bridge.as_ref().map(|(_, port)| i32::from(*port));
        row.last_active_at = now.clone();
        // Queued before anything the new process writes: the writer keeps order.
        self.writer.persist(WriteOp::Session {
            id: row.id.clone(),
            patch: SessionPatch {
                status: Some(row.status),
                error_message: Some(None),
                closed_at: Some(None),
                closed_reason: Some(None),
                last_active_at: Some(now),
                ..Default::default()
            },
        });
        tracing::info!(session = %row.id, transport = %row.transport, "resuming a session");
        Ok(Relaunch { row, folder: project.folder_path, options, bridge })
    }
}

impl Handler<Resume> for SessionRegistry {
    type Result = AtomicResponse<Self, Result<Session, ResumeError>>;

    fn handle(&mut self, msg: Resume, _ctx: &mut Context<Self>) -> Self::Result {
        let store = self.store.clone();
        let id = msg.0;
        let load = async move {
            store
                .run(move |conn| {
                    let row = sessions::find(conn, &id)?;
                    let project = match &row {
                        Some(r) => projects::find(conn, &r.project_id)?,
                        None => None,
                    };
                    let last_seq = messages::last_seq(conn, id.as_str())?;
                    Ok((row, project, last_seq))
                })
                .await
        };
        // Atomic: two resumes of one session cannot both start a CLI; the second sees it live.
        AtomicResponse::new(Box::pin(load.into_actor(self).then(|loaded, act, _ctx| {
            let checked = loaded
                .map_err(ResumeError::from)
                .and_then(|(row, project, last_seq)| act.relaunch(row, project).map(|relaunch| (relaunch, last_seq)));
            let (relaunch, last_seq) = match checked {
                Ok(checked) => checked,
                Err(e) => return Box::pin(actix::fut::ready(Err(e))) as ResumeFuture,
            };
            let (containment, id) = (act.containment.clone(), relaunch.row.id.to_string());
            let cgroup =
                async move { tokio::task::spawn_blocking(move || containment.cgroup_for(&id)).await.ok().flatten() };
            Box::pin(cgroup.into_actor(act).then(move |cgroup, act, _ctx| {
                let Relaunch { row, folder, options, bridge } = relaunch;
                let req =
                    SpawnRequest { row, folder: &folder, options: &options, bridge, resumed: true, last_seq, cgroup };
                act.launch_cli(req, false).map(|launched, _, _| launched.map_err(ResumeError::from))
            })) as ResumeFuture
        })))
    }
}
