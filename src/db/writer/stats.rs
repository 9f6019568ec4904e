//! The writer's counters, shared by the handle (which queues) and the thread (which commits).

use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Mutex;

/// Counters of the writer, for health and benchmarks.
#[derive(Debug, Default)]
pub struct WriterStats {
    /// Message lines committed.
    pub stored: AtomicU64,
    /// Message lines queued and not yet committed (the backlog).
    pub pending: AtomicU64,
    /// Message lines handed to the writer since the start: each line a session relayed (and
    /// recorded), stored or not yet.
    pub relayed: AtomicU64,
    /// Bytes of the lines charged to a session's backlog and not yet committed.
    pub pending_bytes: AtomicU64,
    /// Writes the database refused for good (lost), since the start.
    pub rejected: AtomicU64,
    /// Batches retried after a failure, since the start.
    pub retries: AtomicU64,
    /// Storage failed, and what was queued up to then is not all written yet.
    pub failing: AtomicBool,
    pub(super) enqueued: AtomicU64,
    pub(super) done: AtomicU64,
    pub(super) recover_at: AtomicU64,
    pub(super) last_error: Mutex<Option<String>>,
}

impl WriterStats {
    /// Writes queued and not yet done (lines, events, row changes): the write queue's depth.
    pub fn queue_depth(&self) -> u64 {
        use std::sync::atomic::Ordering::Relaxed;
        self.enqueued.load(Relaxed).saturating_sub(self.done.load(Relaxed))
    }

    pub fn last_error(&self) -> Option<String> {
        self.last_error.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub(super) fn set_error(&self, e: Option<String>) {
        *self.last_error.lock().unwrap_or_else(|p| p.into_inner()) = e;
    }
}
