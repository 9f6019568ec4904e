//! Starting a terminal's shell: a fresh PTY, the shell as the leader of a new session with the
//! PTY as its controlling terminal (so job control works and a hangup reaches it), in its
//! cgroup and sandbox, carrying the marker. Blocking (a fork, cgroupfs writes): call it on the
//! blocking pool of the runtime that will read the PTY, whose reactor the master joins here.

use crate::domain::terminal::Size;
use crate::process::cgroup::Cgroup;
use crate::process::tree::ProcessTree;
use crate::process::SESSION_MARKER_ENV;
use crate::sandbox::Fence;

/// What a shell is started with.
pub struct ShellRequest {
    /// The terminal's id: the marker every process of its tree carries.
    pub marker: String,
    pub shell: String,
    pub folder: String,
    /// Its whole environment (its enclosure's, with the request's on top).
    pub env: Vec<(String, String)>,
    pub size: Size,
    pub cgroup: Option<Cgroup>,
    /// The sandbox (prepared for `shell`), unless the project's is `off`.
    pub fence: Option<Fence>,
    /// The network made ahead of time its sandbox joins, if any.
    pub network: Option<crate::actors::network_pool::TakenNetwork>,
}

/// A running shell and the two halves of its PTY's master.
pub struct Started {
    pub pid: i32,
    pub tree: ProcessTree,
    pub child: tokio::process::Child,
    pub reader: pty_process::OwnedReadPty,
    pub writer: pty_process::OwnedWritePty,
}

/// How the shell ended: a status or a signal, and the sentence for logs and events.
#[derive(Debug, Clone)]
pub struct ShellExit {
    pub how: String,
    pub code: Option<i32>,
    pub signal: Option<i32>,
}

impl ShellExit {
    /// `sandboxed`: the status is bubblewrap's, which reports death by signal N as 128+N.
    pub fn of(status: std::process::ExitStatus, sandboxed: bool) -> ShellExit {
        use std::os::unix::process::ExitStatusExt;
        let crate::supervisor::spawn::Exit { how, code, .. } = crate::supervisor::spawn::Exit::of(status, sandboxed);
        let wrapped = status.code().filter(|c| sandboxed && code.is_none() && (129..=192).contains(c));
        ShellExit { how, code, signal: status.signal().or(wrapped.map(|c| c - 128)) }
    }
}

/// Starts the shell. On failure nothing of it is left running; the error says why.
pub fn spawn(req: ShellRequest) -> Result<Started, String> {
    let ShellRequest { marker, shell, folder, env, size, cgroup, fence, network } = req;
    let discard = |cgroup: Option<Cgroup>| {
        if let Some(cgroup) = cgroup {
            let _ = cgroup.kill_and_remove(std::time::Duration::from_secs(1));
        }
    };
    let opened = pty_process::open().and_then(|(pty, pts)| {
        pty.resize(pty_process::Size::new(size.rows, size.cols))?;
        Ok((pty, pts))
    });
    let (pty, pts) = match opened {
        Ok(opened) => opened,
        Err(e) => {
            discard(cgroup);
            return Err(format!("cannot open a PTY: {e}"));
        }
    };
    // Sandboxed, the program started is bubblewrap (without `--new-session`, so the shell keeps
    // the PTY as its controlling terminal) and the shell its grandchild.
    let (program, args) = match &fence {
        Some(fence) => fence.command_line(&shell, Vec::new(), None),
        None => (shell.clone(), Vec::new()),
    };
    let sandboxed = fence.is_some();
    // The PTY crate makes the child a session leader and gives it the PTY as its controlling
    // terminal in a `pre_exec` hook, so std forks (rather than `posix_spawn`s): which is why
    // this runs on the blocking pool, not on an actor's thread.
    // Nothing of the service's own environment: `env` is the whole of it.
    let command = pty_process::Command::new(&program)
        .args(args)
        .current_dir(&folder)
        .env_clear()
        .envs(env)
        .env("TERM", "xterm-256color")
        .env("COLORTERM", "truecolor")
        .env(SESSION_MARKER_ENV, &marker)
        .kill_on_drop(false);
    let child = match command.spawn(pts) {
        Ok(child) => child,
        Err(e) => {
            discard(cgroup);
            let how = if sandboxed { format!(" in its sandbox ({program:?})") } else { String::new() };
            return Err(format!("cannot start the shell {shell:?}{how}: {e}"));
        }
    };
    let Some(pid) = child.id().map(|p| p as i32) else {
        discard(cgroup);
        return Err("the shell exited before it could be watched".to_string());
    };
    // Into its cgroup at once (see `supervisor::spawn` for why here); its session and the marker
    // contain it where there is no cgroup.
    let cgroup = cgroup.and_then(|cg| match cg.adopt(pid) {
        Ok(()) => Some(cg),
        Err(e) => {
            tracing::warn!(terminal = %marker, error = %e, "cannot move the shell into its cgroup; its session contains it");
            discard(Some(cg));
            None
        }
    });
    crate::sandbox::enclosure::Enclosure::started(network, pid, cgroup.as_ref());
    // setsid made the shell's pid its session's and its process group's id.
    let tree = ProcessTree { pgid: pid, marker, cgroup, wrapped: sandboxed, resources: None };
    let (reader, writer) = pty.into_split();
    Ok(Started { pid, tree, child, reader, writer })
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::ExitStatusExt;
    use std::process::ExitStatus;

    use super::ShellExit;

    #[test]
    fn a_shell_ends_with_a_status_or_a_signal() {
        let of = |raw: i32, sandboxed: bool| {
            let e = ShellExit::of(ExitStatus::from_raw(raw), sandboxed);
            (e.code, e.signal)
        };
        assert_eq!(of(3 << 8, false), (Some(3), None));
        assert_eq!(of(libc::SIGKILL, false), (None, Some(9)));
        assert_eq!(of((128 + libc::SIGHUP) << 8, true), (None, Some(1)), "bubblewrap's 128+N");
        assert_eq!(of(129 << 8, false), (Some(129), None), "unsandboxed, 129 is a status");
    }
}
