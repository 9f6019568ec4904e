//! Leadership: one PostgreSQL session-level advisory lock, held on a connection of the leader's
//! own. The server drops it when that connection ends (kill -9 of the leader included), so the
//! next node to try takes it within one renewal period.

use diesel::pg::PgConnection;
use diesel::RunQueryDsl;

use crate::db::backend::{open_postgres, PostgresUrl};
use crate::db::claim::pg_try_advisory_lock;
use crate::domain::cluster::NodeRole;

/// The advisory lock key of the cluster's leadership ("cndt-ldr" in ASCII).
const LEADER_LOCK: i64 = 0x636e_6474_2d6c_6472;

/// The leadership connection between two renewals (a renewal takes it to the blocking pool
/// and brings it back).
#[derive(Default)]
pub(super) struct Seat {
    conn: Option<PgConnection>,
    role: Option<NodeRole>,
}

impl Seat {
    /// Keeps or seeks the leadership. Blocking: a connection and a query. A leader whose
    /// connection fails is a follower at once (the server has released, or soon releases, its
    /// lock); the next renewal connects again.
    pub(super) fn renew(mut self, url: &PostgresUrl, busy_timeout_ms: u64) -> (Seat, NodeRole) {
        let mut conn = match self.conn.take() {
            Some(conn) => conn,
            None => match open_postgres(url, busy_timeout_ms) {
                Ok(conn) => conn,
                Err(e) => {
                    tracing::warn!(error = %e, "cluster: cannot connect for the leadership");
                    return (Seat::default(), NodeRole::Follower);
                }
            },
        };
        let held = match self.role {
            // The lock is the connection's: while the connection answers, it is still held.
            Some(NodeRole::Leader) => diesel::sql_query("SELECT 1").execute(&mut conn).map(|_| true),
            _ => diesel::select(pg_try_advisory_lock(LEADER_LOCK)).get_result::<bool>(&mut conn),
        };
        match held {
            Ok(true) => (Seat { conn: Some(conn), role: Some(NodeRole::Leader) }, NodeRole::Leader),
            Ok(false) => (Seat { conn: Some(conn), role: Some(NodeRole::Follower) }, NodeRole::Follower),
            Err(e) => {
                tracing::warn!(error = %e, "cluster: the leadership connection failed; following");
                (Seat::default(), NodeRole::Follower)
            }
        }
    }
}
