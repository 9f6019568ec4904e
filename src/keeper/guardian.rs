//! The keeper's guardian: a forked child that waits for the keeper to go. The keeper holds the
//! only write end of a pipe the guardian reads; when the keeper ends without saying it is done
//! (killed, crashed, gave up), the read sees the end of the pipe and the guardian kills the
//! CLI's cgroup (or, without one, its process group). So a keeper killed with SIGKILL takes its
//! CLI's whole tree with it, whether or not a service is there to notice.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// The byte that tells the guardian the keeper ends in order (the service ends the tree).
const DONE: u8 = b'd';

/// The keeper's end of the guardian's pipe.
pub struct Guardian {
    pipe: OwnedFd,
}

/// What the guardian kills when the keeper is gone.
pub enum Target {
    /// `cgroup.kill` of this cgroup (v2).
    Cgroup(std::ffi::CString),
    /// This process group.
    Group(i32),
}

impl Guardian {
    /// Forks the guardian. Call it while the keeper has one thread (before anything else
    /// runs): the child only reads, writes one file and exits.
    pub fn fork(target: Target) -> std::io::Result<Guardian> {
        let mut fds = [0; 2];
        // SAFETY: `fds` has room for the two descriptors pipe2 writes.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: pipe2 succeeded, so both are open descriptors owned by nobody else.
        let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        // SAFETY: the keeper is single-threaded here, so the child may run ordinary code.
        match unsafe { libc::fork() } {
            -1 => Err(std::io::Error::last_os_error()),
            0 => {
                drop(write);
                guard(read.as_raw_fd(), &target)
            }
            _ => Ok(Guardian { pipe: write }),
        }
    }

    /// The keeper ends in order: the guardian goes without killing anything.
    pub fn stand_down(self) {
        // SAFETY: writes one byte from a live buffer to a descriptor this value owns.
        unsafe { libc::write(self.pipe.as_raw_fd(), (&DONE as *const u8).cast(), 1) };
    }
}

/// The guardian's whole life.
fn guard(pipe: i32, target: &Target) -> ! {
    // Hold nothing of the keeper's: above all not the CLI's stdin, whose end the CLI must see.
    for fd in open_fds() {
        if fd != pipe {
            // SAFETY: closing descriptors this process inherited and will never use.
            unsafe { libc::close(fd) };
        }
    }
    // SAFETY: the name is a NUL-terminated string; PR_SET_NAME only copies it.
    unsafe { libc::prctl(libc::PR_SET_NAME, c"conduit-guard".as_ptr() as libc::c_ulong, 0, 0, 0) };
    let mut byte = 0u8;
    let got = loop {
        // SAFETY: reads at most one byte into a live local.
        let n = unsafe { libc::read(pipe, (&mut byte as *mut u8).cast(), 1) };
        if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        break n;
    };
    if !(got == 1 && byte == DONE) {
        match target {
            Target::Cgroup(kill) => {
                // SAFETY: a NUL-terminated path; the descriptor is closed right after use.
                unsafe {
                    let fd = libc::open(kill.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                    if fd >= 0 {
                        libc::write(fd, b"1".as_ptr().cast(), 1);
                        libc::close(fd);
                    }
                }
            }
            Target::Group(pgid) if *pgid > 1 => {
                // SAFETY: a signal to a process group; no memory is involved.
                unsafe { libc::kill(-pgid, libc::SIGKILL) };
            }
            Target::Group(_) => {}
        }
    }
    // SAFETY: ends the guardian at once, without running the keeper's exit handlers.
    unsafe { libc::_exit(0) }
}

/// The descriptors open in this process.
fn open_fds() -> Vec<i32> {
    match std::fs::read_dir("/proc/self/fd") {
        Ok(entries) => entries.flatten().filter_map(|e| e.file_name().to_str()?.parse().ok()).collect(),
        // Without /proc: every low descriptor.
        Err(_) => (0..1024).collect(),
    }
}
