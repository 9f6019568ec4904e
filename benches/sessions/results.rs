//! The per-result bookkeeping on the persistence path. A `result` line makes its session store
//! the turn's totals and its ledger row (the database adds it to both rollups) in one
//! transaction (`WriteOp::TurnResult`); the session reads on, and shows itself at rest once
//! that is committed and the budget keeper has answered.
//!
//! 1. End to end: 20 sessions flooding as in the persistence benchmark with every 10th line a
//!    result carrying a cost (`fake-results-N-10`), against the same flood with only the turn's
//!    own result (`fake-flood-N`), alternated in the same run: lines/s, lines lost, and the
//!    ledger afterwards (one row per result, its costs adding up to the sessions' totals).
//! 2. The writer alone: the same jobs with every 10th a `TurnResult` against every 10th a plain
//!    `Session` patch (the ledger row and its rollups are the whole difference).

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use conduit::db::messages::NewMessage;
use conduit::db::sessions::SessionPatch;
use conduit::db::usage::NewUsage;
use conduit::db::writer::{WriteOp, Writer};
use conduit::domain::ids::SessionId;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Double};

use super::{idle_sessions, start_turns, wait_stored, Bench};

const EVERY: usize = 10;

#[derive(QueryableByName)]
struct Tally {
    #[diesel(sql_type = BigInt)]
    rows: i64,
    #[diesel(sql_type = Double)]
    cost: f64,
}

/// One flood of 20 sessions of `model`: its duration (None past 300 s), lines stored, lost.
async fn flood(bench: &Bench, model: &str, lines: usize) -> (Option<f64>, u64, u64, Vec<String>) {
    let ids = idle_sessions(bench, model, 20).await;
    let stored_before = bench.app_stats.stored.load(Ordering::Relaxed);
    let rejected_before = bench.app_stats.rejected.load(Ordering::Relaxed);
    let started = Instant::now();
    start_turns(bench, &ids).await;
    let total = 20 * (lines as u64 + 4);
    let (done, _, _) = wait_stored(bench, stored_before + total, Duration::from_secs(300)).await;
    let elapsed = done.map(|t| (t - started).as_secs_f64());
    let stored = bench.app_stats.stored.load(Ordering::Relaxed) - stored_before;
    let lost = total.saturating_sub(stored) + bench.app_stats.rejected.load(Ordering::Relaxed) - rejected_before;
    (elapsed, stored, lost, ids)
}

/// The ledger rows of `ids` (with their cost), the rollup's turns, and the sessions' turns and
/// cost, once everything queued is committed.
async fn ledger_of(bench: &Bench, ids: &[String]) -> [(i64, f64); 3] {
    // GET /api/usage waits for the writer to commit what was queued before it.
    let res = bench.client.get(format!("{}/api/usage?group_by=session", bench.base)).send().await.expect("usage");
    assert!(res.status().is_success(), "GET /api/usage: {}", res.status());
    let list = ids.iter().map(|id| format!("'{id}'")).collect::<Vec<_>>().join(",");
    let mut conn =
        conduit::db::open_sqlite(&bench._service.dir.path().join("bench.db"), 5000).expect("the service's database");
    let queries = [
        format!("SELECT COUNT(*) AS rows, COALESCE(SUM(cost_usd), 0) AS cost FROM usage_ledger WHERE session_id IN ({list})"),
        format!("SELECT COALESCE(SUM(turns), 0) AS rows, COALESCE(SUM(cost_usd), 0) AS cost FROM usage_hourly WHERE session_id IN ({list})"),
        format!("SELECT COALESCE(SUM(num_turns), 0) AS rows, COALESCE(SUM(total_cost_usd), 0) AS cost FROM sessions WHERE id IN ({list})"),
    ];
    queries.map(|q| {
        let t: Tally = diesel::sql_query(q).get_result(&mut conn).expect("tally");
        (t.rows, t.cost)
    })
}

pub async fn result_bookkeeping(bench: &Bench, lines: usize, rounds: usize) {
    let total = 20 * (lines as u64 + 4);
    let (mut plain, mut with_results) = ((0.0, 0u64), (0.0, 0u64));
    let mut all_lost = 0;
    for round in 1..=rounds {
        for results in [false, true] {
            let model = if results { format!("fake-results-{lines}-{EVERY}") } else { format!("fake-flood-{lines}") };
            let (elapsed, stored, lost, ids) = flood(bench, &model, lines).await;
            all_lost += lost;
            let expected = 20 * if results { (lines / EVERY) as i64 + 1 } else { 1 };
            let [ledger, rollup, sessions] = ledger_of(bench, &ids).await;
            let cost = 0.001 * expected as f64;
            let close = |a: f64| (a - cost).abs() <= 1e-9 * cost;
            let ok = ledger.0 == expected
                && rollup.0 == expected
                && sessions.0 == expected
                && close(ledger.1)
                && close(rollup.1)
                && close(sessions.1);
            for id in &ids {
                bench.close(id).await;
            }
            let label = if results { "every 10th line a result" } else { "no result lines (turn's own only)" };
            let Some(s) = elapsed else {
                println!("!!! result bookkeeping, {label}: not all {total} lines were stored within 300 s ({stored} stored, lost {lost})");
                continue;
            };
            let sums = if results { &mut with_results } else { &mut plain };
            sums.0 += s;
            sums.1 += total;
            println!(
                "result bookkeeping round {round}, {label}: {total} lines from 20 sessions in {s:.2} s = {:.0} lines/s, lost {lost}; results {expected}: ledger rows {}, rollup turns {}, session turns {}, ledger cost {:.3} USD against the sessions' {:.3}{}",
                total as f64 / s,
                ledger.0,
                rollup.0,
                sessions.0,
                ledger.1,
                sessions.1,
                if ok { " (all equal)" } else { " !!! MISMATCH" }
            );
        }
    }
    if plain.0 > 0.0 && with_results.0 > 0.0 {
        let (a, b) = (plain.1 as f64 / plain.0, with_results.1 as f64 / with_results.0);
        println!(
            "result bookkeeping: flood with every 10th line a result {b:.0} lines/s against {a:.0} lines/s with none, ratio {:.2}x ({:.1} us per result line, {} rounds); lost {all_lost} (target: no measurable cost, 0 lost)",
            b / a,
            (1.0 / b - 1.0 / a) * 1e6 * EVERY as f64,
            rounds
        );
    }
    writer_only(lines * 20, rounds).await;
}

/// The writer thread alone: `jobs` jobs, every 10th a turn's totals with (`ledger`) or without
/// its ledger row; jobs per second once all are committed.
async fn writer_rate(jobs: usize, ledger: bool) -> f64 {
    let (_dir, store) = super::common::seeded_store().await;
    let (writer, thread) = Writer::start(store);
    let now = conduit::domain::time::now();
    let ops: Vec<WriteOp> = (0..jobs)
        .map(|i| {
            if i % EVERY != EVERY - 1 {
                return WriteOp::Message(NewMessage {
                    session_id: "s".into(),
                    direction: "from_cli",
                    message_type: "stream_event".into(),
                    message_subtype: None,
                    content: format!(r#"{{"type":"stream_event","event":{{"type":"content_block_delta","index":0,"delta":{{"type":"text_delta","text":"t{i}"}}}},"session_id":"x"}}"#),
                    timestamp: now.clone(),
                    seq: Some(i as i64 + 1),
                    cli_seq: None,
                });
            }
            let n = (i / EVERY + 1) as i64;
            let patch = SessionPatch {
                total_cost_usd: Some(0.001 * n as f64),
                total_input_tokens: Some(3 * n),
                total_output_tokens: Some(2 * n),
                num_turns: Some(n as i32),
                last_active_at: Some(now.clone()),
                ..Default::default()
            };
            let id = SessionId::from_stored("s");
            if !ledger {
                return WriteOp::Session { id, patch };
            }
            let usage = NewUsage {
                recorded_at: now.clone(),
                project_id: Some("p".into()),
                session_id: Some("s".into()),
                execution_id: None,
                agent_id: None,
                agent: "claude".into(),
                model: Some("fake".into()),
                cost_usd: 0.001,
                input_tokens: 3,
                output_tokens: 2,
            };
            WriteOp::TurnResult { id, patch, usage }
        })
        .collect();
    let started = Instant::now();
    for op in ops {
        writer.persist(op);
    }
    writer.flush().await.expect("flush");
    let rate = jobs as f64 / started.elapsed().as_secs_f64();
    drop(writer);
    let _ = tokio::task::spawn_blocking(move || thread.join()).await;
    rate
}

async fn writer_only(jobs: usize, rounds: usize) {
    let (mut without, mut with) = (Vec::new(), Vec::new());
    for _ in 0..rounds.max(1) * 2 {
        without.push(writer_rate(jobs, false).await);
        with.push(writer_rate(jobs, true).await);
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let (a, b) = (mean(&without), mean(&with));
    println!(
        "result bookkeeping, writer alone: {jobs} jobs, every 10th a turn's totals with its ledger row (and its rollups): {b:.0} jobs/s against {a:.0} jobs/s without (totals only); ratio {:.2}x ({:.1} us per ledger row; runs: {:?} against {:?})",
        b / a,
        (1.0 / b - 1.0 / a) * 1e6 * EVERY as f64,
        with.iter().map(|r| r.round() as u64).collect::<Vec<_>>(),
        without.iter().map(|r| r.round() as u64).collect::<Vec<_>>(),
    );
}
