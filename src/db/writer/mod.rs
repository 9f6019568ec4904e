//! The write-behind path for session traffic: one thread that batches every message line, event
//! and row change into transactions, in arrival order.
//!
//! Nothing queued is dropped. Relaying never waits for the disk ([`Writer::persist`] queues and
//! returns); what bounds memory is each session's [`Backlog`](super::backlog::Backlog): lines
//! carry a credit for their bytes, and a session's readers stop reading its CLI while its
//! backlog is full. When a batch fails for a reason that can pass (disk full, read-only file,
//! locked database), it is kept and retried with backoff, health reports `degraded` until
//! everything that waited is written, and one summary line per second goes to the log. Only
//! rows the database refuses for good (a line of a session deleted meanwhile) are dropped, one
//! by one, and counted.
//!
//! When a caller must know a write is durable (a 2xx for a user message, a read that must see
//! what a client was shown), it waits: [`Writer::persist_acked`], [`Writer::flush`]. Those
//! fail fast while storage is failing, so requests answer 503 instead of hanging.

mod handle;
mod job;
mod scrub;
mod stats;
mod thread;
mod transaction;

pub use handle::{Writer, WriterSetup};
pub use job::{WriteError, WriteOp};
pub use stats::WriterStats;
