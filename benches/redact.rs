//! Redaction benchmark: `scripts/bench.sh redact`.
//!
//! A realistic transcript (about 20 MB of Claude Code stream-json lines: text deltas, Bash
//! calls, tool results full of code, a few with secrets) is redacted line by line the way the
//! writer and the bus do it (`redact_json_text`). Baseline in the same run: copying the same
//! lines (`to_owned`), the least any store or relay does with them. Loss is measured too: every
//! planted secret must be redacted, and nothing else.

use std::hint::black_box;
use std::time::Instant;

use conduit::redact::Redactor;
use serde_json::json;

const TARGET_BYTES: usize = 20 << 20;
const SECRET_EVERY: usize = 2_000;

fn noise(seed: u64, len: usize) -> String {
    let chars: Vec<char> = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".chars().collect();
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

const CODE: &str = r#"fn load(path: &Path) -> Result<Config, Error> {
    let text = std::fs::read_to_string(path)?; // the api key is read from the environment
    let config: Config = toml::from_str(&text)?;
    if config.token.is_empty() { return Err(Error::MissingToken); }
    Ok(config)
}
"#;

/// The transcript's lines, and how many secrets were planted in them.
fn transcript() -> (Vec<String>, usize) {
    let mut lines = Vec::new();
    let (mut bytes, mut planted, mut i) = (0usize, 0usize, 0u64);
    while bytes < TARGET_BYTES {
        i += 1;
        let line = match i % 4 {
            0 => json!({"type": "stream_event", "event": {"type": "content_block_delta", "delta": {"type": "text_delta", "text": format!("Looking at the config loader, step {i}: the token is checked before use. ")}}}),
            1 => json!({"type": "assistant", "message": {"content": [{"type": "tool_use", "id": format!("toolu_{i}"), "name": "Bash", "input": {"command": format!("cargo test --release -- config::{i} 2>&1 | tail -40"), "description": "run the tests"}}]}}),
            2 => {
                let mut output = CODE.repeat(6);
                if i as usize % SECRET_EVERY == 2 {
                    output.push_str(&format!("GITHUB_TOKEN=ghp_{}\n", noise(i, 36)));
                    planted += 1;
                }
                json!({"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": format!("toolu_{i}"), "content": output}]}})
            }
            _ => json!({"type": "result", "subtype": "success", "duration_ms": 1234, "total_cost_usd": 0.0123, "session_id": "6a302f75-fb68-4a18-a534-7eb9397a5726"}),
        }
        .to_string();
        bytes += line.len();
        lines.push(line);
    }
    (lines, planted)
}

/// The relay's flood (`fake_cli`'s `prose-N` scenario, `scripts/bench.sh streams` part 4): short
/// text deltas of code talk that name keys, tokens and secrets without holding one, so the
/// prefilter lets the generic rule run on nearly every line; every 1,000th holds a token.
fn deltas() -> (Vec<String>, usize) {
    let (mut lines, mut planted) = (Vec::new(), 0);
    for i in 0..200_000u64 {
        let text = if i % 1000 == 999 {
            planted += 1;
            format!("export GITHUB_TOKEN=ghp_{}", noise(i, 36))
        } else {
            PROSE[(i % PROSE.len() as u64) as usize].to_string()
        };
        let delta = json!({"type": "text_delta", "text": format!("t{i} {text}")});
        let event = json!({"type": "content_block_delta", "index": 0, "delta": delta});
        lines.push(
            json!({"type": "stream_event", "event": event, "session_id": "6a302f75-fb68-4a18-a534-7eb9397a5726"})
                .to_string(),
        );
    }
    (lines, planted)
}

const PROSE: [&str; 6] = [
    "Let me read the config loader to see where the API key is taken from the environment.",
    "The token is refreshed in auth/session.rs when it expires; the test mocks the refresh.",
    "    let api_key = std::env::var(API_KEY_VAR).map_err(|_| Error::MissingKey)?;",
    "I will add a unit test for parse_header with an empty bearer value and a missing one.",
    "Running cargo test -p gateway: 42 passed, 0 failed. The secret store change is done.",
    "fn rotate(keys: &mut KeyRing, now: Instant) -> Result<(), RotateError> {",
];

fn main() {
    let only = std::env::var("BENCH_REDACT_ONLY").unwrap_or_default();
    for (name, (lines, planted)) in [("transcript", transcript as fn() -> _), ("deltas", deltas)]
        .into_iter()
        .filter(|(name, _)| only.is_empty() || only == *name)
        .map(|(name, make)| (name, make()))
    {
        measure(name, &lines, planted);
    }
}

/// Redacts `lines` as the writer and the bus do, against copying them, best of three.
fn measure(name: &str, lines: &[String], planted: usize) {
    let total: usize = lines.iter().map(String::len).sum();
    let mb = total as f64 / (1 << 20) as f64;
    let redactor = Redactor::standard();
    // Warm up both (the rules are compiled on first use).
    let _ = redactor.redact_json_text(&lines[0]);
    let mut best_copy = f64::MAX;
    let mut best_redact = f64::MAX;
    let mut redacted = 0usize;
    for _ in 0..3 {
        let started = Instant::now();
        for line in lines {
            black_box(line.to_owned());
        }
        best_copy = best_copy.min(started.elapsed().as_secs_f64());
        let started = Instant::now();
        redacted = 0;
        for line in lines {
            let out = redactor.redact_json_text(line);
            redacted += out.matches("[REDACTED:").count();
            black_box(out);
        }
        best_redact = best_redact.min(started.elapsed().as_secs_f64());
    }
    println!("{name}: {} lines, {mb:.1} MB, {planted} planted secrets", lines.len());
    println!("  copy (baseline):  {:>9.1} MB/s", mb / best_copy);
    println!("  redact_json_text: {:>9.1} MB/s  ({:.3}x the copy)", mb / best_redact, best_copy / best_redact);
    println!("  redacted {redacted} of {planted} planted (nothing else: {})", redacted == planted);
}
