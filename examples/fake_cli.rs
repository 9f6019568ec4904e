//! A stand-in for the Claude Code CLI speaking stream-json on stdio, for the edge cases the real
//! CLI will not produce on demand. Built by `scripts/test.sh` and `scripts/bench.sh`, used by
//! the tests and the benchmark. The scenario comes from `--model=fake-<scenario>`, so one service can run
//! many at once:
//!
//! - (default)            answers initialize (one model, `fake-default`); each user turn: system/init,
//!   assistant, result; refuses `set_model` to `refused`
//! - `fake-garbage`       a turn also writes non-JSON, a non-object, a split line and a CRLF line
//! - `fake-huge`          a turn also writes one 16 MiB line
//! - `fake-huge-N-M`      a turn also writes N lines of M MiB each
//! - `fake-flood-N`       a turn also writes N `stream_event` lines as fast as it can
//! - `fake-prose-N`       the same, but each delta is a line of code talk naming keys and tokens
//!   (as real transcripts do, so redaction's rules run on them), every 1,000th with a GitHub token
//! - `fake-results-N-K`   the same N lines, but every K-th of them a `result` (each adding
//!   0.001 USD and 3+2 tokens to the process's cumulative figures, as the turn's own result does)
//! - `fake-rate-R-N`      a turn also writes N `stream_event` lines at R lines per second
//! - `fake-exit-mid-turn` a turn writes an assistant line, then the CLI exits 3
//! - `fake-ignore-term`   ignores SIGTERM/SIGINT and stdin EOF (must be SIGKILLed)
//! - `fake-no-init`       writes an error to stderr and exits 1 at once
//! - `fake-stall`         answers initialize, never finishes a turn
//! - `fake-stall-later`   answers its first turn (so it has a session id to resume), then
//!   stalls: later turns get nothing, not even an answer to an interrupt's turn
//! - `fake-grandchild`    starts `sleep` in its group and a `setsid sleep` outside it, and names
//!   their unique arguments on stderr (`grandchildren 300.N 301.N`)
//! - `fake-background`    a turn starts a background task that ends 4 s after its result
//! - `fake-fork-N`        a turn starts a tool (a child of the CLI) that tries to start N
//!   processes at once (`sleep`s, kept until all were tried) and says `forked K of N` (then
//!   ends them); the CLI answers with that line (a fork bomb against `pids_max`)
//! - `fake-alloc-N`       a turn starts a tool that allocates and touches N MiB, then exits;
//!   the CLI answers `tool exited with status 0` or `tool was killed by signal 9` (a tool
//!   against `memory_max_mb`: the OOM killer should choose it, not the CLI)
//! - `fake-oom-N`         a turn makes the CLI itself allocate and touch N MiB before answering
//!
//! The tools of `fork` and `alloc` are this same program (`/proc/self/exe --tool-fork=N` or
//! `--tool-alloc=N`), so they run inside the CLI's sandbox and cgroups like any tool would.

/// `eprintln!` that survives a closed stderr (a real CLI does not die of its reader's crash:
/// `eprintln!` would panic, and the tests that crash the service need the CLI to live on).
macro_rules! note {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use serde_json::{json, Value};

/// Deltas of the kind a coding session streams: most name a key, a token or a secret without
/// holding one.
const PROSE: [&str; 6] = [
    "Let me read the config loader to see where the API key is taken from the environment.",
    "The token is refreshed in auth/session.rs when it expires; the test mocks the refresh.",
    "    let api_key = std::env::var(API_KEY_VAR).map_err(|_| Error::MissingKey)?;",
    "I will add a unit test for parse_header with an empty bearer value and a missing one.",
    "Running cargo test -p gateway: 42 passed, 0 failed. The secret store change is done.",
    "fn rotate(keys: &mut KeyRing, now: Instant) -> Result<(), RotateError> {",
];

/// A GitHub token of the right shape (not a real one): what redaction must catch.
const PLANTED_TOKEN: &str = "export GITHUB_TOKEN=ghp_R8xq2LmV7tZ4nW1pK9sD3fH6jB0cY5aE2uGo";

fn main() {
    if let Some(code) = tool() {
        std::process::exit(code);
    }
    let model = std::env::args().find_map(|a| a.strip_prefix("--model=").map(str::to_string)).unwrap_or_default();
    let scenario = model.strip_prefix("fake-").unwrap_or("default").to_string();
    let session_id = format!("fake-{}", std::process::id());
    // Tells the tests whether the access token arrived, without ever printing it.
    match std::env::var("CLAUDE_CODE_SESSION_ACCESS_TOKEN") {
        Ok(token) => note!("access token: present ({} bytes)", token.len()),
        Err(_) => note!("access token: absent"),
    }
    // Echo the arguments (values included) so tests can see exactly what was passed.
    note!("args: {:?}", std::env::args().skip(1).collect::<Vec<_>>());

    match scenario.as_str() {
        "no-init" => {
            note!("fatal: the fake CLI refuses to start");
            std::process::exit(1);
        }
        "ignore-term" => {
            // SAFETY: setting signal dispositions to ignore.
            unsafe {
                libc::signal(libc::SIGTERM, libc::SIG_IGN);
                libc::signal(libc::SIGINT, libc::SIG_IGN);
            }
        }
        // Left running on purpose: the service must end them (and reap what it adopts).
        #[allow(clippy::zombie_processes)]
        "grandchild" => {
            // Named by their arguments, unique to this run: inside a sandbox's pid namespace
            // the pids this process sees are not the host's.
            let nanos =
                std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
            let (inside, outside) = (format!("300.{nanos}"), format!("301.{nanos}"));
            std::process::Command::new("sleep").arg(&inside).spawn().expect("sleep");
            std::process::Command::new("setsid").args(["sleep", &outside]).spawn().expect("setsid sleep");
            note!("grandchildren {inside} {outside}");
        }
        _ => {}
    }

    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 20, stdout.lock());
    let mut turns = 0u32;
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        let Ok(msg) = serde_json::from_str::<Value>(&line) else {
            note!("fake CLI: not JSON: {line}");
            continue;
        };
        match msg["type"].as_str() {
            Some("control_request") => {
                let id = msg["request_id"].as_str().unwrap_or_default();
                let answer = match msg["request"]["subtype"].as_str() {
                    Some("initialize") => json!({"subtype": "success", "request_id": id, "response": {
                        "commands": [],
                        "models": [{"value": "fake-default", "displayName": "Fake", "description": "the fake CLI's model"}]
                    }}),
                    // The real CLI's way of refusing a request: an error answer with its reason.
                    Some("set_model") if msg["request"]["model"] == "refused" => {
                        json!({"subtype": "error", "request_id": id, "error": "no such model: refused"})
                    }
                    _ => json!({"subtype": "success", "request_id": id, "response": {}}),
                };
                emit(&mut out, json!({"type": "control_response", "response": answer}));
            }
            Some("user") if scenario == "stall" || (scenario == "stall-later" && turns > 0) => {}
            Some("user") => {
                turns += 1;
                let text = msg["message"]["content"].as_str().unwrap_or_default().to_string();
                turn(&mut out, &scenario, &session_id, &model, turns, &text);
            }
            _ => {}
        }
        let _ = out.flush();
    }
    let _ = out.flush();
    if scenario == "ignore-term" {
        loop {
            std::thread::sleep(Duration::from_secs(60));
        }
    }
}

fn emit(out: &mut impl Write, v: Value) {
    let _ = writeln!(out, "{v}");
}

/// Results the `results-N-K` scenario wrote so far in this process: its figures grow with each.
static RESULTS: AtomicU32 = AtomicU32::new(0);

/// A `result` line whose cumulative figures are `n` results' worth (0.001 USD, 3 input and 2
/// output tokens each).
fn result(out: &mut impl Write, session_id: &str, model: &str, text: &str, n: u32) {
    emit(
        out,
        json!({"type": "result", "subtype": "success", "is_error": false, "num_turns": 1, "result": text,
            "session_id": session_id, "total_cost_usd": 0.001 * f64::from(n), "usage": {"input_tokens": 3, "output_tokens": 2},
            "modelUsage": {model: {"inputTokens": 3 * n, "outputTokens": 2 * n}}}),
    );
}

fn turn(out: &mut impl Write, scenario: &str, session_id: &str, model: &str, turns: u32, text: &str) {
    emit(
        out,
        json!({"type": "system", "subtype": "init", "session_id": session_id, "model": model, "permissionMode": "default", "tools": []}),
    );
    match scenario {
        "garbage" => {
            let _ = writeln!(out, "this is not json");
            let _ = writeln!(out, "[1,2,3]");
            let _ = write!(out, "{{\"type\":\"assistant\",\"split\":");
            let _ = out.flush();
            std::thread::sleep(Duration::from_millis(50));
            let _ = write!(out, "true}}\r\n");
        }
        "huge" => {
            let blob = "x".repeat(16 * 1024 * 1024);
            emit(out, json!({"type": "assistant", "message": {"content": [{"type": "text", "text": blob}]}}));
        }
        s if s.starts_with("huge-") => {
            let mut parts = s["huge-".len()..].split('-').map(|p| p.parse::<usize>().unwrap_or(1));
            let (n, mib) = (parts.next().unwrap_or(1), parts.next().unwrap_or(1));
            let blob = "x".repeat(mib * 1024 * 1024 - 200);
            for i in 0..n {
                let _ = writeln!(
                    out,
                    r#"{{"type":"assistant","message":{{"content":[{{"type":"text","text":"{blob}"}}]}},"n":{i}}}"#
                );
            }
        }
        s if s.starts_with("flood-") => {
            let n: u64 = s["flood-".len()..].parse().unwrap_or(1000);
            for i in 0..n {
                let _ = writeln!(
                    out,
                    r#"{{"type":"stream_event","event":{{"type":"content_block_delta","index":0,"delta":{{"type":"text_delta","text":"t{i}"}}}},"session_id":"{session_id}"}}"#
                );
            }
        }
        s if s.starts_with("prose-") => {
            let n: u64 = s["prose-".len()..].parse().unwrap_or(1000);
            for i in 0..n {
                // No quotes or backslashes in PROSE: each line is valid JSON as written.
                let text = if i % 1000 == 999 { PLANTED_TOKEN } else { PROSE[(i % PROSE.len() as u64) as usize] };
                let _ = writeln!(
                    out,
                    r#"{{"type":"stream_event","event":{{"type":"content_block_delta","index":0,"delta":{{"type":"text_delta","text":"t{i} {text}"}}}},"session_id":"{session_id}"}}"#
                );
            }
        }
        s if s.starts_with("results-") => {
            let mut parts = s["results-".len()..].split('-').map(|p| p.parse::<u64>().unwrap_or(1000));
            let (n, every) = (parts.next().unwrap_or(1000), parts.next().unwrap_or(10).max(1));
            for i in 0..n {
                if (i + 1) % every == 0 {
                    let count = RESULTS.fetch_add(1, Ordering::Relaxed) + 1;
                    result(out, session_id, model, &format!("part {i}"), count);
                } else {
                    let _ = writeln!(
                        out,
                        r#"{{"type":"stream_event","event":{{"type":"content_block_delta","index":0,"delta":{{"type":"text_delta","text":"t{i}"}}}},"session_id":"{session_id}"}}"#
                    );
                }
            }
        }
        s if s.starts_with("rate-") => {
            let mut parts = s["rate-".len()..].split('-').map(|p| p.parse::<u64>().unwrap_or(1000));
            let (rate, n) = (parts.next().unwrap_or(1000).max(1), parts.next().unwrap_or(1000));
            let started = std::time::Instant::now();
            for i in 0..n {
                let due = started + Duration::from_secs_f64(i as f64 / rate as f64);
                if let Some(wait) = due.checked_duration_since(std::time::Instant::now()) {
                    let _ = out.flush();
                    std::thread::sleep(wait);
                }
                // The write time rides along, so a benchmark can measure delivery latency.
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_nanos())
                    .unwrap_or(0);
                let _ = writeln!(
                    out,
                    r#"{{"type":"stream_event","event":{{"type":"content_block_delta","index":0,"delta":{{"type":"text_delta","text":"t{i}"}}}},"written_ns":{now},"session_id":"{session_id}"}}"#
                );
            }
        }
        "background" => {
            emit(
                out,
                json!({"type": "system", "subtype": "task_started", "task_id": format!("bg-{turns}"), "description": "background work"}),
            );
        }
        s if s.starts_with("fork-") => {
            let line = run_tool(&format!("--tool-fork={}", &s["fork-".len()..]));
            emit(out, json!({"type": "assistant", "message": {"content": [{"type": "text", "text": line}]}}));
        }
        s if s.starts_with("alloc-") => {
            let line = run_tool(&format!("--tool-alloc={}", &s["alloc-".len()..]));
            emit(out, json!({"type": "assistant", "message": {"content": [{"type": "text", "text": line}]}}));
        }
        s if s.starts_with("oom-") => {
            let held = allocate(s["oom-".len()..].parse().unwrap_or(64));
            note!("fake CLI: holding {} MiB", held.len() >> 20);
        }
        "exit-mid-turn" => {
            emit(out, json!({"type": "assistant", "message": {"content": [{"type": "text", "text": "half"}]}}));
            let _ = out.flush();
            note!("fake CLI: crashing mid-turn");
            std::process::exit(3);
        }
        _ => {}
    }
    emit(
        out,
        json!({"type": "assistant", "message": {"model": model, "content": [{"type": "text", "text": format!("echo: {text}")}]}}),
    );
    let n = if scenario.starts_with("results-") { RESULTS.fetch_add(1, Ordering::Relaxed) + 1 } else { turns };
    result(out, session_id, model, &format!("echo: {text}"), n);
    if scenario == "background" {
        // The task outlives the turn, as the CLI's background tasks do.
        let _ = out.flush();
        std::thread::sleep(Duration::from_secs(4));
        emit(
            out,
            json!({"type": "system", "subtype": "task_notification", "task_id": format!("bg-{turns}"), "status": "completed", "session_id": session_id}),
        );
    }
}

/// Runs a tool (this program in a tool mode) and says how it went: its stdout's last line, or
/// how it ended when it failed.
fn run_tool(arg: &str) -> String {
    match std::process::Command::new("/proc/self/exe").arg(arg).stderr(std::process::Stdio::null()).output() {
        Ok(out) if out.status.success() => {
            let text = String::from_utf8_lossy(&out.stdout);
            text.lines().last().unwrap_or("tool exited with status 0").to_string()
        }
        Ok(out) => {
            use std::os::unix::process::ExitStatusExt;
            match out.status.signal() {
                Some(sig) => format!("tool was killed by signal {sig}"),
                None => format!("tool exited with status {}", out.status.code().unwrap_or(-1)),
            }
        }
        Err(e) => format!("tool could not start: {e}"),
    }
}

/// The tool modes: `Some(exit code)` when this process is a tool.
fn tool() -> Option<i32> {
    let arg = |name: &str| std::env::args().find_map(|a| a.strip_prefix(name).and_then(|n| n.parse::<usize>().ok()));
    if let Some(n) = arg("--tool-fork=") {
        // Every child is kept until all were tried, so they count against the limit together.
        let mut children = Vec::new();
        for _ in 0..n {
            // A refused fork (EAGAIN past pids.max) is what the tool counts.
            if let Ok(child) = std::process::Command::new("sleep").arg("30").stdin(std::process::Stdio::null()).spawn()
            {
                children.push(child);
            }
        }
        let forked = children.len();
        for mut child in children {
            let _ = child.kill();
            let _ = child.wait();
        }
        println!("forked {forked} of {n}");
        return Some(0);
    }
    if let Some(mib) = arg("--tool-alloc=") {
        let held = allocate(mib);
        println!("tool held {} MiB", held.len() >> 20);
        return Some(0);
    }
    None
}

/// N MiB, every page written (an untouched allocation costs no memory).
fn allocate(mib: usize) -> Vec<u8> {
    let mut held = vec![0u8; mib << 20];
    for i in (0..held.len()).step_by(4096) {
        held[i] = 1;
    }
    std::hint::black_box(held)
}
