//! A session's own worktree, made before its CLI starts: `git worktree add`, the project's
//! copy list, its setup script (in the session's sandbox, its output streamed as session
//! events). It all runs off the actor and outside the launch's atomic section: the registry
//! only reserves the session's place (counted against capacity, its external key held) and
//! goes on serving other launches while a slow setup script runs.
//!
//! Events on the session's stream, numbered and stored like the CLI's: `workspace.created`
//! (path, branch, base ref and commit), `workspace.setup_output` (one line: `stream`, `line`),
//! `workspace.ready` (what was copied, whether a script ran), or `workspace.setup_failed`
//! (the reason and the output's tail; the session is then `error` with the same text).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::json;
use tokio::sync::mpsc;

use crate::actors::bus::{Event, Publish};
use crate::db::messages::NewSessionEvent;
use crate::db::projects::Project;
use crate::db::sessions::{Session, SessionPatch};
use crate::db::writer::{WriteOp, Writer};
use crate::domain::session::ClosedReason;
use crate::domain::workspace::branch_for;
use crate::sandbox::enclosure::Guest;
use crate::sandbox::Fence;
use crate::workspace::setup::{self, OutputLine};
use crate::workspace::worktree::{self, WorktreePlan};

/// Numbers, stores and publishes a session's events while no actor owns its stream yet.
pub(super) struct StreamWriter {
    pub(super) session: String,
    pub(super) seq: u64,
    pub(super) writer: Writer,
    pub(super) bus: actix::Recipient<Publish>,
}

impl StreamWriter {
    pub(super) fn emit(&mut self, kind: &'static str, data: serde_json::Value) {
        self.seq += 1;
        let name = kind.replace('.', "_");
        let data = data.to_string();
        let mut event = Event::new(kind, name.clone(), Some(self.session.clone()), data.clone());
        event.topic_seq = Some(self.seq);
        self.writer.persist(WriteOp::Event(NewSessionEvent {
            session_id: self.session.clone(),
            seq: self.seq as i64,
            kind: kind.to_string(),
            name,
            data,
            timestamp: event.timestamp.clone(),
        }));
        self.bus.do_send(Publish(event));
    }
}

/// What preparing a worktree needs, gathered on the actor.
pub(super) struct WorktreeJob {
    pub(super) project: Project,
    pub(super) base_ref: Option<String>,
    pub(super) workspaces: PathBuf,
    pub(super) setup_timeout: Duration,
    /// The sandbox planned for the worktree (the CLI's); the setup script runs in a copy.
    pub(super) fence: Option<Fence>,
    /// Fits the setup script's environment and sandbox.
    pub(super) encloser: crate::sandbox::enclosure::Encloser,
}

/// Where session `id`'s worktree goes: `<workspaces>/<id>`, absolute.
pub fn worktree_folder(workspaces: &Path, id: &str) -> PathBuf {
    let base = std::path::absolute(workspaces).unwrap_or_else(|_| workspaces.to_path_buf());
    setup::worktree_path(&base, id)
}

/// Adds the repository of the worktree at `folder` to `fence` (see [`Fence::share_repository`]).
pub(super) async fn share_repository(fence: Option<Fence>, folder: &Path) -> Result<Option<Fence>, String> {
    let Some(mut fence) = fence else { return Ok(None) };
    let (common, own) =
        worktree::git_dirs(folder).await.map_err(|e| format!("the worktree's repository could not be read: {e}"))?;
    fence.share_repository(&common, &own);
    Ok(Some(fence))
}

/// Makes and sets up the worktree of `row`, streaming what happens; answers the CLI's fence
/// with the repository shared. An error is the reason the session fails with.
pub(super) async fn prepare(
    job: WorktreeJob,
    row: &mut Session,
    stream: &mut StreamWriter,
) -> Result<Option<Fence>, String> {
    let WorktreeJob { project, base_ref, workspaces, setup_timeout, fence, encloser } = job;
    let id = row.id.to_string();
    let repo = PathBuf::from(&project.folder_path);
    let path = worktree_folder(&workspaces, &id);
    let plan = WorktreePlan {
        repo: repo.clone(),
        path: path.clone(),
        branch: branch_for(&row.name, &id[..8]),
        suffix: id[..8].to_string(),
        base_ref,
    };
    let made =
        worktree::create(plan).await.map_err(|e| format!("the session's git worktree could not be made: {e}"))?;
    row.worktree_path = Some(made.path.clone());
    row.branch = Some(made.branch.clone());
    row.base_ref = Some(made.base_ref.clone());
    row.base_commit = Some(made.base_commit.clone());
    stream.writer.persist(WriteOp::Session {
        id: row.id.clone(),
        patch: SessionPatch {
            worktree_path: Some(row.worktree_path.clone()),
            branch: Some(row.branch.clone()),
            base_ref: Some(row.base_ref.clone()),
            base_commit: Some(row.base_commit.clone()),
            ..Default::default()
        },
    });
    stream.emit(
        "workspace.created",
        json!({"path": made.path, "branch": made.branch, "base_ref": made.base_ref, "base_commit": made.base_commit}),
    );
    let fence = share_repository(fence, &path).await?;
    let patterns = project.workspace_copy.patterns().to_vec();
    let copied = if patterns.is_empty() {
        Vec::new()
    } else {
        let (from, to) = (repo.clone(), path.clone());
        tokio::task::spawn_blocking(move || setup::copy_into(&from, &to, &patterns))
            .await
            .map_err(|e| format!("copying into the worktree was interrupted: {e}"))?
            .map_err(|e| format!("copying into the worktree failed: {e}"))?
    };
    let ran = match project.setup_script.as_deref().filter(|s| !s.trim().is_empty()) {
        Some(script) => {
            let session = Some(row.id.clone());
            let guest = Guest {
                project: Some(project.id.clone()),
                agent: None,
                session,
                extra: Vec::new(),
                bridge: None,
                limits: None,
            };
            let fitted = encloser.fit(guest, fence.clone()).await?;
            run_setup(script, &path, fitted, setup_timeout, stream).await?;
            true
        }
        None => false,
    };
    stream.emit("workspace.ready", json!({"copied": copied, "setup_script": ran}));
    Ok(fence)
}

/// Runs the setup script, each output line an event; a failure is an event too, and the
/// session's error message (with the output's tail).
async fn run_setup(
    script: &str,
    folder: &Path,
    (fence, env): (Option<Fence>, Vec<(String, String)>),
    timeout: Duration,
    stream: &mut StreamWriter,
) -> Result<(), String> {
    let (tx, mut rx) = mpsc::unbounded_channel::<OutputLine>();
    let run = setup::run_script(script, folder, (fence, env), timeout, tx);
    tokio::pin!(run);
    let result = loop {
        tokio::select! {
            Some(out) = rx.recv() => stream.emit("workspace.setup_output", json!({"stream": out.stream, "line": out.line})),
            result = &mut run => break result,
        }
    };
    // Lines sent just before the script ended.
    while let Ok(out) = rx.try_recv() {
        stream.emit("workspace.setup_output", json!({"stream": out.stream, "line": out.line}));
    }
    result.map_err(|failure| {
        stream.emit("workspace.setup_failed", json!({"reason": failure.reason, "output_tail": failure.tail}));
        failure.to_string()
    })
}

impl super::SessionRegistry {
    /// Reserves `row`'s place and makes its worktree in the background; the CLI starts once it
    /// is ready (or the session fails with why not). Answers where the final row will come.
    pub(super) fn launch_in_worktree(
        &mut self,
        row: Session,
        project: Project,
        spec: crate::domain::launch::LaunchSpec,
        bridge: Option<(std::net::TcpListener, u16)>,
        fence: Option<Fence>,
        ctx: &mut actix::Context<Self>,
    ) -> tokio::sync::oneshot::Receiver<Result<Session, super::LaunchError>> {
        use actix::prelude::*;
        let (answer, pending) = tokio::sync::oneshot::channel();
        let supervision = self.supervision(&project);
        // Checked by the launch already: what the project says now is what the CLI gets.
        let limits = self.session_limits(spec.limits, &project).unwrap_or(spec.limits);
        self.preparing.insert(row.id.clone(), super::Preparing { row: row.clone() });
        let job = WorktreeJob {
            project,
            base_ref: spec.base_ref.clone(),
            workspaces: self.settings.workspaces(),
            setup_timeout: Duration::from_millis(self.settings.setup_timeout_ms),
            fence,
            encloser: self.encloser.clone(),
        };
        let mut stream =
            StreamWriter { session: row.id.to_string(), seq: 0, writer: self.writer.clone(), bus: self.bus.clone() };
        let work = async move {
            let mut row = row;
            let prepared = prepare(job, &mut row, &mut stream).await;
            (row, prepared, stream.seq)
        };
        let options = spec.options;
        ctx.spawn(work.into_actor(self).then(move |(row, prepared, seq), act, _ctx| {
            let lost = act.lost_while_preparing.remove(&row.id);
            let prepared = prepared.map_err(|reason| (reason, ClosedReason::LaunchFailed)).and_then(|fence| {
                match (act.shutting_down, lost) {
                    (true, _) => Err(("the service is shutting down".to_string(), ClosedReason::LaunchFailed)),
                    // Written as the leader's verdict is, so neither overwrites the other.
                    (_, true) => Err((
                        "this node lost its cluster lease while the session's worktree was prepared".to_string(),
                        ClosedReason::NodeLost,
                    )),
                    _ => Ok(fence),
                }
            });
            let fence = match prepared {
                Ok(fence) => fence,
                Err((reason, closed)) => {
                    act.preparing.remove(&row.id);
                    let row = act.launch_failed(row, reason, closed, Some(seq + 1));
                    let writer = act.writer.clone();
                    return Box::pin(
                        async move {
                            let _ = writer.flush().await;
                            let _ = answer.send(Ok(row));
                        }
                        .into_actor(act),
                    ) as std::pin::Pin<Box<dyn ActorFuture<Self, Output = ()>>>;
                }
            };
            let enclose = act.enclose(
                row.id.to_string(),
                Some(row.project_id.clone()),
                fence,
                &row.agent,
                (row.resume_session_id.clone(), Some(row.id.clone()), row.ws_port, Some(limits)),
            );
            Box::pin(enclose.into_actor(act).then(move |enclosure, act, _ctx| {
                let id = row.id.clone();
                let folder = row.worktree_path.clone().unwrap_or_default();
                let req = super::spawn_cli::SessionLaunch {
                    carried: Vec::new(),
                    row,
                    folder,
                    options,
                    bridge,
                    resumed: false,
                    last_seq: seq,
                    enclosure,
                    supervision,
                };
                act.launch_cli(req, true).map(move |launched, act, _ctx| {
                    act.preparing.remove(&id);
                    let _ = answer.send(launched);
                })
            }))
        }));
        pending
    }
}

/// A resumed worktree session's worktree: its checkout made again from its branch when it was
/// archived, and its repository shared into the fence.
pub(super) async fn reuse(
    repo: PathBuf,
    folder: PathBuf,
    branch: Option<String>,
    fence: Option<Fence>,
) -> Result<Option<Fence>, String> {
    if let Some(branch) = branch {
        worktree::restore(&repo, &folder, &branch)
            .await
            .map_err(|e| format!("the session's worktree could not be made again: {e}"))?;
    }
    share_repository(fence, &folder).await
}
