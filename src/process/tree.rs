//! Everything one CLI started, and how to end it: its cgroup (when the service uses cgroups),
//! its process group, and any process carrying its marker. The cgroup is the real boundary;
//! the group and the marker cover the fallback, and the moment between the CLI's start and
//! its move into the cgroup. Every method blocks (signals, `/proc` walks, cgroupfs): call them
//! on the blocking pool.

use std::time::Duration;

use super::cgroup::Cgroup;
use super::limits::ResourceGroups;
use super::{kill, SESSION_MARKER_ENV};

#[derive(Debug, Clone)]
pub struct ProcessTree {
    /// The CLI's pid, which is also its process group id.
    pub pgid: i32,
    /// The session or execution id every process of the tree carries in its environment.
    pub marker: String,
    pub cgroup: Option<Cgroup>,
    /// The group's leader is the sandbox (bubblewrap), which exits with the CLI's status as
    /// soon as the CLI exits, and at once on SIGTERM: polite signals skip it, so the CLI
    /// still gets its grace period to end on its own.
    pub wrapped: bool,
    /// The cgroups that limit and measure it, besides `cgroup` (v1 folders on hybrid hosts;
    /// on v2, `cgroup` itself): removed when the tree ends.
    pub resources: Option<ResourceGroups>,
}

impl ProcessTree {
    /// `signal` to every process of the tree (SIGKILL through `cgroup.kill`, which nothing can
    /// fork its way out of).
    pub fn signal(&self, signal: i32) {
        if self.wrapped && signal != libc::SIGKILL {
            let pids = match &self.cgroup {
                Some(cgroup) => cgroup.pids(),
                None => kill::survivors(self.pgid, SESSION_MARKER_ENV, &self.marker),
            };
            for pid in pids.into_iter().filter(|&pid| pid != self.pgid) {
                let _ = kill::signal_pid(pid, signal);
            }
            return;
        }
        if let Some(cgroup) = &self.cgroup {
            if signal == libc::SIGKILL {
                if let Err(e) = cgroup.kill() {
                    tracing::warn!(cgroup = %cgroup.path().display(), error = %e, "cgroup.kill failed; signalling its processes one by one");
                    cgroup.signal(signal);
                }
            } else {
                cgroup.signal(signal);
            }
            // The cgroup holds every descendant, escapees included: the group (one syscall)
            // covers a child forked in the moment before the CLI was moved in, and no walk of
            // `/proc` for the marker is needed.
            if self.pgid > 1 {
                let _ = kill::signal_group(self.pgid, signal);
            }
        } else if self.pgid > 1 {
            let _ = kill::signal_session(self.pgid, SESSION_MARKER_ENV, &self.marker, signal);
        }
    }

    /// SIGKILLs whatever is left until nothing is, for at most `within`, then removes the
    /// cgroup. Returns the pids still alive at the end (empty on success).
    pub fn end(&self, within: Duration) -> Vec<i32> {
        let left = self.end_processes(within);
        if let Some(resources) = &self.resources {
            if let Err(e) = resources.remove(within) {
                tracing::warn!(error = %e, "a CLI's resource cgroups could not be removed");
            }
        }
        left
    }

    fn end_processes(&self, within: Duration) -> Vec<i32> {
        if let Some(cgroup) = &self.cgroup {
            match cgroup.kill_and_remove(within) {
                Ok(()) => {
                    // Emptied: nothing of the tree is left but what the group may still hold.
                    if self.pgid > 1 {
                        let _ = kill::signal_group(self.pgid, libc::SIGKILL);
                    }
                    return Vec::new();
                }
                Err(e) => {
                    tracing::warn!(cgroup = %cgroup.path().display(), error = %e, "a CLI's cgroup could not be emptied; ending its processes one by one");
                }
            }
        }
        let mut left = self.cgroup.as_ref().map(Cgroup::pids).unwrap_or_default();
        if self.pgid > 1 {
            for pid in kill::kill_until_gone(self.pgid, SESSION_MARKER_ENV, &self.marker, within) {
                if !left.contains(&pid) {
                    left.push(pid);
                }
            }
        }
        left
    }

    /// Live processes of the tree (the cgroup's, the group's and the marked ones).
    pub fn survivors(&self) -> Vec<i32> {
        let mut pids = self.cgroup.as_ref().map(Cgroup::pids).unwrap_or_default();
        if self.pgid > 1 {
            for pid in kill::survivors(self.pgid, SESSION_MARKER_ENV, &self.marker) {
                if !pids.contains(&pid) {
                    pids.push(pid);
                }
            }
        }
        pids
    }
}
