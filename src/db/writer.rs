//! The write-behind path for session traffic: one thread that batches every message line, event
//! and row change into transactions, in arrival order.
//!
//! Nothing queued is dropped. Relaying never waits for the disk ([`Writer::persist`] queues and
//! returns); what bounds memory is each session's [`Backlog`](super::backlog::Backlog): lines
//! carry a credit for their bytes, and a session's readers stop reading its CLI while its
//! backlog is full. When a batch fails for a reason that can pass (disk full, read-only file,
//! locked database), it is kept and retried with backoff, health reports `degraded` until
//! everything that waited is written, and one summary line per second goes to the log. Only
//! rows the database refuses for good (a line of a session deleted meanwhile) are dropped, one
//! by one, and counted.
//!
//! When a caller must know a write is durable (a 2xx for a user message, a read that must see
//! what a client was shown), it waits: [`Writer::persist_acked`], [`Writer::flush`]. Those
//! fail fast while storage is failing, so requests answer 503 instead of hanging.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender, TryRecvError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use super::backlog::Credit;
use super::checkpoint::{self, Checkpointer, WRITER_CHECKPOINT_BYTES, WRITER_PRAGMAS};
use super::messages::{self, NewMessage, NewSessionEvent};
use super::permission_log::{self, NewDecision};
use super::sessions::{self, SessionPatch};
use super::webhooks::{self, NewAttempt};
use super::{DbConnection, Store, StoreError};
use crate::domain::ids::SessionId;

/// Jobs per transaction at most.
const BATCH: usize = 5_000;
/// After the first job of a batch arrives, how long the writer lets more gather. Without it,
/// many sessions writing a line each millisecond wake the thread (and commit a transaction)
/// once per line; with it, once per linger. A write someone waits for skips it.
const LINGER: Duration = Duration::from_millis(2);
/// Retries of a failing batch wait this long at first, doubling up to the maximum.
const RETRY_FIRST: Duration = Duration::from_millis(50);
const RETRY_MAX: Duration = Duration::from_secs(2);

pub enum WriteOp {
    Message(NewMessage),
    /// A session event that is not a line (status, decision, created, closed).
    Event(NewSessionEvent),
    /// A user turn was written to the CLI.
    Delivered {
        message_id: i64,
        at: String,
    },
    /// A permission decision for the audit log.
    Decision(NewDecision),
    /// A webhook delivery attempt.
    Attempt(NewAttempt),
    Session {
        id: SessionId,
        patch: SessionPatch,
    },
    /// Commits nothing; acknowledged once everything queued before it is committed.
    Flush,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WriteError {
    /// Storage fails now (disk full, read-only, locked); what was queued before is kept and
    /// retried, but this write was not taken.
    #[error("storage is failing ({0}); retry shortly")]
    Failing(String),
    /// The database refused this row for good (for example, its session was deleted).
    #[error("the database refused the write: {0}")]
    Rejected(String),
    #[error("the database writer stopped")]
    Stopped,
}

enum Ack {
    Done(oneshot::Sender<Result<(), WriteError>>),
    Id(oneshot::Sender<Result<i64, WriteError>>),
}

impl Ack {
    fn fail(self, e: WriteError) {
        match self {
            Ack::Done(tx) => drop(tx.send(Err(e))),
            Ack::Id(tx) => drop(tx.send(Err(e))),
        }
    }
}

struct Job {
    op: WriteOp,
    /// Set for writes someone waits for; they fail fast instead of being retried.
    ack: Option<Ack>,
    /// Released (dropped) when the job is done.
    credit: Option<Credit>,
}

/// Counters of the writer, for health and benchmarks.
#[derive(Debug, Default)]
pub struct WriterStats {
    /// Message lines committed.
    pub stored: AtomicU64,
    /// Message lines queued and not yet committed (the backlog).
    pub pending: AtomicU64,
    /// Bytes of the lines charged to a session's backlog and not yet committed.
    pub pending_bytes: AtomicU64,
    /// Writes the database refused for good (lost), since the start.
    pub rejected: AtomicU64,
    /// Batches retried after a failure, since the start.
    pub retries: AtomicU64,
    /// Storage failed, and what was queued up to then is not all written yet.
    pub failing: AtomicBool,
    enqueued: AtomicU64,
    done: AtomicU64,
    recover_at: AtomicU64,
    last_error: Mutex<Option<String>>,
}

impl WriterStats {
    pub fn last_error(&self) -> Option<String> {
        self.last_error.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn set_error(&self, e: Option<String>) {
        *self.last_error.lock().unwrap_or_else(|p| p.into_inner()) = e;
    }
}

#[derive(Clone)]
pub struct Writer {
    tx: Sender<Job>,
    pub stats: Arc<WriterStats>,
}

impl Writer {
    /// Starts the writer thread. It ends when every `Writer` clone is dropped, after draining.
    pub fn start(store: Store) -> (Writer, std::thread::JoinHandle<()>) {
        let (tx, rx) = channel();
        let stats = Arc::new(WriterStats::default());
        let thread_stats = stats.clone();
        let handle = std::thread::Builder::new()
            .name("conduit-writer".to_string())
            .spawn(move || run(store, rx, &thread_stats))
            .expect("spawning the writer thread");
        (Writer { tx, stats }, handle)
    }

    fn queue(&self, op: WriteOp, ack: Option<Ack>, credit: Option<Credit>) -> Result<(), WriteError> {
        let line = matches!(op, WriteOp::Message(_));
        if line {
            self.stats.pending.fetch_add(1, Ordering::Relaxed);
        }
        let charged = credit.as_ref().map_or(0, |c| c.bytes() as u64);
        self.stats.pending_bytes.fetch_add(charged, Ordering::Relaxed);
        self.stats.enqueued.fetch_add(1, Ordering::Relaxed);
        self.tx.send(Job { op, ack, credit }).map_err(|e| {
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

/// Logs storage trouble at most once per second, with what happened meanwhile.
struct Summary {
    last: Option<Instant>,
}

impl Summary {
    fn due(&mut self) -> bool {
        if self.last.is_some_and(|t| t.elapsed() < Duration::from_secs(1)) {
            return false;
        }
        self.last = Some(Instant::now());
        true
    }
}

/// The writer thread's connection, opened on first use and again after a failure (a file that
/// went away and came back, say).
struct Connection {
    store: Store,
    conn: Option<DbConnection>,
    /// Bytes committed since the writer's last checkpoint of its own.
    unchecked: usize,
}

impl Connection {
    fn transaction(&mut self, jobs: &[Job]) -> Result<Vec<Option<i64>>, StoreError> {
        let conn = match self.conn.as_mut() {
            Some(conn) => conn,
            None => self.conn.insert(self.store.dedicated(WRITER_PRAGMAS)?),
        };
        let result = conn_transaction(conn, jobs);
        match &result {
            Ok(_) => {
                self.unchecked += jobs.iter().map(Job::bytes).sum::<usize>();
                if self.unchecked >= WRITER_CHECKPOINT_BYTES {
                    checkpoint::checkpoint(conn);
                    self.unchecked = 0;
                }
            }
            Err(e) if !is_permanent(e) => self.conn = None,
            Err(_) => {}
        }
        result
    }
}

impl Job {
    fn bytes(&self) -> usize {
        match &self.op {
            WriteOp::Message(m) => m.content.len() + 128,
            WriteOp::Event(e) => e.data.len() + 128,
            _ => 128,
        }
    }
}

fn run(store: Store, rx: Receiver<Job>, stats: &WriterStats) {
    let _checkpointer = Checkpointer::start(store.clone());
    let mut db = Connection { store, conn: None, unchecked: 0 };
    let mut carried: VecDeque<Job> = VecDeque::new();
    let mut backoff = RETRY_FIRST;
    let mut failing_log = Summary { last: None };
    let mut refused_log = Summary { last: None };
    let mut open = true;
    loop {
        let mut jobs: Vec<Job> = carried.drain(..).collect();
        if jobs.is_empty() {
            if !open {
                return;
            }
            match rx.recv() {
                Ok(first) => {
                    let linger = first.ack.is_none() && !matches!(first.op, WriteOp::Flush);
                    jobs.push(first);
                    if linger {
                        std::thread::sleep(LINGER);
                    }
                }
                Err(_) => return,
            }
        }
        while jobs.len() < BATCH {
            match rx.try_recv() {
                Ok(job) => jobs.push(job),
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    open = false;
                    break;
                }
            }
        }
        match db.transaction(&jobs) {
            Ok(ids) => {
                finish_all(jobs, ids, stats);
                backoff = RETRY_FIRST;
                recovered(stats);
            }
            Err(e) if is_permanent(&e) => {
                // Some row is refused for good: write them one by one, dropping only those.
                let mut rest = jobs.into_iter();
                while let Some(job) = rest.next() {
                    match db.transaction(std::slice::from_ref(&job)) {
                        Ok(ids) => finish_all(vec![job], ids, stats),
                        Err(e) if is_permanent(&e) => {
                            refuse(job, &e, stats);
                            if refused_log.due() {
                                tracing::warn!(error = %e, rejected = stats.rejected.load(Ordering::Relaxed), "the database refused a write for good (counted in health)");
                            }
                        }
                        Err(e) => {
                            carried.push_back(job);
                            carried.extend(rest.by_ref());
                            start_failing(&e, stats);
                        }
                    }
                }
                recovered(stats);
            }
            Err(e) => {
                start_failing(&e, stats);
                stats.retries.fetch_add(1, Ordering::Relaxed);
                for mut job in jobs {
                    match job.ack.take() {
                        // Someone waits: answer now (503 for them) rather than after the disk
                        // comes back; the write itself is not taken.
                        Some(ack) => {
                            ack.fail(WriteError::Failing(e.to_string()));
                            finish_one(&job, false, stats);
                        }
                        None => carried.push_back(job),
                    }
                }
                if failing_log.due() {
                    tracing::error!(error = %e, waiting = carried.len(), retry_in = ?backoff, "storage is failing; writes are kept and retried");
                }
                std::thread::sleep(backoff);
                backoff = (backoff * 2).min(RETRY_MAX);
            }
        }
    }
}

/// Refusals by the database itself (constraints) do not pass by retrying.
fn is_permanent(e: &StoreError) -> bool {
    matches!(e, StoreError::Rejected(_) | StoreError::Conflict(_))
}

fn start_failing(e: &StoreError, stats: &WriterStats) {
    stats.set_error(Some(e.to_string()));
    // Failing lasts until every job queued up to now is done.
    stats.recover_at.store(stats.enqueued.load(Ordering::Relaxed), Ordering::Relaxed);
    if !stats.failing.swap(true, Ordering::Relaxed) {
        tracing::error!(error = %e, "storage started failing; health is degraded until what waits is written");
    }
}

fn recovered(stats: &WriterStats) {
    if stats.failing.load(Ordering::Relaxed)
        && stats.done.load(Ordering::Relaxed) >= stats.recover_at.load(Ordering::Relaxed)
    {
        stats.failing.store(false, Ordering::Relaxed);
        stats.set_error(None);
        tracing::info!("storage recovered; everything that waited is written");
    }
}

fn finish_one(job: &Job, committed: bool, stats: &WriterStats) {
    stats.done.fetch_add(1, Ordering::Relaxed);
    let charged = job.credit.as_ref().map_or(0, |c| c.bytes() as u64);
    stats.pending_bytes.fetch_sub(charged, Ordering::Relaxed);
    if matches!(job.op, WriteOp::Message(_)) {
        stats.pending.fetch_sub(1, Ordering::Relaxed);
        if committed {
            stats.stored.fetch_add(1, Ordering::Relaxed);
        }
    }
}

fn refuse(mut job: Job, e: &StoreError, stats: &WriterStats) {
    stats.rejected.fetch_add(1, Ordering::Relaxed);
    finish_one(&job, false, stats);
    if let Some(ack) = job.ack.take() {
        ack.fail(WriteError::Rejected(e.to_string()));
    }
}

/// Answers everyone who waits for `jobs` (all committed); `ids[i]` is the row id of job i when
/// it asked for one.
fn finish_all(jobs: Vec<Job>, ids: Vec<Option<i64>>, stats: &WriterStats) {
    for (mut job, id) in jobs.into_iter().zip(ids.into_iter().chain(std::iter::repeat(None))) {
        finish_one(&job, true, stats);
        match job.ack.take() {
            Some(Ack::Done(tx)) => drop(tx.send(Ok(()))),
            Some(Ack::Id(tx)) => drop(tx.send(id.ok_or(WriteError::Stopped))),
            None => {}
        }
    }
}

fn conn_transaction(conn: &mut DbConnection, jobs: &[Job]) -> Result<Vec<Option<i64>>, StoreError> {
    use diesel::Connection;
    conn.transaction(|conn| write_batch(conn, jobs))
}

/// One transaction: consecutive message lines are inserted together; everything else applies
/// in its place, so the order of events is kept. Returns the row id of each line that asked.
fn write_batch(conn: &mut DbConnection, jobs: &[Job]) -> Result<Vec<Option<i64>>, StoreError> {
    let mut ids = vec![None; jobs.len()];
    let mut lines: Vec<&NewMessage> = Vec::new();
    for (i, job) in jobs.iter().enumerate() {
        if let WriteOp::Message(m) = &job.op {
            if matches!(job.ack, Some(Ack::Id(_))) {
                messages::insert_many(conn, lines.drain(..))?;
                ids[i] = Some(messages::insert_returning_id(conn, m)?);
            } else {
                lines.push(m);
            }
            continue;
        }
        messages::insert_many(conn, lines.drain(..))?;
        match &job.op {
            WriteOp::Message(_) | WriteOp::Flush => {}
            WriteOp::Event(e) => messages::insert_event(conn, e)?,
            WriteOp::Delivered { message_id, at } => messages::mark_delivered(conn, *message_id, at)?,
            WriteOp::Session { id, patch } => sessions::apply(conn, id, patch)?,
            WriteOp::Decision(row) => permission_log::insert(conn, row)?,
            WriteOp::Attempt(row) => webhooks::insert_attempt(conn, row)?,
        }
    }
    messages::insert_many(conn, lines)?;
    Ok(ids)
}
