//! [`Event`]: what publishers hand the bus, and the frame streams send for it.

use serde_json::Value;

use crate::domain::events::{self, Scope};

/// One event, as publishers hand it over. `data` is serialized JSON.
#[derive(Debug)]
pub struct Event {
    pub kind: &'static str,
    pub name: String,
    pub session_id: Option<String>,
    /// Set on an agent run's events: they have a topic of their own, like a session's.
    pub execution_id: Option<String>,
    pub timestamp: String,
    pub data: String,
    /// The number in its session's topic, when the session numbered (and stored) it.
    pub topic_seq: Option<u64>,
}

impl Event {
    pub fn new(kind: &'static str, name: impl Into<String>, session_id: Option<String>, data: String) -> Event {
        Event {
            kind,
            name: name.into(),
            session_id,
            execution_id: None,
            timestamp: crate::domain::time::now(),
            data,
            topic_seq: None,
        }
    }

    /// An event of an agent run, on the run's own topic.
    pub fn for_execution(kind: &'static str, name: impl Into<String>, execution_id: &str, data: String) -> Event {
        Event { execution_id: Some(execution_id.to_string()), ..Event::new(kind, name, None, data) }
    }

    pub fn json(kind: &'static str, name: impl Into<String>, session_id: Option<String>, data: &Value) -> Event {
        Event::new(kind, name, session_id, data.to_string())
    }

    pub(super) fn scope(&self) -> Scope {
        match (&self.session_id, &self.execution_id) {
            (Some(s), _) => Scope::Session(s.clone()),
            (None, Some(e)) => Scope::Execution(e.clone()),
            (None, None) => Scope::Global,
        }
    }

    /// The frame streams send for this event at `seq`.
    pub fn frame(&self, seq: u64) -> String {
        events::frame(&self.name, seq, self.kind, &self.scope(), &self.timestamp, &self.data)
    }
}
