//! What an event looks like on a stream: which CLI lines become which events, and the one JSON
//! frame every stream (SSE, WebSocket, webhooks) sends. Shared by the live bus and by catch-up
//! from the stored log, so a replayed event is byte for byte what the live one was (but for
//! the truncation of very large data, which both apply alike).

use serde_json::Value;

/// Event data larger than this is not put in a frame: the frame says `"truncated":true` and
/// how large the data was, and the whole line stays in storage (`GET /api/sessions/{id}/messages`).
/// It bounds the memory a stream (and its history) can hold per event.
pub const MAX_FRAME_DATA_BYTES: usize = 1024 * 1024;

/// The event a line from the CLI is relayed as, `(bus type, stream name)`; `None` for lines
/// that are not relayed (control traffic, which the permission engine reports as decisions,
/// and lines that are not JSON objects).
pub fn for_line(message_type: &str, subtype: Option<&str>) -> Option<(&'static str, String)> {
    match (message_type, subtype) {
        ("control_request" | "control_response" | "control_cancel_request" | "invalid" | "stderr", _) => None,
        ("stream_event", _) => Some(("stream.event", "stream_event".to_string())),
        // JSON-RPC agents' streaming notifications (Codex `item/agentMessage/delta`, ACP
        // `session/update` chunks) are the same kind of traffic as Claude Code's stream events.
        (method, subtype) if is_streaming(method, subtype) => Some(("stream.event", method.to_string())),
        ("result", _) => Some(("session.result", "result".to_string())),
        ("system", Some("init")) => Some(("session.message", "system_init".to_string())),
        (other, _) => Some(("session.message", other.to_string())),
    }
}

fn is_streaming(method: &str, subtype: Option<&str>) -> bool {
    method.ends_with("/delta")
        || method.ends_with("Delta")
        || (method == "session/update" && subtype.is_some_and(|s| s.ends_with("_chunk")))
}

/// Which topic an event belongs to besides the global one.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Scope {
    Global,
    Session(String),
    Execution(String),
    /// A command or background process started through the exec API.
    Process(String),
}

/// Where an event stands in the stream a frame goes out on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Numbers {
    /// Its number in this stream.
    pub seq: u64,
    /// On the global stream, a session event's number in the session's own stream: the `seq`
    /// its stored line carries, so a client can match the two.
    pub session_seq: Option<u64>,
}

impl Numbers {
    pub fn of(seq: u64) -> Numbers {
        Numbers { seq, session_seq: None }
    }
}

/// Who an event is about, borrowed from its [`Scope`]: framing allocates nothing but the frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subject<'a> {
    Global,
    Session(&'a str),
    Execution(&'a str),
    Process(&'a str),
}

impl Scope {
    pub fn subject(&self) -> Subject<'_> {
        match self {
            Scope::Global => Subject::Global,
            Scope::Session(id) => Subject::Session(id),
            Scope::Execution(id) => Subject::Execution(id),
            Scope::Process(id) => Subject::Process(id),
        }
    }
}

impl Subject<'_> {
    /// The owned scope, for who keeps it past the event (a topic's key).
    pub fn to_scope(self) -> Scope {
        match self {
            Subject::Global => Scope::Global,
            Subject::Session(id) => Scope::Session(id.to_string()),
            Subject::Execution(id) => Scope::Execution(id.to_string()),
            Subject::Process(id) => Scope::Process(id.to_string()),
        }
    }
}

/// The frame streams send:
/// `{"event","seq"[,"session_seq"],"type","session_id"[,"execution_id"],"timestamp","data"}`;
/// when `data` is over [`MAX_FRAME_DATA_BYTES`], `"data":null,"truncated":true,"data_bytes":N`
/// instead.
pub fn frame(name: &str, numbers: Numbers, kind: &str, scope: &Scope, timestamp: &str, data: &str) -> String {
    frame_of(name, numbers, kind, scope.subject(), timestamp, data)
}

/// [`frame`], for a borrowed subject. Every event is framed twice (its topic's stream and the
/// global one), so the frame is written into one buffer of its exact size: piecing it together
/// with `format!` cost six allocations and as many copies, the bus's largest cost in a flood.
pub fn frame_of(name: &str, numbers: Numbers, kind: &str, subject: Subject<'_>, timestamp: &str, data: &str) -> String {
    use std::fmt::Write;
    let Numbers { seq, session_seq } = numbers;
    let escaped_name = escaped(name);
    let (session, tagged) = match subject {
        Subject::Global => (None, None),
        Subject::Session(s) => (Some(s), None),
        Subject::Execution(e) => (None, Some(("execution_id", e))),
        Subject::Process(p) => (None, Some(("process_id", p))),
    };
    let truncated = data.len() > MAX_FRAME_DATA_BYTES;
    let size = FRAME_FIXED_BYTES
        + escaped_name.as_ref().map_or(name.len() + 2, String::len)
        + digits(seq)
        + session_seq.map_or(0, |n| r#","session_seq":"#.len() + digits(n))
        + kind.len()
        + session.map_or("null".len(), |s| s.len() + 2)
        + tagged.map_or(0, |(key, id)| key.len() + id.len() + 6)
        + timestamp.len()
        + if truncated { TRUNCATED_BYTES + digits(data.len() as u64) } else { r#""data":"#.len() + data.len() };
    let mut out = String::with_capacity(size);
    out.push_str(r#"{"event":"#);
    match &escaped_name {
        Some(quoted) => out.push_str(quoted),
        None => {
            out.push('"');
            out.push_str(name);
            out.push('"');
        }
    }
    let _ = write!(out, r#","seq":{seq}"#);
    if let Some(n) = session_seq {
        let _ = write!(out, r#","session_seq":{n}"#);
    }
    out.push_str(r#","type":""#);
    out.push_str(kind);
    out.push_str(r#"","session_id":"#);
    match session {
        Some(s) => {
            out.push('"');
            out.push_str(s);
            out.push('"');
        }
        None => out.push_str("null"),
    }
    if let Some((key, id)) = tagged {
        let _ = write!(out, r#","{key}":"{id}""#);
    }
    out.push_str(r#","timestamp":""#);
    out.push_str(timestamp);
    out.push_str(r#"","#);
    if truncated {
        let _ = write!(out, r#""data":null,"truncated":true,"data_bytes":{}"#, data.len());
    } else {
        out.push_str(r#""data":"#);
        out.push_str(data);
    }
    out.push('}');
    debug_assert_eq!(out.len(), size, "a frame's size is computed exactly");
    out
}

/// The bytes of a frame that do not depend on the event: `{"event":`, `,"seq":`, `,"type":""`,
/// `,"session_id":`, `,"timestamp":"",` and the closing brace.
const FRAME_FIXED_BYTES: usize = 9 + 7 + 10 + 14 + 16 + 1;
/// `"data":null,"truncated":true,"data_bytes":` without the number.
const TRUNCATED_BYTES: usize = 42;

/// `name` as a JSON string when it needs escaping (as serde_json escapes it); `None` for the
/// usual plain word, which is quoted as it is.
fn escaped(name: &str) -> Option<String> {
    let plain = name.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\');
    (!plain).then(|| Value::String(name.to_string()).to_string())
}

fn digits(n: u64) -> usize {
    n.checked_ilog10().map_or(1, |d| d as usize + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_map_to_events() {
        assert_eq!(for_line("system", Some("init")), Some(("session.message", "system_init".into())));
        assert_eq!(for_line("system", Some("status")), Some(("session.message", "system".into())));
        assert_eq!(for_line("stream_event", None), Some(("stream.event", "stream_event".into())));
        assert_eq!(for_line("result", Some("success")), Some(("session.result", "result".into())));
        assert_eq!(for_line("control_request", None), None);
        assert_eq!(for_line("invalid", None), None);
        assert_eq!(for_line("item/agentMessage/delta", None), Some(("stream.event", "item/agentMessage/delta".into())));
        assert_eq!(
            for_line("session/update", Some("agent_message_chunk")),
            Some(("stream.event", "session/update".into()))
        );
        assert_eq!(for_line("session/update", Some("tool_call")), Some(("session.message", "session/update".into())));
        assert_eq!(for_line("turn/completed", None), Some(("session.message", "turn/completed".into())));
    }

    #[test]
    fn frames_are_json_and_large_data_is_truncated() {
        let f = frame("assistant", Numbers::of(7), "session.message", &Scope::Session("s1".into()), "t", r#"{"a":1}"#);
        let v: Value = serde_json::from_str(&f).expect("json");
        assert_eq!(
            (v["seq"].as_u64(), v["data"]["a"].as_i64(), v["session_id"].as_str()),
            (Some(7), Some(1), Some("s1"))
        );
        assert!(v.get("session_seq").is_none());
        let numbers = Numbers { seq: 90, session_seq: Some(7) };
        let f = frame("assistant", numbers, "session.message", &Scope::Session("s1".into()), "t", "{}");
        let v: Value = serde_json::from_str(&f).expect("json");
        assert_eq!((v["seq"].as_u64(), v["session_seq"].as_u64()), (Some(90), Some(7)));
        let big = format!("\"{}\"", "x".repeat(MAX_FRAME_DATA_BYTES));
        let f = frame("assistant", Numbers::of(8), "session.message", &Scope::Execution("e".into()), "t", &big);
        let v: Value = serde_json::from_str(&f).expect("json");
        assert_eq!(v["truncated"], true);
        assert_eq!(v["data_bytes"].as_u64(), Some(big.len() as u64));
        assert_eq!((v["session_id"].is_null(), v["execution_id"].as_str()), (true, Some("e")));
        assert!(f.len() < 1024);
    }

    /// The frame as it was pieced together with `format!` before it was written in one buffer.
    fn pieced(name: &str, numbers: Numbers, kind: &str, scope: &Scope, timestamp: &str, data: &str) -> String {
        let session_seq = numbers.session_seq.map(|n| format!(r#","session_seq":{n}"#)).unwrap_or_default();
        let session = match scope {
            Scope::Session(s) => format!("\"{s}\""),
            _ => "null".to_string(),
        };
        let execution = match scope {
            Scope::Execution(e) => format!(r#","execution_id":"{e}""#),
            Scope::Process(p) => format!(r#","process_id":"{p}""#),
            _ => String::new(),
        };
        let body = if data.len() > MAX_FRAME_DATA_BYTES {
            format!(r#""data":null,"truncated":true,"data_bytes":{}"#, data.len())
        } else {
            format!(r#""data":{data}"#)
        };
        format!(
            r#"{{"event":{},"seq":{}{session_seq},"type":"{kind}","session_id":{session}{execution},"timestamp":"{timestamp}",{body}}}"#,
            Value::String(name.to_string()),
            numbers.seq,
        )
    }

    #[test]
    fn a_frame_is_written_byte_for_byte_as_before_in_a_buffer_of_its_exact_size() {
        let large = format!(r#"{{"t":"{}"}}"#, "x".repeat(MAX_FRAME_DATA_BYTES));
        let scopes = [
            Scope::Global,
            Scope::Session("0b9f6a7e-3d1c-4f7e-9a55-1c2d3e4f5a6b".into()),
            Scope::Execution("e1".into()),
            Scope::Process("p-22".into()),
        ];
        let names = ["assistant_delta", "item/agentMessage/delta", "odd \"name\"\n\\", "ünïcode"];
        let numbers =
            [Numbers::of(0), Numbers::of(9), Numbers { seq: 10, session_seq: Some(99_999) }, Numbers::of(u64::MAX)];
        for scope in &scopes {
            for name in names {
                for n in numbers {
                    for data in [r#"{"a":[1,2]}"#, "null", large.as_str()] {
                        let written = frame(name, n, "stream.event", scope, "2026-11-28T04:00:00.000Z", data);
                        assert_eq!(written, pieced(name, n, "stream.event", scope, "2026-11-28T04:00:00.000Z", data));
                        assert_eq!(written.capacity(), written.len(), "{written:.200}");
                    }
                }
            }
        }
    }
}
