//! One service per PostgreSQL database: a session-level advisory lock, held on a connection of
//! its own for as long as the service runs. It is the PostgreSQL twin of the SQLite file's
//! `flock` ([`super::lock`]): the server releases it when that connection ends, however the
//! service ends (kill -9 included), so a crash never leaves a stale claim behind.

use std::time::{Duration, Instant};

use diesel::pg::PgConnection;
use diesel::sql_types::BigInt;
use diesel::RunQueryDsl;

use super::backend::{open_postgres, PostgresUrl};
use super::StoreError;

/// The advisory lock key of a service's claim ("cndt-svc" in ASCII).
const SERVICE_LOCK: i64 = 0x636e_6474_2d73_7663;

/// How long a start waits for a claim that is still held before refusing. A service killed
/// with -9 loses its connection at once, but its server process only lets the lock go once it
/// gets to read the end of that connection, which takes a moment on a loaded machine: a restart
/// right after a crash must not be refused for it.
const RELEASE_GRACE: Duration = Duration::from_secs(5);
const RETRY_EVERY: Duration = Duration::from_millis(50);

diesel::define_sql_function! {
    /// PostgreSQL's non-waiting session-level advisory lock (the claim's, the leadership's and
    /// the cluster's folder locks).
    fn pg_try_advisory_lock(key: BigInt) -> Bool;
}

diesel::define_sql_function! {
    /// The same, shared.
    fn pg_try_advisory_lock_shared(key: BigInt) -> Bool;
}

/// An advisory lock key for a name: the first 8 bytes of a SHA-256 of `prefix` and `name`
/// (stable across builds and machines, unlike the standard library's hasher; the prefix keeps
/// one kind of key from meeting another).
pub fn hashed_key(prefix: &[u8], name: &[u8]) -> i64 {
    use sha2::{Digest, Sha256};
    let digest = Sha256::new().chain_update(prefix).chain_update(name).finalize();
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&digest[..8]);
    i64::from_be_bytes(bytes)
}

/// The advisory lock key of a node name.
pub fn node_key(name: &str) -> i64 {
    hashed_key(b"conduit-node:", name.as_bytes())
}

#[derive(Debug, thiserror::Error)]
pub enum ClaimError {
    #[error("another Conduit is already using the PostgreSQL database {0} (waited 5 s for it to let go); stop it first, or give this one its own database (a cluster's nodes all set CONDUIT_CLUSTER=1)")]
    Held(String),
    #[error("a single Conduit (not in cluster mode) is using the PostgreSQL database {0}: stop it, or start it with CONDUIT_CLUSTER=1 too")]
    HeldBySingle(String),
    #[error("a node named {node:?} is already running on the PostgreSQL database {url}: give each node its own CONDUIT_NODE_NAME")]
    NodeTaken { node: String, url: String },
    #[error("{0}")]
    Store(#[from] StoreError),
}

/// Held while the service runs; dropping it closes the connection, which releases the lock.
pub struct PostgresClaim {
    _conn: PgConnection,
}

impl std::fmt::Debug for PostgresClaim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PostgresClaim")
    }
}

impl PostgresClaim {
    /// Takes the database's claim, waiting up to [`RELEASE_GRACE`] for a holder that is
    /// going away. Blocking (a connection, queries, sleeps): call it off the async executor.
    pub fn acquire(url: &PostgresUrl, busy_timeout_ms: u64) -> Result<PostgresClaim, ClaimError> {
        let mut conn = open_postgres(url, busy_timeout_ms)?;
        if !retry(|| diesel::select(pg_try_advisory_lock(SERVICE_LOCK)).get_result(&mut conn))? {
            return Err(ClaimError::Held(url.to_string()));
        }
        Ok(PostgresClaim { _conn: conn })
    }

    /// A cluster node's claim: the service lock shared, and its name's lock.
    pub fn acquire_node(url: &PostgresUrl, busy_timeout_ms: u64, node: &str) -> Result<PostgresClaim, ClaimError> {
        let mut conn = open_postgres(url, busy_timeout_ms)?;
        if !retry(|| diesel::select(pg_try_advisory_lock_shared(SERVICE_LOCK)).get_result(&mut conn))? {
            return Err(ClaimError::HeldBySingle(url.to_string()));
        }
        if !retry(|| diesel::select(pg_try_advisory_lock(node_key(node))).get_result(&mut conn))? {
            return Err(ClaimError::NodeTaken { node: node.to_string(), url: url.to_string() });
        }
        Ok(PostgresClaim { _conn: conn })
    }
}

/// Tries `take` until it succeeds or [`RELEASE_GRACE`] has passed.
fn retry(mut take: impl FnMut() -> diesel::QueryResult<bool>) -> Result<bool, StoreError> {
    let deadline = Instant::now() + RELEASE_GRACE;
    loop {
        if take()? {
            return Ok(true);
        }
        if Instant::now() >= deadline {
            return Ok(false);
        }
        std::thread::sleep(RETRY_EVERY);
    }
}
