//! [`Writer`]: the handle sessions and handlers queue writes through. It never blocks; callers
//! that must know a write is durable wait on an acknowledgement instead.

use std::sync::atomic::Ordering;
use std::sync::mpsc::{channel, Sender};
use std::sync::Arc;

use tokio::sync::oneshot;

use super::job::{Ack, Job, WriteError, WriteOp};
use super::stats::WriterStats;
use super::thread::run;
use crate::db::backlog::Credit;
use crate::db::messages::NewMessage;
use crate::db::Store;

/// How the writer thread writes.
#[derive(Debug, Clone, Default)]
pub struct WriterSetup {
    /// In cluster mode: every transaction that stores session events also tells the other
    /// nodes (PostgreSQL `NOTIFY`, as this node), so their subscribers get them live.
    pub notify_as: Option<String>,
    /// Secrets are taken out of lines, events and decisions before they are stored.
    pub redact_at_rest: bool,
}

#[derive(Clone)]
pub struct Writer {
    tx: Sender<Job>,
    pub stats: Arc<WriterStats>,
}

impl Writer {
    /// Starts the writer thread. It ends when every `Writer` clone is dropped, after draining.
    pub fn start(store: Store) -> (Writer, std::thread::JoinHandle<()>) {
        Self::start_with(store, WriterSetup::default())
    }

    pub fn start_with(store: Store, setup: WriterSetup) -> (Writer, std::thread::JoinHandle<()>) {
        let (tx, rx) = channel();
        let stats = Arc::new(WriterStats::default());
        let thread_stats = stats.clone();
        let handle = std::thread::Builder::new()
            .name("conduit-writer".to_string())
            .spawn(move || run(store, setup, rx, &thread_stats))
            .expect("spawning the writer thread");
        (Writer { tx, stats }, handle)
    }

    /// Queues a write whose texts its sender redacted already (a session's lines and events,
    /// redacted once for the store and the bus both), holding `credit` if any; the writer
    /// does not search it again.
    pub fn persist_redacted(&self, op: WriteOp, credit: Option<Credit>) {
        let _ = self.enqueue(Job { op, ack: None, credit, redacted: true });
    }

    fn queue(&self, op: WriteOp, ack: Option<Ack>, credit: Option<Credit>) -> Result<(), WriteError> {
        self.enqueue(Job { op, ack, credit, redacted: false })
    }

    fn enqueue(&self, job: Job) -> Result<(), WriteError> {
        let Job { op, credit, .. } = &job;
        let line = matches!(op, WriteOp::Message(_));
        if line {
            self.stats.pending.fetch_add(1, Ordering::Relaxed);
            self.stats.relayed.fetch_add(1, Ordering::Relaxed);
        }
        let charged = credit.as_ref().map_or(0, |c| c.bytes() as u64);
        self.stats.pending_bytes.fetch_add(charged, Ordering::Relaxed);
        self.stats.enqueued.fetch_add(1, Ordering::Relaxed);
        self.tx.send(job).map_err(|e| {
            // Only when the writer thread is gone (the service is ending).
            if line {
                self.stats.pending.fetch_sub(1, Ordering::Relaxed);
            }
            self.stats.pending_bytes.fetch_sub(charged, Ordering::Relaxed);
            self.stats.rejected.fetch_add(1, Ordering::Relaxed);
            if let Some(ack) = e.0.ack {
                ack.fail(WriteError::Stopped);
            }
            WriteError::Stopped
        })
    }

    /// Queues a write; never blocks, never drops it.
    pub fn persist(&self, op: WriteOp) {
        let _ = self.queue(op, None, None);
    }

    /// Queues a write holding `credit` against its session's backlog until it is committed.
    pub fn persist_charged(&self, op: WriteOp, credit: Credit) {
        let _ = self.queue(op, None, Some(credit));
    }

    fn refuse_while_failing(&self) -> Result<(), WriteError> {
        if self.is_failing() {
            let why = self.stats.last_error().unwrap_or_else(|| "unknown error".to_string());
            return Err(WriteError::Failing(why));
        }
        Ok(())
    }

    /// Queues a write and waits until it is committed. Fails at once while storage is failing.
    pub async fn persist_acked(&self, op: WriteOp) -> Result<(), WriteError> {
        self.refuse_while_failing()?;
        let (ack, done) = oneshot::channel();
        self.queue(op, Some(Ack::Done(ack)), None)?;
        done.await.map_err(|_| WriteError::Stopped)?
    }

    /// Stores a line and answers with its id once committed (a user turn, whose delivery is
    /// recorded later). Fails at once while storage is failing.
    pub async fn persist_returning_id(&self, line: NewMessage) -> Result<i64, WriteError> {
        self.refuse_while_failing()?;
        let (ack, done) = oneshot::channel();
        self.queue(WriteOp::Message(line), Some(Ack::Id(ack)), None)?;
        done.await.map_err(|_| WriteError::Stopped)?
    }

    /// Waits until everything queued so far is committed. Fails at once while storage is
    /// failing (what is queued stays queued and is retried).
    pub async fn flush(&self) -> Result<(), WriteError> {
        self.persist_acked(WriteOp::Flush).await
    }

    pub fn is_failing(&self) -> bool {
        self.stats.failing.load(Ordering::Relaxed)
    }
}
