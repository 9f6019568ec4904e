//! `Workbench`: the one actor that owns every command (`exec`) and background process started
//! through the API in a session's workspace or a project's folder.
//!
//! It holds the table of live ones (each one's life one enum: starting, then running with its
//! process tree), the limits per session and per project, and the exec contexts (their names
//! and which one a command is using). A start is decided by the permission rules (a `Bash`
//! call, audited with decision point `exec`), fenced by the same cgroup and sandbox as a CLI,
//! and recorded before it is answered; every process ends with its session (`SessionEnded`
//! from the registry), its project, or the service (`Shutdown`), and a crash leaves rows whose
//! ids are the markers restart recovery ends leftovers by.

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::PathBuf;
use std::sync::Arc;

use actix::prelude::*;
use tokio::sync::{mpsc, oneshot, watch};

mod aligned;
mod handlers;
pub mod logs;
mod pipes;
mod run;
pub mod script;
pub mod spawn;
mod start;

pub use self::logs::{LogMark, Stream};
pub use self::pipes::{Ended, Output};
pub use self::start::{Start, StartError, Started};

use super::bus::Publish;
use super::permissions::Evaluate;
use crate::config::ProcessSettings;
use crate::db::Store;
use crate::domain::ids::{ProcessId, ProjectId, SessionId};
use crate::domain::process::{EndReason, Owner};
use crate::process::tree::ProcessTree;
use crate::sandbox::enclosure::Encloser;

/// Sessions remembered as ended, so a start racing a session's end is refused.
const ENDED_REMEMBERED: usize = 4096;

// ---------------------------------------------------------------------------------------------
// Messages (besides `Start`, in start.rs)

/// A command's watcher reports its end; answered once its row says so.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Finished {
    pub id: ProcessId,
    pub ended: Ended,
}

/// Ends a running process: `signal` to its tree, then SIGKILL to all of it after `grace`.
#[derive(Message)]
#[rtype(result = "Result<(), KillError>")]
pub struct Kill {
    pub owner: Owner,
    pub id: ProcessId,
    pub signal: i32,
    pub grace: std::time::Duration,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KillError {
    #[error("no such process is running here")]
    NotRunning,
}

/// Ends every running process of an owner (`signal`, grace, SIGKILL). Answers how many.
#[derive(Message)]
#[rtype(result = "usize")]
pub struct KillAll {
    pub owner: Owner,
    pub signal: i32,
    pub grace: std::time::Duration,
}

/// Ends at once everything started in a project (its folder's and its sessions'), before the
/// project is deleted; forgets its contexts. Answers once they are gone.
#[derive(Message)]
#[rtype(result = "()")]
pub struct EndProject(pub ProjectId);

/// The log progress of a running background process (`None`: not running here).
#[derive(Message)]
#[rtype(result = "Option<watch::Receiver<LogMark>>")]
pub struct WatchLogs(pub ProcessId);

/// Removes ended processes (rows and logs): an owner's, or everyone's that ended before
/// `before` (the janitor). Answers how many.
#[derive(Message)]
#[rtype(result = "Result<usize, crate::db::StoreError>")]
pub struct Cleanup {
    pub owner: Option<Owner>,
    pub before: Option<String>,
}

/// Ends every process and refuses new ones. Answers when all are gone (or after a bound).
#[derive(Message)]
#[rtype(result = "()")]
pub struct ShutdownProcesses;

/// The timer's end of a kill's grace: SIGKILL to whatever of the tree is left.
#[derive(Message)]
#[rtype(result = "()")]
struct GraceOver(ProcessId);

// ---------------------------------------------------------------------------------------------
// State

/// Where one process is in its life.
enum Life {
    /// Being decided, fenced and spawned; `doomed`: its owner ended meanwhile.
    Starting { doomed: Option<EndReason> },
    /// Running; `ending`: why Conduit is ending it, once it is.
    Running { tree: ProcessTree, ending: Option<EndReason> },
}

struct Proc {
    owner: Owner,
    project_id: ProjectId,
    context: Option<String>,
    life: Life,
    /// A background process's log progress.
    logs: Option<watch::Receiver<LogMark>>,
}

/// What the workbench needs from the rest of the service.
#[derive(Clone)]
pub struct Deps {
    pub settings: Arc<ProcessSettings>,
    /// The `process_dir` (resolved): logs and contexts' state.
    pub dir: PathBuf,
    pub store: Store,
    pub encloser: Encloser,
    pub engine: Recipient<Evaluate>,
    pub bus: Recipient<Publish>,
    /// The registry, which spawns commands (it owns the list of pids tokio waits for) and is
    /// told when one has been waited for.
    pub spawner: Recipient<crate::actors::registry::SpawnCommand>,
    pub gone: Recipient<crate::supervisor::process::ProcessGone>,
    /// In cluster mode: this node's name, the owner of the processes it starts.
    pub node: Option<String>,
    /// `at_rest`: background processes' logs are written without secrets.
    pub redaction: crate::secrets::RedactionMode,
}

pub struct Workbench {
    deps: Deps,
    procs: HashMap<ProcessId, Proc>,
    /// Each owner's exec contexts, with whether a command is using it.
    contexts: HashMap<Owner, HashMap<String, bool>>,
    ended: HashSet<SessionId>,
    ended_order: VecDeque<SessionId>,
    shutting_down: bool,
    /// Told when the table is empty (shutdown, project deletion).
    drained: Vec<(Option<ProjectId>, oneshot::Sender<()>)>,
}

impl Workbench {
    pub fn new(deps: Deps) -> Self {
        Workbench {
            deps,
            procs: HashMap::new(),
            contexts: HashMap::new(),
            ended: HashSet::new(),
            ended_order: VecDeque::new(),
            shutting_down: false,
            drained: Vec::new(),
        }
    }

    /// Where an owner's exec contexts keep their state.
    fn contexts_dir(&self, owner: &Owner) -> PathBuf {
        self.deps.dir.join("contexts").join(owner.as_str())
    }

    fn running_for(&self, owner: &Owner) -> usize {
        self.procs.values().filter(|p| &p.owner == owner).count()
    }

    fn running_in(&self, project: &ProjectId) -> usize {
        self.procs.values().filter(|p| &p.project_id == project).count()
    }

    /// Forgets an owner's contexts and removes their state, off the executor.
    fn drop_contexts(&mut self, owner: &Owner) {
        if self.contexts.remove(owner).is_some() {
            let dir = self.contexts_dir(owner);
            tokio::task::spawn_blocking(move || std::fs::remove_dir_all(dir));
        }
    }
}

/// The channel an exec command's output comes through (bounded: a slow reader slows the
/// command, never the service's memory).
pub fn output_channel() -> (mpsc::Sender<Output>, mpsc::Receiver<Output>) {
    mpsc::channel(8)
}
