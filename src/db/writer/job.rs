//! What is queued to the writer: the write itself, who waits for it, and the backlog credit
//! it holds.

use tokio::sync::oneshot;

use crate::db::backlog::Credit;
use crate::db::messages::{NewMessage, NewSessionEvent};
use crate::db::permission_log::NewDecision;
use crate::db::sessions::SessionPatch;
use crate::db::usage::NewUsage;
use crate::db::webhooks::NewAttempt;
use crate::domain::ids::SessionId;

pub enum WriteOp {
    Message(NewMessage),
    /// A session event that is not a line (status, decision, created, closed).
    Event(NewSessionEvent),
    /// A user turn was written to the CLI (`Some(when)`), or must be delivered again (`None`:
    /// a usage limit stopped it before the model took it).
    Delivered {
        message_id: i64,
        at: Option<String>,
    },
    /// A permission decision for the audit log.
    Decision(NewDecision),
    /// A webhook delivery attempt.
    Attempt(NewAttempt),
    Session {
        id: SessionId,
        patch: SessionPatch,
    },
    /// A turn's result: the session's new totals and what the turn cost, in one transaction
    /// so the ledger and the totals never disagree after a crash.
    TurnResult {
        id: SessionId,
        patch: SessionPatch,
        usage: NewUsage,
    },
    /// Commits nothing; acknowledged once everything queued before it is committed.
    Flush,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WriteError {
    /// Storage fails now (disk full, read-only, locked); what was queued before is kept and
    /// retried, but this write was not taken.
    #[error("storage is failing ({0}); retry shortly")]
    Failing(String),
    /// The database refused this row for good (for example, its session was deleted).
    #[error("the database refused the write: {0}")]
    Rejected(String),
    #[error("the database writer stopped")]
    Stopped,
}

pub(super) enum Ack {
    Done(oneshot::Sender<Result<(), WriteError>>),
    Id(oneshot::Sender<Result<i64, WriteError>>),
}

impl Ack {
    pub(super) fn fail(self, e: WriteError) {
        match self {
            Ack::Done(tx) => drop(tx.send(Err(e))),
            Ack::Id(tx) => drop(tx.send(Err(e))),
        }
    }
}

pub(super) struct Job {
    pub(super) op: WriteOp,
    /// Set for writes someone waits for; they fail fast instead of being retried.
    pub(super) ack: Option<Ack>,
    /// Released (dropped) when the job is done.
    pub(super) credit: Option<Credit>,
    /// Its texts went through the redactor already: the `at_rest` pass skips it.
    pub(super) redacted: bool,
}

impl Job {
    pub(super) fn bytes(&self) -> usize {
        match &self.op {
            WriteOp::Message(m) => m.content.len() + 128,
            WriteOp::Event(e) => e.data.len() + 128,
            _ => 128,
        }
    }
}
