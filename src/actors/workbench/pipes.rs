//! Watching one running command: both output pipes read as they fill, its exit, its timeout.
//! Output goes to a bounded channel (the reader waits when it is full, so the command is slowed
//! rather than its output buffered); past the cap of each stream it is read and counted but
//! not forwarded. When the command's bash exits, whatever it left running (a background job
//! holding the pipes) is ended with its group, so the command's output ends when it does.

use std::time::{Duration, Instant};

use actix_web::web::Bytes;
use tokio::io::AsyncReadExt;
use tokio::sync::mpsc;

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
    open: bool,
    seen: u64,
    truncated: bool,
}

impl Pipe {
    fn new() -> Pipe {
        Pipe { open: true, seen: 0, truncated: false }
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
    let (mut o, mut e) = (Pipe::new(), Pipe::new());
    let (mut obuf, mut ebuf) = (vec![0u8; READ_CHUNK], vec![0u8; READ_CHUNK]);
    let mut status: Option<(Option<i32>, Option<i32>)> = None;
    let mut timed_out = false;
    let mut duration = None;
    while o.open || e.open || status.is_none() {
        tokio::select! {
            read = stdout.read(&mut obuf), if o.open => match read {
                Ok(0) | Err(_) => o.open = false,
                Ok(n) => {
                    let keep = o.forwardable(n, cap);
                    if keep > 0 && !out.is_closed() {
                        let _ = out.send(Output::Chunk(Stream::Stdout, Bytes::copy_from_slice(&obuf[..keep]))).await;
                    }
                }
            },
            read = stderr.read(&mut ebuf), if e.open => match read {
                Ok(0) | Err(_) => e.open = false,
                Ok(n) => {
                    let keep = e.forwardable(n, cap);
                    if keep > 0 && !out.is_closed() {
                        let _ = out.send(Output::Chunk(Stream::Stderr, Bytes::copy_from_slice(&ebuf[..keep]))).await;
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
        let mut p = Pipe::new();
        assert_eq!(p.forwardable(6, 10), 6);
        assert_eq!(p.forwardable(6, 10), 4);
        assert_eq!(p.forwardable(6, 10), 0);
        assert_eq!((p.seen, p.truncated), (18, true));
        let mut q = Pipe::new();
        assert_eq!(q.forwardable(10, 10), 10);
        assert!(!q.truncated, "exactly the cap is not truncated");
    }
}
