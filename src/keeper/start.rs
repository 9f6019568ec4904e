//! `conduit keeper`: reads its [`Spec`], leaves the service's session, starts the CLI, forks
//! its guardian, answers on stdout, and keeps the CLI until the service releases it.

use std::ffi::CString;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixListener;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

use super::event_loop::Keeper;
use super::guardian::{Guardian, Target};
use super::spec::{Spec, Started};

/// The keeper's whole life; the exit status of `conduit keeper`.
pub fn run() -> u8 {
    let mut input = Vec::new();
    if let Err(e) = std::io::stdin().lock().read_to_end(&mut input) {
        return answer(Started::Error(format!("cannot read the spec: {e}")));
    }
    let spec: Spec = match serde_json::from_slice(&input) {
        Ok(spec) => spec,
        Err(e) => return answer(Started::Error(format!("the spec is not valid: {e}"))),
    };
    match start(spec) {
        Ok((keeper, started)) => {
            if answer(started) != 0 {
                // Nobody heard: the service will not attach; the guardian ends the CLI.
                return 1;
            }
            quiet_standard_streams();
            keeper.run()
        }
        Err(why) => answer(Started::Error(why)),
    }
}

/// Writes the answer line; 0 when it was written.
fn answer(started: Started) -> u8 {
    let failed = matches!(started, Started::Error(_));
    let mut line = serde_json::to_vec(&started).unwrap_or_default();
    line.push(b'\n');
    let mut out = std::io::stdout().lock();
    let written = out.write_all(&line).and_then(|()| out.flush()).is_ok();
    u8::from(failed || !written)
}

/// From here on nobody reads the keeper's stdout: it and stdin point at /dev/null, so a stray
/// write cannot fail or block.
fn quiet_standard_streams() {
    if let Ok(null) = std::fs::OpenOptions::new().read(true).write(true).open("/dev/null") {
        // SAFETY: dup2 onto the standard descriptors; `null` stays valid for the calls.
        unsafe {
            libc::dup2(null.as_raw_fd(), 0);
            libc::dup2(null.as_raw_fd(), 1);
        }
    }
}

fn start(spec: Spec) -> Result<(Keeper, Started), String> {
    // Out of the service's session and process group: a Ctrl-C at its terminal, or a signal
    // to its group, is not for the CLIs it leaves running.
    // SAFETY: setsid and prctl take no pointers.
    unsafe {
        libc::setsid();
        // Orphans of the CLI's tools come here to be reaped.
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong, 0, 0, 0);
    }
    if let Some(procs) = &spec.keeper_cgroup {
        // Best effort: outside it, the keeper is still ended by its marker.
        let _ = std::fs::write(procs, "0");
    }
    let signals = child_signals()?;
    let listener = listen(&spec.socket)?;
    let join: Vec<CString> = spec
        .join
        .iter()
        .map(|p| CString::new(p.as_os_str().as_bytes()).map_err(|_| format!("a cgroup path with a NUL: {p:?}")))
        .collect::<Result<_, _>>()?;
    let mut command = Command::new(&spec.program);
    command
        .args(&spec.args)
        .current_dir(&spec.cwd)
        .env_clear()
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    // SAFETY: between fork and exec the child only makes system calls on memory prepared
    // before the fork (the paths); the keeper is single-threaded, so no lock can be held.
    unsafe {
        command.pre_exec(move || {
            // The CLI dies with its keeper even where there is no cgroup.
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0);
            // Into its cgroups before its program runs: nothing it starts is ever outside.
            for procs in &join {
                let fd = libc::open(procs.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                if fd < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                let written = libc::write(fd, b"0".as_ptr().cast(), 1);
                let error = std::io::Error::last_os_error();
                libc::close(fd);
                if written != 1 {
                    return Err(error);
                }
            }
            Ok(())
        });
    }
    let mut child = command.spawn().map_err(|e| {
        let _ = std::fs::remove_file(&spec.socket);
        format!("cannot start {:?}: {e}", spec.program)
    })?;
    let cli_pid = i32::try_from(child.id()).map_err(|_| "a pid out of range".to_string())?;
    let cli_started_at = crate::process::procfs::stat(cli_pid).map(|s| s.start_time.to_string());
    let target = match &spec.cgroup {
        Some(dir) => Target::Cgroup(
            CString::new(dir.join("cgroup.kill").as_os_str().as_bytes()).map_err(|_| "a cgroup path with a NUL")?,
        ),
        None => Target::Group(cli_pid),
    };
    let guardian = match Guardian::fork(target) {
        Ok(guardian) => guardian,
        Err(e) => {
            let _ = child.kill();
            let _ = std::fs::remove_file(&spec.socket);
            return Err(format!("cannot fork the guardian: {e}"));
        }
    };
    let (Some(stdin), Some(stdout), Some(stderr)) = (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err("the CLI started without its standard streams".to_string());
    };
    // SAFETY: getpid takes nothing.
    let keeper_pid = unsafe { libc::getpid() };
    let started = Started::Ok { keeper_pid, cli_pid, cli_started_at: cli_started_at.clone() };
    let hello = super::wire::Hello {
        protocol: super::wire::PROTOCOL,
        session: spec.session.clone(),
        keeper_pid,
        cli_pid,
        cli_started_at,
        cgroup: spec.cgroup.as_ref().map(|p| p.display().to_string()),
        sandboxed: spec.sandboxed,
        first_seq: spec.first_seq,
        buffered_bytes: 0,
    };
    let pipes = [OwnedFd::from(stdin), OwnedFd::from(stdout), OwnedFd::from(stderr)];
    let keeper = Keeper::new(&spec, hello, pipes, listener, signals, guardian).map_err(|e| e.to_string())?;
    Ok((keeper, started))
}

/// SIGCHLD as a readable descriptor (blocked, so it is only ever read there).
fn child_signals() -> Result<OwnedFd, String> {
    // SAFETY: the set is initialised by sigemptyset before use; signalfd returns a new fd.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGCHLD);
        if libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) != 0 {
            return Err(format!("cannot block SIGCHLD: {}", std::io::Error::last_os_error()));
        }
        let fd = libc::signalfd(-1, &set, libc::SFD_NONBLOCK | libc::SFD_CLOEXEC);
        if fd < 0 {
            return Err(format!("cannot read SIGCHLD: {}", std::io::Error::last_os_error()));
        }
        Ok(OwnedFd::from_raw_fd(fd))
    }
}

/// The keeper's socket: its folder the service's user's only, the socket too; an old file of
/// that name (a keeper of the same session that died) is replaced.
fn listen(path: &std::path::Path) -> Result<UnixListener, String> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
    }
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("cannot replace {}: {e}", path.display())),
    }
    let listener = UnixListener::bind(path).map_err(|e| format!("cannot listen on {}: {e}", path.display()))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .map_err(|e| format!("cannot restrict {}: {e}", path.display()))?;
    listener.set_nonblocking(true).map_err(|e| format!("cannot set up {}: {e}", path.display()))?;
    Ok(listener)
}
