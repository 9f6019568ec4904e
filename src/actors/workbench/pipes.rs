//! Watching one running command: both output pipes read as they fill, its exit, its timeout.
//! Output goes to a bounded channel (the reader waits when it is full, so the command is slowed
//! rather than its output buffered); past the cap of each stream it is read and counted but
//! not forwarded. When the command's bash exits, whatever it left running (a background job
//! holding the pipes) is ended with its group, so the command's output ends when it does.
//! What is forwarded is cut at line ends ([`Aligner`]), so whoever redacts a piece sees every
//! secret whole.

use std::time::Duration;

use actix_web::web::Bytes;
use tokio::io::AsyncReadExt;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::aligned::{Aligner, HOLD_FOR};
use super::logs::Stream;
use super::spawn::{decode, Running};
use crate::process::tree::ProcessTree;

const READ_CHUNK: usize = 64 * 1024;

/// What a watched command sends, in order: its output, then how it ended.
#[derive(Debug)]
pub enum Output {
    Chunk(Stream, Bytes),
    Ended(Ended),
}

/// How a command ended, with what it wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ended {
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub timed_out: bool,
    pub duration: Duration,
    pub stdout_bytes: u64,
    pub stderr_bytes: u64,
    pub stdout_truncated: bool,
    pub stderr_truncated: bool,
}

/// One pipe's progress.
struct Pipe {
    stream: Stream,
    open: bool,
    seen: u64,
    truncated: bool,
    aligner: Aligner,
    /// Since when the aligner holds an unfinished piece.
    held_since: Option<Instant>,
}

impl Pipe {
    fn new(stream: Stream) -> Pipe {
        Pipe { stream, open: true, seen: 0, truncated: false, aligner: Aligner::default(), held_since: None }
    }

    /// The part of a read of `n` bytes to forward, given `cap`.
    fn forwardable(&mut self, n: usize, cap: u64) -> usize {
        let room = cap.saturating_sub(self.seen);
        self.seen += n as u64;
        if (n as u64) > room {
            self.truncated = true;
        }
        room.min(n as u64) as usize
    }

    /// What a read brought: the part within `cap` goes on, cut at line ends.
    async fn read(&mut self, buf: &[u8], cap: u64, out: &mpsc::Sender<Output>) {
        let keep = self.forwardable(buf.len(), cap);
        if keep == 0 {
            return;
        }
        let ready = self.aligner.push(&buf[..keep]);
        self.held_since = match (self.aligner.is_holding(), &ready) {
            (false, _) => None,
            // What was held went on: what is held now came with this read.
            (true, Some(_)) => Some(Instant::now()),
            (true, None) => self.held_since.or_else(|| Some(Instant::now())),
        };
        send(out, self.stream, ready).await;
    }

    /// Whatever is held goes on (the pipe closed, or it was held long enough).
    async fn release(&mut self, out: &mpsc::Sender<Output>) {
        self.held_since = None;
        send(out, self.stream, self.aligner.take()).await;
    }

    fn release_due(&self) -> Option<Instant> {
        self.held_since.map(|since| since + HOLD_FOR)
    }
}

async fn send(out: &mpsc::Sender<Output>, stream: Stream, piece: Option<Bytes>) {
    if let Some(piece) = piece {
        if !out.is_closed() {
            let _ = out.send(Output::Chunk(stream, piece)).await;
        }
    }
}

/// Ends every process of `tree`, off the executor.
pub async fn end_tree(tree: ProcessTree) {
    let _ = tokio::task::spawn_blocking(move || tree.end(Duration::from_secs(2))).await;
}

/// Watches `running` until it has exited and both pipes are closed; `timeout`: when to end
/// its whole tree; `cap`: bytes of each stream forwarded. Sends go nowhere once `out` is
/// closed (the client left); the command still runs to its end or its timeout.
pub async fn watch(running: Running, timeout: Option<Duration>, cap: u64, out: &mpsc::Sender<Output>) -> Ended {
    let Running { mut child, mut stdout, mut stderr, tree, sandboxed, .. } = running;
    let started = Instant::now();
    let deadline = tokio::time::sleep(timeout.unwrap_or(Duration::from_secs(u32::MAX as u64)));
    tokio::pin!(deadline);
    let (mut o, mut e) = (Pipe::new(Stream::Stdout), Pipe::new(Stream::Stderr));
    let (mut obuf, mut ebuf) = (vec![0u8; READ_CHUNK], vec![0u8; READ_CHUNK]);
    let mut status: Option<(Option<i32>, Option<i32>)> = None;
    let mut timed_out = false;
    let mut duration = None;
    while o.open || e.open || status.is_none() {
        let due = [o.release_due(), e.release_due()].into_iter().flatten().min();
        let release = tokio::time::sleep_until(due.unwrap_or_else(|| Instant::now() + Duration::from_secs(3600)));
        tokio::select! {
            read = stdout.read(&mut obuf), if o.open => match read {
                Ok(0) | Err(_) => {
                    o.open = false;
                    o.release(out).await;
                }
                Ok(n) => o.read(&obuf[..n], cap, out).await,
            },
            read = stderr.read(&mut ebuf), if e.open => match read {
                Ok(0) | Err(_) => {
                    e.open = false;
                    e.release(out).await;
                }
                Ok(n) => e.read(&ebuf[..n], cap, out).await,
            },
            _ = release, if due.is_some() => {
                let now = Instant::now();
                for pipe in [&mut o, &mut e] {
                    if pipe.release_due().is_some_and(|at| at <= now) {
                        pipe.release(out).await;
                    }
                }
            },
            waited = child.wait(), if status.is_none() => {
                status = Some(decode(waited, sandboxed));
                duration = Some(started.elapsed());
                if o.open || e.open {
                    // Something it started still holds the pipes: it ends with the command.
                    end_tree(tree.clone()).await;
                }
            },
            _ = &mut deadline, if !timed_out && status.is_none() => {
                timed_out = true;
                end_tree(tree.clone()).await;
            },
        }
    }
    let (exit_code, signal) = status.unwrap_or((None, None));
    Ended {
        exit_code,
        signal,
        timed_out,
        duration: duration.unwrap_or_else(|| started.elapsed()),
        stdout_bytes: o.seen,
        stderr_bytes: e.seen,
        stdout_truncated: o.truncated,
        stderr_truncated: e.truncated,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_forwards_a_prefix_and_counts_everything() {
        let mut p = Pipe::new(Stream::Stdout);
        assert_eq!(p.forwardable(6, 10), 6);
        assert_eq!(p.forwardable(6, 10), 4);
        assert_eq!(p.forwardable(6, 10), 0);
        assert_eq!((p.seen, p.truncated), (18, true));
        let mut q = Pipe::new(Stream::Stdout);
        assert_eq!(q.forwardable(10, 10), 10);
        assert!(!q.truncated, "exactly the cap is not truncated");
    }
}
