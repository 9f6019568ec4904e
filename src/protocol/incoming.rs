//! Lines from the CLI. Every line is kept raw; the fields Conduit acts on are lifted out.
//! Unknown types and unknown fields are normal (they appear between CLI versions), never errors.

use std::borrow::Cow;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::Value;

#[derive(Debug, Clone, PartialEq)]
pub struct TurnResult {
    pub subtype: Option<String>,
    pub is_error: bool,
    /// Cumulative for the CLI process, not per turn.
    pub total_cost_usd: Option<f64>,
    /// This turn's tokens (`usage`): per turn, not cumulative.
    pub input_tokens: Option<i64>,
    pub output_tokens: Option<i64>,
    /// Cumulative tokens for the process, summed over `modelUsage` (newer CLIs send it).
    pub cumulative_tokens: Option<(i64, i64)>,
    pub session_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    /// `system`/`init`, sent before each turn.
    SystemInit {
        session_id: Option<String>,
        model: Option<String>,
        permission_mode: Option<String>,
    },
    /// `system`/`status`: a mode change, or `"status":"compacting"` (and back to null).
    SystemStatus {
        status: Option<String>,
        permission_mode: Option<String>,
    },
    Result(TurnResult),
    /// `system`/`task_started`: a background task began (the CLI keeps working after the
    /// turn's result until it reports the task's end). `None` when no id could be found.
    TaskStarted {
        task_id: Option<String>,
    },
    /// `system`/`task_notification`: news of a background task; `finished` unless its status
    /// says it still runs (an unknown status counts as the end, so no task is held forever).
    TaskNotification {
        task_id: Option<String>,
        finished: bool,
    },
    /// The CLI asks something (`can_use_tool`, `hook_callback`, ...); it waits for an answer.
    ControlRequest {
        request_id: String,
        subtype: String,
        request: Value,
    },
    /// The CLI answers one of Conduit's requests.
    ControlResponse {
        request_id: String,
        outcome: Result<Value, String>,
    },
    /// The CLI gave up on one of its requests: send nothing for it.
    ControlCancel {
        request_id: String,
    },
    /// Anything else that is valid JSON (`assistant`, `user`, `stream_event`, unknown kinds...).
    Other,
    /// Not JSON, or JSON that is not an object.
    Invalid {
        error: String,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Incoming {
    /// The `type` field, or `invalid` for a line that is not a JSON object.
    pub message_type: String,
    pub message_subtype: Option<String>,
    pub kind: Kind,
}

/// The two fields every line is routed by. Parsing only these (the rest is skipped, though
/// still checked to be valid JSON) spares the hot path, `stream_event` and `assistant` lines,
/// from building a whole JSON tree per line.
///
/// Deserialized by hand from a JSON object only: a derived struct would also accept a JSON
/// array by position (`["assistant","x"]` would become type `assistant`, `[]` type `unknown`),
/// and a line that is not an object must be `invalid`.
struct Header<'a> {
    kind: Option<Cow<'a, str>>,
    subtype: Option<Cow<'a, str>>,
}

impl<'de> Deserialize<'de> for Header<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ObjectOnly;
        impl<'de> Visitor<'de> for ObjectOnly {
            type Value = Header<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Header<'de>, A::Error> {
                let mut header = Header { kind: None, subtype: None };
                // Keys are read as text (borrowed when they hold no escape); a repeated key
                // keeps its last value, as the full parse does.
                while let Some(key) = map.next_key::<Text<'de>>()? {
                    match key.0.as_ref() {
                        "type" => header.kind = map.next_value::<Option<Text<'de>>>()?.map(|t| t.0),
                        "subtype" => header.subtype = map.next_value::<Option<Text<'de>>>()?.map(|t| t.0),
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(header)
            }
        }
        deserializer.deserialize_map(ObjectOnly)
    }
}

/// A JSON string, borrowed from the line when it holds no escape.
struct Text<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TextVisitor;
        impl<'de> Visitor<'de> for TextVisitor {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(v.to_string())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(v)))
            }
        }
        deserializer.deserialize_str(TextVisitor)
    }
}

/// Types whose fields Conduit acts on; every other type needs only its header.
fn needs_fields(message_type: &str) -> bool {
    matches!(message_type, "system" | "result" | "control_request" | "control_response" | "control_cancel_request")
}

fn str_field(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_string)
}

pub fn parse(line: &str) -> Incoming {
    // A header that parses but is not a string-typed object falls through to the full parse,
    // which explains what is wrong with the line.
    if let Ok(header) = serde_json::from_str::<Header>(line) {
        let message_type = header.kind.as_deref().unwrap_or("unknown");
        if !needs_fields(message_type) {
            return Incoming {
                message_type: message_type.to_string(),
                message_subtype: header.subtype.map(|s| s.into_owned()),
                kind: Kind::Other,
            };
        }
    }
    let json: Value = match serde_json::from_str(line) {
        Ok(v @ Value::Object(_)) => v,
        Ok(_) => return invalid("the line is JSON but not an object".to_string()),
        Err(e) => return invalid(e.to_string()),
    };
    let message_type = str_field(&json, "type").unwrap_or_else(|| "unknown".to_string());
    let mut message_subtype = str_field(&json, "subtype");
    let kind = match message_type.as_str() {
        "system" => match message_subtype.as_deref() {
            Some("init") => Kind::SystemInit {
                session_id: str_field(&json, "session_id"),
                model: str_field(&json, "model"),
                permission_mode: str_field(&json, "permissionMode"),
            },
            Some("status") => Kind::SystemStatus {
                status: str_field(&json, "status"),
                permission_mode: str_field(&json, "permissionMode"),
            },
            Some("task_started") => Kind::TaskStarted { task_id: task_field(&json, &["task_id", "taskId", "id"]) },
            Some("task_notification") => {
                let status = task_field(&json, &["status", "state"]);
                Kind::TaskNotification {
                    task_id: task_field(&json, &["task_id", "taskId", "id"]),
                    finished: !status.is_some_and(|s| {
                        matches!(s.to_ascii_lowercase().as_str(), "running" | "pending" | "in_progress" | "started")
                    }),
                }
            }
            _ => Kind::Other,
        },
        "result" => {
            let usage = json.get("usage");
            let tokens = |k: &str| usage.and_then(|u| u.get(k)).and_then(Value::as_i64);
            Kind::Result(TurnResult {
                subtype: message_subtype.clone(),
                is_error: json.get("is_error").and_then(Value::as_bool).unwrap_or(false),
                total_cost_usd: json.get("total_cost_usd").and_then(Value::as_f64),
                input_tokens: tokens("input_tokens"),
                output_tokens: tokens("output_tokens"),
                cumulative_tokens: json.get("modelUsage").and_then(Value::as_object).map(|models| {
                    let sum = |k: &str| models.values().filter_map(|m| m.get(k).and_then(Value::as_i64)).sum::<i64>();
                    (sum("inputTokens"), sum("outputTokens"))
                }),
                session_id: str_field(&json, "session_id"),
            })
        }
        "control_request" => {
            let request = json.get("request").cloned().unwrap_or(Value::Null);
            let subtype = str_field(&request, "subtype").unwrap_or_default();
            message_subtype = Some(subtype.clone()).filter(|s| !s.is_empty());
            match str_field(&json, "request_id") {
                Some(request_id) => Kind::ControlRequest { request_id, subtype, request },
                None => Kind::Other,
            }
        }
        "control_response" => {
            let response = json.get("response").cloned().unwrap_or(Value::Null);
            let subtype = str_field(&response, "subtype");
            message_subtype = subtype.clone();
            match str_field(&response, "request_id") {
                Some(request_id) => {
                    let outcome = if subtype.as_deref() == Some("error") {
                        Err(str_field(&response, "error").unwrap_or_else(|| "the CLI reported an error".to_string()))
                    } else {
                        Ok(response.get("response").cloned().unwrap_or(Value::Null))
                    };
                    Kind::ControlResponse { request_id, outcome }
                }
                None => Kind::Other,
            }
        }
        "control_cancel_request" => match str_field(&json, "request_id") {
            Some(request_id) => Kind::ControlCancel { request_id },
            None => Kind::Other,
        },
        _ => Kind::Other,
    };
    Incoming { message_type, message_subtype, kind }
}

/// The first of `keys` found at the top level, or inside a `task`/`data` object: the
/// background-task messages are not documented, so their field names are read leniently.
fn task_field(json: &Value, keys: &[&str]) -> Option<String> {
    let scopes = [Some(json), json.get("task"), json.get("data")];
    scopes.into_iter().flatten().find_map(|scope| {
        keys.iter().find_map(|k| match scope.get(*k) {
            Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
            Some(Value::Number(n)) => Some(n.to_string()),
            _ => None,
        })
    })
}

fn invalid(error: String) -> Incoming {
    Incoming { message_type: "invalid".to_string(), message_subtype: None, kind: Kind::Invalid { error } }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_init_lifts_session_model_and_mode() {
        let m = parse(
            r#"{"type":"system","subtype":"init","session_id":"s1","model":"m","permissionMode":"plan","tools":[]}"#,
        );
        assert_eq!(m.message_type, "system");
        assert_eq!(m.message_subtype.as_deref(), Some("init"));
        assert_eq!(
            m.kind,
            Kind::SystemInit {
                session_id: Some("s1".into()),
                model: Some("m".into()),
                permission_mode: Some("plan".into())
            }
        );
    }

    #[test]
    fn background_tasks_are_read_leniently() {
        let started = parse(r#"{"type":"system","subtype":"task_started","task_id":"t1","description":"x"}"#);
        assert_eq!(started.kind, Kind::TaskStarted { task_id: Some("t1".into()) });
        let nested = parse(r#"{"type":"system","subtype":"task_started","task":{"id":"t2"}}"#);
        assert_eq!(nested.kind, Kind::TaskStarted { task_id: Some("t2".into()) });
        let done = parse(r#"{"type":"system","subtype":"task_notification","task_id":"t1","status":"completed"}"#);
        assert_eq!(done.kind, Kind::TaskNotification { task_id: Some("t1".into()), finished: true });
        let running =
            parse(r#"{"type":"system","subtype":"task_notification","data":{"taskId":"t1","status":"running"}}"#);
        assert_eq!(running.kind, Kind::TaskNotification { task_id: Some("t1".into()), finished: false });
        let unknown = parse(r#"{"type":"system","subtype":"task_notification","task_id":7}"#);
        assert_eq!(unknown.kind, Kind::TaskNotification { task_id: Some("7".into()), finished: true });
    }

    #[test]
    fn results_carry_cumulative_totals() {
        let m = parse(
            r#"{"type":"result","subtype":"success","is_error":false,"total_cost_usd":0.000296,"usage":{"input_tokens":20,"output_tokens":7},"session_id":"s","new_field":1}"#,
        );
        let Kind::Result(r) = m.kind else { panic!("a result") };
        assert_eq!(r.total_cost_usd, Some(0.000296));
        assert_eq!((r.input_tokens, r.output_tokens), (Some(20), Some(7)));
        assert_eq!(r.cumulative_tokens, None);
        assert!(!r.is_error);
        // Seen from 2.1.330 on a second turn: `usage` is the turn's, `modelUsage` the process's.
        let m = parse(
            r#"{"type":"result","total_cost_usd":0.00028,"usage":{"input_tokens":10,"output_tokens":5},"modelUsage":{"a":{"inputTokens":20,"outputTokens":10},"b":{"inputTokens":1,"outputTokens":2}}}"#,
        );
        let Kind::Result(r) = m.kind else { panic!("a result") };
        assert_eq!(r.cumulative_tokens, Some((21, 12)));
    }

    #[test]
    fn control_messages_both_ways() {
        let m = parse(
            r#"{"type":"control_request","request_id":"r1","request":{"subtype":"can_use_tool","tool_name":"Bash","input":{"command":"ls"}}}"#,
        );
        assert_eq!(m.message_subtype.as_deref(), Some("can_use_tool"));
        let Kind::ControlRequest { request_id, subtype, request } = m.kind else { panic!("request") };
        assert_eq!((request_id.as_str(), subtype.as_str()), ("r1", "can_use_tool"));
        assert_eq!(request["input"]["command"], "ls");

        let ok = parse(
            r#"{"type":"control_response","response":{"subtype":"success","request_id":"c1","response":{"commands":[]}}}"#,
        );
        assert!(matches!(ok.kind, Kind::ControlResponse { ref request_id, outcome: Ok(_) } if request_id == "c1"));
        let err =
            parse(r#"{"type":"control_response","response":{"subtype":"error","request_id":"c2","error":"nope"}}"#);
        assert_eq!(err.kind, Kind::ControlResponse { request_id: "c2".into(), outcome: Err("nope".into()) });

        let cancel = parse(r#"{"type":"control_cancel_request","request_id":"r9"}"#);
        assert_eq!(cancel.kind, Kind::ControlCancel { request_id: "r9".into() });
    }

    #[test]
    fn unknown_and_invalid_lines_are_kept_not_errors() {
        let m = parse(r#"{"type":"rate_limit_event","rate_limit_info":{}}"#);
        assert_eq!((m.message_type.as_str(), m.kind), ("rate_limit_event", Kind::Other));
        let m = parse(r#"{"no_type":true}"#);
        assert_eq!(m.message_type, "unknown");
        let m = parse(r#"{"type":"assistant","subtype":"x","message":{"content":[{"type":"text","text":"a\"b"}]}}"#);
        assert_eq!(
            (m.message_type.as_str(), m.message_subtype.as_deref(), m.kind),
            ("assistant", Some("x"), Kind::Other)
        );
        // A non-string type is still a JSON object: kept, typed "unknown".
        assert_eq!(parse(r#"{"type":5}"#).message_type, "unknown");
        assert_eq!(parse(r#"{"type":null}"#).message_type, "unknown");
        for bad in ["not json", "[1,2]", "{\"type\":", "42", "{\"type\":\"assistant\"} trailing", "{\"type\":\"user\""]
        {
            let m = parse(bad);
            assert_eq!(m.message_type, "invalid", "{bad}");
            assert!(matches!(m.kind, Kind::Invalid { .. }));
        }
    }

    /// Issue 13: a derived header read a JSON array by position, so `["assistant","x"]` was
    /// stored and relayed as an `assistant` line. Whatever is not a JSON object is `invalid`.
    #[test]
    fn lines_that_are_not_objects_are_invalid() {
        for line in [
            r#"["assistant","x"]"#,
            r#"["result","success"]"#,
            r#"["control_request"]"#,
            "[]",
            "[[]]",
            r#"[["assistant","x"]]"#,
            r#"[{"type":"assistant"}]"#,
            "  [\"assistant\",\"x\"]",
            "\t\r\n []",
            "42",
            "-1.5e3",
            r#""assistant""#,
            "  \"system\"",
            "null",
            "true",
            "false",
            "",
            "   ",
        ] {
            let m = parse(line);
            assert_eq!(m.message_type, "invalid", "{line:?}");
            assert_eq!(m.message_subtype, None, "{line:?}");
            assert!(matches!(m.kind, Kind::Invalid { .. }), "{line:?}");
        }
    }

    #[test]
    fn objects_still_route_by_header_with_leading_whitespace_and_escapes() {
        let m = parse("  \t{\"type\":\"assistant\",\"subtype\":\"x\"}");
        assert_eq!((m.message_type.as_str(), m.message_subtype.as_deref()), ("assistant", Some("x")));
        // Escaped keys and values are read like plain ones.
        let m = parse(r#"{"\u0074ype":"stream\u005fevent","n":[1,{"type":"result"}]}"#);
        assert_eq!((m.message_type.as_str(), m.kind), ("stream_event", Kind::Other));
        // A repeated key: the last one wins, as in the full parse.
        let m = parse(r#"{"type":"user","type":"assistant"}"#);
        assert_eq!(m.message_type, "assistant");
        // Routing by header still sends the acted-on types through the full parse.
        let m = parse(r#" {"type":"control_cancel_request","request_id":"r1"}"#);
        assert_eq!(m.kind, Kind::ControlCancel { request_id: "r1".into() });
        assert_eq!(parse("{}").message_type, "unknown");
    }
}
