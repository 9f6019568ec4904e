//! The keeper's one loop: `poll` over the CLI's pipes, SIGCHLD, the socket and the service's
//! connection. One thread, no runtime: a keeper costs a few hundred kilobytes, and there is one
//! per live session.

use std::io::{ErrorKind, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::buffer::Buffer;
use super::guardian::Guardian;
use super::spec::Spec;
use super::wire::{split_frame, FromKeeper, Hello, Stream, ToKeeper, WaitStatus};
use crate::protocol::framing::LineFramer;

/// Bytes read from a pipe or the connection at a time.
const CHUNK: usize = 64 * 1024;
/// Frames queued for the service at most before the keeper stops taking more from its buffer.
const OUT_HIGH: usize = 256 * 1024;
/// Bytes waiting for the CLI's stdin at most before the service's connection is no longer read.
const STDIN_HIGH: usize = 4 << 20;

/// One of the CLI's output pipes.
struct Pipe {
    fd: std::fs::File,
    stream: Stream,
    framer: LineFramer,
}

/// The service, attached.
struct Conn {
    socket: UnixStream,
    inbox: Vec<u8>,
    outbox: Vec<u8>,
    /// How much of the outbox is written (a large line goes out in many writes, without the
    /// rest being moved after each).
    sent: usize,
    /// It said what it has stored: records flow.
    attached: bool,
}

pub struct Keeper {
    hello: Hello,
    socket_path: PathBuf,
    orphan: Option<Duration>,
    stdin: Option<std::fs::File>,
    stdin_pending: Vec<u8>,
    close_stdin: bool,
    pipes: Vec<Pipe>,
    listener: UnixListener,
    conn: Option<Conn>,
    buffer: Buffer,
    signals: std::fs::File,
    guardian: Option<Guardian>,
    exited_at: Option<Instant>,
    released: bool,
}

impl Keeper {
    pub fn new(
        spec: &Spec,
        hello: Hello,
        [stdin, stdout, stderr]: [OwnedFd; 3],
        listener: UnixListener,
        signals: OwnedFd,
        guardian: Guardian,
    ) -> std::io::Result<Keeper> {
        for fd in [&stdin, &stdout, &stderr] {
            set_nonblocking(fd.as_raw_fd())?;
        }
        let pipe = |fd: OwnedFd, stream| Pipe { fd: fd.into(), stream, framer: LineFramer::default() };
        Ok(Keeper {
            hello,
            socket_path: spec.socket.clone(),
            orphan: (spec.orphan_ms > 0).then(|| Duration::from_millis(spec.orphan_ms)),
            stdin: Some(stdin.into()),
            stdin_pending: Vec::new(),
            close_stdin: false,
            pipes: vec![pipe(stdout, Stream::Stdout), pipe(stderr, Stream::Stderr)],
            listener,
            conn: None,
            buffer: Buffer::new(spec.first_seq, spec.buffer_bytes),
            signals: signals.into(),
            guardian: Some(guardian),
            exited_at: None,
            released: false,
        })
    }

    /// Runs until the service releases the keeper (0) or the keeper gives up on it (1).
    pub fn run(mut self) -> u8 {
        loop {
            if self.released {
                if let Some(guardian) = self.guardian.take() {
                    guardian.stand_down();
                }
                let _ = std::fs::remove_file(&self.socket_path);
                return 0;
            }
            let timeout = self.orphan_timeout();
            if timeout == Some(Duration::ZERO) {
                // Nobody came for the CLI's end: the guardian ends what is left of its tree.
                let _ = std::fs::remove_file(&self.socket_path);
                return 1;
            }
            self.fill_outbox();
            let mut fds = self.poll_set();
            let ms = timeout.map_or(-1, |t| i32::try_from(t.as_millis().max(1)).unwrap_or(i32::MAX));
            // SAFETY: `fds` is a live array of pollfd of the length passed.
            let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
            if n < 0 {
                if std::io::Error::last_os_error().kind() == ErrorKind::Interrupted {
                    continue;
                }
                return 1;
            }
            self.handle(&fds);
        }
    }

    /// How long until an ended CLI nobody attached to is given up on.
    fn orphan_timeout(&self) -> Option<Duration> {
        let (Some(orphan), Some(at), None) = (self.orphan, self.exited_at, &self.conn) else { return None };
        Some(orphan.saturating_sub(at.elapsed()))
    }

    fn poll_set(&self) -> Vec<libc::pollfd> {
        let entry = |fd: i32, events: i16| libc::pollfd { fd, events, revents: 0 };
        let mut fds =
            vec![entry(self.signals.as_raw_fd(), libc::POLLIN), entry(self.listener.as_raw_fd(), libc::POLLIN)];
        // The order below is the order `handle` reads them in.
        let conn_events = match &self.conn {
            Some(conn) => {
                let mut events = 0;
                if self.stdin_pending.len() < STDIN_HIGH {
                    events |= libc::POLLIN;
                }
                if conn.sent < conn.outbox.len() {
                    events |= libc::POLLOUT;
                }
                entry(conn.socket.as_raw_fd(), events)
            }
            None => entry(-1, 0),
        };
        fds.push(conn_events);
        let stdin = match &self.stdin {
            Some(stdin) if !self.stdin_pending.is_empty() => entry(stdin.as_raw_fd(), libc::POLLOUT),
            _ => entry(-1, 0),
        };
        fds.push(stdin);
        let room = self.buffer.has_room();
        for pipe in &self.pipes {
            fds.push(entry(if room { pipe.fd.as_raw_fd() } else { -1 }, libc::POLLIN));
        }
        fds
    }

    fn handle(&mut self, fds: &[libc::pollfd]) {
        let ready = |i: usize| fds.get(i).is_some_and(|f| f.fd >= 0 && f.revents != 0);
        if ready(0) {
            self.reap();
        }
        if ready(1) {
            self.accept();
        }
        if ready(2) {
            let revents = fds[2].revents;
            if revents & libc::POLLOUT != 0 {
                self.send();
            }
            if revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0 {
                self.receive();
            }
        }
        if ready(3) {
            self.write_stdin();
        }
        let mut ended = Vec::new();
        for (i, pipe) in self.pipes.iter_mut().enumerate() {
            if ready(4 + i) && read_pipe(pipe, &mut self.buffer) {
                ended.push(i);
            }
        }
        for i in ended.into_iter().rev() {
            let pipe = self.pipes.remove(i);
            self.buffer.end(pipe.stream);
        }
    }

    /// Reaps every child that ended (the CLI, and orphans of its tools that came here).
    fn reap(&mut self) {
        let mut info = [0u8; 128];
        while matches!(self.signals.read(&mut info), Ok(n) if n > 0) {}
        loop {
            let mut status = 0;
            // SAFETY: waitpid writes the status into a live local.
            let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
            if pid <= 0 {
                break;
            }
            if pid == self.hello.cli_pid {
                self.buffer.exit(WaitStatus(status));
                self.exited_at = Some(Instant::now());
                // Its stdin goes with it.
                self.stdin = None;
                self.stdin_pending.clear();
            }
        }
    }

    fn accept(&mut self) {
        while let Ok((socket, _)) = self.listener.accept() {
            if !same_user(&socket) || socket.set_nonblocking(true).is_err() {
                continue;
            }
            // The newest connection wins: a service that died may not have been noticed yet.
            self.buffer.detach();
            let mut outbox = Vec::new();
            let mut hello = self.hello.clone();
            hello.buffered_bytes = self.buffer.bytes() as u64;
            FromKeeper::Hello(hello).encode(&mut outbox);
            self.conn = Some(Conn { socket, inbox: Vec::new(), outbox, sent: 0, attached: false });
        }
    }

    fn drop_conn(&mut self) {
        self.conn = None;
        self.buffer.detach();
    }

    fn send(&mut self) {
        let Some(conn) = &mut self.conn else { return };
        match conn.socket.write(&conn.outbox[conn.sent..]) {
            Ok(n) => {
                conn.sent += n;
                if conn.sent == conn.outbox.len() {
                    conn.outbox.clear();
                    conn.sent = 0;
                }
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::Interrupted => {}
            Err(_) => self.drop_conn(),
        }
    }

    /// Moves records the service has not heard into its outbox, up to the high mark.
    fn fill_outbox(&mut self) {
        let Some(conn) = &mut self.conn else { return };
        if !conn.attached {
            return;
        }
        if conn.sent > 0 && conn.outbox.len() - conn.sent < OUT_HIGH {
            conn.outbox.drain(..conn.sent);
            conn.sent = 0;
        }
        while conn.outbox.len() < OUT_HIGH && self.buffer.write_next(&mut conn.outbox) {}
    }

    fn receive(&mut self) {
        let Some(conn) = &mut self.conn else { return };
        let mut chunk = vec![0u8; CHUNK];
        match conn.socket.read(&mut chunk) {
            Ok(0) => return self.drop_conn(),
            Ok(n) => conn.inbox.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::Interrupted => return,
            Err(_) => return self.drop_conn(),
        }
        let inbox = std::mem::take(&mut conn.inbox);
        let mut rest = &inbox[..];
        loop {
            match split_frame(rest) {
                Ok(Some((tag, payload, used))) => {
                    match ToKeeper::decode(tag, payload) {
                        Ok(frame) => self.obey(frame),
                        Err(_) => return self.drop_conn(),
                    }
                    rest = &rest[used..];
                }
                Ok(None) => break,
                Err(_) => return self.drop_conn(),
            }
        }
        if let Some(conn) = &mut self.conn {
            conn.inbox = rest.to_vec();
        }
    }

    fn obey(&mut self, frame: ToKeeper) {
        match frame {
            ToKeeper::Attach { stored_through } => {
                if let Some(conn) = &mut self.conn {
                    self.buffer.attach(stored_through, &mut conn.outbox);
                    conn.attached = true;
                }
            }
            ToKeeper::Stdin { line, unpin } => {
                if let Some(seq) = unpin {
                    self.buffer.unpin(seq);
                }
                if self.stdin.is_some() && !self.close_stdin {
                    self.stdin_pending.extend_from_slice(&line);
                    self.stdin_pending.push(b'\n');
                }
            }
            ToKeeper::CloseStdin => {
                self.close_stdin = true;
                if self.stdin_pending.is_empty() {
                    self.stdin = None;
                }
            }
            ToKeeper::Pin { seq } => self.buffer.pin(seq),
            ToKeeper::Unpin { seq } => self.buffer.unpin(seq),
            ToKeeper::Ack { through } => self.buffer.ack(through),
            ToKeeper::Release => self.released = true,
        }
    }

    fn write_stdin(&mut self) {
        let Some(stdin) = &mut self.stdin else { return };
        match stdin.write(&self.stdin_pending) {
            Ok(n) => {
                self.stdin_pending.drain(..n);
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::Interrupted => return,
            // The CLI closed its stdin: nothing more reaches it.
            Err(_) => {
                self.stdin = None;
                self.stdin_pending.clear();
                return;
            }
        }
        if self.stdin_pending.is_empty() && self.close_stdin {
            self.stdin = None;
        }
    }
}

/// Reads what a pipe has; true at its end (the last line, unterminated or not, is kept).
fn read_pipe(pipe: &mut Pipe, buffer: &mut Buffer) -> bool {
    let mut chunk = vec![0u8; CHUNK];
    let mut frames = Vec::new();
    let ended = loop {
        match pipe.fd.read(&mut chunk) {
            Ok(0) => {
                pipe.framer.finish(&mut frames);
                break true;
            }
            Ok(n) => {
                pipe.framer.push(&chunk[..n], &mut frames);
                if n < chunk.len() || !buffer.has_room() {
                    break false;
                }
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if e.kind() == ErrorKind::WouldBlock => break false,
            Err(_) => {
                pipe.framer.finish(&mut frames);
                break true;
            }
        }
    };
    for frame in frames {
        buffer.line(pipe.stream, frame);
    }
    ended
}

fn set_nonblocking(fd: i32) -> std::io::Result<()> {
    // SAFETY: fcntl on a descriptor the caller owns.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags < 0 || libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) < 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The peer runs as this keeper's user (the socket's mode already says so; this is the check
/// that does not depend on the folder's).
fn same_user(socket: &UnixStream) -> bool {
    let mut cred = libc::ucred { pid: 0, uid: 0, gid: 0 };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into `cred`.
    let rc = unsafe {
        libc::getsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    // SAFETY: getuid takes nothing.
    rc == 0 && cred.uid == unsafe { libc::getuid() }
}
