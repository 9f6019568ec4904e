//! Queries on `login_failures` and `login_lockouts`: the part of the login limits a cluster's
//! nodes share (see `http::auth_shared`), so an address locked out on one node is locked out
//! on all of them. Each step is one transaction; on PostgreSQL it first takes a lock of the
//! address (an advisory transaction lock), so nodes deciding for one address at once take
//! turns and cannot admit more checks between them than the lockout allows.

use diesel::prelude::*;
use diesel::sql_types::Text;

use super::schema::{login_failures, login_lockouts};
use super::{DbConnection, StoreError};

/// The times a decision is made against (RFC 3339 text, compared as text).
#[derive(Debug, Clone)]
pub struct Window {
    pub now: String,
    /// Failures since then count (now minus the lockout period).
    pub since: String,
    /// Checks still running since then count (older ones lost their outcome).
    pub running_since: String,
    /// When a lockout starting now ends.
    pub lockout_until: String,
    /// Failures (and running checks) that lock the address out.
    pub limit: i64,
}

/// Where an address stands, across the nodes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Standing {
    Free,
    /// Locked out until then.
    LockedUntil(String),
    /// Its failures and running checks could lock it out: it waits for their outcomes.
    Busy,
}

/// Runs `body` in a transaction holding `address`'s lock (on PostgreSQL; SQLite has one writer).
fn for_address<T>(
    conn: &mut DbConnection,
    address: &str,
    body: impl FnOnce(&mut DbConnection) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    conn.write_transaction(|conn| {
        if let DbConnection::Pg(pg) = conn {
            diesel::sql_query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
                .bind::<Text, _>(address)
                .execute(pg)?;
        }
        body(conn)
    })
}

/// `address`'s standing; a lockout that has ended is removed with the failures it forgave.
fn standing(conn: &mut DbConnection, address: &str, w: &Window) -> Result<Standing, StoreError> {
    let until: Option<String> = login_lockouts::table
        .filter(login_lockouts::address.eq(address))
        .select(login_lockouts::until)
        .first(conn)
        .optional()?;
    if let Some(until) = until {
        if until > w.now {
            return Ok(Standing::LockedUntil(until));
        }
        diesel::delete(login_lockouts::table.filter(login_lockouts::address.eq(address))).execute(conn)?;
        clear_failures(conn, address)?;
    }
    let failures = count(conn, address, false, &w.since)?;
    let running = count(conn, address, true, &w.running_since)?;
    Ok(if failures + running >= w.limit { Standing::Busy } else { Standing::Free })
}

fn insert(conn: &mut DbConnection, id: &str, address: &str, at: &str, pending: bool) -> Result<(), StoreError> {
    diesel::insert_into(login_failures::table)
        .values((
            login_failures::id.eq(id),
            login_failures::address.eq(address),
            login_failures::at.eq(at),
            login_failures::pending.eq(pending),
        ))
        .execute(conn)?;
    Ok(())
}

/// `address`'s failures (or running checks, `pending`) since `since`.
fn count(conn: &mut DbConnection, address: &str, pending: bool, since: &str) -> Result<i64, StoreError> {
    Ok(login_failures::table
        .filter(login_failures::address.eq(address))
        .filter(login_failures::pending.eq(pending))
        .filter(login_failures::at.ge(since))
        .count()
        .get_result(conn)?)
}

fn clear_failures(conn: &mut DbConnection, address: &str) -> Result<(), StoreError> {
    diesel::delete(
        login_failures::table.filter(login_failures::address.eq(address)).filter(login_failures::pending.eq(false)),
    )
    .execute(conn)?;
    Ok(())
}

/// Records a failure (a new row, or check `id`'s running row, now failed); locks the address
/// out when its failures reach the limit. Answers whether it is locked out now.
fn failed(conn: &mut DbConnection, id: &str, address: &str, w: &Window) -> Result<bool, StoreError> {
    prune(conn, w)?;
    let updated = diesel::update(login_failures::table.find(id))
        .set((login_failures::pending.eq(false), login_failures::at.eq(&w.now)))
        .execute(conn)?;
    if updated == 0 {
        insert(conn, id, address, &w.now, false)?;
    }
    let failures = count(conn, address, false, &w.since)?;
    if failures < w.limit {
        return Ok(false);
    }
    diesel::delete(login_lockouts::table.filter(login_lockouts::address.eq(address))).execute(conn)?;
    diesel::insert_into(login_lockouts::table)
        .values((login_lockouts::address.eq(address), login_lockouts::until.eq(&w.lockout_until)))
        .execute(conn)?;
    Ok(true)
}

/// Before a password check: `address`'s standing, and when it is free the check `id` recorded
/// as running.
pub fn begin(conn: &mut DbConnection, id: &str, address: &str, w: &Window) -> Result<Standing, StoreError> {
    for_address(conn, address, |conn| {
        let standing = standing(conn, address, w)?;
        if standing == Standing::Free {
            insert(conn, id, address, &w.now, true)?;
        }
        Ok(standing)
    })
}

/// Until when `address` is locked out, if it is at `now` (one look by the primary key: asked
/// for credentials a node remembers, which need no check).
pub fn locked_until(conn: &mut DbConnection, address: &str, now: &str) -> Result<Option<String>, StoreError> {
    Ok(login_lockouts::table
        .filter(login_lockouts::address.eq(address))
        .filter(login_lockouts::until.gt(now))
        .select(login_lockouts::until)
        .first(conn)
        .optional()?)
}

/// Check `id` failed. Answers whether the address is locked out now.
pub fn check_failed(conn: &mut DbConnection, id: &str, address: &str, w: &Window) -> Result<bool, StoreError> {
    for_address(conn, address, |conn| failed(conn, id, address, w))
}

/// Check `id` passed: it and the address's failures are forgotten.
pub fn check_passed(conn: &mut DbConnection, id: &str, address: &str) -> Result<(), StoreError> {
    for_address(conn, address, |conn| {
        diesel::delete(login_failures::table.find(id)).execute(conn)?;
        clear_failures(conn, address)
    })
}

/// Check `id` did not finish: nothing was learnt.
pub fn check_unfinished(conn: &mut DbConnection, id: &str) -> Result<(), StoreError> {
    diesel::delete(login_failures::table.find(id)).execute(conn)?;
    Ok(())
}

/// A comparison made in no time (a guess at the configured token), `failed` or not: the
/// address's standing before it, and when it was free its outcome recorded as [`begin`] and
/// a check's end would.
pub fn compared(
    conn: &mut DbConnection,
    id: &str,
    address: &str,
    failed_now: bool,
    w: &Window,
) -> Result<Standing, StoreError> {
    for_address(conn, address, |conn| {
        let standing = standing(conn, address, w)?;
        if standing == Standing::Free {
            if failed_now {
                failed(conn, id, address, w)?;
            } else {
                clear_failures(conn, address)?;
            }
        }
        Ok(standing)
    })
}

/// Removes what no longer counts, of every address: failures older than the lockout period,
/// running checks that lost their outcome, lockouts that ended. Run as failures are recorded,
/// so the tables hold the last lockout period's activity only.
fn prune(conn: &mut DbConnection, w: &Window) -> Result<(), StoreError> {
    diesel::delete(
        login_failures::table.filter(
            (login_failures::pending.eq(false).and(login_failures::at.lt(&w.since)))
                .or(login_failures::pending.eq(true).and(login_failures::at.lt(&w.running_since))),
        ),
    )
    .execute(conn)?;
    diesel::delete(login_lockouts::table.filter(login_lockouts::until.le(&w.now))).execute(conn)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn migrated() -> (tempfile::TempDir, DbConnection) {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut conn = crate::db::open_sqlite(&dir.path().join("t.db"), 1000).expect("open");
        crate::db::run_migrations(&mut conn).expect("migrate");
        (dir, DbConnection::Sqlite(conn))
    }

    /// The window at second `s` of a made-up minute: a lockout of 100 s, running checks for 30.
    fn at(s: u32) -> Window {
        let t = |s: i64| format!("2026-01-01T00:{:02}:{:02}.000Z", s.max(0) / 60, s.max(0) % 60);
        let s = i64::from(s);
        Window { now: t(s), since: t(s - 100), running_since: t(s - 30), lockout_until: t(s + 100), limit: 5 }
    }

    const HERE: &str = "127.0.0.1";

    #[test]
    fn running_checks_and_failures_lock_an_address_out_on_every_node() {
        let (_dir, mut conn) = migrated();
        for id in ["a", "b", "c", "d", "e"] {
            assert_eq!(begin(&mut conn, id, HERE, &at(1)).expect("begin"), Standing::Free, "{id}");
        }
        assert_eq!(begin(&mut conn, "f", HERE, &at(1)).expect("begin"), Standing::Busy, "five running");
        assert_eq!(begin(&mut conn, "x", "127.0.0.2", &at(1)).expect("begin"), Standing::Free, "another address");
        for (i, id) in ["a", "b", "c", "d"].iter().enumerate() {
            assert!(!check_failed(&mut conn, id, HERE, &at(2)).expect("failed"), "failure {i}");
        }
        assert!(check_failed(&mut conn, "e", HERE, &at(3)).expect("failed"), "the fifth locks it out");
        assert_eq!(begin(&mut conn, "g", HERE, &at(4)).expect("begin"), Standing::LockedUntil(at(3).lockout_until));
        assert_eq!(locked_until(&mut conn, HERE, &at(4).now).expect("look"), Some(at(3).lockout_until));
        assert_eq!(
            compared(&mut conn, "h", HERE, false, &at(5)).expect("compared"),
            Standing::LockedUntil(at(3).lockout_until),
            "the right token waits too"
        );

        // The lockout ends, and its failures are forgiven with it.
        assert_eq!(locked_until(&mut conn, HERE, &at(103).now).expect("look"), None);
        assert_eq!(begin(&mut conn, "i", HERE, &at(104)).expect("begin"), Standing::Free);
        check_failed(&mut conn, "i", HERE, &at(105)).expect("failed");
        for id in ["j", "k", "l"] {
            assert_eq!(compared(&mut conn, id, HERE, true, &at(106)).expect("compared"), Standing::Free);
        }
        // Four failures; a success clears them.
        assert_eq!(begin(&mut conn, "m", HERE, &at(107)).expect("begin"), Standing::Free);
        check_passed(&mut conn, "m", HERE).expect("passed");
        for id in ["n", "o", "p", "q"] {
            assert_eq!(compared(&mut conn, id, HERE, true, &at(108)).expect("compared"), Standing::Free, "{id}");
        }
        assert_eq!(begin(&mut conn, "r", HERE, &at(109)).expect("begin"), Standing::Free, "four since the success");
        check_unfinished(&mut conn, "r").expect("unfinished");
    }

    #[test]
    fn what_no_longer_counts_is_removed_as_failures_are_recorded() {
        let (_dir, mut conn) = migrated();
        begin(&mut conn, "lost", HERE, &at(0)).expect("begin");
        check_failed(&mut conn, "old", "127.0.0.2", &at(0)).expect("failed");
        check_failed(&mut conn, "new", "127.0.0.3", &at(150)).expect("failed");
        let ids: Vec<String> = login_failures::table.select(login_failures::id).load(&mut conn).expect("ids");
        assert_eq!(ids, ["new"], "a running check past 30 s and a failure past the lockout are gone");
    }
}
