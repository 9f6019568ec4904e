//! Queries on `login_sessions`: the dashboard's cookie sign-ins. A session is live while it is
//! not revoked, not expired (a text comparison of RFC 3339 times, see `domain::time`) and its
//! user exists. Nothing is cached: a revocation takes effect on the next request.

use diesel::prelude::*;

use super::schema::{login_sessions, users};
use super::{DbConnection, StoreError};
use crate::domain::ids::{LoginSessionId, UserId};

/// A sign-in as stored: the hash of its cookie's secret, never the secret.
#[derive(Debug, Clone, PartialEq, Queryable, Selectable, Insertable)]
#[diesel(table_name = login_sessions)]
pub struct LoginSessionRow {
    pub id: LoginSessionId,
    pub user_id: UserId,
    pub secret_hash: String,
    pub created_at: String,
    pub last_seen_at: String,
    pub expires_at: String,
    pub revoked_at: Option<String>,
    pub address: Option<String>,
    pub user_agent: Option<String>,
}

pub fn insert(conn: &mut DbConnection, row: &LoginSessionRow) -> Result<(), StoreError> {
    diesel::insert_into(login_sessions::table).values(row).execute(conn)?;
    Ok(())
}

/// The live session (not revoked, not expired at `now`, of a user who exists) whose secret
/// hashes to `hash`.
pub fn live_by_hash(conn: &mut DbConnection, hash: &str, now: &str) -> Result<Option<LoginSessionRow>, StoreError> {
    Ok(login_sessions::table
        .inner_join(users::table)
        .filter(login_sessions::secret_hash.eq(hash))
        .filter(login_sessions::revoked_at.is_null())
        .filter(login_sessions::expires_at.gt(now))
        .select(LoginSessionRow::as_select())
        .first(conn)
        .optional()?)
}

/// `user`'s live sessions at `now`, most recently seen first, a page of them.
pub fn live_of_user(
    conn: &mut DbConnection,
    user: &UserId,
    now: &str,
    limit: i64,
    offset: i64,
) -> Result<Vec<LoginSessionRow>, StoreError> {
    Ok(login_sessions::table
        .filter(login_sessions::user_id.eq(user))
        .filter(login_sessions::revoked_at.is_null())
        .filter(login_sessions::expires_at.gt(now))
        .order((login_sessions::last_seen_at.desc(), login_sessions::id.asc()))
        .limit(limit)
        .offset(offset)
        .select(LoginSessionRow::as_select())
        .load(conn)?)
}

/// Revokes `user`'s session `id` at `now` (one revoked already keeps its first time);
/// `NotFound` when `user` has no such session, so another user's session cannot be told
/// apart from one that does not exist.
pub fn revoke_own(conn: &mut DbConnection, id: &LoginSessionId, user: &UserId, now: &str) -> Result<(), StoreError> {
    let own = login_sessions::table.find(id).filter(login_sessions::user_id.eq(user));
    let revoked = diesel::update(own.filter(login_sessions::revoked_at.is_null()))
        .set(login_sessions::revoked_at.eq(now))
        .execute(conn)?;
    if revoked == 0 {
        let exists: i64 = own.count().get_result(conn)?;
        if exists == 0 {
            return Err(StoreError::NotFound);
        }
    }
    Ok(())
}

/// Records a request of the session at `now`.
pub fn touch(conn: &mut DbConnection, id: &LoginSessionId, now: &str) -> Result<(), StoreError> {
    diesel::update(login_sessions::table.find(id)).set(login_sessions::last_seen_at.eq(now)).execute(conn)?;
    Ok(())
}

/// Removes the sessions that ended (expired or revoked) before `cutoff`; answers how many.
/// Only live sessions are ever listed or taken, and the audit keeps the history.
pub fn remove_ended_before(conn: &mut DbConnection, cutoff: &str) -> Result<usize, StoreError> {
    let ended = login_sessions::expires_at.lt(cutoff).or(login_sessions::revoked_at.lt(cutoff));
    Ok(diesel::delete(login_sessions::table.filter(ended)).execute(conn)?)
}

/// The user `id`, if they exist: `(id, name)`.
pub fn user_name(conn: &mut DbConnection, id: &UserId) -> Result<Option<String>, StoreError> {
    Ok(users::table.find(id).select(users::name).first(conn).optional()?)
}
