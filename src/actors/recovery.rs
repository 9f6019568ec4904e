//! Restart recovery, once for sessions and agent runs, run before any actor starts and only
//! while holding the database's lock (so no other live service's processes can be touched).
//!
//! First, sessions whose CLIs run on under keepers (see [`crate::keeper`]): each live session
//! with a keeper is asked at its socket; the ones that answer are kept as they are (the service
//! attaches to them once its actors run), with their cgroups and processes.
//!
//! Then, what the database still shows as live is marked ended (sessions `error`: "service
//! restarted", or `crashed` when their keeper was there and is gone; runs left queued or
//! running `failure`; a run waiting for a usage limit has no process and stays waiting, for its
//! agent to take up), and every process left over is ended, even when the CLI itself had
//! already exited:
//! - every cgroup under this database's cgroup folder, and under the previous holder's (read
//!   from the lock file), is killed and removed: with the lock held, all of them are leftovers;
//! - every process carrying the marker of an interrupted session or run is killed (the
//!   fallback without cgroups, and the moment before a CLI is moved into its cgroup);
//! - a recorded CLI pid is ended with its group, but only if its start time still matches,
//!   never a reused pid.

use std::time::Duration;

use crate::actors::registry::{Found, Keepers};
use crate::actors::session::kept::KeptState;
use crate::db::lock::Holder;
use crate::db::{agents, processes, sessions, Store, StoreError};
use crate::domain::time;
use crate::keeper::link::Connection;
use crate::keeper::spec::KEEPER_MARKER_ENV;
use crate::keeper::wire::PROTOCOL;
use crate::process::cgroup::{CgroupRoot, Containment};
use crate::process::limits::{clear_v1, Controllers};
use crate::process::{kill, procfs, SESSION_MARKER_ENV};

/// What recovery found.
#[derive(Debug, Default, Clone, Copy)]
pub struct Recovered {
    pub sessions: usize,
    pub executions: usize,
    /// Commands and background processes marked `lost`.
    pub commands: usize,
    /// Leftover cgroups that still held processes.
    pub cgroups: usize,
    /// Processes ended by marker or recorded pid.
    pub processes: usize,
    /// Sessions whose keepers answered: the service attaches to them again.
    pub kept: usize,
}

/// In cluster mode, whose leftovers recovery looks for: this node's only (the others' sessions
/// are theirs), including the sessions the leader declared lost since the node last started
/// (their CLIs may still run here).
#[derive(Debug, Clone)]
pub struct NodeScope {
    pub node: String,
    pub lost_since: Option<String>,
}

pub async fn recover_after_restart(
    store: &Store,
    (containment, controllers): (&Containment, &Controllers),
    previous: Option<&Holder>,
    scope: Option<NodeScope>,
    keepers: Option<&Keepers>,
) -> Result<(Recovered, Vec<Found>), StoreError> {
    let now = time::now();
    let owner = scope.as_ref().map(|s| s.node.clone());
    let candidates = store.run(move |conn| sessions::live_with_keepers(conn, owner.as_deref())).await?;
    let (found, crashed) = match keepers {
        Some(keepers) => find_keepers(store, keepers, candidates).await,
        None => (Vec::new(), Vec::new()),
    };
    let kept: Vec<_> = found.iter().map(|f| f.row.id.clone()).collect();
    let (mut rows, executions, commands, lost) = store
        .run(move |conn| {
            let owner = scope.as_ref().map(|s| s.node.as_str());
            let lost = match &scope {
                Some(NodeScope { node, lost_since: Some(since) }) => sessions::lost_since(conn, node, since)?,
                _ => Vec::new(),
            };
            Ok((
                sessions::fail_interrupted(conn, &now, owner, (&kept, &crashed))?,
                agents::fail_interrupted(conn, &now, owner)?,
                processes::lose_interrupted(conn, &now, owner)?,
                lost,
            ))
        })
        .await?;
    let kept: std::collections::HashSet<String> = found.iter().map(|f| f.row.id.to_string()).collect();
    let mut roots: Vec<(CgroupRoot, bool)> = Vec::new();
    if let Some(own) = containment.root() {
        roots.push((own.clone(), true));
    }
    if let Some(dir) = previous.and_then(|h| h.cgroup.clone()) {
        if containment.root().is_none_or(|own| own.path() != dir) {
            roots.push((CgroupRoot::at(dir), false));
        }
    }
    // The v1 folders that limited CLIs (hybrid hosts): this service's, and the previous
    // holder's where they differ.
    let own_v1 = controllers.v1_roots();
    let previous_v1: Vec<std::path::PathBuf> =
        previous.map(|h| h.controllers.iter().filter(|d| !own_v1.contains(d)).cloned().collect()).unwrap_or_default();
    let interrupted = rows.len();
    // Their processes are looked for like the interrupted sessions' (they are not counted as
    // interrupted: the leader already ended them).
    rows.extend(lost);
    let mut recovered = Recovered {
        sessions: interrupted,
        executions: executions.len(),
        commands: commands.len(),
        kept: found.len(),
        ..Default::default()
    };
    let ended = tokio::task::spawn_blocking(move || {
        let mut cgroups = 0;
        for (root, own) in roots {
            cgroups += if kept.is_empty() { root.clear(own) } else { root.clear_except(&kept) };
        }
        clear_v1(&own_v1, &kept, true);
        clear_v1(&previous_v1, &kept, false);
        let mut processes = 0;
        for row in &rows {
            processes += end_marked(row.id.as_str());
            // Its keeper, if it still runs (a keeper that did not answer).
            processes += end_marked_by(KEEPER_MARKER_ENV, row.id.as_str());
            let (Some(pid), Some(started)) = (row.cli_pid, row.cli_started_at.as_deref()) else { continue };
            let same = procfs::stat(pid).is_some_and(|s| s.start_time.to_string() == started && s.state != 'Z');
            if same {
                tracing::warn!(session = %row.id, pid, "ending a CLI left over from before the restart");
                let left = kill::kill_until_gone(pid, SESSION_MARKER_ENV, row.id.as_str(), Duration::from_secs(2));
                if !left.is_empty() {
                    tracing::error!(session = %row.id, pids = ?left, "leftover processes survived SIGKILL");
                }
                processes += 1;
            }
        }
        for id in &executions {
            processes += end_marked(id.as_str());
        }
        // Commands carry their own id as the marker (their cgroups, when there are cgroups,
        // were cleared with the rest above).
        for id in &commands {
            processes += end_marked(id.as_str());
        }
        (cgroups, processes)
    })
    .await
    .map_err(|e| StoreError::Other(format!("recovery task failed: {e}")))?;
    (recovered.cgroups, recovered.processes) = ended;
    if recovered.cgroups > 0 || recovered.processes > 0 {
        tracing::warn!(
            cgroups = recovered.cgroups,
            processes = recovered.processes,
            "ended process trees left over from before the restart"
        );
    }
    Ok((recovered, found))
}

/// How long a keeper has to say hello at start (they answer in microseconds; one that does
/// not is stopped or wedged, and its session is ended like any other).
const HELLO_WAIT: Duration = Duration::from_secs(2);

/// Asks every live session's keeper at its socket, all at once. Returns the ones that
/// answered as themselves, and the sessions whose keeper left a socket but is gone (crashed).
async fn find_keepers(
    store: &Store,
    keepers: &Keepers,
    candidates: Vec<(crate::db::sessions::Session, Option<String>)>,
) -> (Vec<Found>, Vec<crate::domain::ids::SessionId>) {
    use crate::domain::session::SessionStatus;
    let asked = candidates.into_iter().filter_map(|(row, state)| {
        // A session still starting was mid-handshake with the service that went: not resumable
        // where it stands.
        let state = state.filter(|_| row.status != SessionStatus::Starting)?;
        let socket = keepers.socket(row.id.as_str());
        Some(async move {
            let answered = tokio::time::timeout(HELLO_WAIT, Connection::connect(&socket)).await;
            let same =
                |c: &Connection| c.hello.session == row.id.as_str() && row.cli_pid.is_none_or(|p| p == c.hello.cli_pid);
            match answered {
                Ok(Ok(connection)) if connection.hello.protocol != PROTOCOL => {
                    let theirs = connection.hello.protocol;
                    tracing::error!(session = %row.id, theirs, ours = PROTOCOL, "the session's keeper speaks another version; the session is ended");
                    Err((row.id, true))
                }
                Ok(Ok(connection)) if same(&connection) => Ok((row, connection, state)),
                Ok(Ok(_)) => {
                    tracing::error!(session = %row.id, "a keeper answered for another CLI; the session is ended");
                    Err((row.id, true))
                }
                Ok(Err(e)) => {
                    tracing::warn!(session = %row.id, error = %e, "the session's keeper is gone; the session crashed");
                    Err((row.id, socket.exists()))
                }
                Err(_) => {
                    tracing::warn!(session = %row.id, "the session's keeper did not answer; the session is ended");
                    Err((row.id, true))
                }
            }
        })
    });
    let mut found = Vec::new();
    let mut crashed = Vec::new();
    for answer in futures_util::future::join_all(asked).await {
        match answer {
            Ok((row, connection, state)) => {
                let id = row.id.clone();
                let through = store.run(move |conn| sessions::kept_state(conn, &id)).await.map(|(_, n)| n);
                match through {
                    Ok(stored_through) => {
                        found.push(Found { row, connection, stored_through, state: KeptState::read(Some(&state)) })
                    }
                    Err(e) => {
                        tracing::error!(session = %row.id, error = %e, "cannot read what the session stored; it is ended");
                        crashed.push(row.id);
                    }
                }
            }
            Err((id, true)) => crashed.push(id),
            Err((_, false)) => {}
        }
    }
    (found, crashed)
}

/// Kills every live process carrying `marker`; returns how many there were.
fn end_marked(marker: &str) -> usize {
    end_marked_by(SESSION_MARKER_ENV, marker)
}

fn end_marked_by(variable: &str, marker: &str) -> usize {
    let marked = procfs::marked(variable, marker);
    if marked.is_empty() {
        return 0;
    }
    tracing::warn!(marker, pids = ?marked, "ending processes left over from before the restart");
    let deadline = std::time::Instant::now() + Duration::from_secs(2);
    loop {
        let left = procfs::marked(variable, marker);
        if left.is_empty() || std::time::Instant::now() > deadline {
            return marked.len();
        }
        for pid in left {
            let _ = kill::signal_pid(pid, libc::SIGKILL);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}
