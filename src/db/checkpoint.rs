//! WAL checkpoints off the writer's path.
//!
//! SQLite's automatic checkpoint runs inside the commit that crosses its threshold (every
//! 4 MB of WAL), copying pages back into the database file and syncing it, on whichever
//! connection committed: for the session writer that stalls every few thousand lines, and with
//! it every CLI waiting on its backlog. Instead the writer's own connection never checkpoints by
//! itself; a background thread with its own connection runs passive checkpoints (which never
//! block the writer), and the writer asks for one itself only every [`WRITER_CHECKPOINT_BYTES`]
//! or when the WAL passes [`WAL_SOFT_LIMIT`], which then finds most of the work done and lets
//! the WAL start over instead of growing.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use diesel::connection::SimpleConnection;

use super::{Database, DbConnection, Store};

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

/// A WAL above this size gets the writer's checkpoint at once, whatever it has committed since
/// the last one: a burst of large lines (a backlog written after a full disk, say) would
/// otherwise grow the file up to [`WRITER_CHECKPOINT_BYTES`] before anything lets it start over,
/// and on a small disk that is the difference between keeping up and filling it again.
pub const WAL_SOFT_LIMIT: u64 = 16 * 1024 * 1024;

/// Watches the size of the writer's WAL file (one `stat` per commit, no SQL).
pub struct WalWatch {
    path: PathBuf,
    /// The size at the last look: a WAL that stays the same size is being reused from its
    /// start, and needs nothing.
    last: u64,
}

impl WalWatch {
    /// `None` on PostgreSQL, which has no WAL file of ours.
    pub fn of(database: &Database) -> Option<WalWatch> {
        let Database::Sqlite(path) = database else { return None };
        let mut wal = path.as_os_str().to_owned();
        wal.push("-wal");
        Some(WalWatch { path: PathBuf::from(wal), last: 0 })
    }

    /// Whether the WAL is over the soft limit and grew since the last look.
    pub fn over_limit(&mut self) -> bool {
        let size = std::fs::metadata(&self.path).map(|m| m.len()).unwrap_or(0);
        let grew = size > self.last;
        self.last = size;
        grew && size > WAL_SOFT_LIMIT
    }
}

/// The writer's own checkpoint: passive (it never waits for readers).
pub fn checkpoint(conn: &mut DbConnection) {
    let DbConnection::Sqlite(conn) = conn else { return };
    if let Err(e) = conn.batch_execute("PRAGMA wal_checkpoint(PASSIVE)") {
        tracing::debug!(error = %e, "a checkpoint did not run");
    }
}
