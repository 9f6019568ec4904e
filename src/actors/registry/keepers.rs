//! Sessions whose CLIs run under keepers (see [`crate::keeper`]): how a launch asks for one,
//! and how a restarted service attaches again to the keepers recovery found ([`Reattach`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use actix::prelude::*;

use super::SessionRegistry;
use crate::actors::session::kept::KeptState;
use crate::actors::session::Started;
use crate::db::backlog::Backlog;
use crate::db::messages::{self, PendingTurn};
use crate::db::projects::{self, Project};
use crate::db::sessions::Session;
use crate::db::writer::Writer;
use crate::domain::launch::CliOptions;
use crate::domain::workspace::WorkspaceMode;
use crate::keeper::link::{self, Connection, Durable};
use crate::process::cgroup::{Cgroup, CgroupRoot};
use crate::process::tree::ProcessTree;
use crate::supervisor::catalog;
use crate::supervisor::spawn::{kept, Keeping};

/// After its CLI has ended with no service attached for this long, a keeper gives up (its
/// guardian ends what is left of the CLI's tree).
const ORPHAN_MS: u64 = 24 * 60 * 60 * 1000;

/// How sessions get keepers: the `conduit` executable that runs them, where their sockets go,
/// and how much output each holds.
#[derive(Debug, Clone)]
pub struct Keepers {
    pub launcher: PathBuf,
    /// The data folder (absolute): sockets go in its `keepers` folder.
    pub data: PathBuf,
    pub buffer_bytes: usize,
    /// The keepers' cgroup's `cgroup.procs` (when the service uses cgroups).
    pub cgroup: Option<PathBuf>,
}

impl Keepers {
    pub fn socket(&self, session: &str) -> PathBuf {
        link::socket_path(&self.data, session)
    }

    pub(super) fn keeping(&self, session: &str, first_seq: u64, writer: &Writer) -> Keeping {
        Keeping {
            launcher: self.launcher.clone(),
            socket: self.socket(session),
            buffer_bytes: self.buffer_bytes,
            first_seq,
            orphan_ms: ORPHAN_MS,
            durable: durable(writer.clone()),
            keeper_cgroup: self.cgroup.clone(),
        }
    }
}

/// Whether everything queued for the store so far is stored.
pub(super) fn durable(writer: Writer) -> Durable {
    Arc::new(move || {
        let writer = writer.clone();
        Box::pin(async move { writer.flush().await.is_ok() })
    })
}

/// A live session whose keeper answered when the service started.
pub struct Found {
    pub row: Session,
    pub connection: Connection,
    /// The number of the last line of its CLI's that is stored.
    pub stored_through: u64,
    pub state: KeptState,
}

/// Attach to a session's keeper again (at start, once the actors run). Answers once the
/// session's actor runs again, or why it could not (the caller ends the session then).
#[derive(Message)]
#[rtype(result = "Result<(), String>")]
pub struct Reattach(pub Found);

/// What a reattach reads from the store first.
struct Stored {
    project: Option<Project>,
    last_seq: u64,
    pending: Vec<PendingTurn>,
}

impl Handler<Reattach> for SessionRegistry {
    type Result = ResponseActFuture<Self, Result<(), String>>;

    fn handle(&mut self, Reattach(found): Reattach, _ctx: &mut Context<Self>) -> Self::Result {
        let (id, project_id, since) = (found.row.id.clone(), found.row.project_id.clone(), found.state.since_seq);
        let store = self.store.clone();
        let load = async move {
            store
                .run(move |conn| {
                    Ok(Stored {
                        project: projects::find(conn, &project_id)?,
                        last_seq: messages::last_seq(conn, id.as_str())?,
                        pending: messages::undelivered_turns(conn, id.as_str(), since)?,
                    })
                })
                .await
        };
        Box::pin(load.into_actor(self).map(move |stored, act: &mut SessionRegistry, ctx| {
            let mut stored = stored.map_err(|e| format!("cannot read the session: {e}"))?;
            let project = stored.project.take().ok_or_else(|| "its project is gone".to_string())?;
            act.attach_again(found, project, stored, ctx)
        }))
    }
}

impl SessionRegistry {
    fn attach_again(
        &mut self,
        found: Found,
        project: Project,
        stored: Stored,
        ctx: &mut Context<Self>,
    ) -> Result<(), String> {
        let Found { row, connection, stored_through, state } = found;
        let hello = connection.hello.clone();
        let folder = match (&row.workspace_mode, &row.worktree_path) {
            (WorkspaceMode::Worktree, Some(path)) => path.clone(),
            _ => project.folder_path.clone(),
        };
        let options = CliOptions {
            model: row.model.clone(),
            permission_mode: row.permission_mode.clone(),
            system_prompt: row.system_prompt.clone(),
            append_system_prompt: row.append_system_prompt.clone(),
            ..Default::default()
        };
        let (_, adapter) = catalog::prepare(&self.settings, &row.agent, Path::new(""), &options, &folder)
            .map_err(|e| e.to_string())?;
        let cgroup = hello.cgroup.as_deref().map(|path| own_cgroup(Path::new(path), row.id.as_str())).transpose()?;
        // Its limits were written when it started; its readings come from the same cgroups (a
        // few stat calls on cgroupfs, once per session at start, as `own_cgroup` above does).
        let resources = self.encloser.controllers().existing(row.id.as_str(), cgroup.as_ref().map(Cgroup::path));
        let tree = ProcessTree {
            pgid: hello.cli_pid,
            marker: row.id.to_string(),
            cgroup,
            wrapped: hello.sandboxed,
            resources,
        };
        let backlog = Backlog::new(self.settings.session_backlog_bytes);
        let attached = connection.attach(stored_through, durable(self.writer.clone()));
        let spawned = kept(attached, tree, Some(backlog.clone()));
        let supervision = self.supervision(&project);
        tracing::info!(
            session = %row.id,
            pid = hello.cli_pid,
            keeper = hello.keeper_pid,
            stored_through,
            held = hello.buffered_bytes,
            "attaching again to a session kept through the restart"
        );
        let started = Started {
            row,
            spawned,
            adapter,
            last_seq: stored.last_seq,
            backlog,
            resumed: false,
            carried: stored.pending,
            supervision,
            reattached: Some(state),
        };
        self.start_session(started, ctx);
        Ok(())
    }
}

/// The session's cgroup, as its keeper names it: `<a folder of this service's>/<session id>`.
fn own_cgroup(path: &Path, session: &str) -> Result<Cgroup, String> {
    let named = path.file_name().and_then(|n| n.to_str()) == Some(session);
    let parent =
        path.parent().filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("conduit-")));
    match (named, parent) {
        (true, Some(parent)) => CgroupRoot::at(parent.to_path_buf())
            .child(session)
            .map_err(|e| format!("cannot use its cgroup {}: {e}", path.display())),
        _ => Err(format!("its keeper names a cgroup that is not the session's: {}", path.display())),
    }
}
