//! Conduit's own requests to a CLI, waiting for their answers: ids, what each one was, and who
//! hears the answer. Every request gets an answer, a timeout or, when the CLI ends first, an
//! error; none is forgotten.

use std::collections::HashMap;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::oneshot;

/// How long a request Conduit sends may wait for the CLI's answer.
pub const CONTROL_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Debug, Clone, thiserror::Error)]
pub enum ControlError {
    #[error("the CLI did not answer {0} within {CONTROL_TIMEOUT:?}")]
    Timeout(&'static str),
    #[error("the CLI refused {what}: {error}")]
    Refused { what: &'static str, error: String },
    /// The request could not be sent, or the CLI ended before answering.
    #[error("{0}")]
    Gone(String),
    /// This agent cannot do it (a model switch where the protocol has none, ...).
    #[error("this agent cannot {what}: {why}")]
    Unsupported { what: &'static str, why: String },
}

pub type Reply = oneshot::Sender<Result<Value, ControlError>>;

pub enum Pending {
    /// The handshake: the CLI is ready once it is answered.
    Handshake,
    Command {
        what: &'static str,
        reply: Reply,
    },
}

pub struct Controls {
    prefix: String,
    next: u64,
    pending: HashMap<String, Pending>,
}

impl Controls {
    /// Request ids read `conduit-<first 8 characters of the owner's id>-<n>`.
    pub fn new(owner: &str) -> Controls {
        let short: String = owner.chars().take(8).collect();
        Controls { prefix: format!("conduit-{short}"), next: 0, pending: HashMap::new() }
    }

    pub fn next_id(&mut self) -> String {
        self.next += 1;
        format!("{}-{}", self.prefix, self.next)
    }

    pub fn insert(&mut self, id: String, pending: Pending) {
        self.pending.insert(id, pending);
    }

    pub fn take(&mut self, id: &str) -> Option<Pending> {
        self.pending.remove(id)
    }

    pub fn len(&self) -> usize {
        self.pending.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// The CLI ended: every waiting request hears so.
    pub fn fail_all(&mut self) {
        for (_, pending) in self.pending.drain() {
            if let Pending::Command { what, reply } = pending {
                let _ = reply.send(Err(ControlError::Gone(format!("the CLI exited before answering {what}"))));
            }
        }
    }
}
