//! Back-pressure from storage to a CLI: the bytes of one session's lines that are read but not
//! yet stored. The session's readers wait for room before reading more (so the CLI's pipe fills
//! and the CLI waits) instead of anything being dropped; every line queued for the writer holds
//! a [`Credit`] for its bytes, given back when the line is committed.
//!
//! One gate per session: a flooding session fills its own gate and slows only itself.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::Notify;

#[derive(Debug)]
pub struct Backlog {
    used: AtomicUsize,
    cap: usize,
    room: Notify,
}

impl Backlog {
    pub fn new(cap: usize) -> Arc<Backlog> {
        Arc::new(Backlog { used: AtomicUsize::new(0), cap: cap.max(1), room: Notify::new() })
    }

    /// Counts `bytes` against the gate until the credit is dropped. Never waits: the line is
    /// already read; the reader waits before reading the next ones.
    pub fn charge(self: &Arc<Self>, bytes: usize) -> Credit {
        self.used.fetch_add(bytes, Ordering::AcqRel);
        Credit { backlog: self.clone(), bytes }
    }

    /// Bytes read and not yet stored.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Acquire)
    }

    pub fn cap(&self) -> usize {
        self.cap
    }

    /// Returns once the backlog is under its cap.
    pub async fn room(&self) {
        loop {
            let notified = self.room.notified();
            tokio::pin!(notified);
            // Registered before looking, so a release in between is not missed.
            notified.as_mut().enable();
            if self.used() < self.cap {
                return;
            }
            notified.await;
        }
    }

    fn release(&self, bytes: usize) {
        let before = self.used.fetch_sub(bytes, Ordering::AcqRel);
        if before >= self.cap && before - bytes < self.cap {
            self.room.notify_waiters();
        }
    }
}

/// Bytes of a line waiting for storage; given back when dropped (after the commit, or when the
/// line is refused for good).
#[derive(Debug)]
pub struct Credit {
    backlog: Arc<Backlog>,
    bytes: usize,
}

impl Credit {
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

impl Drop for Credit {
    fn drop(&mut self) {
        self.backlog.release(self.bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn a_reader_waits_while_the_backlog_is_full_and_goes_on_when_it_drains() {
        let gate = Backlog::new(100);
        let first = gate.charge(60);
        gate.room().await; // 60 < 100: room
        let second = gate.charge(60);
        assert_eq!(gate.used(), 120);
        let waiting = tokio::spawn({
            let gate = gate.clone();
            async move { gate.room().await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiting.is_finished(), "no room at 120 of 100");
        drop(first);
        tokio::time::timeout(Duration::from_secs(1), waiting).await.expect("woken").expect("task");
        drop(second);
        assert_eq!(gate.used(), 0);
    }
}
