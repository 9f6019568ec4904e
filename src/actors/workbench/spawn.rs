//! Starting one command's bash: its own process group, the marker, its cgroup and sandbox,
//! piped stdout and stderr, no stdin. Done the way `supervisor::spawn` starts a CLI.

use crate::domain::ids::ProcessId;
use crate::process::tree::ProcessTree;
use crate::process::SESSION_MARKER_ENV;
use crate::sandbox::enclosure::Enclosure;

use super::script::BASH_FLAGS;

/// What to start.
pub struct Launch {
    pub id: ProcessId,
    /// bash's `-c` script and what follows it (`$0`, `$1`...).
    pub script: String,
    pub script_args: Vec<String>,
    /// Where it starts (the workspace, or the request's `cwd`).
    pub cwd: String,
    /// Set in its environment over the enclosure's (a command outside a context).
    pub env: Vec<(String, String)>,
    pub enclosure: Enclosure,
}

/// A started command.
pub struct Running {
    pub pid: i32,
    pub tree: ProcessTree,
    pub child: tokio::process::Child,
    pub stdout: tokio::process::ChildStdout,
    pub stderr: tokio::process::ChildStderr,
    /// Its status is the sandbox's (signals read back from 128+N).
    pub sandboxed: bool,
}

/// Starts it; on failure nothing of it is left running.
pub fn spawn(launch: Launch) -> Result<Running, String> {
    let Launch { id, script, script_args, cwd, env, enclosure } = launch;
    let Enclosure { cgroup, resources: _, fence, env: base, network } = enclosure;
    let mut args: Vec<String> = BASH_FLAGS.iter().map(|s| s.to_string()).collect();
    args.extend(["-c".to_string(), script]);
    args.extend(script_args);
    let (program, args) = match &fence {
        Some(fence) => fence.command_line("bash", args, None),
        None => ("bash".to_string(), args),
    };
    let sandboxed = fence.is_some();
    let mut cmd = tokio::process::Command::new(&program);
    // Nothing of the service's own environment: the enclosure's, and the request's on top.
    cmd.args(args)
        .current_dir(&cwd)
        .process_group(0)
        .env_clear()
        .envs(base)
        .envs(env)
        .env(SESSION_MARKER_ENV, id.as_str())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(false);
    let discard = |cgroup: Option<crate::process::cgroup::Cgroup>| {
        if let Some(cgroup) = cgroup {
            tokio::task::spawn_blocking(move || cgroup.kill_and_remove(std::time::Duration::from_secs(1)));
        }
    };
    let mut child = match cmd.spawn() {
        Ok(child) => child,
        Err(e) => {
            discard(cgroup);
            return Err(format!("cannot start bash ({program:?}): {e}"));
        }
    };
    let Some(pid) = child.id().map(|p| p as i32) else {
        discard(cgroup);
        return Err("the command exited before it could be watched".to_string());
    };
    // Into its cgroup at once (see `supervisor::spawn` for why here and not on the blocking
    // pool); the process group and the marker are the fallback.
    let cgroup = cgroup.and_then(|cg| match cg.adopt(pid) {
        Ok(()) => Some(cg),
        Err(e) => {
            tracing::warn!(process = %id, error = %e, "cannot move a command into its cgroup; its process group contains it");
            discard(Some(cg));
            None
        }
    });
    Enclosure::started(network, pid, cgroup.as_ref());
    let tree = ProcessTree { pgid: pid, marker: id.to_string(), cgroup, wrapped: sandboxed, resources: None };
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        let doomed = tree.clone();
        tokio::task::spawn_blocking(move || doomed.end(std::time::Duration::from_secs(2)));
        return Err("the command started without its output pipes".to_string());
    };
    Ok(Running { pid, tree, child, stdout, stderr, sandboxed })
}

/// (exit code, signal) from a wait status.
pub fn decode(status: std::io::Result<std::process::ExitStatus>, sandboxed: bool) -> (Option<i32>, Option<i32>) {
    use std::os::unix::process::ExitStatusExt;
    let Ok(status) = status else { return (None, None) };
    if let Some(sig) = status.signal() {
        return (None, Some(sig));
    }
    match status.code() {
        // bubblewrap reports its child killed by signal N as 128+N.
        Some(code) if sandboxed && (129..=192).contains(&code) => (None, Some(code - 128)),
        code => (code, None),
    }
}
