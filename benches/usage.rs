//! Cost-ledger benchmarks: `scripts/bench.sh usage`.
//!
//! Ledger queries over `BENCH_USAGE_ROWS` (1,000,000) ledger rows spread over 30 days (20
//! projects, a few thousand sessions, scheduled agents, several models and agent kinds: see
//! usage/ledger.rs), written into the service's own database (made by its migrations) through
//! `db::usage::record`, so each ledger row's rollup upserts (the database's trigger) are the
//! product's. Then,
//! `BENCH_USAGE_QUERIES` (300) times each, interleaved: GET /api/usage?group_by=project and
//! ?group_by=day over the 30 days with `from` and `to` off the hour (so the partial hours at
//! both edges are read from the ledger), over real HTTP; the same through `db::usage::sum_by`
//! directly; and the baseline, a plain SQL aggregate of the window's ledger rows on the same
//! file. `sum_by` is timed twice a round: right after the baseline (whose scan of a million rows
//! leaves the CPU caches cold: about twice as slow) and after other product queries (as a
//! service answering requests runs it). p50 and p99 of each, the ratios to the baseline and
//! the target (p99 < 50 ms). Every
//! answer is checked against the baseline's (cost to 1e-6 relative, tokens and turns exactly),
//! and both rollups against the ledger regrouped by their keys.
//!
//! The per-result bookkeeping's cost on the persistence path is in the sessions benchmark
//! (sessions/results.rs).

mod common;
#[path = "usage/ledger.rs"]
mod ledger;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use common::env_usize;
use conduit::db::usage::{sum_by, Figures};
use conduit::db::DbConnection;
use conduit::domain::usage::{split, stamp, GroupBy, Split};
use diesel::connection::SimpleConnection;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Double, Nullable, Text};
use diesel::SqliteConnection;

type Sums = BTreeMap<Option<String>, Figures>;

/// What is measured: the product's grouping, its name in the query string, and the plain SQL
/// key of the baseline.
const GROUPINGS: [(GroupBy, &str, &str); 2] =
    [(GroupBy::Project, "project", "project_id"), (GroupBy::Day, "day", "substr(recorded_at, 1, 10)")];

#[derive(QueryableByName)]
struct Group {
    #[diesel(sql_type = Nullable<Text>)]
    key: Option<String>,
    #[diesel(sql_type = Double)]
    cost_usd: f64,
    #[diesel(sql_type = BigInt)]
    input_tokens: i64,
    #[diesel(sql_type = BigInt)]
    output_tokens: i64,
    #[diesel(sql_type = BigInt)]
    turns: i64,
}

/// The baseline: the window's ledger rows summed by plain SQL.
fn plain(conn: &mut SqliteConnection, key: &str, (from, to): (&str, &str)) -> Sums {
    let sql = format!(
        "SELECT {key} AS key, SUM(cost_usd) AS cost_usd, SUM(input_tokens) AS input_tokens, \
         SUM(output_tokens) AS output_tokens, COUNT(*) AS turns FROM usage_ledger \
         WHERE recorded_at >= ? AND recorded_at < ? GROUP BY {key}"
    );
    let rows: Vec<Group> =
        diesel::sql_query(sql).bind::<Text, _>(from).bind::<Text, _>(to).load(conn).expect("the plain aggregate");
    rows.into_iter()
        .map(|g| {
            let figures = Figures {
                cost_usd: g.cost_usd,
                input_tokens: g.input_tokens,
                output_tokens: g.output_tokens,
                turns: g.turns,
            };
            (g.key, figures)
        })
        .collect()
}

#[derive(QueryableByName)]
struct PlanStep {
    #[diesel(sql_type = Text)]
    detail: String,
}

/// How SQLite runs the baseline (for the reader of the figures).
fn plan(conn: &mut SqliteConnection, key: &str) -> String {
    let sql = format!(
        "EXPLAIN QUERY PLAN SELECT {key}, SUM(cost_usd), SUM(input_tokens), SUM(output_tokens), COUNT(*)          FROM usage_ledger WHERE recorded_at >= ? AND recorded_at < ? GROUP BY {key}"
    );
    let steps: Vec<PlanStep> = diesel::sql_query(sql)
        .bind::<Text, _>("2026-10-01")
        .bind::<Text, _>("2026-11-01")
        .load(conn)
        .unwrap_or_default();
    steps.into_iter().map(|s| s.detail).collect::<Vec<_>>().join("; ")
}

/// The groups of a GET /api/usage answer, and its total under the key "(total)".
fn answered(body: &[u8]) -> Result<Sums, String> {
    let v: serde_json::Value = serde_json::from_slice(body).map_err(|e| format!("not JSON: {e}"))?;
    let figures = |g: &serde_json::Value| Figures {
        cost_usd: g["cost_usd"].as_f64().unwrap_or(f64::NAN),
        input_tokens: g["input_tokens"].as_i64().unwrap_or(-1),
        output_tokens: g["output_tokens"].as_i64().unwrap_or(-1),
        turns: g["turns"].as_i64().unwrap_or(-1),
    };
    let groups = v["groups"].as_array().ok_or_else(|| format!("no groups in {v}"))?;
    let mut sums: Sums = groups.iter().map(|g| (g["key"].as_str().map(str::to_string), figures(g))).collect();
    sums.insert(Some("(total)".to_string()), figures(&v["total"]));
    Ok(sums)
}

fn with_total(mut sums: Sums) -> Sums {
    let mut total = Figures::default();
    for f in sums.values() {
        total.cost_usd += f.cost_usd;
        total.input_tokens += f.input_tokens;
        total.output_tokens += f.output_tokens;
        total.turns += f.turns;
    }
    sums.insert(Some("(total)".to_string()), total);
    sums
}

/// Where `got` differs from `expected`: cost beyond 1e-6 relative, tokens or turns at all.
fn mismatches(expected: &Sums, got: &Sums) -> Vec<String> {
    let keys: BTreeSet<&Option<String>> = expected.keys().chain(got.keys()).collect();
    let mut out = Vec::new();
    for key in keys {
        let same = match (expected.get(key), got.get(key)) {
            (Some(e), Some(g)) => {
                (e.cost_usd - g.cost_usd).abs() <= 1e-6 * e.cost_usd.abs().max(g.cost_usd.abs())
                    && (e.input_tokens, e.output_tokens, e.turns) == (g.input_tokens, g.output_tokens, g.turns)
            }
            _ => false,
        };
        if !same {
            out.push(format!("key {key:?}: plain SQL {:?}, product {:?}", expected.get(key), got.get(key)));
        }
    }
    out
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 * p) as usize).min(sorted.len() - 1)]
}

/// The baseline's and the product's connections, moved to a blocking thread for each round.
struct Direct {
    plain: SqliteConnection,
    product: DbConnection,
}

#[derive(Default)]
struct Samples {
    http: Vec<Duration>,
    /// `sum_by` after other product queries, as a service answering requests runs it.
    direct: Vec<Duration>,
    /// `sum_by` right after the baseline's scan of a million rows (the CPU caches cold).
    cold: Vec<Duration>,
    plain: Vec<Duration>,
    /// The baseline's answer this round.
    expected: Sums,
    /// Answers checked against the baseline's, and those that differed.
    checked: usize,
    wrong: usize,
}

impl Samples {
    fn check(&mut self, what: &str, got: &Sums) {
        self.checked += 1;
        let bad = mismatches(&self.expected, got);
        if !bad.is_empty() {
            self.wrong += 1;
            if self.wrong <= 3 {
                println!("!!! MISMATCH: {what} differs from the plain SQL aggregate in {} groups:", bad.len());
                bad.iter().take(5).for_each(|b| println!("!!!   {b}"));
            }
        }
    }
}

fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let started = Instant::now();
    let out = f();
    (out, started.elapsed())
}

/// Per grouping: the baseline's answer and time, `sum_by`'s right after it, and `sum_by`'s warm.
type Round = Vec<[(Sums, Duration); 3]>;

/// One round, on a blocking thread: for each grouping the baseline, then `sum_by` at once
/// (cold); then each `sum_by` once untimed and once timed (warm).
fn direct_round(mut direct: Direct, window: &Split, (from, to): (&str, &str)) -> (Direct, Round) {
    let sum = |conn: &mut DbConnection, group: GroupBy| with_total(sum_by(conn, group, window, None).expect("sum_by"));
    let mut firsts = Vec::new();
    for (group, _, key) in GROUPINGS {
        let baseline = timed(|| with_total(plain(&mut direct.plain, key, (from, to))));
        let cold = timed(|| sum(&mut direct.product, group));
        firsts.push((baseline, cold));
    }
    for (group, _, _) in GROUPINGS {
        std::hint::black_box(sum(&mut direct.product, group));
    }
    let out = GROUPINGS
        .iter()
        .zip(firsts)
        .map(|((group, _, _), (baseline, cold))| [baseline, cold, timed(|| sum(&mut direct.product, *group))])
        .collect();
    (direct, out)
}

async fn one_round(
    direct: Direct,
    http: &reqwest::Client,
    url: &str,
    (from, to): (&str, &str),
    window: &Split,
    samples: &mut [Samples],
) -> Direct {
    let (bounds, window) = ((from.to_string(), to.to_string()), window.clone());
    let (direct, answers) = tokio::task::spawn_blocking(move || direct_round(direct, &window, (&bounds.0, &bounds.1)))
        .await
        .expect("the blocking round");
    for (s, [(expected, baseline), (cold_sums, cold), (warm_sums, warm)]) in samples.iter_mut().zip(answers) {
        s.expected = expected;
        s.plain.push(baseline);
        s.cold.push(cold);
        s.direct.push(warm);
        s.check("sum_by (right after the baseline)", &cold_sums);
        s.check("sum_by", &warm_sums);
    }
    for ((_, name, _), s) in GROUPINGS.iter().zip(samples.iter_mut()) {
        let started = Instant::now();
        let res = http
            .get(url)
            .query(&[("group_by", *name), ("from", from), ("to", to)])
            .send()
            .await
            .expect("GET /api/usage");
        let status = res.status();
        let body = res.bytes().await.expect("the body");
        s.http.push(started.elapsed());
        match answered(&body) {
            Ok(got) if status.is_success() => s.check(&format!("GET /api/usage by {name}"), &got),
            other => {
                s.checked += 1;
                s.wrong += 1;
                println!("!!! MISMATCH: GET /api/usage by {name} answered {status}: {:?}", other.err());
            }
        }
    }
    direct
}

fn report(name: &str, rows: usize, s: &mut Samples) {
    for v in [&mut s.http, &mut s.direct, &mut s.cold, &mut s.plain] {
        v.sort();
    }
    let p = |v: &[Duration]| (percentile(v, 0.5), percentile(v, 0.99));
    let ((h50, h99), (d50, d99), (c50, c99), (p50, p99)) = (p(&s.http), p(&s.direct), p(&s.cold), p(&s.plain));
    let ratio = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64();
    let met = if h99 < Duration::from_millis(50) { "met" } else { "NOT met" };
    println!(
        "usage by {name}, 30 days, {rows} ledger rows, {} rounds: GET /api/usage p50 {:.2} ms p99 {:.2} ms; sum_by p50 {:.2} ms p99 {:.2} ms (right after the baseline's scan: p50 {:.2} ms p99 {:.2} ms); plain SQL aggregate (baseline) p50 {:.2} ms p99 {:.2} ms; p99 ratio to the baseline: HTTP {:.3}x, sum_by {:.3}x, right after the scan {:.3}x (p50: {:.3}x, {:.3}x, {:.3}x); answers checked {}, mismatches {} (target: p99 < 50 ms over HTTP: {met})",
        s.http.len(),
        ms(h50),
        ms(h99),
        ms(d50),
        ms(d99),
        ms(c50),
        ms(c99),
        ms(p50),
        ms(p99),
        ratio(h99, p99),
        ratio(d99, p99),
        ratio(c99, p99),
        ratio(h50, p50),
        ratio(d50, p50),
        ratio(c50, p50),
        s.checked,
        s.wrong,
    );
}

async fn ledger_queries(rows: usize, rounds: usize) {
    if common::database::on_postgres() {
        println!("ledger: skipped on PostgreSQL (it fills and checks the SQLite file)");
        return;
    }
    let service = common::start_service(10).await;
    let path = service.dir.path().join("bench.db");
    let open = |path: &std::path::Path| conduit::db::open_sqlite(path, 5000).expect("open the service's database");
    let ledger = ledger::generate(rows);
    let (n, sessions, runs) = (ledger.len(), ledger.sessions, ledger.runs);
    let fill_path = path.clone();
    let (took, rollup) = tokio::task::spawn_blocking(move || {
        let mut sqlite = DbConnection::Sqlite(open(&fill_path));
        let took = ledger.fill(&mut sqlite, 10_000);
        let DbConnection::Sqlite(mut conn) = sqlite else { unreachable!("opened as SQLite above") };
        conn.batch_execute("PRAGMA wal_checkpoint(TRUNCATE)").expect("checkpoint");
        (took, ledger::check_rollups(&mut conn))
    })
    .await
    .expect("filling the ledger");
    let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    println!(
        "ledger: {n} rows ({sessions} sessions, {runs} scheduled-agent runs, 20 projects) over 30 days, written through db::usage::record 10,000 to a transaction in {:.1} s ({:.0} rows/s); database {:.0} MiB",
        took.as_secs_f64(),
        n as f64 / took.as_secs_f64(),
        size as f64 / 1048576.0
    );
    for (name, groups, rollup_rows, matching) in rollup {
        let same = groups == rollup_rows && rollup_rows == matching;
        println!(
            "{}{name} rollup: {rollup_rows} rows; the ledger regrouped by its key: {groups} groups, {matching} equal to their rollup row{}",
            if same { "" } else { "!!! MISMATCH: " },
            if same { " (identical)" } else { " (NOT identical)" }
        );
    }

    // 2026-10-01T00:20:34.567Z to 2026-10-30T23:41:12.345Z: both edges inside an hour.
    let at = |ms: i64| chrono::DateTime::from_timestamp_millis(ms).unwrap_or_default();
    let (from, to) = (at(ledger::START_MS + 1_234_567), at(ledger::START_MS + ledger::DAYS * 86_400_000 - 1_127_655));
    let window = split(&from, &to);
    assert_eq!(window.edges.len(), 2, "the window's edges must be partial hours");
    let (from, to) = (stamp(&from), stamp(&to));
    let url = format!("{}/api/usage", service.base);
    let http = reqwest::Client::new();
    let mut direct = Direct { plain: open(&path), product: DbConnection::Sqlite(open(&path)) };
    let mut samples: Vec<Samples> = GROUPINGS.iter().map(|_| Samples::default()).collect();
    let mut warm: Vec<Samples> = GROUPINGS.iter().map(|_| Samples::default()).collect();
    for round in 0..rounds + 3 {
        let into = if round < 3 { &mut warm } else { &mut samples };
        direct = one_round(direct, &http, &url, (&from, &to), &window, into).await;
    }
    println!(
        "window [{from}, {to}): whole days {:?} from the daily rollup, whole hours {:?} from the hourly one, edges {:?} from the ledger",
        window.days, window.hours, window.edges
    );
    for ((_, name, key), s) in GROUPINGS.iter().zip(samples.iter_mut()) {
        println!("baseline by {name}, as SQLite runs it: {}", plan(&mut direct.plain, key));
        report(name, n, s);
    }
    let wrong: usize = warm.iter().chain(samples.iter()).map(|s| s.wrong).sum();
    if wrong > 0 {
        println!("!!! {wrong} answers differed from the plain SQL aggregate (warm-up rounds included)");
    }
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --all-targets` runs this binary without it.
    if !std::env::args().any(|a| a == "--bench") {
        println!("usage benchmark: skipped (run it with scripts/bench.sh usage)");
        return;
    }
    let rows = env_usize("BENCH_USAGE_ROWS", 1_000_000);
    let rounds = env_usize("BENCH_USAGE_QUERIES", 300).max(1);
    actix_web::rt::System::new().block_on(ledger_queries(rows, rounds));
}
