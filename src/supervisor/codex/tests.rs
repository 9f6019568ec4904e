use serde_json::{json, Value};

use super::*;
use crate::domain::decision::DecisionPoint;
use crate::supervisor::adapter::Ask;

fn handshake(codex: &mut Codex) {
    let init: Value = serde_json::from_str(&codex.handshake("h-1")).expect("json");
    assert_eq!(init["method"], "initialize");
    assert!(init.get("jsonrpc").is_none(), "app-server lines carry no jsonrpc member");
    let Handshake::Next(lines) = codex.handshake_answered(&Ok(json!({})), "h-2") else { panic!("a second step") };
    assert_eq!(serde_json::from_str::<Value>(&lines[0]).expect("json")["method"], "initialized");
    let start: Value = serde_json::from_str(&lines[1]).expect("json");
    assert_eq!(start["method"], "thread/start");
    assert_eq!(start["params"]["approvalPolicy"], APPROVAL_POLICY);
    let read = codex.decode(r#"{"id":"h-2","result":{"thread":{"id":"th-1"},"model":"gpt-x"}}"#);
    assert!(matches!(read.msg.kind, Kind::SystemInit { session_id: Some(ref s), .. } if s == "th-1"));
    assert_eq!(codex.handshake_answered(&Ok(json!({})), "h-3"), Handshake::Ready);
}

#[test]
fn a_turn_streams_text_and_ends_with_its_tokens() {
    let mut codex = Codex::new(&CliOptions::default(), "/p");
    handshake(&mut codex);
    let turn: Value = serde_json::from_str(&codex.user_turn("hi").expect("turn")).expect("json");
    assert_eq!(turn["params"]["threadId"], "th-1");
    codex.decode(r#"{"method":"turn/started","params":{"threadId":"th-1","turn":{"id":"t-1"}}}"#);
    let delta = codex.decode(r#"{"method":"item/agentMessage/delta","params":{"delta":"Hel","itemId":"i1"}}"#);
    assert_eq!(delta.events, vec![AgentEvent::AssistantDelta { text: "Hel".into(), item_id: Some("i1".into()) }]);
    assert_eq!(delta.msg.message_type, "item/agentMessage/delta");
    codex.decode(r#"{"method":"item/completed","params":{"item":{"type":"agentMessage","id":"i1","text":"Hello"}}}"#);
    for _ in 0..2 {
        codex.decode(r#"{"method":"thread/tokenUsage/updated","params":{"tokenUsage":{"last":{"inputTokens":10,"outputTokens":3},"total":{}}}}"#);
    }
    let done = codex.decode(r#"{"method":"turn/completed","params":{"turn":{"id":"t-1","status":"completed"}}}"#);
    let Kind::Result(result) = done.msg.kind else { panic!("a result") };
    assert_eq!((result.input_tokens, result.output_tokens, result.is_error), (Some(20), Some(6), false));
    assert_eq!(result.text.as_deref(), Some("Hello"));
}

#[test]
fn approvals_become_rule_subjects_and_answers_echo_the_id() {
    let mut codex = Codex::new(&CliOptions::default(), "/p");
    handshake(&mut codex);
    let read = codex.decode(
        r#"{"id":0,"method":"item/commandExecution/requestApproval","params":{"itemId":"c1","command":"rm -f x","cwd":"/p"}}"#,
    );
    let Decoded::Ask { request_id, ask: Ask::ToolCalls(calls) } = read.decoded else { panic!("an ask") };
    assert_eq!(request_id, "0");
    assert_eq!((calls[0].tool_name.as_str(), calls[0].input["command"].as_str()), ("Bash", Some("rm -f x")));
    assert_eq!(calls[0].point, DecisionPoint::CodexCommandApproval);
    let answer: Value = serde_json::from_str(&codex.answer("0", &calls, None)).expect("json");
    assert_eq!(answer, json!({"id":0,"result":{"decision":"decline"}}));

    codex.decode(r#"{"method":"item/started","params":{"item":{"type":"fileChange","id":"f1","changes":[{"path":"new.txt","kind":{"type":"add"},"diff":""},{"path":"/p/old.txt","kind":{"type":"update"},"diff":""}]}}}"#);
    let read = codex.decode(r#"{"id":"a","method":"item/fileChange/requestApproval","params":{"itemId":"f1"}}"#);
    let Decoded::Ask { ask: Ask::ToolCalls(calls), .. } = read.decoded else { panic!("an ask") };
    let subjects: Vec<_> = calls.iter().map(|c| (c.tool_name.clone(), c.input["file_path"].clone())).collect();
    assert_eq!(subjects, vec![("Write".into(), json!("/p/new.txt")), ("Edit".into(), json!("/p/old.txt"))]);
}

#[test]
fn interrupt_needs_a_running_turn_and_modes_are_refused() {
    let mut codex = Codex::new(&CliOptions::default(), "/p");
    handshake(&mut codex);
    assert_eq!(codex.command(&Command::Interrupt, "c-1"), Ok(Outgoing::Done(None)));
    codex.decode(r#"{"method":"turn/started","params":{"turn":{"id":"t-9"}}}"#);
    let Ok(Outgoing::Request(line)) = codex.command(&Command::Interrupt, "c-2") else { panic!("a request") };
    assert_eq!(serde_json::from_str::<Value>(&line).expect("json")["params"]["turnId"], "t-9");
    let done = codex.decode(r#"{"method":"turn/completed","params":{"turn":{"id":"t-9","status":"interrupted"}}}"#);
    assert!(done.events.iter().any(|e| matches!(e, AgentEvent::TurnResult { status: TurnStatus::Interrupted, .. })));
    assert!(codex.command(&Command::SetPermissionMode("plan".into()), "c-3").is_err());
    assert_eq!(codex.command(&Command::SetModel("gpt-y".into()), "c-4"), Ok(Outgoing::Done(None)));
    let turn: Value = serde_json::from_str(&codex.user_turn("again").expect("turn")).expect("json");
    assert_eq!(turn["params"]["model"], "gpt-y");
}

#[test]
fn a_resumed_thread_is_resumed_not_started() {
    let options = CliOptions { resume_session_id: Some("th-7".into()), ..Default::default() };
    let mut codex = Codex::new(&options, "/p");
    codex.handshake("h-1");
    let Handshake::Next(lines) = codex.handshake_answered(&Ok(json!({})), "h-2") else { panic!("a second step") };
    let resume: Value = serde_json::from_str(&lines[1]).expect("json");
    assert_eq!(
        (resume["method"].as_str(), resume["params"]["threadId"].as_str()),
        (Some("thread/resume"), Some("th-7"))
    );
}
