//! Permission benchmarks: `scripts/bench.sh permissions`.
//!
//! 1. Decisions per second, single-threaded, with 1,000 rules across 50 projects (plus global
//!    ones), over a mix of Bash commands (compound ones as agents write them: lists, loops,
//!    conditionals, substitutions, a here-document, `bash -c`, `find -exec`) and file paths.
//!    Baseline in the same run: parsing the same tool inputs from JSON, which every decision
//!    needs anyway.
//! 2. Decision latency as a session sees it: a round trip of `Evaluate` to the
//!    `PermissionEngine` actor (audit row queued included), p50 and p99, against a round trip
//!    to an actor that does nothing.

use std::time::{Duration, Instant};

use actix::prelude::*;
use conduit::actors::permissions::{Evaluate, PermissionEngine, Reload};
use conduit::db::rules::RuleRow;
use conduit::db::writer::Writer;
use conduit::db::Store;
use conduit::domain::decision::{Decision, DecisionPoint, ToolCall};
use conduit::domain::ids::{ProjectId, RuleId};
use conduit::domain::rules::{Behavior, RuleSet};
use serde_json::{json, Value};

const PROJECTS: usize = 50;
const RULES_PER_PROJECT: usize = 19;
const GLOBAL_RULES: usize = 50;

fn rows() -> Vec<RuleRow> {
    let mut rows = Vec::new();
    let programs =
        ["rm", "git push", "curl", "wget", "docker", "kubectl", "ssh", "scp", "npm publish", "cargo publish"];
    let mut push = |project: Option<String>, i: usize, tool: &str, content: String, behavior: &str| {
        rows.push(RuleRow {
            id: RuleId::from_stored(format!("rule-{}-{i}", project.as_deref().unwrap_or("global"))),
            project_id: project.map(ProjectId::from_stored),
            tool_name: tool.to_string(),
            rule_content: content,
            behavior: behavior.parse::<Decision>().expect("allow or deny"),
            priority: (i % 7) as i32,
            updated_input: None,
            created_at: format!("2026-01-01T00:00:{:02}.000Z", i % 60),
            updated_at: String::new(),
        });
    };
    for p in 0..PROJECTS {
        let project = Some(format!("project-{p}"));
        for i in 0..RULES_PER_PROJECT {
            match i % 4 {
                0 => push(project.clone(), i, "Bash", format!("{}:*", programs[i % programs.len()]), "deny"),
                1 => push(project.clone(), i, "Read", format!("/srv/project-{p}/secret-{i}/**"), "deny"),
                2 => push(project.clone(), i, "Bash", format!("make target-{i}*"), "allow"),
                _ => push(project.clone(), i, "Write", format!("/srv/project-{p}/src/**/*.rs"), "allow"),
            }
        }
    }
    for i in 0..GLOBAL_RULES {
        match i % 3 {
            0 => push(None, i, "Bash", format!("{}:*", programs[i % programs.len()]), "deny"),
            1 => push(None, i, "Read", format!("/etc/secret-{i}/**"), "deny"),
            _ => push(None, i, "*", format!("*forbidden-{i}*"), "deny"),
        }
    }
    rows
}

fn calls() -> Vec<(String, String, String)> {
    let inputs = [
        ("Bash", json!({"command": "ls -la"})),
        ("Bash", json!({"command": "git status && git diff | head -50"})),
        ("Bash", json!({"command": "cargo build --release; /bin/rm -rf target/tmp"})),
        ("Bash", json!({"command": "echo $(curl -s http://example.invalid) > out"})),
        // Compound commands as agents write them: loops, conditionals, a commit message in a
        // here-document inside a substitution, a `bash -c` string, find's actions.
        ("Bash", json!({"command": "for f in src/*.rs; do grep -n TODO \"$f\" || true; done 2>/dev/null | head -20"})),
        (
            "Bash",
            json!({"command": "cd /srv/project-7 && git add -A && git commit -m \"$(cat <<'EOF'\nfix: tidy the parser\n\nCo-authored-by: agent\nEOF\n)\""}),
        ),
        (
            "Bash",
            json!({"command": "if [ -f Cargo.toml ]; then cargo test --release 2>&1 | tail -n 30; else npm test; fi"}),
        ),
        (
            "Bash",
            json!({"command": "find . -name '*.tmp' -mtime +1 -exec rm -f {} + && bash -c 'make clean >/dev/null'"}),
        ),
        ("Read", json!({"file_path": "/srv/project-7/src/../secret-1/key.pem"})),
        ("Read", json!({"file_path": "/srv/project-7/src/main.rs"})),
        ("Write", json!({"file_path": "/srv/project-7/src/lib/mod.rs", "content": "fn main() {}"})),
        ("WebFetch", json!({"url": "https://docs.example/page", "prompt": "summarize"})),
    ];
    (0..PROJECTS * inputs.len())
        .map(|i| {
            let (tool, input) = &inputs[i % inputs.len()];
            (format!("project-{}", i % PROJECTS), tool.to_string(), input.to_string())
        })
        .collect()
}

fn decisions_per_second() {
    let set = RuleSet::new(conduit::actors::permissions::compile_rows(rows()));
    let calls = calls();
    let parsed: Vec<(String, String, Value)> =
        calls.iter().map(|(p, t, i)| (p.clone(), t.clone(), serde_json::from_str(i).expect("json"))).collect();
    let n = 1_000_000;

    // Baseline: parse the inputs.
    let started = Instant::now();
    let mut bytes = 0usize;
    for i in 0..n {
        let v: Value = serde_json::from_str(&calls[i % calls.len()].2).expect("json");
        bytes += v.as_object().map_or(0, |o| o.len());
    }
    let parse_rate = n as f64 / started.elapsed().as_secs_f64();
    std::hint::black_box(bytes);

    let started = Instant::now();
    let mut denied = 0usize;
    for i in 0..n {
        let (project, tool, input) = &parsed[i % parsed.len()];
        if set.evaluate(Some(project), tool, input).behavior == Behavior::Deny {
            denied += 1;
        }
    }
    let rate = n as f64 / started.elapsed().as_secs_f64();
    println!(
        "decisions: {} rules, {n} decisions single-threaded: {rate:.0}/s ({denied} denied); parsing the same inputs: {parse_rate:.0}/s; ratio {:.2}x (target: > 200,000/s)",
        set.len(),
        rate / parse_rate
    );

    // The same mix with every Bash command new (a trailing comment makes each one unique), so
    // none is a repeat of one read before: every one is parsed.
    let fresh: Vec<(String, String, Value)> = (0..n / 10)
        .map(|i| {
            let (project, tool, input) = &parsed[i % parsed.len()];
            let mut input = input.clone();
            if let Some(command) = input.get("command").and_then(Value::as_str) {
                input["command"] = Value::String(format!("{command} # {i}"));
            }
            (project.clone(), tool.clone(), input)
        })
        .collect();
    let started = Instant::now();
    for (project, tool, input) in &fresh {
        std::hint::black_box(set.evaluate(Some(project), tool, input).behavior);
    }
    let fresh_rate = fresh.len() as f64 / started.elapsed().as_secs_f64();
    println!("decisions with every Bash command new: {} decisions single-threaded: {fresh_rate:.0}/s", fresh.len());
}

struct Noop;
impl Actor for Noop {
    type Context = Context<Self>;
}
#[derive(Message)]
#[rtype(result = "bool")]
struct Ping;
impl Handler<Ping> for Noop {
    type Result = bool;
    fn handle(&mut self, _: Ping, _: &mut Context<Self>) -> bool {
        true
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 * p) as usize).min(sorted.len() - 1)]
}

async fn latency() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open_blocking(&dir.path().join("perm.db"), 4, 5000).await.expect("store");
    let all = rows();
    store
        .run(move |conn| {
            use diesel::connection::SimpleConnection;
            for p in 0..PROJECTS {
                conn.batch_execute(&format!(
                    "INSERT INTO projects (id, name, folder_path, created_at, updated_at) VALUES ('project-{p}', 'p', '/srv/project-{p}', 't', 't')"
                ))
                .map_err(conduit::db::StoreError::from)?;
            }
            for row in &all {
                conduit::db::rules::insert(conn, row)?;
            }
            Ok(())
        })
        .await
        .expect("insert rules");
    let (writer, _thread) = Writer::start(store.clone());
    let engine = PermissionEngine::new(store, writer, None).start();
    let loaded = engine.send(Reload).await.expect("engine").expect("reload");
    let noop = Noop.start();
    let calls: Vec<(String, String, Value)> =
        calls().into_iter().map(|(p, t, i)| (p, t, serde_json::from_str(&i).expect("json"))).collect();
    let n = 50_000;
    let (mut base, mut timed) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for i in 0..n {
        let started = Instant::now();
        noop.send(Ping).await.expect("noop");
        base.push(started.elapsed());
        let (project, tool, input) = &calls[i % calls.len()];
        let started = Instant::now();
        engine
            .send(Evaluate {
                project_id: Some(ProjectId::from_stored(project.clone())),
                session_id: None,
                call: ToolCall {
                    request_id: format!("r{i}"),
                    point: DecisionPoint::Hook,
                    tool_name: tool.clone(),
                    input: input.clone(),
                    tool_use_id: None,
                    agent: Some(conduit::domain::agent_kind::AgentKind::Claude),
                },
            })
            .await
            .expect("evaluate");
        timed.push(started.elapsed());
    }
    base.sort();
    timed.sort();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    println!(
        "latency: {loaded} rules, {n} round trips to the engine: p50 {:.1} us, p99 {:.1} us; to a no-op actor: p50 {:.1} us, p99 {:.1} us; p99 ratio {:.2}x (target: p99 < 1 ms)",
        us(percentile(&timed, 0.5)),
        us(percentile(&timed, 0.99)),
        us(percentile(&base, 0.5)),
        us(percentile(&base, 0.99)),
        percentile(&timed, 0.99).as_secs_f64() / percentile(&base, 0.99).as_secs_f64()
    );
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        println!("permissions benchmark: skipped (run it with scripts/bench.sh permissions)");
        return;
    }
    decisions_per_second();
    actix::System::new().block_on(latency());
}
