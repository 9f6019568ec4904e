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
    /// PostgreSQL's non-waiting session-level advisory lock.
    fn pg_try_advisory_lock(key: BigInt) -> Bool;
}

#[derive(Debug, thiserror::Error)]
pub enum ClaimError {
    #[error("another Conduit is already using the PostgreSQL database {0} (waited 5 s for it to let go); stop it first, or give this one its own database")]
    Held(String),
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
        let deadline = Instant::now() + RELEASE_GRACE;
        loop {
            let taken: bool =
                diesel::select(pg_try_advisory_lock(SERVICE_LOCK)).get_result(&mut conn).map_err(StoreError::from)?;
            if taken {
                return Ok(PostgresClaim { _conn: conn });
            }
            if Instant::now() >= deadline {
                return Err(ClaimError::Held(url.to_string()));
            }
            std::thread::sleep(RETRY_EVERY);
        }
    }
}
