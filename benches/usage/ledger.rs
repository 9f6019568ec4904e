//! A month of ledger rows, made up but shaped like real use, written the product's way.
//!
//! 20 projects (a few much busier than the rest), sessions of Claude Code, Codex and Gemini CLI
//! (several models each, a few reporting none) started at random over 30 days, each 50-600
//! turns 3 s to 5 min apart; and 8 scheduled agents (two outside any project) running every 1
//! to 24 hours for 3-15 turns. Costs follow each model's token prices. Rows are written in
//! time order through `db::usage::record` (the ledger row and its hour's rollup upsert), many
//! to a transaction.

use std::time::{Duration, Instant};

use conduit::db::usage::{record, NewUsage};
use conduit::db::DbConnection;
use diesel::prelude::*;
use diesel::sql_types::BigInt;

pub const DAYS: i64 = 30;
/// 2026-10-01T00:00:00Z, in milliseconds: the first day of the month of data.
pub const START_MS: i64 = 1_790_812_800_000;
const PROJECTS: usize = 20;
const DAY_MS: i64 = 86_400_000;

/// splitmix64: the same data on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn log_uniform(&mut self, lo: f64, hi: f64) -> f64 {
        (lo.ln() + self.unit() * (hi.ln() - lo.ln())).exp()
    }

    fn uuid(&mut self) -> String {
        let mut bytes = [0u8; 16];
        bytes[..8].copy_from_slice(&self.next().to_le_bytes());
        bytes[8..].copy_from_slice(&self.next().to_le_bytes());
        uuid::Builder::from_random_bytes(bytes).into_uuid().to_string()
    }
}

/// A model and its prices, in USD per million input and output tokens.
type Priced = (&'static str, f64, f64);

/// Models per agent kind.
const MODELS: [(&str, &[Priced]); 3] = [
    ("claude", &[("claude-sonnet-4-5", 3.0, 15.0), ("claude-opus-4-1", 15.0, 75.0), ("claude-haiku-4-5", 1.0, 5.0)]),
    ("codex", &[("gpt-5-codex", 1.25, 10.0), ("gpt-5-mini", 0.25, 2.0)]),
    ("gemini", &[("gemini-2.5-pro", 1.25, 10.0), ("gemini-2.5-flash", 0.3, 2.5)]),
];

/// Who spent: a session, or one run of a scheduled agent.
struct Owner {
    project: Option<usize>,
    session: Option<String>,
    execution: Option<String>,
    agent_id: Option<String>,
    agent: &'static str,
    model: Option<&'static str>,
    prices: (f64, f64),
}

/// One turn: when, whose, and what it used.
struct Turn {
    at_ms: i64,
    owner: u32,
    input: i64,
    output: i64,
}

pub struct Ledger {
    projects: Vec<String>,
    owners: Vec<Owner>,
    turns: Vec<Turn>,
    pub sessions: usize,
    pub runs: usize,
}

fn kind_and_model(rng: &mut Rng) -> (&'static str, Option<&'static str>, (f64, f64)) {
    let r = rng.unit();
    let (kind, models) = if r < 0.7 {
        MODELS[0]
    } else if r < 0.9 {
        MODELS[1]
    } else {
        MODELS[2]
    };
    let (model, pin, pout) = models[rng.below(models.len() as u64) as usize];
    // A few CLIs report no model.
    let model = if rng.below(50) == 0 { None } else { Some(model) };
    (kind, model, (pin, pout))
}

fn turn(rng: &mut Rng, at_ms: i64, owner: usize) -> Turn {
    let input = rng.log_uniform(800.0, 80_000.0) as i64;
    let output = rng.log_uniform(50.0, 6_000.0) as i64;
    Turn { at_ms, owner: owner as u32, input, output }
}

/// `rows` turns in all, over [`DAYS`] days from [`START_MS`].
pub fn generate(rows: usize) -> Ledger {
    let mut rng = Rng(0x00C0_FFEE);
    let projects: Vec<String> = (0..PROJECTS).map(|_| rng.uuid()).collect();
    // Project p is chosen with weight 1 / (p + 1): the first few are much busier.
    let weights: Vec<f64> = (0..PROJECTS).map(|p| 1.0 / (p as f64 + 1.0)).collect();
    let total_weight: f64 = weights.iter().sum();
    let end_ms = START_MS + DAYS * DAY_MS;
    let (mut owners, mut turns) = (Vec::new(), Vec::with_capacity(rows + 1_000));

    // Scheduled agents: agent a runs every PERIODS[a] hours.
    const PERIODS: [i64; 8] = [1, 2, 3, 4, 6, 8, 12, 24];
    let mut runs = 0;
    for (a, period) in PERIODS.iter().enumerate() {
        let agent_id = rng.uuid();
        let project = (a < 6).then_some(a % PROJECTS);
        let (kind, model, prices) = kind_and_model(&mut rng);
        let mut at = START_MS + rng.below(3_600_000) as i64;
        while at < end_ms {
            owners.push(Owner {
                project,
                session: None,
                execution: Some(rng.uuid()),
                agent_id: Some(agent_id.clone()),
                agent: kind,
                model,
                prices,
            });
            runs += 1;
            let mut t = at;
            for _ in 0..3 + rng.below(13) {
                t += (rng.log_uniform(2.0, 60.0) * 1000.0) as i64;
                if t < end_ms {
                    turns.push(turn(&mut rng, t, owners.len() - 1));
                }
            }
            at += period * 3_600_000;
        }
    }

    let mut sessions = 0;
    while turns.len() < rows {
        let mut pick = rng.unit() * total_weight;
        let project = weights.iter().position(|w| {
            pick -= w;
            pick < 0.0
        });
        let (kind, model, prices) = kind_and_model(&mut rng);
        owners.push(Owner {
            project: Some(project.unwrap_or(PROJECTS - 1)),
            session: Some(rng.uuid()),
            execution: None,
            agent_id: None,
            agent: kind,
            model,
            prices,
        });
        sessions += 1;
        let mut t = START_MS + rng.below((DAYS * DAY_MS) as u64) as i64;
        for _ in 0..50 + rng.below(551) {
            t += (rng.log_uniform(3.0, 300.0) * 1000.0) as i64;
            if t >= end_ms || turns.len() >= rows {
                break;
            }
            turns.push(turn(&mut rng, t, owners.len() - 1));
        }
    }
    turns.sort_by_key(|t| t.at_ms);
    // Only when `rows` is smaller than what the agents alone spend.
    turns.truncate(rows);
    Ledger { projects, owners, turns, sessions, runs }
}

impl Ledger {
    pub fn len(&self) -> usize {
        self.turns.len()
    }

    fn row(&self, t: &Turn) -> NewUsage {
        let o = &self.owners[t.owner as usize];
        let at = chrono::DateTime::from_timestamp_millis(t.at_ms).unwrap_or_default();
        NewUsage {
            recorded_at: conduit::domain::usage::stamp(&at),
            project_id: o.project.map(|p| self.projects[p].clone()),
            session_id: o.session.clone(),
            execution_id: o.execution.clone(),
            agent_id: o.agent_id.clone(),
            agent: o.agent.to_string(),
            model: o.model.map(str::to_string),
            cost_usd: (t.input as f64 * o.prices.0 + t.output as f64 * o.prices.1) / 1e6,
            input_tokens: t.input,
            output_tokens: t.output,
        }
    }

    /// Writes every row through `db::usage::record`, `per_transaction` to a transaction, as
    /// the writer thread batches them; returns how long it took.
    pub fn fill(&self, conn: &mut DbConnection, per_transaction: usize) -> Duration {
        let started = Instant::now();
        for chunk in self.turns.chunks(per_transaction) {
            conn.transaction(|c| chunk.iter().try_for_each(|t| record(c, &self.row(t)))).expect("recording the ledger");
        }
        started.elapsed()
    }
}

#[derive(QueryableByName)]
struct RollupCheck {
    #[diesel(sql_type = BigInt)]
    groups: i64,
    #[diesel(sql_type = BigInt)]
    rollup_rows: i64,
    #[diesel(sql_type = BigInt)]
    matching: i64,
}

/// The rollups against the ledger regrouped by hour and every key, and by day and every key
/// but the session: for each, (groups, rollup rows, rollup rows equal to their group: tokens
/// and turns exactly, cost to 1e-9 relative).
pub fn check_rollups(conn: &mut diesel::SqliteConnection) -> [(&'static str, i64, i64, i64); 2] {
    let check = |conn: &mut diesel::SqliteConnection, period: &str, len: usize, table: &str, keys: &str| {
        let check: RollupCheck = diesel::sql_query(format!(
            "WITH g AS (
                SELECT substr(recorded_at, 1, {len}) AS {period}, COALESCE(project_id, '') AS project_id,
                    COALESCE(session_id, '') AS session_id, COALESCE(agent_id, '') AS agent_id, agent,
                    COALESCE(model, '') AS model, SUM(cost_usd) AS cost, SUM(input_tokens) AS input,
                    SUM(output_tokens) AS output, COUNT(*) AS turns
                FROM usage_ledger GROUP BY {keys})
            SELECT (SELECT COUNT(*) FROM g) AS groups, (SELECT COUNT(*) FROM {table}) AS rollup_rows,
                (SELECT COUNT(*) FROM g JOIN {table} r USING ({keys})
                 WHERE r.input_tokens = g.input AND r.output_tokens = g.output AND r.turns = g.turns
                   AND ABS(r.cost_usd - g.cost) <= 1e-9 * MAX(ABS(g.cost), 1e-12)) AS matching"
        ))
        .get_result(conn)
        .expect("checking a rollup");
        (check.groups, check.rollup_rows, check.matching)
    };
    let hourly = check(conn, "hour", 13, "usage_hourly", "hour, project_id, session_id, agent_id, agent, model");
    let daily = check(conn, "day", 10, "usage_daily", "day, project_id, agent_id, agent, model");
    [("hourly", hourly.0, hourly.1, hourly.2), ("daily", daily.0, daily.1, daily.2)]
}
