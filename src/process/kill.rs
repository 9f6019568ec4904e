//! Ending a session's processes: its process group, plus any marked escapee.

use std::time::{Duration, Instant};

use super::procfs;

/// Sends `signal` to a whole process group. A group that no longer exists is not an error.
pub fn signal_group(pgid: i32, signal: i32) -> std::io::Result<()> {
    refuse_init("group", pgid)?;
    // SAFETY: killpg only takes integers; pgid > 1 so it can never address every process.
    gone_is_fine(unsafe { libc::killpg(pgid, signal) })
}

/// Sends `signal` to one process; a process already gone is not an error.
pub fn signal_pid(pid: i32, signal: i32) -> std::io::Result<()> {
    refuse_init("pid", pid)?;
    // SAFETY: kill only takes integers; pid > 1.
    gone_is_fine(unsafe { libc::kill(pid, signal) })
}

/// 0, -1 and 1 would address every process, the caller's group, or init.
fn refuse_init(what: &str, id: i32) -> std::io::Result<()> {
    if id <= 1 {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("refusing to signal {what} {id}")));
    }
    Ok(())
}

/// A signal call's result, where "no such process" (ESRCH) counts as done.
fn gone_is_fine(rc: i32) -> std::io::Result<()> {
    if rc == 0 {
        return Ok(());
    }
    let err = std::io::Error::last_os_error();
    if err.raw_os_error() == Some(libc::ESRCH) {
        Ok(())
    } else {
        Err(err)
    }
}

/// Everything still alive that belongs to a session: its group's members and marked processes.
pub fn survivors(pgid: i32, marker_key: &str, marker: &str) -> Vec<i32> {
    let mut pids = procfs::group_members(pgid);
    for pid in procfs::marked(marker_key, marker) {
        if !pids.contains(&pid) {
            pids.push(pid);
        }
    }
    pids
}

/// Signals the group and every marked escapee.
pub fn signal_session(pgid: i32, marker_key: &str, marker: &str, signal: i32) -> std::io::Result<()> {
    signal_group(pgid, signal)?;
    for pid in procfs::marked(marker_key, marker) {
        signal_pid(pid, signal)?;
    }
    Ok(())
}

/// SIGKILLs whatever is left until nothing is, for at most `within`. Returns the pids still
/// alive at the end (empty on success); zombies count as gone (their parent reaps them).
/// Blocking: call it off the async executor.
pub fn kill_until_gone(pgid: i32, marker_key: &str, marker: &str, within: Duration) -> Vec<i32> {
    let deadline = Instant::now() + within;
    loop {
        let left = survivors(pgid, marker_key, marker);
        if left.is_empty() {
            return left;
        }
        let _ = signal_group(pgid, libc::SIGKILL);
        for pid in &left {
            let _ = signal_pid(*pid, libc::SIGKILL);
        }
        if Instant::now() >= deadline {
            return survivors(pgid, marker_key, marker);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Zombie children of `parent`. Blocking (a `/proc` walk): call it on the blocking pool.
pub fn zombie_children(parent: i32) -> Vec<i32> {
    procfs::children(parent).into_iter().filter(|pid| procfs::stat(*pid).is_some_and(|s| s.state == 'Z')).collect()
}

/// Reaps one zombie child; true when it was reaped. Never blocks (`WNOHANG`).
pub fn reap(pid: i32) -> bool {
    let mut status = 0;
    // SAFETY: waitpid on a specific child with WNOHANG never blocks.
    unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) == pid }
}
