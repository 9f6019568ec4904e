//! Where secrets are taken out of what Conduit keeps and sends on ([`crate::redact`] finds
//! them). Never on the way to a CLI: what it is sent is what it was given.
//!
//! - **In flight, always:** every event the bus publishes (so every stream, webhook and peer
//!   feed), every event a stream replays from the store, Conduit's own log lines, and in
//!   `in_flight` mode every API answer read from the store.
//! - **At rest (the `at_rest` mode, the default):** the writer stores lines, events and
//!   permission decisions without them, and agent runs are saved without them; `conduit redact
//!   --all` does the same to rows stored before.
//! - **Nowhere (the `off` mode):** a switch for trusted machines and for measuring the cost.
//!
//! A session's lines and events, the relay's bulk, are redacted once by the session itself
//! for the store and the bus both; the event and the write say so, and neither searches them
//! again (`actors/session/record.rs`).

use std::borrow::Cow;

use crate::redact::Redactor;

/// The `redaction` setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RedactionMode {
    /// Stored and sent on without secrets.
    #[default]
    AtRest,
    /// Stored as the CLI wrote it; without secrets whenever it leaves the store.
    InFlight,
    /// Nothing is redacted anywhere: stored, streamed, answered and logged as the CLI wrote it.
    /// For a machine whose database, streams and logs only trusted people read, and to measure
    /// what redaction costs (`scripts/bench.sh streams`). Startup warns.
    Off,
}

impl RedactionMode {
    pub const ALL: [&'static str; 3] = ["at_rest", "in_flight", "off"];

    pub fn parse(value: &str) -> Option<RedactionMode> {
        match value {
            "at_rest" => Some(RedactionMode::AtRest),
            "in_flight" => Some(RedactionMode::InFlight),
            "off" => Some(RedactionMode::Off),
            _ => None,
        }
    }

    pub fn at_rest(self) -> bool {
        self == RedactionMode::AtRest
    }

    /// Whether what leaves the service (streams, webhooks, answers, log lines) is redacted.
    pub fn in_flight(self) -> bool {
        self != RedactionMode::Off
    }
}

/// A JSON text (a CLI's line, an event's data) without its secrets, still valid JSON. Returns
/// whether anything was taken out.
pub fn scrub_json(text: &mut String) -> bool {
    replace(text, |t| Redactor::standard().redact_json_text(t))
}

/// Plain text (a log line, a reason) without its secrets.
pub fn scrub_text(text: &mut String) -> bool {
    replace(text, |t| Redactor::standard().redact(t))
}

pub fn scrub_optional_text(text: &mut Option<String>) -> bool {
    text.as_mut().is_some_and(scrub_text)
}

/// Text that may or may not be JSON (a stderr line, a note): JSON stays valid JSON.
pub fn scrub_any(text: &mut String) -> bool {
    if looks_like_json(text) {
        scrub_json(text)
    } else {
        scrub_text(text)
    }
}

/// Lines (an agent run's raw JSON lines, one per line) each scrubbed as [`scrub_any`].
pub fn scrub_lines(text: &mut String) -> bool {
    let mut changed = false;
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let (body, end) = match line.strip_suffix('\n') {
            Some(body) => (body, "\n"),
            None => (line, ""),
        };
        let mut body = body.to_string();
        changed |= scrub_any(&mut body);
        out.push_str(&body);
        out.push_str(end);
    }
    if changed {
        *text = out;
    }
    changed
}

fn looks_like_json(text: &str) -> bool {
    let t = text.trim_start();
    t.starts_with('{') || t.starts_with('[') || t.starts_with('"')
}

fn replace(text: &mut String, redact: impl for<'a> Fn(&'a str) -> Cow<'a, str>) -> bool {
    match redact(text) {
        Cow::Borrowed(_) => false,
        Cow::Owned(clean) => {
            *text = clean;
            true
        }
    }
}
