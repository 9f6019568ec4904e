use super::*;

#[test]
fn system_init_lifts_session_model_and_mode() {
    let m =
        parse(r#"{"type":"system","subtype":"init","session_id":"s1","model":"m","permissionMode":"plan","tools":[]}"#);
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
    let running = parse(r#"{"type":"system","subtype":"task_notification","data":{"taskId":"t1","status":"running"}}"#);
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
    let err = parse(r#"{"type":"control_response","response":{"subtype":"error","request_id":"c2","error":"nope"}}"#);
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
    assert_eq!((m.message_type.as_str(), m.message_subtype.as_deref(), m.kind), ("assistant", Some("x"), Kind::Other));
    // A non-string type is still a JSON object: kept, typed "unknown".
    assert_eq!(parse(r#"{"type":5}"#).message_type, "unknown");
    assert_eq!(parse(r#"{"type":null}"#).message_type, "unknown");
    for bad in ["not json", "[1,2]", "{\"type\":", "42", "{\"type\":\"assistant\"} trailing", "{\"type\":\"user\""] {
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
