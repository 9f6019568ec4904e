//! The writer thread: gathers queued jobs into batches, commits them, retries with backoff
//! while storage fails, and answers whoever waits.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, RecvTimeoutError, TryRecvError};
use std::time::{Duration, Instant};

use super::handle::WriterSetup;
use super::job::{Ack, Job, WriteError, WriteOp};
use super::stats::WriterStats;
use super::transaction::{is_permanent, Connection};
use crate::db::checkpoint::{Checkpointer, WalWatch};
use crate::db::{Store, StoreError};

/// Jobs per transaction at most.
const BATCH: usize = 5_000;
/// After the first job of a batch arrives, how long the writer lets more gather. Without it,
/// many sessions writing a line each millisecond wake the thread (and commit a transaction)
/// once per line; with it, once per linger. A write someone waits for skips it.
const LINGER: Duration = Duration::from_millis(2);
/// Retries of a failing batch wait this long at first, doubling up to the maximum.
const RETRY_FIRST: Duration = Duration::from_millis(50);
const RETRY_MAX: Duration = Duration::from_secs(2);

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

pub(super) fn run(store: Store, setup: WriterSetup, rx: Receiver<Job>, stats: &WriterStats) {
    let _checkpointer = Checkpointer::start(store.clone());
    let wal = WalWatch::of(store.database());
    let mut db = Connection { store, conn: None, unchecked: 0, wal, notify_as: setup.notify_as };
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
            match next_job(&rx, &mut db, &mut backoff, stats) {
                Next::Job(first) => {
                    let linger = first.ack.is_none() && !matches!(first.op, WriteOp::Flush);
                    jobs.push(first);
                    if linger {
                        std::thread::sleep(LINGER);
                    }
                }
                Next::Probed => continue,
                Next::Closed => return,
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
        if setup.redact_at_rest {
            for job in jobs.iter_mut().filter(|job| !job.redacted) {
                super::scrub::scrub(&mut job.op);
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

// Moved straight into the batch: boxing the job would cost an allocation per line.
#[allow(clippy::large_enum_variant)]
enum Next {
    Job(Job),
    /// Nothing came while storage was failing; the database was tried meanwhile.
    Probed,
    Closed,
}

/// The next job. While storage is failing with nothing left to retry (what failed was only
/// writes someone waited for, answered at once), health would stay degraded until some
/// write came and succeeded: so between jobs the database is tried with an empty
/// transaction, on the same backoff, and health recovers as soon as it answers.
fn next_job(rx: &Receiver<Job>, db: &mut Connection, backoff: &mut Duration, stats: &WriterStats) -> Next {
    if !stats.failing.load(Ordering::Relaxed) {
        return rx.recv().map_or(Next::Closed, Next::Job);
    }
    match rx.recv_timeout(*backoff) {
        Ok(job) => Next::Job(job),
        Err(RecvTimeoutError::Disconnected) => Next::Closed,
        Err(RecvTimeoutError::Timeout) => {
            match db.transaction(&[]) {
                Ok(_) => {
                    *backoff = RETRY_FIRST;
                    recovered(stats);
                }
                Err(_) => *backoff = (*backoff * 2).min(RETRY_MAX),
            }
            Next::Probed
        }
    }
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
