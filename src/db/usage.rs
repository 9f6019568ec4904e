//! Queries on the cost ledger (`usage_ledger`) and its hourly rollup (`usage_hourly`).
//!
//! Every ledger row is added to its hour's rollup row in the same transaction ([`record`]), so
//! sums over whole hours read the small rollup and never the ledger; only the partial hours
//! at a window's edges read ledger rows (through the `recorded_at` index).

use std::collections::BTreeMap;

use diesel::dsl::sql;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Double};
use serde::Serialize;
use utoipa::ToSchema;

use super::schema::{usage_hourly, usage_ledger};
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

#[derive(Insertable)]
#[diesel(table_name = usage_hourly)]
struct HourRow<'a> {
    hour: &'a str,
    project_id: &'a str,
    session_id: &'a str,
    agent_id: &'a str,
    agent: &'a str,
    model: &'a str,
    cost_usd: f64,
    input_tokens: i64,
    output_tokens: i64,
    turns: i64,
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

/// Appends a ledger row and adds it to its hour. Call it inside the transaction that stores
/// the totals it was computed from, so a crash keeps both or neither.
pub fn record(conn: &mut DbConnection, row: &NewUsage) -> Result<(), StoreError> {
    diesel::insert_into(usage_ledger::table).values(row).execute(conn)?;
    let hour = row.recorded_at.get(..13).unwrap_or(&row.recorded_at);
    let rollup = HourRow {
        hour,
        project_id: row.project_id.as_deref().unwrap_or(""),
        session_id: row.session_id.as_deref().unwrap_or(""),
        agent_id: row.agent_id.as_deref().unwrap_or(""),
        agent: &row.agent,
        model: row.model.as_deref().unwrap_or(""),
        cost_usd: row.cost_usd,
        input_tokens: row.input_tokens,
        output_tokens: row.output_tokens,
        turns: 1,
    };
    use usage_hourly::dsl as h;
    // Upserts are written per backend (the multi-backend type has no ON CONFLICT).
    match conn {
        DbConnection::Sqlite(c) => {
            diesel::insert_into(usage_hourly::table)
                .values(&rollup)
                .on_conflict((h::hour, h::project_id, h::session_id, h::agent_id, h::agent, h::model))
                .do_update()
                .set((
                    h::cost_usd.eq(h::cost_usd + row.cost_usd),
                    h::input_tokens.eq(h::input_tokens + row.input_tokens),
                    h::output_tokens.eq(h::output_tokens + row.output_tokens),
                    h::turns.eq(h::turns + 1),
                ))
                .execute(c)?;
        }
    }
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

/// Whole hours `[first, last)` from the rollup, grouped by one column. Days are grouped by
/// hour here and folded by the caller.
fn rollup(
    conn: &mut DbConnection,
    group: GroupBy,
    (first, last): (&str, &str),
    project: Option<&str>,
) -> Result<Vec<Row>, StoreError> {
    use usage_hourly::dsl as h;
    macro_rules! grouped {
        ($col:expr) => {{
            let (cost, input, output, turns) = sums();
            let query = h::usage_hourly
                .filter(h::hour.ge(first))
                .filter(h::hour.lt(last))
                .group_by($col)
                .select(($col, cost, input, output, turns));
            match project {
                Some(project) => query.filter(h::project_id.eq(project)).load::<Row>(conn)?,
                None => query.load::<Row>(conn)?,
            }
        }};
    }
    Ok(match group {
        GroupBy::Project => grouped!(h::project_id),
        GroupBy::Session => grouped!(h::session_id),
        GroupBy::Agent => grouped!(h::agent_id),
        GroupBy::AgentKind => grouped!(h::agent),
        GroupBy::Model => grouped!(h::model),
        GroupBy::Day => grouped!(h::hour),
    })
}

/// Ledger rows in `[from, to)` (timestamps), for a window's partial hours.
fn edge(
    conn: &mut DbConnection,
    (from, to): (&str, &str),
    project: Option<&str>,
) -> Result<Vec<NewUsageRow>, StoreError> {
    use usage_ledger::dsl as l;
    let mut query = l::usage_ledger.filter(l::recorded_at.ge(from)).filter(l::recorded_at.lt(to)).into_boxed();
    if let Some(project) = project {
        query = query.filter(l::project_id.eq(project));
    }
    Ok(query
        .select((
            l::recorded_at,
            l::project_id,
            l::session_id,
            l::agent_id,
            l::agent,
            l::model,
            l::cost_usd,
            l::input_tokens,
            l::output_tokens,
        ))
        .load::<NewUsageRow>(conn)?)
}

type NewUsageRow = (String, Option<String>, Option<String>, Option<String>, String, Option<String>, f64, i64, i64);

fn edge_key(group: GroupBy, row: &NewUsageRow) -> Option<String> {
    let (at, project, session, agent_id, agent, model, ..) = row;
    match group {
        GroupBy::Project => project.clone(),
        GroupBy::Session => session.clone(),
        GroupBy::Agent => agent_id.clone(),
        GroupBy::AgentKind => Some(agent.clone()),
        GroupBy::Model => model.clone(),
        GroupBy::Day => at.get(..10).map(str::to_string),
    }
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
    if let Some((first, last)) = &window.whole {
        for (key, cost_usd, input_tokens, output_tokens, turns) in rollup(conn, group, (first, last), project)? {
            let key = match group {
                GroupBy::Day => key.get(..10).map(str::to_string),
                _ => Some(key).filter(|k| !k.is_empty()),
            };
            out.entry(key).or_default().add(Figures { cost_usd, input_tokens, output_tokens, turns });
        }
    }
    for (from, to) in &window.edges {
        for row in edge(conn, (from, to), project)? {
            let figures = Figures { cost_usd: row.6, input_tokens: row.7, output_tokens: row.8, turns: 1 };
            out.entry(edge_key(group, &row)).or_default().add(figures);
        }
    }
    Ok(out)
}

/// What a project (or, with `None`, everything) has cost since `hour` (an hour text), for
/// budgets: periods start on whole hours, so the rollup alone answers.
pub fn spent_since(conn: &mut DbConnection, hour: &str, project: Option<&str>) -> Result<f64, StoreError> {
    use usage_hourly::dsl as h;
    let mut query = h::usage_hourly.filter(h::hour.ge(hour)).into_boxed();
    if let Some(project) = project {
        query = query.filter(h::project_id.eq(project));
    }
    Ok(query.select(sql::<Double>("CAST(COALESCE(SUM(cost_usd), 0) AS DOUBLE PRECISION)")).first(conn)?)
}
