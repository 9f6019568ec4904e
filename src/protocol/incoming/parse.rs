//! From one line of text to an [`Incoming`]: the header alone for lines Conduit only relays,
//! the full JSON for the kinds it acts on.

use serde_json::Value;

use super::header::Header;
use super::{Incoming, Kind, LimitInfo, TurnResult};

/// Types whose fields Conduit acts on; every other type needs only its header.
fn needs_fields(message_type: &str) -> bool {
    matches!(
        message_type,
        "system" | "result" | "control_request" | "control_response" | "control_cancel_request" | "rate_limit_event"
    )
}

/// A `rate_limit_info` object.
fn limit_info(info: &Value) -> Option<LimitInfo> {
    Some(LimitInfo {
        status: str_field(info, "status")?,
        resets_at: info.get("resetsAt").and_then(Value::as_i64),
        limit_type: str_field(info, "rateLimitType"),
        utilization: info.get("utilization").and_then(Value::as_f64),
    })
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
                text: str_field(&json, "result"),
                api_error: str_field(&json, "api_error"),
                api_error_status: json.get("api_error_status").and_then(Value::as_i64),
            })
        }
        "rate_limit_event" => json.get("rate_limit_info").and_then(limit_info).map_or(Kind::Other, Kind::RateLimit),
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
