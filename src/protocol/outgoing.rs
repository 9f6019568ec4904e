//! Lines Conduit writes to the CLI, one JSON object each (no trailing newline here).

use serde_json::{json, Value};

/// The callback id Conduit registers for its `PreToolUse` hook.
pub const PRE_TOOL_USE_CALLBACK: &str = "hook_pre_0";

pub fn user_turn(content: &str) -> String {
    json!({
        "type": "user",
        "message": {"role": "user", "content": content},
        "parent_tool_use_id": null,
        "session_id": ""
    })
    .to_string()
}

/// What the user said in a line [`user_turn`] made (`None` for any other line).
pub fn user_turn_content(line: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(line).ok()?;
    Some(value.get("message")?.get("content")?.as_str()?.to_string())
}

/// A control request; `request` must hold its `subtype`.
pub fn control_request(request_id: &str, request: Value) -> String {
    json!({"type": "control_request", "request_id": request_id, "request": request}).to_string()
}

/// The readiness handshake, registering a `PreToolUse` hook so every tool call is seen.
pub fn initialize(request_id: &str) -> String {
    control_request(
        request_id,
        json!({
            "subtype": "initialize",
            "hooks": {"PreToolUse": [{"matcher": null, "hookCallbackIds": [PRE_TOOL_USE_CALLBACK]}]}
        }),
    )
}

pub fn interrupt(request_id: &str) -> String {
    control_request(request_id, json!({"subtype": "interrupt"}))
}

pub fn set_model(request_id: &str, model: &str) -> String {
    control_request(request_id, json!({"subtype": "set_model", "model": model}))
}

pub fn set_permission_mode(request_id: &str, mode: &str) -> String {
    control_request(request_id, json!({"subtype": "set_permission_mode", "mode": mode}))
}

pub fn control_success(request_id: &str, response: Value) -> String {
    json!({"type": "control_response", "response": {"subtype": "success", "request_id": request_id, "response": response}})
        .to_string()
}

/// The answer to a CLI request Conduit cannot serve: never leave the CLI waiting.
pub fn control_error(request_id: &str, error: &str) -> String {
    json!({"type": "control_response", "response": {"subtype": "error", "request_id": request_id, "error": error}})
        .to_string()
}

/// The answer to a `PreToolUse` hook callback; `updated_input` replaces the tool's input.
pub fn hook_decision(request_id: &str, allow: bool, reason: &str, updated_input: Option<&Value>) -> String {
    let mut output = json!({
        "hookEventName": "PreToolUse",
        "permissionDecision": if allow { "allow" } else { "deny" },
        "permissionDecisionReason": reason
    });
    if let (Some(input), Some(map)) = (updated_input, output.as_object_mut()) {
        map.insert("updatedInput".to_string(), input.clone());
    }
    control_success(request_id, json!({"hookSpecificOutput": output}))
}

/// The answer to `can_use_tool`.
pub fn tool_permission(request_id: &str, allow: bool, updated_input: &Value, message: &str) -> String {
    let response = if allow {
        json!({"behavior": "allow", "updatedInput": updated_input})
    } else {
        json!({"behavior": "deny", "message": message})
    };
    control_success(request_id, response)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(line: &str) -> Value {
        assert!(!line.contains('\n'), "one line");
        serde_json::from_str(line).expect("valid JSON")
    }

    #[test]
    fn shapes_match_the_protocol_notes() {
        let u = parsed(&user_turn("- hi\nthere"));
        assert_eq!(u["message"]["content"], "- hi\nthere");
        assert_eq!(u["type"], "user");
        assert_eq!(user_turn_content(&user_turn("- hi\nthere")).as_deref(), Some("- hi\nthere"));
        assert_eq!(user_turn_content(r#"{"type":"user","message":{"content":[]}}"#), None);
        assert_eq!(user_turn_content("not json"), None);

        let i = parsed(&initialize("init1"));
        assert_eq!(i["request"]["hooks"]["PreToolUse"][0]["hookCallbackIds"][0], PRE_TOOL_USE_CALLBACK);

        let h = parsed(&hook_decision("r", false, "rule x", None));
        assert_eq!(h["response"]["response"]["hookSpecificOutput"]["permissionDecision"], "deny");
        assert_eq!(h["response"]["request_id"], "r");
        let u = parsed(&hook_decision("r", true, "ok", Some(&json!({"command": "echo safe"}))));
        assert_eq!(u["response"]["response"]["hookSpecificOutput"]["updatedInput"]["command"], "echo safe");

        let a = parsed(&tool_permission("r", true, &json!({"command": "ls"}), ""));
        assert_eq!(a["response"]["response"]["updatedInput"]["command"], "ls");
        let d = parsed(&tool_permission("r", false, &Value::Null, "no"));
        assert_eq!(d["response"]["response"], json!({"behavior": "deny", "message": "no"}));

        let e = parsed(&control_error("q", "unsupported"));
        assert_eq!(e["response"], json!({"subtype": "error", "request_id": "q", "error": "unsupported"}));
        assert_eq!(parsed(&set_permission_mode("m", "plan"))["request"]["mode"], "plan");
    }
}
