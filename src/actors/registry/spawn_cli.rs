//! Starting a session's CLI once its row, folder and enclosure are ready: spawned here, its
//! pid and start time stored before anyone hears of the session as running, then its actor
//! started and recorded as live; or the row marked failed, with why.

use std::time::Duration;

use actix::prelude::*;

use crate::actors::bus::{Event, Publish};
use crate::actors::session::limits::LimitPolicy;
use crate::actors::session::supervision::Supervision;
use crate::actors::session::{self, SessionDeps, Started};
use crate::db::backlog::Backlog;
use crate::db::messages::{NewSessionEvent, PendingTurn};
use crate::db::sessions;
use crate::db::sessions::{Session, SessionPatch};
use crate::db::writer::WriteOp;
use crate::domain::launch::CliOptions;
use crate::domain::session::{ClosedReason, SessionStatus};
use crate::domain::time;
use crate::sandbox::enclosure::Enclosure;
use crate::supervisor::catalog;
use crate::supervisor::spawn::{spawn, spawn_kept, SpawnRequest, Spawned};

use super::enclose::Enclosed;
use super::launch::LaunchError;
use super::{Live, SessionRegistry};

impl SessionRegistry {
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
            redaction: self.settings.redaction,
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
    pub(super) fn launch_failed(
        &self,
        mut row: Session,
        reason: String,
        closed: ClosedReason,
        announce: Option<u64>,
    ) -> Session {
        let now = time::now();
        row.status = SessionStatus::Error;
        row.error_message = Some(reason);
        row.closed_at = Some(now);
        row.closed_reason = Some(closed);
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

    /// Spawns the CLI of `launch` (under a keeper of its own on stdio, when keepers are on),
    /// stores its pid and start time (before anyone can hear of the session as running, so a
    /// crash at any moment leaves a recoverable record), then starts its actor. Resolves with
    /// the row: running, or `error` when the CLI could not start.
    pub(super) fn launch_cli(
        &mut self,
        launch: SessionLaunch,
        announce: bool,
    ) -> std::pin::Pin<Box<dyn ActorFuture<Self, Output = Result<Session, LaunchError>>>> {
        let SessionLaunch { row, folder, options, bridge, resumed, last_seq, enclosure, carried, supervision } = launch;
        let backlog = Backlog::new(self.settings.session_backlog_bytes);
        let settings = self.settings.clone();
        let prepared = enclosure.and_then(
            |Enclosed { enclosure: Enclosure { cgroup, resources, fence, env, network }, program }| {
                let (agent, adapter) =
                    catalog::prepare(&settings, &row.agent, &program, &options, &folder).map_err(|e| e.to_string())?;
                let request = SpawnRequest {
                    marker: row.id.to_string(),
                    program: agent.program,
                    arguments: agent.arguments,
                    folder,
                    env,
                    bridge,
                    cgroup,
                    fence,
                    backlog: Some(backlog.clone()),
                    network,
                    resources,
                };
                Ok((request, adapter))
            },
        );
        let keeping = match &prepared {
            Ok((request, _)) if request.bridge.is_none() => self.keepers.clone(),
            _ => None,
        };
        let (store, writer, id) = (self.store.clone(), self.writer.clone(), row.id.clone());
        let spawning = async move {
            let (request, adapter) = prepared?;
            let spawned = match keeping {
                Some(keepers) => {
                    // A resumed session's earlier CLIs numbered their lines too: go on after them.
                    let stored_through = match resumed {
                        true => store.run(move |conn| sessions::kept_state(conn, &id)).await.map(|(_, n)| n),
                        false => Ok(0),
                    };
                    let stored_through = stored_through.map_err(|e| format!("cannot read the session: {e}"))?;
                    let keeping = keepers.keeping(&request.marker, stored_through + 1, &writer);
                    spawn_kept(request, keeping).await?
                }
                None => spawn(request)?,
            };
            Ok::<_, String>((spawned, adapter))
        };
        Box::pin(spawning.into_actor(self).then(move |spawned, act, _ctx| {
            act.record_spawn(row, spawned, (announce, last_seq), (backlog, resumed, carried, supervision))
        }))
    }

    /// Stores the spawned CLI's pid (or the failure), then starts its actor.
    fn record_spawn(
        &mut self,
        mut row: Session,
        spawned: Result<(Spawned, Box<dyn crate::supervisor::adapter::AgentAdapter>), String>,
        (announce, last_seq): (bool, u64),
        (backlog, resumed, carried, supervision): (std::sync::Arc<Backlog>, bool, Vec<PendingTurn>, Supervision),
    ) -> std::pin::Pin<Box<dyn ActorFuture<Self, Output = Result<Session, LaunchError>>>> {
        let (spawned, adapter) = match spawned {
            Ok(spawned) => spawned,
            Err(reason) => {
                let row = self.launch_failed(row, reason, ClosedReason::LaunchFailed, announce.then_some(last_seq + 1));
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
        // (A kept CLI is its keeper's child, not this service's.)
        let own_child = spawned.keeper.is_none();
        if own_child {
            self.children.insert(spawned.pid);
        }
        row.cli_pid = Some(spawned.pid);
        row.cli_started_at = spawned.started_at.clone();
        row.ws_port = spawned.bridge.as_ref().map(|(_, port)| i32::from(*port));
        let patch = SessionPatch {
            cli_pid: Some(row.cli_pid),
            cli_started_at: Some(row.cli_started_at.clone()),
            ws_port: Some(row.ws_port),
            // Kept: a restart looks for its keeper (the state proper is stored once it is ready).
            keeper_state: Some(spawned.keeper.as_ref().map(|_| "{}".to_string())),
            ..Default::default()
        };
        let (writer, id) = (self.writer.clone(), row.id.clone());
        let stored = async move { writer.persist_acked(WriteOp::Session { id, patch }).await };
        let started =
            Started { row, spawned, adapter, last_seq, backlog, resumed, carried, supervision, reattached: None };
        Box::pin(stored.into_actor(self).map(move |stored, act, ctx| match stored {
            Ok(()) => Ok(act.start_session(started, ctx)),
            Err(e) => {
                // Unrecorded, the CLI could outlive a crash unseen: end it, answer 503.
                tracing::error!(session = %started.row.id, error = %e, "the CLI's pid could not be stored; ending it");
                if own_child {
                    act.children.remove(&started.spawned.pid);
                }
                let tree = started.spawned.tree.clone();
                if let Some(keeper) = &started.spawned.keeper {
                    keeper.release();
                }
                tokio::task::spawn_blocking(move || tree.end(Duration::from_secs(2)));
                let _ = act.launch_failed(
                    started.row,
                    format!("the session could not be recorded: {e}"),
                    ClosedReason::LaunchFailed,
                    None,
                );
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
    /// How it is watched, from its project and the settings.
    pub(super) supervision: Supervision,
}

impl SessionRegistry {
    /// The kernel limits of a session of `project` whose launch asked for `own`: each field
    /// from the launch, else the project's `session_limits`, else the settings; refused when
    /// this machine cannot apply them.
    pub(super) fn session_limits(
        &self,
        own: crate::domain::resources::SessionLimits,
        project: &crate::db::projects::Project,
    ) -> Result<crate::domain::resources::SessionLimits, LaunchError> {
        let of_project = project.session_limits.as_ref().map(|l| l.limits()).unwrap_or_default();
        let limits = own.over(of_project).over(self.settings.session_limits);
        match self.encloser.controllers().refusal(&limits) {
            Some(why) => Err(LaunchError::Limits(why)),
            None => Ok(limits),
        }
    }

    /// How a session of `project` is watched.
    pub(super) fn supervision(&self, project: &crate::db::projects::Project) -> Supervision {
        Supervision::resolve(project.turn_inactivity_timeout_ms, self.settings.turn_inactivity_timeout_ms)
    }
}
