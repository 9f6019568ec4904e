//! The work of `conduit sandbox-net` (see the parent module). It runs in a process of its own,
//! single-threaded, before anything of the service starts: forking there is safe, and every
//! wait is a plain blocking call.

use std::convert::Infallible;
use std::io::{BufRead, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::time::Instant;

use super::{warden, Launch, READY_WITHIN};

/// Makes the sandbox's network, then becomes bubblewrap inside it. A forked helper makes the
/// namespace (a holder process, as a warden does), attaches pasta, and says the holder's pid
/// once pasta is ready; this process then joins it ([`join`]). bubblewrap is not asked to make
/// the namespace itself (`--unshare-net`): it then adds 127.0.0.1 to its loopback while pasta
/// brings that loopback up, which adds the same address, and whichever came second failed
/// (`loopback: Failed RTM_NEWADDR`): a launch lost now and then on a busy machine. Returns only
/// on failure, before anything of the sandbox ran.
pub(super) fn run(launch: Launch) -> Result<Infallible, String> {
    let (ready_read, ready_write) = pipe()?;
    let launcher = std::process::id() as i32;
    // SAFETY: this process has one thread (nothing of the service started), so the child may
    // do anything the parent could.
    match unsafe { libc::fork() } {
        -1 => Err(format!("cannot fork: {}", std::io::Error::last_os_error())),
        0 => {
            drop(ready_read);
            let status = helper(ready_write, &launch, launcher);
            // SAFETY: ends the helper without running the parent's exit handlers twice.
            unsafe { libc::_exit(status) }
        }
        _ => {
            drop(ready_write);
            let holder = made(ready_read)?;
            join(holder, &launch.bwrap)
        }
    }
}

/// The helper's word on its pipe: `ready <holder pid>`, or `failed <why>`.
fn made(ready: OwnedFd) -> Result<i32, String> {
    let mut line = String::new();
    std::io::BufReader::new(std::fs::File::from(ready))
        .read_line(&mut line)
        .map_err(|e| format!("cannot hear from the helper making the network: {e}"))?;
    let line = line.trim();
    if let Some(holder) = super::holder_in(line) {
        return Ok(holder);
    }
    Err(match line.strip_prefix("failed ") {
        Some(why) => why.to_string(),
        None => "the helper making the network ended without a word".to_string(),
    })
}

/// Makes the network (a holder with pasta attached), tells the launcher, then keeps pasta and
/// the holder until the sandbox (the launcher, become bubblewrap) ends. The exit status.
fn helper(ready: OwnedFd, launch: &Launch, launcher: i32) -> i32 {
    // Blocked from the start, so a SIGHUP that comes early waits for `supervise`.
    let watched = watched_signals();
    // SAFETY: a valid signal set, for this (only) thread; pasta gets a clean mask at its start.
    unsafe { libc::sigprocmask(libc::SIG_BLOCK, &watched, std::ptr::null_mut()) };
    let mut ready = std::fs::File::from(ready);
    // Told when the launcher (bubblewrap, later) ends, however it ends.
    // SAFETY: prctl and getppid take plain integers.
    let orphaned = unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGHUP) != 0 || libc::getppid() != launcher };
    if orphaned {
        return 1;
    }
    let (holder, mut pasta) = match warden::make(&launch.pasta, &launch.tcp, &launch.udp) {
        Ok(network) => network,
        Err(e) => {
            let _ = writeln!(ready, "failed {e}");
            return 1;
        }
    };
    if writeln!(ready, "ready {holder}").is_err() {
        warden::end_all(holder, &mut pasta);
        return 1;
    }
    drop(ready);
    // The sandbox's standard streams (its pipes, or its terminal) are its own from here on: a
    // reader waiting for their end must not wait for the helper.
    if let Ok(null) = std::fs::OpenOptions::new().read(true).write(true).open("/dev/null") {
        for fd in 0..=2 {
            // SAFETY: dup2 onto this process's own standard descriptors.
            unsafe { libc::dup2(null.as_raw_fd(), fd) };
        }
    }
    supervise(&mut pasta, &watched);
    warden::end_all(holder, &mut pasta);
    0
}

/// SIGHUP (bubblewrap ended) and SIGCHLD (pasta did).
fn watched_signals() -> libc::sigset_t {
    // SAFETY: fills a local signal set.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGHUP);
        libc::sigaddset(&mut set, libc::SIGCHLD);
        set
    }
}

/// Starts pasta on the network namespace of process `child` (and its user namespace, when it
/// has one of its own), letting `tcp` and `udp` through to this machine's loopback, and waits
/// until pasta is ready. pasta ends when this process does (`PR_SET_PDEATHSIG`).
pub(super) fn attach_to(
    child: i32,
    pasta_path: &std::path::Path,
    (tcp, udp): (&[u16], &[u16]),
) -> Result<std::process::Child, String> {
    let open_ns = |kind: &str| {
        std::fs::File::open(format!("/proc/{child}/ns/{kind}"))
            .map(OwnedFd::from)
            .map_err(|e| format!("cannot open the sandbox's {kind} namespace: {e}"))
    };
    let net = open_ns("net")?;
    // Unprivileged, bubblewrap made a user namespace too, which pasta must join first.
    let same = |kind: &str| -> bool {
        let ino = |p: String| std::fs::metadata(p).map(|m| (m.dev(), m.ino())).ok();
        ino(format!("/proc/{child}/ns/{kind}")) == ino(format!("/proc/self/ns/{kind}"))
    };
    let user = if same("user") { None } else { Some(open_ns("user")?) };
    let (ready_read, ready_write) = pipe()?;
    let log = std::env::temp_dir().join(format!("conduit-pasta-{}.log", std::process::id()));
    let mut cmd = std::process::Command::new(pasta_path);
    let fd = |f: &OwnedFd| format!("/proc/self/fd/{}", f.as_raw_fd());
    let ports = |p: &[u16]| {
        if p.is_empty() {
            "none".to_string()
        } else {
            p.iter().map(u16::to_string).collect::<Vec<_>>().join(",")
        }
    };
    cmd.args(["--config-net", "--quiet", "--foreground", "--no-map-gw"])
        .args(["-t", "none", "-u", "none", "-T", &ports(tcp), "-U", &ports(udp)])
        .args(["--netns", &fd(&net), "--pid", &fd(&ready_write)])
        .arg("--log-file")
        .arg(&log)
        .args(["--log-size", "65536"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    if let Some(user) = &user {
        cmd.args(["--userns", &fd(user)]);
    }
    // SAFETY: geteuid only reads this process's credentials.
    if unsafe { libc::geteuid() } == 0 {
        // As root pasta would switch to `nobody`, who cannot enter the sandbox's namespace.
        cmd.args(["--runas", "0"]);
    }
    for f in std::iter::once(&net).chain(&user).chain(std::iter::once(&ready_write)) {
        inheritable(f)?;
    }
    // SAFETY: prctl with plain integers, between fork and exec of a single-threaded process.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut pasta = cmd.spawn().map_err(|e| format!("cannot start pasta {pasta_path:?}: {e}"))?;
    drop((net, user, ready_write));
    let ready = wait_ready(ready_read, &mut pasta);
    let logged = std::fs::read_to_string(&log).unwrap_or_default();
    let _ = std::fs::remove_file(&log);
    match ready {
        Ok(()) => Ok(pasta),
        Err(e) => {
            let _ = pasta.kill();
            let _ = pasta.wait();
            let said: Vec<&str> = logged.lines().filter(|l| !l.contains(" version")).collect();
            Err(if said.is_empty() { e } else { format!("{e}: {}", said.join("; ")) })
        }
    }
}

/// Waits for pasta's pid file (a pipe): a line once it is ready. An early exit or
/// [`READY_WITHIN`] without it is a failure.
fn wait_ready(ready: OwnedFd, pasta: &mut std::process::Child) -> Result<(), String> {
    let deadline = Instant::now() + READY_WITHIN;
    let mut got = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let mut poll = libc::pollfd { fd: ready.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        let millis = i32::try_from(left.as_millis()).unwrap_or(i32::MAX).min(100);
        // SAFETY: one valid pollfd for the duration of the call.
        let rc = unsafe { libc::poll(&mut poll, 1, millis) };
        if rc > 0 {
            let mut chunk = [0u8; 64];
            // SAFETY: reads into a local buffer of the given length.
            let n = unsafe { libc::read(ready.as_raw_fd(), chunk.as_mut_ptr().cast(), chunk.len()) };
            if n > 0 {
                got.extend_from_slice(&chunk[..n as usize]);
                if got.contains(&b'\n') {
                    return Ok(());
                }
            }
        }
        if let Ok(Some(status)) = pasta.try_wait() {
            return Err(format!("pasta {status} before it was ready"));
        }
        if Instant::now() >= deadline {
            return Err(format!("pasta was not ready within {} s", READY_WITHIN.as_secs()));
        }
    }
}

/// Waits until bubblewrap ends (SIGHUP, from `PR_SET_PDEATHSIG`) or pasta does; the caller
/// then ends what is left. Other signals (the service's polite SIGTERM to the whole tree) end the helper, as
/// they end pasta itself.
fn supervise(pasta: &mut std::process::Child, watched: &libc::sigset_t) {
    loop {
        if let Ok(Some(_)) = pasta.try_wait() {
            return;
        }
        let timeout = libc::timespec { tv_sec: 60, tv_nsec: 0 };
        // SAFETY: waits for one of the blocked signals; nothing is written through the nulls.
        let signal = unsafe { libc::sigtimedwait(watched, std::ptr::null_mut(), &timeout) };
        if signal == libc::SIGHUP {
            return;
        }
    }
}

/// Joins the network namespace (and user namespace, when it has one of its own) of `holder`,
/// a network made ahead of time, then becomes bubblewrap. Returns only on failure.
pub(super) fn join(holder: i32, bwrap: &[String]) -> Result<Infallible, String> {
    let Some((program, args)) = bwrap.split_first() else {
        return Err("no bubblewrap command line was given".to_string());
    };
    let open_ns = |kind: &str| {
        std::fs::File::open(format!("/proc/{holder}/ns/{kind}"))
            .map_err(|e| format!("the network made ahead of time is gone ({kind} namespace of {holder}: {e})"))
    };
    let ino = |p: String| std::fs::metadata(p).map(|m| (m.dev(), m.ino())).ok();
    if ino(format!("/proc/{holder}/ns/user")) != ino("/proc/self/ns/user".to_string()) {
        let user = open_ns("user")?;
        // SAFETY: setns on a descriptor this process owns; one thread, so a user namespace can be entered.
        if unsafe { libc::setns(user.as_raw_fd(), libc::CLONE_NEWUSER) } != 0 {
            return Err(format!("cannot enter its user namespace: {}", std::io::Error::last_os_error()));
        }
    }
    let net = open_ns("net")?;
    // SAFETY: setns on a descriptor this process owns.
    if unsafe { libc::setns(net.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(format!("cannot enter its network namespace: {}", std::io::Error::last_os_error()));
    }
    drop(net);
    let err = std::process::Command::new(program).args(args).exec();
    Err(format!("cannot start bubblewrap {program:?}: {err}"))
}

pub(super) fn pipe() -> Result<(OwnedFd, OwnedFd), String> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: pipe2 writes two descriptors into the array, which this function then owns.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(format!("cannot make a pipe: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: both descriptors were just opened and are owned by nothing else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Lets a child started with `exec` or `spawn` keep `fd` (clears close-on-exec).
pub(super) fn inheritable(fd: &OwnedFd) -> Result<(), String> {
    // SAFETY: fcntl on a descriptor this process owns.
    let rc = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFD, 0) };
    if rc != 0 {
        return Err(format!("cannot pass a descriptor on: {}", std::io::Error::last_os_error()));
    }
    Ok(())
}
