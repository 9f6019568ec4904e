//! Secret redaction end to end: the real CLI, a fake model that answers with one secret of each
//! kind and a command whose output holds more. The CLI gets every secret intact (the model
//! receives them back from it); nothing Conduit keeps or sends on holds one: not the SQLite file
//! (its raw bytes, WAL included), not the SSE or WebSocket frames, not a webhook's bodies, not
//! the service's log, not an API answer.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use serde_json::json;

use crate::streams::ws_connect;
use crate::support::fake_api::{FakeApi, Reply};
use crate::support::receiver::receiver;
use crate::support::service::{real_cli, ServiceConfig, TestService};

const READY: Duration = Duration::from_secs(60);

/// Deterministic characters that look random (secret rules want entropy), from `seed`.
pub(crate) fn noise(seed: u64, len: usize, alphabet: &str) -> String {
    let chars: Vec<char> = alphabet.chars().collect();
    let mut x = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            chars[(x % chars.len() as u64) as usize]
        })
        .collect()
}

pub(crate) const ALNUM: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const UPPER: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
const LOWER: &str = "abcdefghijklmnopqrstuvwxyz";

/// One secret of each kind the issue names, built at run time (the source holds none), with
/// the text it is embedded in and the part that must never be found.
fn secrets() -> Vec<(&'static str, String, String)> {
    let mut all = Vec::new();
    let mut put = |kind: &'static str, line: String, secret: String| all.push((kind, line, secret));
    let github = format!("ghp_{}", noise(1, 36, ALNUM));
    put("github", format!("the token is {github}"), github);
    let aws = format!("AKIA{}", noise(2, 16, UPPER));
    put("aws", format!("aws_access_key_id = {aws}"), aws);
    let anthropic = format!("sk-ant-api03-{}AA", noise(3, 93, ALNUM));
    put("anthropic", format!("ANTHROPIC_API_KEY={anthropic}"), anthropic);
    let openai = format!("sk-proj-{}T3BlbkFJ{}", noise(4, 64, ALNUM), noise(5, 64, ALNUM));
    put("openai", format!("OPENAI_API_KEY={openai}"), openai);
    let slack = format!("xoxb-{}-{}-{}", noise(6, 12, "0123456789"), noise(7, 13, "0123456789"), noise(8, 24, ALNUM));
    put("slack", format!("slack bot: {slack}"), slack);
    let npm = format!("npm_{}", noise(9, 36, ALNUM));
    put("npm", format!("//registry.npmjs.org/:_authToken={npm}"), npm);
    let hf = format!("hf_{}", noise(10, 34, LOWER));
    put("huggingface", format!("HF_TOKEN={hf}"), hf);
    let sendgrid = format!("SG.{}.{}", noise(11, 22, ALNUM), noise(12, 43, ALNUM));
    put("sendgrid", format!("SENDGRID_API_KEY={sendgrid}"), sendgrid);
    let gitlab = format!("glpat-{}", noise(13, 20, ALNUM));
    put("gitlab", format!("gitlab: {gitlab}"), gitlab);
    let gcp = format!("AIza{}", noise(14, 35, ALNUM));
    put("gcp", format!("key={gcp}"), gcp);
    let jwt =
        format!("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJ{}.{}", noise(15, 40, ALNUM), noise(16, 43, ALNUM));
    put("jwt", format!("session={jwt}"), jwt.clone());
    let bearer = noise(17, 40, ALNUM);
    put("bearer", format!("Authorization: Bearer {bearer}"), bearer);
    let password = noise(18, 18, ALNUM);
    put("url", format!("postgres://admin:{password}@db.internal:5432/app"), password);
    let generic = noise(19, 32, ALNUM);
    put("generic", format!("client_secret = \"{generic}\""), generic);
    let pem_body = noise(20, 64, ALNUM);
    let header = ["-----BEGIN ", "RSA PRIVATE KEY-----"].concat();
    let footer = ["-----END ", "RSA PRIVATE KEY-----"].concat();
    put("private-key", format!("{header}\n{pem_body}\n{pem_body}\n{footer}"), pem_body);
    all
}

/// Every byte a stream sends, kept.
fn keep(bytes: &Arc<Mutex<Vec<u8>>>, chunk: &[u8]) {
    bytes.lock().expect("frames").extend_from_slice(chunk);
}

fn leaks<'a>(what: &str, text: &str, secrets: &'a [(&'static str, String, String)]) -> Vec<&'a str> {
    let found: Vec<&str> = secrets.iter().filter(|(_, _, s)| text.contains(s.as_str())).map(|(k, _, _)| *k).collect();
    if !found.is_empty() {
        eprintln!("{what} holds secrets of kinds {found:?}");
    }
    found
}

/// What left the service (or stayed in it) after two turns full of secrets.
struct Seen {
    sse: String,
    ws: String,
    messages: String,
    webhooks: String,
    database: String,
    log: String,
}

#[actix_web::test]
async fn no_secret_the_model_says_or_a_command_prints_is_kept_or_sent_on_while_the_cli_gets_them_all() {
    let secrets = secrets();
    let (seen, _service) = two_turns_of_secrets(&secrets, "at_rest").await;
    for (what, text) in [
        ("the SSE stream", &seen.sse),
        ("the WebSocket", &seen.ws),
        ("the messages API", &seen.messages),
        ("the webhook bodies", &seen.webhooks),
        ("the database", &seen.database),
        ("the service log", &seen.log),
    ] {
        assert!(leaks(what, text, &secrets).is_empty(), "{what} holds no secret");
    }
    // And they were there, redacted, not merely absent.
    for (what, text) in [("the SSE stream", &seen.sse), ("the WebSocket", &seen.ws), ("the database", &seen.database)] {
        assert!(text.contains("[REDACTED:"), "{what} carries redaction markers");
    }
    assert!(seen.log.contains("[REDACTED:github"), "the request's path was logged redacted");
}

#[actix_web::test]
async fn in_flight_mode_stores_secrets_as_written_and_sends_none_on() {
    let secrets = secrets();
    let (seen, service) = two_turns_of_secrets(&secrets, "in_flight").await;
    for (what, text) in [
        ("the SSE stream", &seen.sse),
        ("the WebSocket", &seen.ws),
        ("the messages API", &seen.messages),
        ("the webhook bodies", &seen.webhooks),
        ("the service log", &seen.log),
    ] {
        assert!(leaks(what, text, &secrets).is_empty(), "{what} holds no secret");
    }
    assert_eq!(leaks("the database", &seen.database, &secrets).len(), secrets.len(), "the store keeps every secret");

    // `conduit redact --all` then takes them out of what was stored, and says what it did.
    let dir = service.into_dir();
    let file = dir.path().join("data/conduit.db");
    let run = || {
        std::process::Command::new(env!("CARGO_BIN_EXE_conduit"))
            .args(["redact", "--all"])
            .env_clear()
            .env("HOME", dir.path().join("home"))
            .env("CONDUIT_DB_PATH", &file)
            .env("CONDUIT_DATABASE_URL", crate::support::database::database_url(&file))
            .output()
            .expect("run conduit redact")
    };
    let first = run();
    let report = String::from_utf8_lossy(&first.stdout).into_owned();
    assert!(first.status.success(), "{report}{}", String::from_utf8_lossy(&first.stderr));
    assert!(report.contains("messages: ") && report.contains("github-token: "), "a report by table and kind: {report}");
    let stored = raw_database_at(&file);
    assert!(leaks("the redacted database", &stored, &secrets).is_empty(), "no secret is left: {report}");
    assert!(stored.contains("[REDACTED:"));
    let again = String::from_utf8_lossy(&run().stdout).into_owned();
    assert!(again.contains("redacted 0 secret(s)"), "a second run changes nothing: {again}");
}

/// The `off` mode (for trusted machines and the streams benchmark's baseline) is really off:
/// every secret is stored and sent on as written, and startup says so.
#[actix_web::test]
async fn off_mode_keeps_and_sends_every_secret_as_written_and_warns() {
    let secrets = secrets();
    let (seen, _service) = two_turns_of_secrets(&secrets, "off").await;
    for (what, text) in [
        ("the SSE stream", &seen.sse),
        ("the WebSocket", &seen.ws),
        ("the messages API", &seen.messages),
        ("the webhook bodies", &seen.webhooks),
        ("the database", &seen.database),
    ] {
        assert_eq!(leaks(what, text, &secrets).len(), secrets.len(), "{what} carries every secret as written");
        assert!(!text.contains("[REDACTED:"), "{what} has no redaction marker");
    }
    assert!(seen.log.contains("redaction is off"), "startup warns:\n{}", seen.log);
    assert!(!seen.log.contains("[REDACTED:"), "the log is not redacted either");
}

/// The real CLI, asked twice: the model recites every secret, then runs a command that prints
/// some. The CLI must have had them all intact (it sends them back to the model).
async fn two_turns_of_secrets(secrets: &[(&'static str, String, String)], mode: &str) -> (Seen, TestService) {
    let api = FakeApi::start().await;
    let hooks = receiver(Vec::new()).await;
    let service = TestService::start(ServiceConfig::new(real_cli()).api(&api.base_url).env("CONDUIT_REDACTION", mode));
    let project = service.project("vault").await;
    // A file of secrets a command prints: its output reaches the model through the CLI.
    let file: String = secrets.iter().take(5).map(|(_, line, _)| format!("{line}\n")).collect();
    std::fs::write(service.root.join("vault/creds.txt"), &file).expect("creds.txt");
    let res = service.post("/api/webhooks", json!({"name": "all", "url": hooks.url, "events": ["*"]})).await;
    assert_eq!(res.status().as_u16(), 201, "webhook");

    let session = service.launch(&project, json!({})).await;
    let id = session["id"].as_str().expect("id").to_string();
    service.wait_status(&id, "idle", READY).await;

    // Both streams, from before the first turn, every byte kept.
    let sse_bytes = Arc::new(Mutex::new(Vec::new()));
    let mut sse = service.get("/api/events/stream").await;
    let kept = sse_bytes.clone();
    let sse_task = actix_web::rt::spawn(async move {
        while let Ok(Some(chunk)) = sse.chunk().await {
            keep(&kept, &chunk);
        }
    });
    let ws_bytes = Arc::new(Mutex::new(Vec::new()));
    let mut ws = ws_connect(&service, &id).await;
    let kept = ws_bytes.clone();
    let ws_task = actix_web::rt::spawn(async move {
        while let Some(Ok(frame)) = ws.next().await {
            if let awc::ws::Frame::Text(text) = frame {
                keep(&kept, &text);
            }
        }
    });

    // Turn 1: the model says every secret. Turn 2: it has a command print the file.
    let said: String = secrets.iter().map(|(_, line, _)| format!("{line}\n")).collect();
    api.on("recite the secrets", Reply::Text(said));
    let res = service.post(&format!("/api/sessions/{id}/message"), json!({"content": "recite the secrets"})).await;
    assert_eq!(res.status().as_u16(), 202);
    service.wait_for(&id, READY, |r| r["num_turns"] == 1 && r["status"] == "idle").await;
    api.on("show the creds", Reply::ToolUse { name: "Bash".into(), input: json!({"command": "cat creds.txt"}) });
    api.on("tool_result", Reply::Text("shown".into()));
    let res = service.post(&format!("/api/sessions/{id}/message"), json!({"content": "show the creds"})).await;
    assert_eq!(res.status().as_u16(), 202);
    service.wait_for(&id, READY, |r| r["num_turns"] == 2 && r["status"] == "idle").await;

    // The CLI had them all, intact: it sent them back to the model (its answer, and the
    // command's output as a tool result).
    let requests = api.requests().join("\n");
    for (kind, _, secret) in secrets {
        let escaped = serde_json::to_string(secret).expect("json");
        assert!(requests.contains(escaped.trim_matches('"')), "the CLI sent the {kind} secret back intact");
    }

    // A client that puts a token where it does not belong: the request's log line.
    let (_, _, github) = &secrets[0];
    let res = service.get(&format!("/api/projects/{github}")).await;
    assert!(res.status().is_client_error());

    // Everything is stored and sent: a closed session's events are all out.
    let res = service.delete(&format!("/api/sessions/{id}")).await;
    assert!(res.status().is_success(), "close: {}", res.status());
    service.wait_status(&id, "closed", READY).await;
    let messages = service.get_json(&format!("/api/sessions/{id}/messages?limit=1000")).await;
    let deliveries = wait_for_webhooks(&hooks.got).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    sse_task.abort();
    ws_task.abort();

    let sse = String::from_utf8_lossy(&sse_bytes.lock().expect("sse")).into_owned();
    let ws = String::from_utf8_lossy(&ws_bytes.lock().expect("ws")).into_owned();
    let database = raw_database(&service);
    (Seen { sse, ws, messages: messages.to_string(), webhooks: deliveries, database, log: service.log() }, service)
}

async fn wait_for_webhooks(got: &Arc<Mutex<Vec<crate::support::receiver::Received>>>) -> String {
    for _ in 0..200 {
        let bodies: Vec<String> = got.lock().expect("hooks").iter().map(|r| r.body.clone()).collect();
        if bodies.iter().any(|b| b.contains("session_closed") || b.contains("session.closed")) {
            return bodies.join("\n");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let bodies: Vec<String> = got.lock().expect("hooks").iter().map(|r| r.body.clone()).collect();
    assert!(!bodies.is_empty(), "webhooks were delivered");
    bodies.join("\n")
}

/// Everything the database holds, as text: on SQLite, the file and its WAL as raw bytes (lossy
/// text: a secret is ASCII); on PostgreSQL (whose files are the server's), every row of the
/// tables that keep what sessions say, as text.
fn raw_database(service: &TestService) -> String {
    raw_database_at(&service.dir.path().join("data/conduit.db"))
}

fn raw_database_at(file: &std::path::Path) -> String {
    if !crate::support::database::on_postgres() {
        let mut all = Vec::new();
        for suffix in ["", "-wal", "-shm"] {
            if let Ok(bytes) = std::fs::read(format!("{}{suffix}", file.display())) {
                all.extend_from_slice(&bytes);
            }
        }
        return String::from_utf8_lossy(&all).into_owned();
    }
    use diesel::RunQueryDsl;
    #[derive(diesel::QueryableByName)]
    struct Row {
        #[diesel(sql_type = diesel::sql_types::Text)]
        row: String,
    }
    let mut conn = crate::support::database::connect(file);
    let mut all = String::new();
    for table in ["messages", "session_events", "permission_log", "sessions", "agent_executions", "webhook_deliveries"]
    {
        let rows: Vec<Row> = diesel::sql_query(format!("SELECT CAST(t AS text) AS row FROM {table} t"))
            .load(&mut conn)
            .expect("read a table");
        for row in rows {
            all.push_str(&row.row);
            all.push('\n');
        }
    }
    all
}
