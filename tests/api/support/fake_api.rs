//! A scriptable fake of the Anthropic Messages API on 127.0.0.1, for the real CLI.
//!
//! Each streaming request is answered by the first unused rule whose `when` text appears
//! anywhere in the request body (the CLI adds system reminders, so tests match on their own
//! words, never on the last message only); requests no rule matches get a short text reply.
//! Every request body is kept for assertions.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix_web::{web, App, HttpRequest, HttpResponse, HttpServer};
use serde_json::{json, Value};

#[derive(Debug, Clone)]
pub enum Reply {
    Text(String),
    /// A `tool_use` block; the CLI runs the tool and asks again with its result.
    ToolUse {
        name: String,
        input: Value,
    },
    /// Text streamed in `chunks` pieces, `delay` apart.
    Slow {
        text: String,
        chunks: usize,
        delay: Duration,
    },
    /// HTTP 500.
    ServerError,
    /// A text answer that reports `output_tokens` of usage (the CLI prices it: a big number
    /// makes an expensive turn).
    Expensive {
        text: String,
        output_tokens: u64,
    },
    /// HTTP 429 for the account's usage limit, resetting `resets_in` from now, with the
    /// headers a Claude gateway sends (`anthropic-ratelimit-unified-*`) and no retry allowed.
    /// The CLI reports it only in gateway mode ([`GATEWAY_TOKEN`]).
    UsageLimit {
        resets_in: Duration,
    },
}

/// A token whose claims say `"aud":"claude-gateway"` (unsigned: the CLI reads the claims
/// without checking a signature). Given to the CLI as `ANTHROPIC_AUTH_TOKEN`, it makes
/// Claude Code 2.1.330 read the usage-limit headers and report them (`rate_limit_event`,
/// `api_error: usage_limit_reached`), as it does for a subscription.
pub const GATEWAY_TOKEN: &str =
    "eyJhbGciOiAibm9uZSIsICJ0eXAiOiAiSldUIn0.eyJhdWQiOiAiY2xhdWRlLWdhdGV3YXkiLCAic3ViIjogImZha2UifQ.sig";

#[derive(Debug, Clone)]
struct Rule {
    when: String,
    reply: Reply,
    used: bool,
}

#[derive(Default)]
struct State {
    rules: Vec<Rule>,
    requests: Vec<String>,
    tool_ids: u64,
}

#[derive(Clone)]
pub struct FakeApi {
    pub base_url: String,
    state: Arc<Mutex<State>>,
}

impl FakeApi {
    pub async fn start() -> FakeApi {
        let state = Arc::new(Mutex::new(State::default()));
        let shared = web::Data::new(state.clone());
        let server = HttpServer::new(move || {
            App::new()
                .app_data(shared.clone())
                .app_data(web::PayloadConfig::new(64 * 1024 * 1024))
                .route("/v1/messages", web::post().to(messages))
                .default_service(web::to(other))
        })
        .workers(1)
        .disable_signals()
        .bind(("127.0.0.1", 0))
        .expect("bind fake API");
        let port = server.addrs()[0].port();
        // Runs until the test's runtime ends.
        actix_web::rt::spawn(server.run());
        FakeApi { base_url: format!("http://127.0.0.1:{port}"), state }
    }

    /// Answer the next request mentioning `when` with `reply` (once).
    pub fn on(&self, when: &str, reply: Reply) {
        self.state.lock().expect("fake api state").rules.push(Rule { when: when.to_string(), reply, used: false });
    }

    /// Bodies of every /v1/messages request so far.
    pub fn requests(&self) -> Vec<String> {
        self.state.lock().expect("fake api state").requests.clone()
    }
}

async fn other(req: HttpRequest) -> HttpResponse {
    match req.path() {
        "/api/hello" => HttpResponse::Ok().finish(),
        p if p.ends_with("count_tokens") => HttpResponse::Ok().json(json!({"input_tokens": 10})),
        _ => HttpResponse::NotFound()
            .json(json!({"type": "error", "error": {"type": "not_found_error", "message": "fake"}})),
    }
}

fn sse(event: &str, data: Value) -> String {
    format!("event: {event}\ndata: {data}\n\n")
}

async fn messages(state: web::Data<Arc<Mutex<State>>>, body: web::Bytes) -> HttpResponse {
    let text = String::from_utf8_lossy(&body).into_owned();
    let request: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    let streaming = request["stream"].as_bool().unwrap_or(false);
    let model = request["model"].as_str().unwrap_or("claude-fake").to_string();
    let (reply, tool_id) = {
        let mut s = state.lock().expect("fake api state");
        s.requests.push(text.clone());
        let picked = if streaming {
            s.rules.iter_mut().find(|r| !r.used && text.contains(&r.when)).map(|r| {
                r.used = true;
                r.reply.clone()
            })
        } else {
            None
        };
        s.tool_ids += 1;
        (picked.unwrap_or_else(|| Reply::Text("ok".to_string())), format!("toolu_fake_{}", s.tool_ids))
    };
    if let Reply::UsageLimit { resets_in } = reply {
        let reset = std::time::SystemTime::now() + resets_in;
        let epoch = reset.duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs_f64().ceil() as u64).unwrap_or(0);
        return HttpResponse::TooManyRequests()
            .insert_header(("x-should-retry", "false"))
            .insert_header(("anthropic-ratelimit-unified-status", "rejected"))
            .insert_header(("anthropic-ratelimit-unified-reset", epoch.to_string()))
            .insert_header(("anthropic-ratelimit-unified-representative-claim", "five_hour"))
            .json(json!({"type": "error", "error": {"type": "rate_limit_error", "message": "usage limit reached (fake)"}}));
    }
    if matches!(reply, Reply::ServerError) {
        return HttpResponse::InternalServerError()
            .json(json!({"type": "error", "error": {"type": "api_error", "message": "fake failure"}}));
    }
    if !streaming {
        let text = match &reply {
            Reply::Text(t) | Reply::Slow { text: t, .. } | Reply::Expensive { text: t, .. } => t.clone(),
            _ => "ok".to_string(),
        };
        return HttpResponse::Ok().json(json!({
            "id": "msg_fake", "type": "message", "role": "assistant", "model": model,
            "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": null,
            "usage": {"input_tokens": 10, "output_tokens": 5}
        }));
    }
    let start = sse(
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg_fake", "type": "message", "role": "assistant",
            "model": model, "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 10, "output_tokens": 1}}}),
    );
    let output_tokens = match &reply {
        Reply::Expensive { output_tokens, .. } => *output_tokens,
        _ => 5,
    };
    let finish = |stop_reason: &str| {
        sse(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null}, "usage": {"output_tokens": output_tokens}}),
        ) + &sse("message_stop", json!({"type": "message_stop"}))
    };
    let text_block = |pieces: Vec<String>| {
        let mut out = sse(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        );
        for p in pieces {
            out += &sse(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}}),
            );
        }
        out + &sse("content_block_stop", json!({"type": "content_block_stop", "index": 0}))
    };
    let events: Vec<(String, Duration)> = match reply {
        Reply::Text(t) | Reply::Expensive { text: t, .. } => {
            vec![(start + &text_block(vec![t]) + &finish("end_turn"), Duration::ZERO)]
        }
        Reply::ToolUse { name, input } => {
            let block = sse(
                "content_block_start",
                json!({"type": "content_block_start", "index": 0,
                    "content_block": {"type": "tool_use", "id": tool_id, "name": name, "input": {}}}),
            ) + &sse(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0,
                    "delta": {"type": "input_json_delta", "partial_json": input.to_string()}}),
            ) + &sse("content_block_stop", json!({"type": "content_block_stop", "index": 0}));
            vec![(start + &block + &finish("tool_use"), Duration::ZERO)]
        }
        Reply::Slow { text, chunks, delay } => {
            let mut out = vec![(
                start
                    + &sse(
                        "content_block_start",
                        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
                    ),
                Duration::ZERO,
            )];
            for i in 0..chunks.max(1) {
                out.push((
                    sse("content_block_delta", json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": format!("{text} {i} ")}})),
                    delay,
                ));
            }
            out.push((
                sse("content_block_stop", json!({"type": "content_block_stop", "index": 0})) + &finish("end_turn"),
                Duration::ZERO,
            ));
            out
        }
        Reply::ServerError | Reply::UsageLimit { .. } => unreachable!("answered above"),
    };
    let body = futures_util::stream::unfold(events.into_iter(), |mut it| async move {
        let (chunk, delay) = it.next()?;
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        Some((Ok::<_, actix_web::Error>(web::Bytes::from(chunk)), it))
    });
    HttpResponse::Ok().content_type("text/event-stream").insert_header(("cache-control", "no-cache")).streaming(body)
}
