//! The write-behind path for session traffic: one thread that batches every message line and
//! session-row change into transactions, in arrival order.
//!
//! Relaying never waits for the disk: [`Writer::persist`] queues and returns. When a caller
//! must know a write is durable (a 2xx for a user message), [`Writer::persist_acked`] waits for
//! the batch holding it to commit. A failed batch (disk full, locked database) is counted,
//! logged and reported in health; the service and the relay go on.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TryRecvError, TrySendError};
use std::sync::Arc;

use tokio::sync::oneshot;

use super::messages::{self, NewMessage};
use super::permission_log::{self, NewDecision};
use super::sessions::{self, SessionPatch};
use super::webhooks::{self, NewAttempt};
use super::{DbConnection, Store, StoreError};

/// Jobs waiting for the writer at most; past this, lines are counted as unstored.
pub const QUEUE_CAPACITY: usize = 200_000;
/// Jobs per transaction at most.
const BATCH: usize = 5_000;
/// After the first job of a batch arrives, how long the writer lets more gather. Without it,
/// many sessions writing a line each millisecond wake the thread (and commit a transaction)
/// once per line; with it, once per linger. An acknowledged write waits at most this longer.
const LINGER: std::time::Duration = std::time::Duration::from_millis(2);

pub enum WriteOp {
    Message(NewMessage),
    /// A permission decision for the audit log.
    Decision(NewDecision),
    /// A webhook delivery attempt.
    Attempt(NewAttempt),
    Session {
        id: String,
        patch: SessionPatch,
    },
    /// Commits nothing; acknowledged once everything queued before it is committed.
    Flush,
}

struct Job {
    op: WriteOp,
    ack: Option<oneshot::Sender<Result<(), String>>>,
}

#[derive(Debug, Default)]
pub struct WriterStats {
    /// Message lines committed.
    pub stored: AtomicU64,
    /// Lines (and row changes) that could not be stored: failed batches and a full queue.
    pub unstored: AtomicU64,
    /// The most recent batch failed.
    pub failing: AtomicBool,
}

#[derive(Clone)]
pub struct Writer {
    tx: SyncSender<Job>,
    pub stats: Arc<WriterStats>,
}

impl Writer {
    /// Starts the writer thread. It ends when every `Writer` clone is dropped, after draining.
    pub fn start(store: Store) -> (Writer, std::thread::JoinHandle<()>) {
        let (tx, rx) = sync_channel(QUEUE_CAPACITY);
        let stats = Arc::new(WriterStats::default());
        let thread_stats = stats.clone();
        let handle = std::thread::Builder::new()
            .name("conduit-writer".to_string())
            .spawn(move || run(store, rx, &thread_stats))
            .expect("spawning the writer thread");
        (Writer { tx, stats }, handle)
    }

    /// Queues a write; never blocks. A full queue counts the write as unstored.
    pub fn persist(&self, op: WriteOp) {
        if let Err(e) = self.tx.try_send(Job { op, ack: None }) {
            self.stats.unstored.fetch_add(1, Ordering::Relaxed);
            if matches!(e, TrySendError::Full(_)) {
                tracing::warn!("database write queue full; a line was not stored");
            }
        }
    }

    /// Queues a write and waits until it is committed.
    pub async fn persist_acked(&self, op: WriteOp) -> Result<(), String> {
        let (ack, done) = oneshot::channel();
        if self.tx.try_send(Job { op, ack: Some(ack) }).is_err() {
            self.stats.unstored.fetch_add(1, Ordering::Relaxed);
            return Err("the database write queue is full".to_string());
        }
        done.await.map_err(|_| "the database writer stopped".to_string())?
    }

    /// Waits until everything queued so far is committed.
    pub async fn flush(&self) -> Result<(), String> {
        self.persist_acked(WriteOp::Flush).await
    }
}

fn run(store: Store, rx: Receiver<Job>, stats: &WriterStats) {
    while let Ok(first) = rx.recv() {
        if !matches!(first.op, WriteOp::Flush) {
            std::thread::sleep(LINGER);
        }
        let mut jobs = vec![first];
        while jobs.len() < BATCH {
            match rx.try_recv() {
                Ok(job) => jobs.push(job),
                Err(TryRecvError::Empty | TryRecvError::Disconnected) => break,
            }
        }
        let result = store.run_blocking(|conn| write_batch(conn, &jobs));
        let lines = jobs.iter().filter(|j| matches!(j.op, WriteOp::Message(_))).count() as u64;
        match &result {
            Ok(()) => {
                stats.stored.fetch_add(lines, Ordering::Relaxed);
                stats.failing.store(false, Ordering::Relaxed);
            }
            Err(e) => {
                let lost = jobs.iter().filter(|j| !matches!(j.op, WriteOp::Flush)).count() as u64;
                stats.unstored.fetch_add(lost, Ordering::Relaxed);
                stats.failing.store(true, Ordering::Relaxed);
                tracing::error!(error = %e, lost, "a batch of session writes could not be stored");
            }
        }
        let outcome = result.map_err(|e| e.to_string());
        for job in jobs {
            if let Some(ack) = job.ack {
                let _ = ack.send(outcome.clone());
            }
        }
    }
}

/// One transaction: consecutive message lines become one multi-row insert; row changes apply
/// in their place, so the order of events is kept.
fn write_batch(conn: &mut DbConnection, jobs: &[Job]) -> Result<(), StoreError> {
    use diesel::Connection;
    conn.transaction(|conn| {
        let mut lines: Vec<NewMessage> = Vec::new();
        for job in jobs {
            match &job.op {
                WriteOp::Message(m) => lines.push(m.clone()),
                WriteOp::Session { id, patch } => {
                    messages::insert_many(conn, &std::mem::take(&mut lines))?;
                    sessions::apply(conn, id, patch)?;
                }
                WriteOp::Decision(row) => {
                    messages::insert_many(conn, &std::mem::take(&mut lines))?;
                    permission_log::insert(conn, row)?;
                }
                WriteOp::Attempt(row) => webhooks::insert_attempt(conn, row)?,
                WriteOp::Flush => {}
            }
        }
        messages::insert_many(conn, &lines)
    })
}
