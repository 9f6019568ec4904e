//! Restart recovery, once for sessions and agent runs, run before any actor starts and only
//! while holding the database's lock (so no other live service's processes can be touched).
//!
//! After a crash, what the database still shows as live is marked ended (sessions `error`,
//! "service restarted"; runs left queued or running `failure`; a run waiting for a usage limit
//! has no process and stays waiting, for its agent to take up), and every process left over is
//! ended, even when the CLI itself had already exited:
//! - every cgroup under this database's cgroup folder, and under the previous holder's (read
//!   from the lock file), is killed and removed: with the lock held, all of them are leftovers;
//! - every process carrying the marker of an interrupted session or run is killed (the
//!   fallback without cgroups, and the moment before a CLI is moved into its cgroup);
//! - a recorded CLI pid is ended with its group, but only if its start time still matches,
//!   never a reused pid.

use std::time::Duration;

use crate::db::lock::Holder;
use crate::db::{agents, processes, sessions, Store, StoreError};
use crate::domain::time;
use crate::process::cgroup::{CgroupRoot, Containment};
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
    containment: &Containment,
    previous: Option<&Holder>,
    scope: Option<NodeScope>,
) -> Result<Recovered, StoreError> {
    let now = time::now();
    let (mut rows, executions, commands, lost) = store
        .run(move |conn| {
            let owner = scope.as_ref().map(|s| s.node.as_str());
            let lost = match &scope {
                Some(NodeScope { node, lost_since: Some(since) }) => sessions::lost_since(conn, node, since)?,
                _ => Vec::new(),
            };
            Ok((
                sessions::fail_interrupted(conn, &now, owner)?,
                agents::fail_interrupted(conn, &now, owner)?,
                processes::lose_interrupted(conn, &now, owner)?,
                lost,
            ))
        })
        .await?;
    let mut roots: Vec<(CgroupRoot, bool)> = Vec::new();
    if let Some(own) = containment.root() {
        roots.push((own.clone(), true));
    }
    if let Some(dir) = previous.and_then(|h| h.cgroup.clone()) {
        if containment.root().is_none_or(|own| own.path() != dir) {
            roots.push((CgroupRoot::at(dir), false));
        }
    }
    let interrupted = rows.len();
    // Their processes are looked for like the interrupted sessions' (they are not counted as
    // interrupted: the leader already ended them).
    rows.extend(lost);
    let mut found = Recovered {
        sessions: interrupted,
        executions: executions.len(),
        commands: commands.len(),
        ..Default::default()
    };
    let ended = tokio::task::spawn_blocking(move || {
        let mut cgroups = 0;
        for (root, own) in roots {
            cgroups += root.clear(own);
        }
        let mut processes = 0;
        for row in &rows {
            processes += end_marked(row.id.as_str());
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
    (found.cgroups, found.processes) = ended;
    if found.cgroups > 0 || found.processes > 0 {
        tracing::warn!(
            cgroups = found.cgroups,
            processes = found.processes,
            "ended process trees left over from before the restart"
        );
    }
    Ok(found)
}

/// Kills every live process carrying `marker`; returns how many there were.
fn end_marked(marker: &str) -> usize {
    let marked = procfs::marked(SESSION_MARKER_ENV, marker);
    if marked.is_empty() {
        return 0;
    }
    tracing::warn!(marker, pids = ?marked, "ending processes left over from before the restart");
    let deadline = std::time::Instant::now() + Duration::from_secs(2);
    loop {
        let left = procfs::marked(SESSION_MARKER_ENV, marker);
        if left.is_empty() || std::time::Instant::now() > deadline {
            return marked.len();
        }
        for pid in left {
            let _ = kill::signal_pid(pid, libc::SIGKILL);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}
