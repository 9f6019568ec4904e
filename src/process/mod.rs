//! Child processes: how a CLI is started, and how it and everything it started is ended.
//!
//! - [`command`] builds the CLI's argument list (values always in `--flag=value` form).
//! - [`procfs`] reads `/proc`: parents, process groups, start times, the session marker.
//! - [`kill`] signals process groups and escaped descendants, and confirms they are gone.
//! - [`version`] reads the CLI's version (does it accept a local `--sdk-url`?).
//! - [`own`] lists the other children tokio waits for (git, setup scripts), for the reaper.
//!
//! - [`cgroup`] contains each CLI's whole tree in a cgroup v2 of its own, ended with
//!   `cgroup.kill` (where cgroups are not available, the group and the marker below do).
//! - [`tree`] is one CLI's tree as a whole: cgroup, process group and marker.
//! - [`limits`] finds which cgroup controllers limit a session's tree (v2, or v1 on hybrid
//!   hosts) and reads what it uses.
//!
//! Every CLI also runs in its own process group, with `CONDUIT_SESSION_MARKER=<session id>` in
//! its environment. A tool process that leaves the group with `setsid` still inherits the
//! marker (unless it clears its environment: only the cgroup holds that one), and the service is
//! a child subreaper, so such escapees are found and ended too.

pub mod cgroup;
pub mod command;
pub mod executable;
pub mod kill;
pub mod limits;
pub mod own;
pub mod procfs;
pub mod tree;
pub mod version;

/// Environment variable carried by every process a session starts (and their descendants).
pub const SESSION_MARKER_ENV: &str = "CONDUIT_SESSION_MARKER";

/// Makes this process the reaper of orphaned descendants, so a tool process that detaches from
/// its CLI is re-parented here (where it can be found, ended and reaped) rather than to init.
pub fn become_subreaper() -> std::io::Result<()> {
    prctl_on(libc::PR_SET_CHILD_SUBREAPER)
}

/// Sets a yes/no process attribute (`prctl(option, 1)`).
fn prctl_on(option: libc::c_int) -> std::io::Result<()> {
    // SAFETY: the options passed here take plain integer arguments.
    let rc = unsafe { libc::prctl(option, 1 as libc::c_ulong, 0, 0, 0) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Makes the allocator hand large blocks (1 MiB and up: huge CLI lines, their frames, SQLite
/// blobs) straight back to the system when they are freed. glibc otherwise raises its mmap
/// threshold to the largest block freed so far (up to 32 MiB), after which such blocks come
/// from the heap and a service that once carried a few 30 MiB lines keeps their memory. Fixing
/// the threshold also fixes the trim threshold at 128 KiB, which would give the heap's top back
/// (and fault it in again) all the time under a flood: it goes to 64 MiB.
pub fn return_large_blocks_to_the_system() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets tunables of glibc's allocator (it takes the allocator's own locks).
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 64 << 20);
    }
}

/// Turns transparent huge pages off for this process. Where the system gives them to every
/// mapping (`always`), every 2 MiB the heap grows into (stream histories filling up, a burst of
/// lines) is a page fault that zeroes a whole huge page on the spot: measured as stalls of
/// 10-40 ms of every stream at once. Small pages fault in small steps instead. (Under `madvise`
/// this changes nothing: the heap is not advised.)
pub fn avoid_huge_page_stalls() -> std::io::Result<()> {
    prctl_on(libc::PR_SET_THP_DISABLE)
}

/// Raises the soft limit on open files to the hard limit: each session holds three pipes, so a
/// few hundred sessions pass the common default of 1024. Returns the new soft limit.
pub fn raise_open_file_limit() -> std::io::Result<u64> {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit/setrlimit with a valid pointer to a local struct.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max;
            if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
    }
    Ok(limit.rlim_cur)
}
