//! WAL checkpoints off the writer's path.
//!
//! SQLite's automatic checkpoint runs inside the commit that crosses its threshold (every
//! 4 MB of WAL), copying pages back into the database file and syncing it, on whichever
//! connection committed: for the session writer that stalls every few thousand lines, and with
//! it every CLI waiting on its backlog. Instead the writer's own connection never checkpoints by
//! itself; a background thread with its own connection runs passive checkpoints (which never
//! block the writer), and the writer asks for one itself only every [`WRITER_CHECKPOINT_BYTES`],
//! which then finds most of the work done and lets the WAL start over instead of growing.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use diesel::connection::SimpleConnection;

use super::{DbConnection, Store};

/// The writer's connection: no automatic checkpoints, an 8 MiB page cache (index pages stay
/// hot under a flood; the memory stays bounded), and a WAL truncated back to 64 MiB when it
/// starts over.
pub const WRITER_PRAGMAS: &str =
    "PRAGMA wal_autocheckpoint = 0; PRAGMA cache_size = -8192; PRAGMA journal_size_limit = 67108864;";
/// Bytes the writer commits between checkpoints of its own.
pub const WRITER_CHECKPOINT_BYTES: usize = 64 * 1024 * 1024;
const EVERY: Duration = Duration::from_millis(500);

/// Runs passive checkpoints every half second until dropped.
pub struct Checkpointer {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Checkpointer {
    /// Nothing to do on PostgreSQL, which checkpoints by itself off every client's path.
    pub fn start(store: Store) -> Checkpointer {
        let stop = Arc::new(AtomicBool::new(false));
        if store.database().is_postgres() {
            return Checkpointer { stop, thread: None };
        }
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("conduit-checkpoint".to_string())
            .spawn(move || {
                let mut conn: Option<DbConnection> = None;
                while !flag.load(Ordering::Relaxed) {
                    std::thread::park_timeout(EVERY);
                    if conn.is_none() {
                        conn = store.dedicated("SELECT 1").ok();
                    }
                    if let Some(c) = conn.as_mut() {
                        if c.batch_execute("PRAGMA wal_checkpoint(PASSIVE)").is_err() {
                            conn = None;
                        }
                    }
                }
            })
            .ok();
        Checkpointer { stop, thread }
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            thread.thread().unpark();
            let _ = thread.join();
        }
    }
}

/// The writer's own checkpoint: passive (it never waits for readers).
pub fn checkpoint(conn: &mut DbConnection) {
    let DbConnection::Sqlite(conn) = conn else { return };
    if let Err(e) = conn.batch_execute("PRAGMA wal_checkpoint(PASSIVE)") {
        tracing::debug!(error = %e, "a checkpoint did not run");
    }
}
