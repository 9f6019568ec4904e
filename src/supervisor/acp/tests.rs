use serde_json::{json, Value};

use super::*;

fn ready(client: &mut AcpClient) {
    let init: Value = serde_json::from_str(&client.handshake("h-1")).expect("json");
    assert_eq!((init["jsonrpc"].as_str(), init["method"].as_str()), (Some("2.0"), Some("initialize")));
    let Handshake::Next(lines) = client.handshake_answered(&Ok(json!({"protocolVersion":1})), "h-2") else {
        panic!("a second step")
    };
    assert_eq!(serde_json::from_str::<Value>(&lines[0]).expect("json")["method"], "session/new");
    let read = client.decode(r#"{"jsonrpc":"2.0","id":"h-2","result":{"sessionId":"s-1"}}"#);
    assert!(matches!(read.msg.kind, Kind::SystemInit { session_id: Some(ref s), .. } if s == "s-1"));
    assert_eq!(client.handshake_answered(&Ok(json!({})), "h-3"), Handshake::Ready);
}

#[test]
fn a_prompt_streams_chunks_and_its_answer_ends_the_turn() {
    let mut client = AcpClient::new(AgentKind::Gemini, &CliOptions::default(), "/p");
    ready(&mut client);
    let prompt: Value = serde_json::from_str(&client.user_turn("hi").expect("turn")).expect("json");
    let id = prompt["id"].as_str().expect("id").to_string();
    let chunk = client.decode(r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Hi"}}}}"#);
    assert_eq!(chunk.events, vec![AgentEvent::AssistantDelta { text: "Hi".into(), item_id: None }]);
    let answer = json!({"jsonrpc":"2.0","id":id,"result":{"stopReason":"end_turn","_meta":{"quota":{"token_count":{"input_tokens":5,"output_tokens":2}}}}});
    let done = client.decode(&answer.to_string());
    let Kind::Result(result) = done.msg.kind else { panic!("a result") };
    assert_eq!((result.text.as_deref(), result.input_tokens, result.output_tokens), (Some("Hi"), Some(5), Some(2)));
    assert!(matches!(done.decoded, Decoded::Event), "the prompt's answer is the adapter's own");
}

#[test]
fn permission_requests_map_to_rule_subjects_and_pick_the_reject_option() {
    let mut client = AcpClient::new(AgentKind::Gemini, &CliOptions::default(), "/p");
    ready(&mut client);
    let request = json!({"jsonrpc":"2.0","id":3,"method":"session/request_permission","params":{"sessionId":"s-1",
        "toolCall":{"toolCallId":"t1","title":"rm -f x","kind":"execute","rawInput":{"command":"rm -f x"}},
        "options":[{"optionId":"proceed_once","kind":"allow_once","name":"Allow"},{"optionId":"cancel","kind":"reject_once","name":"Reject"}]}});
    let read = client.decode(&request.to_string());
    let Decoded::Ask { request_id, ask: Ask::ToolCalls(calls) } = read.decoded else { panic!("an ask") };
    assert_eq!((calls[0].tool_name.as_str(), calls[0].input["command"].as_str()), ("Bash", Some("rm -f x")));
    assert_eq!(calls[0].agent, Some(AgentKind::Gemini));
    let answer: Value = serde_json::from_str(&client.answer(&request_id, &calls, None)).expect("json");
    assert_eq!(answer, json!({"jsonrpc":"2.0","id":3,"result":{"outcome":{"outcome":"selected","optionId":"cancel"}}}));

    let edit = json!({"jsonrpc":"2.0","id":4,"method":"session/request_permission","params":{"sessionId":"s-1",
        "toolCall":{"toolCallId":"t2","title":"Writing to a.txt","kind":"edit","locations":[{"path":"/p/a.txt"}],"rawInput":{"file_path":"/p/a.txt","content":"x"}},
        "options":[]}});
    let read = client.decode(&edit.to_string());
    let Decoded::Ask { ask: Ask::ToolCalls(calls), .. } = read.decoded else { panic!("an ask") };
    assert_eq!((calls[0].tool_name.as_str(), calls[0].input["file_path"].as_str()), ("Write", Some("/p/a.txt")));
    let answer: Value = serde_json::from_str(&client.answer("4", &calls, None)).expect("json");
    assert_eq!(answer["result"]["outcome"], json!({"outcome":"cancelled"}), "no option to reject with: cancelled");
}

#[test]
fn cancel_is_a_notification_and_a_loaded_history_is_not_news() {
    let options = CliOptions { resume_session_id: Some("s-9".into()), ..Default::default() };
    let mut client = AcpClient::new(AgentKind::Gemini, &options, "/p");
    client.handshake("h-1");
    let caps = json!({"agentCapabilities":{"loadSession":true}});
    let Handshake::Next(lines) = client.handshake_answered(&Ok(caps), "h-2") else { panic!("a second step") };
    assert_eq!(serde_json::from_str::<Value>(&lines[0]).expect("json")["method"], "session/load");
    let replayed = client.decode(r#"{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"old"}}}}"#);
    assert!(replayed.events.is_empty());
    assert_eq!(replayed.msg.message_type, "session/replay");
    let Ok(Outgoing::Done(Some(line))) = client.command(&Command::Interrupt, "c-1") else { panic!("a notification") };
    let cancel: Value = serde_json::from_str(&line).expect("json");
    assert_eq!((cancel["method"].as_str(), cancel.get("id")), (Some("session/cancel"), None));
    // An agent that named no models may be asked for any.
    let Ok(Outgoing::Request(line)) = client.command(&Command::SetModel("m".into()), "c-2") else {
        panic!("a request")
    };
    assert_eq!(serde_json::from_str::<Value>(&line).expect("json")["params"]["modelId"], "m");
    assert!(client.command(&Command::SetPermissionMode("yolo".into()), "c-3").is_err(), "no modes were offered");
}

#[test]
fn an_agent_that_cannot_load_sessions_fails_to_resume() {
    let options = CliOptions { resume_session_id: Some("s-9".into()), ..Default::default() };
    let mut client = AcpClient::new(AgentKind::Acp("other".into()), &options, "/p");
    client.handshake("h-1");
    assert!(matches!(client.handshake_answered(&Ok(json!({})), "h-2"), Handshake::Failed(_)));
}
