//! How a session keeps what happens: every line in both directions stored write-behind (charged
//! to the session's backlog until stored), every event numbered on the session's own stream,
//! published, and stored so the stream replays it.
//!
//! What the CLI says is redacted here, once for the store and the bus both (see
//! [`Chat::redacted_once`]): the writer and the bus each ran the redactor over the same text
//! before, twice the work on the relay's busiest path.

use super::Chat;
use crate::actors::bus::{Event, Publish, Secrets};
use crate::db::backlog::Credit;
use crate::db::messages::{NewMessage, NewSessionEvent};
use crate::db::sessions::SessionPatch;
use crate::db::writer::WriteOp;
use crate::domain::session::SessionStatus;
use crate::domain::time;
use crate::secrets::{scrub_json, RedactionMode};

/// A text as the session keeps it and as it relays it.
pub(super) struct Said {
    pub kept: String,
    pub relayed: String,
    /// Whether `relayed` is redacted already (the bus then leaves it as it is).
    pub secrets: Secrets,
}

impl Chat {
    /// `text` redacted once for the store and the bus both, by `scrub` (for a line or for
    /// JSON): `at_rest`, both take the redacted text; `in_flight`, only the relayed copy is
    /// redacted; `off`, neither.
    pub(super) fn redacted_once(&self, mut text: String, scrub: fn(&mut String) -> bool) -> Said {
        match self.redaction {
            RedactionMode::AtRest => {
                scrub(&mut text);
                Said { kept: text.clone(), relayed: text, secrets: Secrets::Redacted }
            }
            RedactionMode::InFlight => {
                let mut relayed = text.clone();
                scrub(&mut relayed);
                Said { kept: text, relayed, secrets: Secrets::Redacted }
            }
            RedactionMode::Off => Said { kept: text.clone(), relayed: text, secrets: Secrets::Unchecked },
        }
    }

    /// Stores what [`Chat::redacted_once`] kept: the writer does not redact it again.
    fn keep(&self, op: WriteOp, credit: Option<Credit>) {
        if self.redaction.at_rest() {
            self.writer.persist_redacted(op, credit);
        } else if let Some(credit) = credit {
            self.writer.persist_charged(op, credit);
        } else {
            self.writer.persist(op);
        }
    }

    /// Records a line the CLI wrote in the messages table, as [`Chat::redacted_once`] kept it.
    /// `event` is the stream event that relayed it: its number and time; `cli_seq`, its
    /// keeper's number for it.
    pub(super) fn record(
        &self,
        direction: &'static str,
        message_type: &str,
        subtype: Option<String>,
        content: String,
        (event, cli_seq): (Option<(u64, String)>, Option<u64>),
    ) {
        let credit = self.backlog.charge(content.len() + 128);
        let (seq, timestamp) = match event {
            Some((seq, timestamp)) => (Some(seq as i64), timestamp),
            None => (None, time::now()),
        };
        let line = NewMessage {
            session_id: self.row.id.to_string(),
            direction,
            message_type: message_type.to_string(),
            message_subtype: subtype,
            content,
            timestamp,
            seq,
            cli_seq: cli_seq.and_then(|n| i64::try_from(n).ok()),
        };
        self.keep(WriteOp::Message(line), Some(credit));
    }

    /// Numbers an event of this session's stream and hands it to the bus; returns its number
    /// and time (a relayed line is stored with them).
    pub(super) fn publish_numbered(
        &mut self,
        kind: &'static str,
        name: &str,
        data: String,
        secrets: Secrets,
    ) -> (u64, String) {
        self.seq += 1;
        let mut event = Event::new(kind, name, Some(self.row.id.to_string()), data);
        event.topic_seq = Some(self.seq);
        event.secrets = secrets;
        let numbered = (self.seq, event.timestamp.clone());
        self.bus.do_send(Publish(event));
        numbered
    }

    /// An event that is not a line (status, created, closed, a decision): published, and
    /// stored in the session's event log so its stream replays it.
    pub(super) fn publish(&mut self, kind: &'static str, name: &str, data: String) {
        let Said { kept, relayed, secrets } = self.redacted_once(data, scrub_json);
        let (seq, timestamp) = self.publish_numbered(kind, name, relayed, secrets);
        let event = NewSessionEvent {
            session_id: self.row.id.to_string(),
            seq: seq as i64,
            kind: kind.to_string(),
            name: name.to_string(),
            data: kept,
            timestamp,
        };
        self.keep(WriteOp::Event(event), None);
    }

    /// `session.status` (or another row event), with the whole row so a client can redraw
    /// from one event.
    pub(super) fn publish_row(&mut self, kind: &'static str, name: &str) {
        let data = serde_json::to_string(&self.row).unwrap_or_else(|_| "null".to_string());
        self.publish(kind, name, data);
    }

    pub(super) fn patch(&mut self, patch: SessionPatch) {
        self.writer.persist(WriteOp::Session { id: self.row.id.clone(), patch });
    }

    pub(super) fn set_status(&mut self, status: SessionStatus) {
        if self.row.status != status {
            self.row.status = status;
            self.row.last_active_at = time::now();
            let patch = SessionPatch {
                status: Some(status),
                last_active_at: Some(self.row.last_active_at.clone()),
                ..Default::default()
            };
            self.patch(patch);
            self.publish_row("session.status", "session_status");
        }
    }
}
