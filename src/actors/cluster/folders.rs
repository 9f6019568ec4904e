//! A folder's lock across the cluster: the per-folder queue ([`crate::actors::locks`]) orders
//! the runs of one node; a run it grants then also takes this PostgreSQL session-level advisory
//! lock, keyed by the folder, on a connection of its own. So two nodes never run agents in one
//! folder at once, and a node that dies (kill -9 included) lets go when the server drops its
//! connection.

use std::path::Path;
use std::time::{Duration, Instant};

use diesel::pg::PgConnection;
use diesel::RunQueryDsl;

use crate::db::backend::{open_postgres, PostgresUrl};
use crate::db::claim::{hashed_key, pg_try_advisory_lock};

/// How often a waiter asks again while another node holds the folder.
const POLL: Duration = Duration::from_millis(250);
/// How long the database may stay unreachable before the wait fails.
const UNREACHABLE_FOR: Duration = Duration::from_secs(30);

/// Where the cluster's folder locks are held.
#[derive(Debug, Clone)]
pub struct ClusterFolders {
    pub url: PostgresUrl,
    pub busy_timeout_ms: u64,
}

/// Holds a folder across the cluster until dropped.
pub struct FolderClaim {
    conn: Option<PgConnection>,
}

impl Drop for FolderClaim {
    fn drop(&mut self) {
        // Closing the connection releases the lock; the close writes to a socket, so it goes
        // to the blocking pool when there is one.
        if let Some(conn) = self.conn.take() {
            match tokio::runtime::Handle::try_current() {
                Ok(runtime) => drop(runtime.spawn_blocking(move || drop(conn))),
                Err(_) => drop(conn),
            }
        }
    }
}

/// The advisory lock key of a folder, from its canonical path.
fn key(path: &Path) -> i64 {
    hashed_key(b"conduit-folder\0", path.as_os_str().as_encoded_bytes())
}

impl ClusterFolders {
    /// Waits until no other node holds `path`. Dropping the future gives up (a lock taken by
    /// then is released with its connection). Fails when the database stays unreachable.
    pub async fn acquire(&self, path: &Path) -> Result<FolderClaim, String> {
        let key = key(path);
        let mut conn: Option<PgConnection> = None;
        let mut reachable_at = Instant::now();
        loop {
            let (url, busy) = (self.url.clone(), self.busy_timeout_ms);
            let taken = conn.take();
            let tried = tokio::task::spawn_blocking(move || {
                let mut conn = match taken {
                    Some(conn) => conn,
                    None => open_postgres(&url, busy).map_err(|e| e.to_string())?,
                };
                match diesel::select(pg_try_advisory_lock(key)).get_result::<bool>(&mut conn) {
                    Ok(held) => Ok((conn, held)),
                    Err(e) => Err(e.to_string()),
                }
            })
            .await
            .map_err(|e| format!("the lock task failed: {e}"))?;
            match tried {
                Ok((held, true)) => return Ok(FolderClaim { conn: Some(held) }),
                Ok((open, false)) => {
                    conn = Some(open);
                    reachable_at = Instant::now();
                }
                Err(e) if reachable_at.elapsed() >= UNREACHABLE_FOR => {
                    return Err(format!("the database holding the cluster's folder locks cannot be reached: {e}"));
                }
                Err(e) => tracing::warn!(folder = %path.display(), error = %e, "cluster folder lock: retrying"),
            }
            tokio::time::sleep(POLL).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folder_keys_are_stable_and_distinct() {
        assert_eq!(key(Path::new("/srv/a")), key(Path::new("/srv/a")));
        assert_ne!(key(Path::new("/srv/a")), key(Path::new("/srv/b")));
        // Pinned (computed apart, with Python's hashlib): nodes of different builds must agree.
        assert_eq!(key(Path::new("/srv/a")), -7_982_786_047_018_712_315);
    }
}
