//! Queries on `sessions`.

use diesel::prelude::*;

use super::schema::sessions;
use super::{DbConnection, StoreError};

/// Statuses of a session whose CLI process is (or should be) running.
pub const LIVE_STATUSES: [&str; 4] = ["starting", "idle", "active", "compacting"];

pub fn count_live(conn: &mut DbConnection) -> Result<i64, StoreError> {
    Ok(sessions::table.filter(sessions::status.eq_any(LIVE_STATUSES)).count().get_result(conn)?)
}
