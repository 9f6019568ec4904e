//! Scriptable fakes of the OpenAI Responses API (for Codex) and the Gemini API (for Gemini
//! CLI) on 127.0.0.1: the model side of the other agent CLIs, as `fake_api` is Claude's.
//!
//! Each streaming request is answered by the first unused rule whose `when` text appears in
//! the request body (both CLIs re-send the whole history, so a rule answers once and the
//! request after the tool's result gets the default text); every request body is kept.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix_web::{web, App, HttpRequest, HttpResponse, HttpServer};
use serde_json::{json, Value};

#[derive(Debug, Clone)]
pub enum Reply {
    Text(String),
    /// A shell command call (`exec_command` for Codex, `run_shell_command` for Gemini);
    /// `escalated` asks Codex to run it outside its sandbox.
    Shell {
        command: String,
        escalated: bool,
    },
    /// Text in `chunks` pieces, `delay` apart (a turn long enough to interrupt).
    Slow {
        text: String,
        chunks: usize,
        delay: Duration,
    },
}

/// Which API the fake speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    OpenAi,
    Gemini,
}

#[derive(Default)]
struct State {
    rules: Vec<(String, Reply, bool)>,
    requests: Vec<String>,
    calls: u64,
}

#[derive(Clone)]
pub struct FakeModel {
    pub base_url: String,
    state: Arc<Mutex<State>>,
}

/// What the default answer says.
pub const DEFAULT_TEXT: &str = "All done.";

impl FakeModel {
    pub async fn start(dialect: Dialect) -> FakeModel {
        let state = Arc::new(Mutex::new(State::default()));
        let shared = web::Data::new((state.clone(), dialect));
        let server = HttpServer::new(move || {
            App::new()
                .app_data(shared.clone())
                .app_data(web::PayloadConfig::new(64 * 1024 * 1024))
                .default_service(web::to(answer))
        })
        .workers(1)
        .disable_signals()
        .bind(("127.0.0.1", 0))
        .expect("bind fake model API");
        let port = server.addrs()[0].port();
        actix_web::rt::spawn(server.run());
        FakeModel { base_url: format!("http://127.0.0.1:{port}"), state }
    }

    pub fn on(&self, when: &str, reply: Reply) {
        self.state.lock().expect("fake state").rules.push((when.to_string(), reply, false));
    }

    pub fn requests(&self) -> Vec<String> {
        self.state.lock().expect("fake state").requests.clone()
    }
}

type Shared = web::Data<(Arc<Mutex<State>>, Dialect)>;

async fn answer(shared: Shared, req: HttpRequest, body: web::Bytes) -> HttpResponse {
    let (state, dialect) = (&shared.0, shared.1);
    let path = req.path().to_string();
    let text = String::from_utf8_lossy(&body).into_owned();
    let streaming = match dialect {
        Dialect::OpenAi => path.ends_with("/responses"),
        Dialect::Gemini => path.contains(":streamGenerateContent"),
    };
    if dialect == Dialect::Gemini && path.contains(":countTokens") {
        return HttpResponse::Ok().json(json!({"totalTokens": 10}));
    }
    let (reply, call) = {
        let mut s = state.lock().expect("fake state");
        s.requests.push(text.clone());
        s.calls += 1;
        let picked = streaming
            .then(|| {
                s.rules.iter_mut().find(|(when, _, used)| !used && text.contains(when.as_str())).map(|rule| {
                    rule.2 = true;
                    rule.1.clone()
                })
            })
            .flatten();
        (picked.unwrap_or_else(|| Reply::Text(DEFAULT_TEXT.to_string())), s.calls)
    };
    let events = match dialect {
        Dialect::OpenAi if streaming => openai_events(reply, call),
        Dialect::Gemini if path.contains(":generateContent") => {
            let text = match reply {
                Reply::Text(t) | Reply::Slow { text: t, .. } => t,
                Reply::Shell { .. } => DEFAULT_TEXT.to_string(),
            };
            return HttpResponse::Ok().json(gemini_chunk(vec![json!({"text": text})], true));
        }
        Dialect::Gemini if streaming => gemini_events(reply),
        _ => return HttpResponse::NotFound().json(json!({"error": {"message": format!("fake: no {path}")}})),
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

fn openai_sse(event: Value) -> String {
    format!("event: {}\ndata: {event}\n\n", event["type"].as_str().unwrap_or(""))
}

fn openai_events(reply: Reply, call: u64) -> Vec<(String, Duration)> {
    let id = format!("resp_{call}");
    let usage = json!({"input_tokens": 100, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 20,
        "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 120});
    let created = openai_sse(json!({"type": "response.created", "response": {"id": id}}));
    let completed = openai_sse(json!({"type": "response.completed", "response": {"id": id, "usage": usage}}));
    let message = |pieces: Vec<String>, delay: Duration| {
        let item = format!("msg_{call}");
        let whole: String = pieces.concat();
        let mut out = vec![(
            created.clone()
                + &openai_sse(json!({"type": "response.output_item.added", "output_index": 0,
                    "item": {"type": "message", "id": item, "role": "assistant", "content": []}})),
            Duration::ZERO,
        )];
        for piece in pieces {
            let delta = json!({"type": "response.output_text.delta", "item_id": item, "output_index": 0, "content_index": 0, "delta": piece});
            out.push((openai_sse(delta), delay));
        }
        let done = json!({"type": "response.output_item.done", "output_index": 0, "item": {"type": "message", "id": item,
            "role": "assistant", "content": [{"type": "output_text", "text": whole, "annotations": []}]}});
        out.push((openai_sse(done) + &completed, Duration::ZERO));
        out
    };
    match reply {
        Reply::Text(text) => message(split(&text, 3), Duration::ZERO),
        Reply::Slow { text, chunks, delay } => message((0..chunks).map(|i| format!("{text} {i} ")).collect(), delay),
        Reply::Shell { command, escalated } => {
            let mut args = json!({"cmd": command, "yield_time_ms": 2000});
            if escalated {
                args["sandbox_permissions"] = json!("require_escalated");
                args["justification"] = json!("it needs to");
            }
            let call_id = format!("call_{call}");
            let item = json!({"type": "response.output_item.done", "output_index": 0, "item": {"type": "function_call",
                "id": format!("fc_{call_id}"), "call_id": call_id, "name": "exec_command", "arguments": args.to_string(),
                "status": "completed"}});
            vec![(created + &openai_sse(item) + &completed, Duration::ZERO)]
        }
    }
}

fn gemini_chunk(parts: Vec<Value>, last: bool) -> Value {
    let mut candidate = json!({"content": {"role": "model", "parts": parts}, "index": 0});
    let mut chunk = json!({"candidates": [], "modelVersion": "gemini-2.5-flash"});
    if last {
        candidate["finishReason"] = json!("STOP");
        chunk["usageMetadata"] = json!({"promptTokenCount": 100, "candidatesTokenCount": 20, "totalTokenCount": 120});
    }
    chunk["candidates"] = json!([candidate]);
    chunk
}

fn gemini_events(reply: Reply) -> Vec<(String, Duration)> {
    let data = |v: Value| format!("data: {v}\n\n");
    let texts = |pieces: Vec<String>, delay: Duration| {
        let n = pieces.len();
        pieces
            .into_iter()
            .enumerate()
            .map(|(i, p)| {
                (data(gemini_chunk(vec![json!({"text": p})], i + 1 == n)), if i == 0 { Duration::ZERO } else { delay })
            })
            .collect()
    };
    match reply {
        Reply::Text(text) => texts(split(&text, 3), Duration::ZERO),
        Reply::Slow { text, chunks, delay } => texts((0..chunks).map(|i| format!("{text} {i} ")).collect(), delay),
        Reply::Shell { command, .. } => {
            let call = json!({"functionCall": {"name": "run_shell_command", "args": {"command": command, "description": "as asked"}}});
            vec![(data(gemini_chunk(vec![call], true)), Duration::ZERO)]
        }
    }
}

/// `text` in up to `n` pieces (streamed as deltas).
fn split(text: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let size = chars.len().div_ceil(n.max(1)).max(1);
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}
