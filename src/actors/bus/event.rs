//! [`Event`]: what publishers hand the bus, and the frame streams send for it.

use serde_json::Value;

use crate::domain::events::{self, Scope};
use crate::domain::ids::ProjectId;

/// One event, as publishers hand it over. `data` is serialized JSON.
#[derive(Debug)]
pub struct Event {
    pub kind: &'static str,
    pub name: String,
    pub session_id: Option<String>,
    /// Set on an agent run's events: they have a topic of their own, like a session's.
    pub execution_id: Option<String>,
    /// Set on a command's or background process's events: their own topic.
    pub process_id: Option<String>,
    /// Only on its own topic, not the global one (a process's output chunks: only those who
    /// follow the process want them).
    pub topic_only: bool,
    pub timestamp: String,
    pub data: String,
    /// The number in its session's topic, when the session numbered (and stored) it.
    pub topic_seq: Option<u64>,
    /// Cluster mode: whether it is another node's event, and how it came here.
    pub origin: Origin,
    /// Whether `data` went through the redactor already.
    pub secrets: Secrets,
    /// The project it belongs to, when the publisher knows and it is about no session, run
    /// or process (those are looked up): what a project-bound stream keeps it by.
    pub project_id: Option<ProjectId>,
}

/// Whether an event's data still needs the redactor before the bus frames it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Secrets {
    /// As the publisher had it: the bus redacts it (unless redaction is off).
    Unchecked,
    /// Redacted by the publisher, which also stored it (a session redacts each line and event
    /// once, for its store and the bus both): not searched again.
    Redacted,
}

/// Where an event comes from. Another node's events are relayed here for this node's
/// subscribers (their own node already sent their webhooks), two ways: read back from the store
/// once committed, and straight from the owner's live feed, ahead of its commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    Here,
    /// Read back from the store: the events before it are stored too.
    Stored,
    /// From the owner's (this node's) live feed: its store may not hold it (nor the ones
    /// before) yet.
    Live(std::sync::Arc<str>),
}

impl Event {
    pub fn new(kind: &'static str, name: impl Into<String>, session_id: Option<String>, data: String) -> Event {
        Event {
            kind,
            name: name.into(),
            session_id,
            execution_id: None,
            process_id: None,
            topic_only: false,
            timestamp: crate::domain::time::now(),
            data,
            topic_seq: None,
            origin: Origin::Here,
            secrets: Secrets::Unchecked,
            project_id: None,
        }
    }

    /// The same event, told as `project`'s (see [`Event::project_id`]).
    pub fn in_project(self, project: Option<ProjectId>) -> Event {
        Event { project_id: project, ..self }
    }

    /// An event of an agent run, on the run's own topic.
    pub fn for_execution(kind: &'static str, name: impl Into<String>, execution_id: &str, data: String) -> Event {
        Event { execution_id: Some(execution_id.to_string()), ..Event::new(kind, name, None, data) }
    }

    /// An event of a command or background process, on the process's own topic.
    pub fn for_process(kind: &'static str, name: impl Into<String>, process_id: &str, data: String) -> Event {
        Event { process_id: Some(process_id.to_string()), ..Event::new(kind, name, None, data) }
    }

    pub fn json(kind: &'static str, name: impl Into<String>, session_id: Option<String>, data: &Value) -> Event {
        Event::new(kind, name, session_id, data.to_string())
    }

    /// Another node's event.
    pub fn relayed(&self) -> bool {
        self.origin != Origin::Here
    }

    pub(super) fn scope(&self) -> Scope {
        self.subject().to_scope()
    }

    /// Who it is about: its session, else its agent run, else its process, else no one.
    fn subject(&self) -> events::Subject<'_> {
        match (&self.session_id, &self.execution_id, &self.process_id) {
            (Some(s), _, _) => events::Subject::Session(s),
            (None, Some(e), _) => events::Subject::Execution(e),
            (None, None, Some(p)) => events::Subject::Process(p),
            (None, None, None) => events::Subject::Global,
        }
    }

    /// The frame streams send for this event at `seq`; on the global stream (`global`), a
    /// session's event also carries its number in the session's own stream.
    pub fn frame(&self, seq: u64, global: bool) -> String {
        let session_seq = self.topic_seq.filter(|_| global && self.session_id.is_some());
        let numbers = events::Numbers { seq, session_seq };
        events::frame_of(&self.name, numbers, self.kind, self.subject(), &self.timestamp, &self.data)
    }
}
