//! `Auditor`: writes the access audit. The audit middleware (`http::audit`) sends it one
//! [`Record`] per audited request; it appends them in batches, one transaction each (every
//! [`WRITE_EVERY`], or at once at [`BATCH`] rows), so auditing costs a request no database
//! round trip of its own. It also removes rows past the retention.
//!
//! Writes run one at a time, holding the mailbox (`ctx.wait`), so rows are appended in the
//! order they came and a [`Flush`] answers only once everything recorded before it is stored:
//! `GET /api/audit` flushes first, and shutdown flushes last.
//!
//! When the database refuses a batch, its rows are kept for the next write, up to
//! [`MAX_PENDING`]; beyond that the oldest are dropped and counted in the log (an audit that
//! takes all memory would be worse). A crash loses at most the last [`WRITE_EVERY`].

use std::collections::VecDeque;
use std::time::Duration;

use actix::prelude::*;

use crate::db::audit::{self, NewAuditEntry};
use crate::db::{Store, StoreError};
use crate::domain::time;

/// How long a recorded row may wait to be written.
pub const WRITE_EVERY: Duration = Duration::from_millis(100);
/// Rows that are written at once, without waiting for the tick.
const BATCH: usize = 500;
/// Rows kept while the database cannot take them.
const MAX_PENDING: usize = 100_000;
/// How often rows past the retention are removed.
const PRUNE_EVERY: Duration = Duration::from_secs(3600);

/// Append this row.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Record(pub NewAuditEntry);

/// Store everything recorded so far; answers once it is stored (or the database refused it).
#[derive(Message)]
#[rtype(result = "Result<(), StoreError>")]
pub struct Flush;

pub struct Auditor {
    store: Store,
    pending: VecDeque<NewAuditEntry>,
    /// How long rows are kept; `None`: forever.
    retention: Option<Duration>,
    /// Rows dropped because the database could not take them for too long.
    dropped: u64,
}

impl Auditor {
    pub fn new(store: Store, retention: Option<Duration>) -> Self {
        Auditor { store, pending: VecDeque::new(), retention, dropped: 0 }
    }

    /// Writes what is pending, holding the mailbox until it is written; rows the database
    /// refused go back to the front.
    fn write(&mut self, ctx: &mut Context<Self>) {
        if self.pending.is_empty() {
            return;
        }
        ctx.wait(self.write_pending().map(|_, _, _| ()));
    }

    fn write_pending(&mut self) -> impl ActorFuture<Self, Output = Result<(), StoreError>> {
        let rows: Vec<NewAuditEntry> = self.pending.drain(..).collect();
        let store = self.store.clone();
        async move {
            if rows.is_empty() {
                return (rows, Ok(()));
            }
            let result = store
                .run({
                    let rows = rows.clone();
                    move |conn| audit::append(conn, &rows)
                })
                .await;
            (rows, result)
        }
        .into_actor(self)
        .map(|(rows, result), auditor: &mut Auditor, _| {
            if let Err(e) = &result {
                tracing::warn!(error = %e, rows = rows.len(), "audit rows not stored yet; kept for the next write");
                for row in rows.into_iter().rev() {
                    auditor.pending.push_front(row);
                }
                auditor.keep_bounded();
            }
            result
        })
    }

    fn keep_bounded(&mut self) {
        let over = self.pending.len().saturating_sub(MAX_PENDING);
        if over > 0 {
            self.pending.drain(..over);
            self.dropped += over as u64;
            tracing::error!(
                dropped = over,
                total_dropped = self.dropped,
                "audit rows dropped: the database took none for too long"
            );
        }
    }

    /// Removes the rows past the retention, holding the mailbox like a write (a flush after
    /// it answers once they are gone).
    fn prune(&self, ctx: &mut Context<Self>) {
        let Some(retention) = self.retention else { return };
        let store = self.store.clone();
        let cutoff = time::ago(retention);
        ctx.wait(
            async move {
                match store.run(move |conn| audit::remove_before(conn, &cutoff)).await {
                    Ok(0) => {}
                    Ok(removed) => tracing::info!(removed, "audit rows past the retention removed"),
                    Err(e) => tracing::warn!(error = %e, "audit rows past the retention not removed"),
                }
            }
            .into_actor(self),
        );
    }
}

impl Actor for Auditor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.run_interval(WRITE_EVERY, |auditor, ctx| auditor.write(ctx));
        self.prune(ctx);
        ctx.run_interval(PRUNE_EVERY, |auditor, ctx| auditor.prune(ctx));
    }
}

impl Handler<Record> for Auditor {
    type Result = ();

    fn handle(&mut self, msg: Record, ctx: &mut Self::Context) {
        self.pending.push_back(msg.0);
        self.keep_bounded();
        if self.pending.len() >= BATCH {
            self.write(ctx);
        }
    }
}

impl Handler<Flush> for Auditor {
    type Result = AtomicResponse<Self, Result<(), StoreError>>;

    fn handle(&mut self, _: Flush, _: &mut Self::Context) -> Self::Result {
        AtomicResponse::new(Box::pin(self.write_pending()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::audit::AuditFilter;
    use crate::db::Database;
    use crate::domain::audit::{ActorKind, AuditEvent};

    fn row(at: &str, target: &str) -> NewAuditEntry {
        NewAuditEntry {
            at: at.to_string(),
            event: AuditEvent::Request,
            actor: ActorKind::Admin,
            actor_id: None,
            method: "POST".into(),
            route: "/api/projects".into(),
            target: Some(target.into()),
            status: 201,
            address: Some("127.0.0.1".into()),
        }
    }

    fn targets(store: &Store) -> Vec<String> {
        let rows = store.run_blocking(|conn| audit::list(conn, &AuditFilter::default(), 100)).expect("rows");
        rows.into_iter().filter_map(|r| r.target).collect()
    }

    #[actix_rt::test]
    async fn rows_are_stored_in_order_and_old_ones_leave_with_the_retention() {
        let dir = tempfile::tempdir().expect("a folder");
        let store = Store::open(&Database::Sqlite(dir.path().join("audit.db")), 2, 5000).expect("a store");
        let old = row("2000-01-01T00:00:00.000Z", "old");
        let recent = row(&time::ago(Duration::from_secs(3600)), "recent");
        store.run_blocking(|conn| audit::append(conn, &[old, recent])).expect("appended");

        let auditor = Auditor::new(store.clone(), Some(Duration::from_secs(86_400))).start();
        for n in 0..3 {
            auditor.do_send(Record(row(&time::now(), &format!("new-{n}"))));
        }
        auditor.send(Flush).await.expect("the auditor answers").expect("stored");
        assert_eq!(targets(&store), ["new-2", "new-1", "new-0", "recent"], "newest first; the old row is gone");
    }

    #[actix_rt::test]
    async fn rows_are_never_changed() {
        use diesel::RunQueryDsl;
        let dir = tempfile::tempdir().expect("a folder");
        let store = Store::open(&Database::Sqlite(dir.path().join("audit.db")), 1, 5000).expect("a store");
        store.run_blocking(|conn| audit::append(conn, &[row(&time::now(), "kept")])).expect("appended");
        let changed = store.run_blocking(|conn| {
            Ok(diesel::sql_query("UPDATE audit_log SET status = 200").execute(conn).map_err(|e| e.to_string()))
        });
        let refusal = changed.expect("the query ran").expect_err("the update is refused");
        assert!(refusal.contains("append-only"), "{refusal}");
        assert_eq!(targets(&store), ["kept"]);
    }
}
