//! JSON-RPC lines, as Codex's app-server (no `jsonrpc` member) and ACP agents (`"2.0"`) write
//! and read them: one object per line. Shared by the [`super::codex`] and [`super::acp`]
//! adapters.
//!
//! A request id of the agent's is kept as the JSON text of its id (`7`, `"abc"`), so the
//! answer carries back exactly the value that came, whatever its type.

use serde_json::{json, Map, Value};

use crate::protocol::incoming::{Incoming, Kind};

/// The dialect: whether lines carry `"jsonrpc": "2.0"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// Codex app-server: JSON-RPC without the version member.
    Lite,
    /// JSON-RPC 2.0 (ACP).
    V2,
}

/// One line read.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// The answer to one of Conduit's requests (`id` as sent: Conduit's ids are strings).
    Response {
        id: String,
        outcome: Result<Value, String>,
    },
    /// The agent asks; `id` is the JSON text of its id.
    Request {
        id: String,
        method: String,
        params: Value,
    },
    Notification {
        method: String,
        params: Value,
    },
    /// Not a JSON-RPC object.
    Invalid(String),
}

/// Reads a line.
pub fn read(line: &str) -> Message {
    let value: Value = match serde_json::from_str(line) {
        Ok(v) => v,
        Err(e) => return Message::Invalid(format!("not JSON: {e}")),
    };
    let Value::Object(mut o) = value else { return Message::Invalid("not a JSON object".to_string()) };
    let method = o.get("method").and_then(Value::as_str).map(str::to_string);
    let params = o.remove("params").unwrap_or(Value::Null);
    match (o.remove("id"), method) {
        (Some(id), Some(method)) => Message::Request { id: id.to_string(), method, params },
        (None, Some(method)) => Message::Notification { method, params },
        (Some(id), None) => {
            let id = match id {
                Value::String(s) => s,
                other => other.to_string(),
            };
            let outcome = match (o.remove("result"), o.remove("error")) {
                (_, Some(error)) => Err(error_text(&error)),
                (Some(result), None) => Ok(result),
                (None, None) => Ok(Value::Null),
            };
            Message::Response { id, outcome }
        }
        (None, None) => Message::Invalid("neither a request, an answer nor a notification".to_string()),
    }
}

/// `{"code":-32600,"message":"..."}` -> `-32600: ...` (the message alone when there is no code).
fn error_text(error: &Value) -> String {
    let message = error.get("message").and_then(Value::as_str).unwrap_or("");
    let data = error.get("data").filter(|d| !d.is_null()).map(|d| format!(" ({d})")).unwrap_or_default();
    match error.get("code").and_then(Value::as_i64) {
        Some(code) => format!("{code}: {message}{data}"),
        None if message.is_empty() => error.to_string(),
        None => format!("{message}{data}"),
    }
}

/// How a line is stored and what conversations act on: a notification by its method, the
/// agent's requests and the answers to Conduit's as control traffic (never relayed raw).
pub fn incoming(message: &Message, kind: Kind) -> Incoming {
    let (message_type, message_subtype) = match message {
        Message::Response { .. } => ("control_response".to_string(), None),
        Message::Request { method, .. } => ("control_request".to_string(), Some(method.clone())),
        Message::Notification { method, .. } => (method.clone(), None),
        Message::Invalid(_) => ("invalid".to_string(), None),
    };
    let kind = match (message, kind) {
        (Message::Invalid(error), _) => Kind::Invalid { error: error.clone() },
        (_, kind) => kind,
    };
    Incoming { message_type, message_subtype, kind }
}

fn object(dialect: Dialect) -> Map<String, Value> {
    let mut o = Map::new();
    if dialect == Dialect::V2 {
        o.insert("jsonrpc".to_string(), json!("2.0"));
    }
    o
}

/// A request of Conduit's.
pub fn request(dialect: Dialect, id: &str, method: &str, params: Value) -> String {
    let mut o = object(dialect);
    o.insert("id".to_string(), json!(id));
    o.insert("method".to_string(), json!(method));
    o.insert("params".to_string(), params);
    Value::Object(o).to_string()
}

pub fn notification(dialect: Dialect, method: &str, params: Value) -> String {
    let mut o = object(dialect);
    o.insert("method".to_string(), json!(method));
    if !params.is_null() {
        o.insert("params".to_string(), params);
    }
    Value::Object(o).to_string()
}

/// The id of the agent's request, back as the value it was (a string when it no longer reads).
fn their_id(id: &str) -> Value {
    serde_json::from_str(id).unwrap_or_else(|_| json!(id))
}

/// The answer to the agent's request `id`.
pub fn result(dialect: Dialect, id: &str, result: Value) -> String {
    let mut o = object(dialect);
    o.insert("id".to_string(), their_id(id));
    o.insert("result".to_string(), result);
    Value::Object(o).to_string()
}

/// A refusal of the agent's request `id`.
pub fn error(dialect: Dialect, id: &str, code: i64, message: &str) -> String {
    let mut o = object(dialect);
    o.insert("id".to_string(), their_id(id));
    o.insert("error".to_string(), json!({ "code": code, "message": message }));
    Value::Object(o).to_string()
}

/// JSON-RPC's "method not found".
pub const METHOD_NOT_FOUND: i64 = -32601;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_read_by_their_members() {
        assert_eq!(
            read(r#"{"id":7,"method":"item/commandExecution/requestApproval","params":{"a":1}}"#),
            Message::Request {
                id: "7".into(),
                method: "item/commandExecution/requestApproval".into(),
                params: json!({"a":1})
            }
        );
        assert_eq!(
            read(r#"{"jsonrpc":"2.0","id":"c-1","result":{"ok":true}}"#),
            Message::Response { id: "c-1".into(), outcome: Ok(json!({"ok":true})) }
        );
        assert_eq!(
            read(r#"{"id":"c-2","error":{"code":-32600,"message":"bad"}}"#),
            Message::Response { id: "c-2".into(), outcome: Err("-32600: bad".into()) }
        );
        assert_eq!(
            read(r#"{"method":"turn/started"}"#),
            Message::Notification { method: "turn/started".into(), params: Value::Null }
        );
        for bad in ["", "[1]", "{}", "not json"] {
            assert!(matches!(read(bad), Message::Invalid(_)), "{bad:?}");
        }
    }

    #[test]
    fn answers_carry_back_the_id_as_it_came() {
        let numeric = result(Dialect::Lite, "7", json!({"decision":"decline"}));
        assert_eq!(serde_json::from_str::<Value>(&numeric).unwrap(), json!({"id":7,"result":{"decision":"decline"}}));
        let text = error(Dialect::V2, "\"x\"", METHOD_NOT_FOUND, "no");
        assert_eq!(
            serde_json::from_str::<Value>(&text).unwrap(),
            json!({"jsonrpc":"2.0","id":"x","error":{"code":-32601,"message":"no"}})
        );
        let req = request(Dialect::V2, "c-1", "session/new", json!({}));
        assert_eq!(
            serde_json::from_str::<Value>(&req).unwrap(),
            json!({"jsonrpc":"2.0","id":"c-1","method":"session/new","params":{}})
        );
    }
}
