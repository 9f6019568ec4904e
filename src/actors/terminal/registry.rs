//! `TerminalRegistry`: the one actor that starts, finds and ends terminals. It owns the map of
//! live terminals (id -> actor, workspace), enforces `max_terminals` per session and per
//! project, ends a session's terminals when the session ends (it watches the session registry's
//! `SessionEnded`), and ends them all on shutdown.

use std::collections::HashMap;

use actix::prelude::*;

use super::terminal::{Describe, End, Peers, Terminal};
use super::TerminalView;
use crate::actors::bus::{Event, Publish};
use crate::actors::registry::{AdoptChild, Find, SessionEnded};
use crate::config::TerminalSettings;
use crate::db::projects::Project;
use crate::domain::ids::{ProjectId, SessionId, TerminalId};
use crate::domain::terminal::{EndReason, Size, TerminalStatus};
use crate::sandbox::enclosure::Encloser;
use crate::sandbox::FenceError;
use crate::supervisor::process::ProcessGone;
use crate::terminal::spawn::{spawn, ShellRequest};

/// Whose workspace a terminal runs in: what its limit counts against, and what it ends with.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Workspace {
    Session(SessionId),
    Project(ProjectId),
}

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("{0}")]
    Limit(String),
    #[error("the session {0:?} is not live: its terminals would end at once")]
    SessionNotLive(SessionId),
    #[error("{0}")]
    Sandbox(#[from] FenceError),
    #[error("{0}")]
    Spawn(String),
    #[error("the service is shutting down")]
    ShuttingDown,
}

/// Starts a terminal: `shell` (checked) in `folder` of `project`'s workspace.
#[derive(Message)]
#[rtype(result = "Result<TerminalView, StartError>")]
pub struct StartTerminal {
    pub workspace: Workspace,
    pub project: Project,
    pub folder: String,
    pub shell: String,
    pub size: Size,
    pub env: Vec<(String, String)>,
}

/// The live terminals, optionally only a session's or a project's (its sessions' included).
#[derive(Message)]
#[rtype(result = "Vec<TerminalView>")]
pub struct ListTerminals {
    pub session_id: Option<SessionId>,
    pub project_id: Option<ProjectId>,
}

#[derive(Message)]
#[rtype(result = "Option<Addr<Terminal>>")]
pub struct FindTerminal(pub TerminalId);

/// Ends a terminal; answers false when there is none, true once it is gone.
#[derive(Message)]
#[rtype(result = "bool")]
pub struct EndTerminal(pub TerminalId, pub EndReason);

/// Ends every terminal of a project (its sessions' too) before it is deleted; answers when
/// they are gone.
#[derive(Message)]
#[rtype(result = "()")]
pub struct EndProjectTerminals(pub ProjectId);

/// Ends every terminal and refuses new ones; answers when all are gone.
#[derive(Message)]
#[rtype(result = "()")]
pub struct ShutdownTerminals;

/// A terminal's actor is stopping.
#[derive(Message)]
#[rtype(result = "()")]
pub struct TerminalGone(pub TerminalId);

/// What the terminal registry needs of the session registry.
#[derive(Clone)]
pub struct SessionLink {
    /// Whether a session is live.
    pub find: Recipient<Find>,
    /// A shell's pid, for the orphan sweep to leave to tokio.
    pub adopt: Recipient<AdoptChild>,
    pub gone: Recipient<ProcessGone>,
}

struct Live {
    addr: Addr<Terminal>,
    workspace: Workspace,
    project_id: ProjectId,
}

pub struct TerminalRegistry {
    settings: TerminalSettings,
    encloser: Encloser,
    bus: Recipient<Publish>,
    sessions: SessionLink,
    live: HashMap<TerminalId, Live>,
    /// Starts under way, per workspace: they count against its limit.
    starting: HashMap<Workspace, usize>,
    shutting_down: bool,
}

impl TerminalRegistry {
    pub fn new(settings: TerminalSettings, encloser: Encloser, bus: Recipient<Publish>, sessions: SessionLink) -> Self {
        TerminalRegistry {
            settings,
            encloser,
            bus,
            sessions,
            live: HashMap::new(),
            starting: HashMap::new(),
            shutting_down: false,
        }
    }

    fn count(&self, workspace: &Workspace) -> usize {
        let live = self.live.values().filter(|l| &l.workspace == workspace).count();
        live + self.starting.get(workspace).copied().unwrap_or(0)
    }

    fn done_starting(&mut self, workspace: &Workspace) {
        if let Some(n) = self.starting.get_mut(workspace) {
            *n -= 1;
            if *n == 0 {
                self.starting.remove(workspace);
            }
        }
    }
}

impl Actor for TerminalRegistry {
    type Context = Context<Self>;
}

/// Whether `session` is live, as the session registry sees it now.
async fn session_live(find: &Recipient<Find>, session: &Workspace) -> bool {
    match session {
        Workspace::Session(id) => matches!(find.send(Find(id.clone())).await, Ok(Some(_))),
        Workspace::Project(_) => true,
    }
}

impl Handler<StartTerminal> for TerminalRegistry {
    type Result = ResponseActFuture<Self, Result<TerminalView, StartError>>;

    fn handle(&mut self, msg: StartTerminal, _ctx: &mut Context<Self>) -> Self::Result {
        let refused = |e: StartError| -> Self::Result { Box::pin(actix::fut::ready(Err(e))) };
        if self.shutting_down {
            return refused(StartError::ShuttingDown);
        }
        let limit = self.settings.max_per_workspace;
        if self.count(&msg.workspace) >= limit {
            let whose = match msg.workspace {
                Workspace::Session(_) => "session",
                Workspace::Project(_) => "project",
            };
            return refused(StartError::Limit(format!("this {whose} already has {limit} terminals (max_terminals)")));
        }
        let fence = match self.encloser.plan(msg.project.sandbox, &msg.folder, Vec::new()) {
            Ok(fence) => fence,
            Err(e) => return refused(e.into()),
        };
        *self.starting.entry(msg.workspace.clone()).or_default() += 1;
        let id = TerminalId::new();
        let (find, encloser) = (self.sessions.find.clone(), self.encloser.clone());
        let StartTerminal { workspace, project, folder, shell, size, env } = msg;
        let sandboxed = fence.is_some();
        let view = TerminalView {
            id: id.clone(),
            session_id: match &workspace {
                Workspace::Session(s) => Some(s.clone()),
                Workspace::Project(_) => None,
            },
            project_id: project.id.clone(),
            folder: folder.clone(),
            shell: shell.clone(),
            pid: 0,
            cols: size.cols,
            rows: size.rows,
            status: TerminalStatus::Running,
            sandboxed,
            clients: 0,
            started_at: crate::domain::time::now(),
        };
        let check = workspace.clone();
        let session = view.session_id.clone();
        let started = async move {
            if !session_live(&find, &check).await {
                if let Workspace::Session(id) = check {
                    return Err(StartError::SessionNotLive(id));
                }
            }
            use crate::sandbox::enclosure::Guest;
            let guest = Guest {
                project: Some(project.id.clone()),
                agent: None,
                session,
                extra: env,
                bridge: None,
                limits: None,
            };
            let enclosure =
                encloser.enclose(id.to_string(), guest, fence, shell.clone()).await.map_err(StartError::Spawn)?;
            let request = ShellRequest {
                marker: id.to_string(),
                shell,
                folder,
                env: enclosure.env,
                size,
                cgroup: enclosure.cgroup,
                fence: enclosure.fence,
                network: enclosure.network,
            };
            tokio::task::spawn_blocking(move || spawn(request))
                .await
                .map_err(|e| StartError::Spawn(format!("the start was interrupted: {e}")))?
                .map_err(StartError::Spawn)
        };
        let find = self.sessions.find.clone();
        Box::pin(
            started
                .into_actor(self)
                .map(move |started, act, ctx| {
                    act.done_starting(&workspace);
                    let started = started?;
                    let mut view = view;
                    view.pid = started.pid;
                    act.sessions.adopt.do_send(AdoptChild(started.pid));
                    let peers = Peers {
                        registry: ctx.address().recipient(),
                        bus: act.bus.clone(),
                        children: act.sessions.gone.clone(),
                    };
                    let terminal = Terminal::new(
                        view.clone(),
                        started,
                        act.settings.scrollback_bytes,
                        act.settings.idle_timeout,
                        peers,
                    );
                    let addr = terminal.start();
                    act.live.insert(
                        view.id.clone(),
                        Live { addr: addr.clone(), workspace: workspace.clone(), project_id: view.project_id.clone() },
                    );
                    let data = serde_json::json!({ "terminal": view });
                    let event = Event::json("terminal.started", "terminal_started", None, &data);
                    act.bus.do_send(Publish(event.in_project(Some(view.project_id.clone()))));
                    if act.shutting_down {
                        addr.do_send(End(EndReason::Shutdown));
                        return Err(StartError::ShuttingDown);
                    }
                    Ok((view, addr, workspace))
                })
                .then(move |registered, act, _ctx| {
                    // A session that ended while its terminal started has already announced its end:
                    // looked at again now that the terminal is in the map, it is either still live (its
                    // end will find the terminal) or gone (the terminal ends here).
                    async move {
                        let (view, addr, workspace) = registered?;
                        if session_live(&find, &workspace).await {
                            return Ok(view);
                        }
                        let _ = addr.send(End(EndReason::SessionEnded)).await;
                        match workspace {
                            Workspace::Session(id) => Err(StartError::SessionNotLive(id)),
                            Workspace::Project(_) => Ok(view),
                        }
                    }
                    .into_actor(act)
                }),
        )
    }
}

impl Handler<ListTerminals> for TerminalRegistry {
    type Result = ResponseFuture<Vec<TerminalView>>;

    fn handle(&mut self, msg: ListTerminals, _ctx: &mut Context<Self>) -> Self::Result {
        let wanted = |l: &Live| {
            let session_ok = msg.session_id.as_ref().is_none_or(|s| l.workspace == Workspace::Session(s.clone()));
            let project_ok = msg.project_id.as_ref().is_none_or(|p| &l.project_id == p);
            session_ok && project_ok
        };
        let asked: Vec<_> = self.live.values().filter(|l| wanted(l)).map(|l| l.addr.send(Describe)).collect();
        Box::pin(async move {
            let mut views: Vec<TerminalView> =
                futures_util::future::join_all(asked).await.into_iter().filter_map(Result::ok).collect();
            views.sort_by(|a, b| a.started_at.cmp(&b.started_at).then_with(|| a.id.cmp(&b.id)));
            views
        })
    }
}

impl Handler<FindTerminal> for TerminalRegistry {
    type Result = Option<Addr<Terminal>>;

    fn handle(&mut self, msg: FindTerminal, _ctx: &mut Context<Self>) -> Self::Result {
        self.live.get(&msg.0).map(|l| l.addr.clone())
    }
}

impl Handler<EndTerminal> for TerminalRegistry {
    type Result = ResponseFuture<bool>;

    fn handle(&mut self, msg: EndTerminal, _ctx: &mut Context<Self>) -> Self::Result {
        let Some(live) = self.live.get(&msg.0) else { return Box::pin(async { false }) };
        let ended = live.addr.send(End(msg.1));
        Box::pin(async move {
            let _ = ended.await;
            true
        })
    }
}

impl Handler<TerminalGone> for TerminalRegistry {
    type Result = ();

    fn handle(&mut self, msg: TerminalGone, _ctx: &mut Context<Self>) {
        self.live.remove(&msg.0);
    }
}

impl Handler<SessionEnded> for TerminalRegistry {
    type Result = ();

    fn handle(&mut self, msg: SessionEnded, _ctx: &mut Context<Self>) {
        let workspace = Workspace::Session(msg.id);
        for live in self.live.values().filter(|l| l.workspace == workspace) {
            live.addr.do_send(End(EndReason::SessionEnded));
        }
    }
}

impl Handler<EndProjectTerminals> for TerminalRegistry {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, msg: EndProjectTerminals, _ctx: &mut Context<Self>) -> Self::Result {
        let ending: Vec<_> = self
            .live
            .values()
            .filter(|l| l.project_id == msg.0)
            .map(|l| l.addr.send(End(EndReason::ProjectDeleted)))
            .collect();
        Box::pin(async move {
            futures_util::future::join_all(ending).await;
        })
    }
}

impl Handler<ShutdownTerminals> for TerminalRegistry {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, _msg: ShutdownTerminals, _ctx: &mut Context<Self>) -> Self::Result {
        self.shutting_down = true;
        if !self.live.is_empty() {
            tracing::info!(terminals = self.live.len(), "ending every terminal");
        }
        let ending: Vec<_> = self.live.values().map(|l| l.addr.send(End(EndReason::Shutdown))).collect();
        Box::pin(async move {
            futures_util::future::join_all(ending).await;
        })
    }
}
