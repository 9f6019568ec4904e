//! Queries on the cost ledger (`usage_ledger`) and its rollups per hour and session
//! (`usage_hourly`) and per day (`usage_daily`, without sessions).
//!
//! The database adds every ledger row to its rollup rows in the statement that inserts it (a
//! trigger), so sums over whole days read the small daily rollup, whole hours around them the
//! hourly one, and only the partial hours at a window's edges read ledger rows (through the
//! `recorded_at` index, summed in SQL).

use std::collections::BTreeMap;

use diesel::dsl::sql;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Double};
use serde::Serialize;
use utoipa::ToSchema;

use super::schema::{usage_daily, usage_hourly, usage_ledger};
use super::{DbConnection, StoreError};
use crate::domain::usage::{GroupBy, Split};

/// One turn's cost, as recorded.
#[derive(Debug, Clone, PartialEq, Insertable)]
#[diesel(table_name = usage_ledger)]
pub struct NewUsage {
    pub recorded_at: String,
    pub project_id: Option<String>,
    pub session_id: Option<String>,
    pub execution_id: Option<String>,
    pub agent_id: Option<String>,
    pub agent: String,
    pub model: Option<String>,
    pub cost_usd: f64,
    pub input_tokens: i64,
    pub output_tokens: i64,
}

/// Sums over a group of ledger rows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, ToSchema)]
pub struct Figures {
    pub cost_usd: f64,
    pub input_tokens: i64,
    pub output_tokens: i64,
    /// Turn results counted.
    pub turns: i64,
}

impl Figures {
    fn add(&mut self, other: Figures) {
        self.cost_usd += other.cost_usd;
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.turns += other.turns;
    }
}

/// Appends a ledger row; the database adds it to its hour's and its day's rollup rows in the
/// same statement (a trigger). Call it inside the transaction that stores the totals it was
/// computed from, so a crash keeps both or neither.
pub fn record(conn: &mut DbConnection, row: &NewUsage) -> Result<(), StoreError> {
    diesel::insert_into(usage_ledger::table).values(row).execute(conn)?;
    Ok(())
}

/// Sums expressions that read the same on SQLite and PostgreSQL (`sum` of nothing is NULL).
fn sums() -> (
    diesel::expression::SqlLiteral<Double>,
    diesel::expression::SqlLiteral<BigInt>,
    diesel::expression::SqlLiteral<BigInt>,
    diesel::expression::SqlLiteral<BigInt>,
) {
    (
        sql::<Double>("CAST(COALESCE(SUM(cost_usd), 0) AS DOUBLE PRECISION)"),
        sql::<BigInt>("CAST(COALESCE(SUM(input_tokens), 0) AS BIGINT)"),
        sql::<BigInt>("CAST(COALESCE(SUM(output_tokens), 0) AS BIGINT)"),
        sql::<BigInt>("CAST(COALESCE(SUM(turns), 0) AS BIGINT)"),
    )
}

type Row = (String, f64, i64, i64, i64);
type EdgeRow = (Option<String>, f64, i64, i64, i64);

/// Rollup rows of `$table` with `$period` in `[first, last)`, summed by `$col`.
macro_rules! summed {
    ($conn:expr, $table:ident, $period:ident, $col:ident, $range:expr, $project:expr) => {{
        let (first, last) = $range;
        use $table::dsl as t;
        let (cost, input, output, turns) = sums();
        let query = t::$table.filter(t::$period.ge(first)).filter(t::$period.lt(last)).group_by(t::$col).select((
            t::$col,
            cost,
            input,
            output,
            turns,
        ));
        match $project {
            Some(project) => query.filter(t::project_id.eq(project)).load::<Row>($conn)?,
            None => query.load::<Row>($conn)?,
        }
    }};
}

/// Whole hours `[first, last)` from the hourly rollup, grouped by one column. Days are grouped
/// by hour here and folded by the caller.
fn hourly(
    conn: &mut DbConnection,
    group: GroupBy,
    hours: (&str, &str),
    project: Option<&str>,
) -> Result<Vec<Row>, StoreError> {
    Ok(match group {
        GroupBy::Project => summed!(conn, usage_hourly, hour, project_id, hours, project),
        GroupBy::Session => summed!(conn, usage_hourly, hour, session_id, hours, project),
        GroupBy::Agent => summed!(conn, usage_hourly, hour, agent_id, hours, project),
        GroupBy::AgentKind => summed!(conn, usage_hourly, hour, agent, hours, project),
        GroupBy::Model => summed!(conn, usage_hourly, hour, model, hours, project),
        GroupBy::Day => summed!(conn, usage_hourly, hour, hour, hours, project),
    })
}

/// Whole days `[first, last)` from the daily rollup, which has no sessions: `None` for
/// [`GroupBy::Session`].
fn daily(
    conn: &mut DbConnection,
    group: GroupBy,
    days: (&str, &str),
    project: Option<&str>,
) -> Result<Option<Vec<Row>>, StoreError> {
    Ok(Some(match group {
        GroupBy::Session => return Ok(None),
        GroupBy::Project => summed!(conn, usage_daily, day, project_id, days, project),
        GroupBy::Agent => summed!(conn, usage_daily, day, agent_id, days, project),
        GroupBy::AgentKind => summed!(conn, usage_daily, day, agent, days, project),
        GroupBy::Model => summed!(conn, usage_daily, day, model, days, project),
        GroupBy::Day => summed!(conn, usage_daily, day, day, days, project),
    }))
}

/// Ledger rows in `[from, to)` (timestamps, within one hour), summed by `group` in SQL.
fn edge(
    conn: &mut DbConnection,
    group: GroupBy,
    (from, to): (&str, &str),
    project: Option<&str>,
) -> Result<Vec<EdgeRow>, StoreError> {
    use usage_ledger::dsl as l;
    macro_rules! grouped {
        ($col:expr) => {
            grouped!($col, $col)
        };
        ($col:expr, $key:expr) => {{
            let (cost, input, output, _) = sums();
            let query = l::usage_ledger
                .filter(l::recorded_at.ge(from))
                .filter(l::recorded_at.lt(to))
                .group_by($col)
                .select(($key, cost, input, output, sql::<BigInt>("COUNT(*)")));
            match project {
                Some(project) => query.filter(l::project_id.eq(project)).load::<EdgeRow>(conn)?,
                None => query.load::<EdgeRow>(conn)?,
            }
        }};
    }
    Ok(match group {
        GroupBy::Project => grouped!(l::project_id),
        GroupBy::Session => grouped!(l::session_id),
        GroupBy::Agent => grouped!(l::agent_id),
        GroupBy::AgentKind => grouped!(l::agent, l::agent.nullable()),
        GroupBy::Model => grouped!(l::model),
        // An edge lies within one hour, so within one day: its key is its day.
        GroupBy::Day => {
            grouped!(sql::<diesel::sql_types::Nullable<diesel::sql_types::Text>>("substr(recorded_at, 1, 10)"))
        }
    })
}

/// Sums the ledger over a split window, by `group`, optionally for one project. Keys are
/// `None` where the grouped id is absent (a run with no project, a session's agent...).
pub fn sum_by(
    conn: &mut DbConnection,
    group: GroupBy,
    window: &Split,
    project: Option<&str>,
) -> Result<BTreeMap<Option<String>, Figures>, StoreError> {
    let mut out: BTreeMap<Option<String>, Figures> = BTreeMap::new();
    let mut rolled: Vec<Row> = Vec::new();
    let by_day = match &window.days {
        Some((first, last)) => daily(conn, group, (first, last), project)?,
        None => Some(Vec::new()),
    };
    match by_day {
        Some(rows) => {
            rolled.extend(rows);
            for (first, last) in &window.hours {
                rolled.extend(hourly(conn, group, (first, last), project)?);
            }
        }
        None => {
            if let Some((first, last)) = &window.whole {
                rolled.extend(hourly(conn, group, (first, last), project)?);
            }
        }
    }
    for (key, cost_usd, input_tokens, output_tokens, turns) in rolled {
        let key = match group {
            GroupBy::Day => key.get(..10).map(str::to_string),
            _ => Some(key).filter(|k| !k.is_empty()),
        };
        out.entry(key).or_default().add(Figures { cost_usd, input_tokens, output_tokens, turns });
    }
    for (from, to) in &window.edges {
        for (key, cost_usd, input_tokens, output_tokens, turns) in edge(conn, group, (from, to), project)? {
            out.entry(key).or_default().add(Figures { cost_usd, input_tokens, output_tokens, turns });
        }
    }
    Ok(out)
}

/// What a project (or, with `None`, everything) has cost since the start of `day` (a day
/// text), for budgets: their periods start on whole days, so the daily rollup alone answers.
pub fn spent_since(conn: &mut DbConnection, day: &str, project: Option<&str>) -> Result<f64, StoreError> {
    use usage_daily::dsl as d;
    let mut query = d::usage_daily.filter(d::day.ge(day)).into_boxed();
    if let Some(project) = project {
        query = query.filter(d::project_id.eq(project));
    }
    Ok(query.select(sql::<Double>("CAST(COALESCE(SUM(cost_usd), 0) AS DOUBLE PRECISION)")).first(conn)?)
}
