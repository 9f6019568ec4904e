//! `conduit sandbox-net-warden`: a sandbox's network made ahead of time, so a launch does not
//! wait for pasta (25-40 ms on a small machine: most of a sandboxed launch). The service keeps a
//! few (`actors::network_pool`); a launch that takes one joins it (`conduit sandbox-net --join`)
//! instead of making its own.
//!
//! The warden forks a holder, which makes the network namespace (and, unprivileged, a user
//! namespace mapping the service's user to itself, as bubblewrap would) and then only waits;
//! the warden attaches pasta to it and says `ready <holder pid>` on its standard output. Until
//! taken it lives only as long as the service (`PR_SET_PDEATHSIG`) and ends at the end of its
//! standard input. `take <pid>` hands it to the sandbox `pid` (bubblewrap, after it joined): it
//! then outlives the service like the sandbox does, and ends with it (a pidfd), taking pasta
//! and the holder along. Single-threaded, before anything of the service starts.

use std::convert::Infallible;
use std::io::{BufRead, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use super::launcher::{attach_to, pipe};

/// Runs the warden. Returns only on failure (after saying `failed <why>`), with its status.
pub fn run(pasta: &std::path::Path, tcp: &[u16], udp: &[u16]) -> u8 {
    match serve(pasta, tcp, udp) {
        Ok(never) => match never {},
        Err(e) => {
            println!("failed {e}");
            1
        }
    }
}

fn serve(pasta: &std::path::Path, tcp: &[u16], udp: &[u16]) -> Result<Infallible, String> {
    // SAFETY: prctl with plain integers: an untaken network ends with the service.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) };
    let (holder, mut pasta) = make(pasta, tcp, udp)?;
    let mut out = std::io::stdout();
    if writeln!(out, "ready {holder}").and_then(|()| out.flush()).is_err() {
        end_all(holder, &mut pasta);
        std::process::exit(0);
    }
    let mut line = String::new();
    let taken =
        std::io::stdin().lock().read_line(&mut line).ok().and_then(|_| {
            line.trim().strip_prefix("take ").and_then(|pid| pid.parse::<i32>().ok()).filter(|pid| *pid > 1)
        });
    let Some(sandbox) = taken else {
        // The service let it go (or ended): nobody will use it.
        end_all(holder, &mut pasta);
        std::process::exit(0);
    };
    // SAFETY: prctl with plain integers: a taken network lives as long as its sandbox.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, 0) };
    wait_for_exit(sandbox);
    end_all(holder, &mut pasta);
    std::process::exit(0)
}

/// Makes a network: a holder with pasta attached and ready. The holder's pid and pasta.
pub(super) fn make(pasta: &std::path::Path, tcp: &[u16], udp: &[u16]) -> Result<(i32, std::process::Child), String> {
    let holder = hold()?;
    match attach_to(holder, pasta, (tcp, udp)) {
        Ok(pasta) => Ok((holder, pasta)),
        Err(e) => {
            end(holder);
            Err(e)
        }
    }
}

/// Forks the holder: it makes the namespaces and waits for the warden's end. Its pid.
fn hold() -> Result<i32, String> {
    let (made_read, made_write) = pipe()?;
    // SAFETY: geteuid and getegid only read this process's credentials.
    let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
    // SAFETY: one thread: the child may do anything the parent could.
    match unsafe { libc::fork() } {
        -1 => Err(format!("cannot fork: {}", std::io::Error::last_os_error())),
        0 => {
            drop(made_read);
            let flags = if uid == 0 { libc::CLONE_NEWNET } else { libc::CLONE_NEWUSER | libc::CLONE_NEWNET };
            // SAFETY: plain syscalls in the child; it then only writes one byte and waits.
            unsafe {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                // Holds nobody's streams open: a sandbox's pipes end when the sandbox does.
                let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
                if null >= 0 {
                    for fd in 0..=2 {
                        libc::dup2(null, fd);
                    }
                }
                let status: u8 = if libc::unshare(flags) == 0 { 1 } else { 0 };
                libc::write(made_write.as_raw_fd(), (&status as *const u8).cast(), 1);
                drop(made_write);
                loop {
                    libc::pause();
                }
            }
        }
        holder => {
            drop(made_write);
            let mut status = [0u8; 1];
            let mut made = std::fs::File::from(made_read);
            let unshared = std::io::Read::read_exact(&mut made, &mut status).is_ok() && status[0] == 1;
            if !unshared {
                end(holder);
                return Err("cannot make a network namespace".to_string());
            }
            if uid != 0 {
                let map = |file: &str, text: String| {
                    std::fs::write(format!("/proc/{holder}/{file}"), text).map_err(|e| {
                        format!("cannot map the service's user into the sandbox's namespace ({file}): {e}")
                    })
                };
                let mapped = map("setgroups", "deny".into())
                    .and_then(|()| map("uid_map", format!("{uid} {uid} 1")))
                    .and_then(|()| map("gid_map", format!("{gid} {gid} 1")));
                if let Err(e) = mapped {
                    end(holder);
                    return Err(e);
                }
            }
            Ok(holder)
        }
    }
}

/// Blocks until process `pid` has ended (its pidfd becomes readable), or at once when it is
/// already gone.
fn wait_for_exit(pid: i32) {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    let Ok(fd) = i32::try_from(fd) else { return };
    if fd < 0 {
        return;
    }
    // SAFETY: the descriptor was just opened and is owned by nothing else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    loop {
        let mut poll = libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd for the duration of the call.
        let rc = unsafe { libc::poll(&mut poll, 1, -1) };
        if rc > 0 || (rc < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR)) {
            return;
        }
    }
}

fn end(holder: i32) {
    // SAFETY: signals and reaps the warden's own child.
    unsafe {
        libc::kill(holder, libc::SIGKILL);
        libc::waitpid(holder, std::ptr::null_mut(), 0);
    }
}

pub(super) fn end_all(holder: i32, pasta: &mut std::process::Child) {
    let _ = pasta.kill();
    let _ = pasta.wait();
    end(holder);
}
