//! The cost ledger's vocabulary: what a turn cost, what a usage query groups by, and how a
//! time window splits into the whole days the daily rollup answers, the whole hours the hourly
//! rollup answers and the partial hours at its edges the ledger itself answers.
//!
//! Times are RFC 3339 UTC text (see [`super::time`]); hours are their first 13 characters
//! (`2026-11-25T18`), days their first 10. Days and months are UTC days and months.

use chrono::{DateTime, Datelike, Duration, NaiveDate, TimeZone, Timelike, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// What one turn cost: the difference the turn made to its process's cumulative figures.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Spend {
    pub cost_usd: f64,
    pub input_tokens: i64,
    pub output_tokens: i64,
}

impl Spend {
    /// Whether there is anything to record (a turn that cost nothing and used no tokens is
    /// still a turn; callers decide).
    pub fn is_zero(&self) -> bool {
        self.cost_usd == 0.0 && self.input_tokens == 0 && self.output_tokens == 0
    }
}

/// What `GET /api/usage` sums by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum GroupBy {
    /// The project (null for a scheduled agent with no project).
    Project,
    /// The session (null for scheduled agents' runs).
    Session,
    /// The scheduled agent (null for sessions started through the API).
    Agent,
    /// The agent CLI: `claude`, `codex`, `gemini`, ...
    AgentKind,
    /// The model the CLI reported (null when it reported none).
    Model,
    /// The UTC day, `YYYY-MM-DD`.
    Day,
}

text_enum!(GroupBy, "usage grouping", {
    Project => "project",
    Session => "session",
    Agent => "agent",
    AgentKind => "agent_kind",
    Model => "model",
    Day => "day",
});

/// The hour a timestamp falls in, as the rollup names it.
pub fn hour_of(at: &DateTime<Utc>) -> String {
    at.format("%Y-%m-%dT%H").to_string()
}

/// The same timestamp text [`super::time::now`] writes.
pub fn stamp(at: &DateTime<Utc>) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// A half-open window `[from, to)` split for the rollups: `whole` is the range of whole hours
/// (`[first, last)` as hour texts) and `edges` the partial ranges left over, as timestamps.
/// The whole hours split again into whole `days` (`[first, last)` as day texts) and the whole
/// `hours` around them, for the daily rollup (which has no sessions).
#[derive(Debug, Clone, PartialEq)]
pub struct Split {
    pub whole: Option<(String, String)>,
    pub days: Option<(String, String)>,
    pub hours: Vec<(String, String)>,
    pub edges: Vec<(String, String)>,
}

/// The start of the hour `at` falls in.
pub fn floor_hour(at: &DateTime<Utc>) -> DateTime<Utc> {
    at.with_minute(0).and_then(|t| t.with_second(0)).and_then(|t| t.with_nanosecond(0)).unwrap_or(*at)
}

/// `at` if `floor` leaves it as it is, else the next boundary `step` after its floor.
fn ceil(at: &DateTime<Utc>, floor: fn(&DateTime<Utc>) -> DateTime<Utc>, step: Duration) -> DateTime<Utc> {
    let down = floor(at);
    if down == *at {
        down
    } else {
        down + step
    }
}

/// Splits `[from, to)`; an empty or inverted window splits into nothing.
pub fn split(from: &DateTime<Utc>, to: &DateTime<Utc>) -> Split {
    let mut out = Split { whole: None, days: None, hours: Vec::new(), edges: Vec::new() };
    if from >= to {
        return out;
    }
    let (first, last) = (ceil(from, floor_hour, Duration::hours(1)), floor_hour(to));
    if first >= last {
        // Within one hour, or across one hour boundary with no whole hour between.
        out.edges.push((stamp(from), stamp(to)));
        return out;
    }
    if *from < first {
        out.edges.push((stamp(from), stamp(&first)));
    }
    out.whole = Some((hour_of(&first), hour_of(&last)));
    let (first_day, last_day) = (ceil(&first, day_start, Duration::days(1)), day_start(&last));
    if first_day < last_day {
        out.days = Some((day_of(&first_day), day_of(&last_day)));
        for (a, b) in [(first, first_day), (last_day, last)] {
            if a < b {
                out.hours.push((hour_of(&a), hour_of(&b)));
            }
        }
    } else {
        out.hours.push((hour_of(&first), hour_of(&last)));
    }
    if last < *to {
        out.edges.push((stamp(&last), stamp(to)));
    }
    out
}

/// The start of the UTC day `at` falls in.
pub fn day_start(at: &DateTime<Utc>) -> DateTime<Utc> {
    Utc.from_utc_datetime(&at.date_naive().and_hms_opt(0, 0, 0).unwrap_or_default())
}

/// The day a timestamp falls in, as the daily rollup names it.
pub fn day_of(at: &DateTime<Utc>) -> String {
    at.format("%Y-%m-%d").to_string()
}

/// The start of the next UTC day.
pub fn next_day(at: &DateTime<Utc>) -> DateTime<Utc> {
    day_start(at) + Duration::days(1)
}

/// The start of the UTC month `at` falls in.
pub fn month_start(at: &DateTime<Utc>) -> DateTime<Utc> {
    let first = NaiveDate::from_ymd_opt(at.year(), at.month(), 1).unwrap_or(at.date_naive());
    Utc.from_utc_datetime(&first.and_hms_opt(0, 0, 0).unwrap_or_default())
}

/// The start of the next UTC month.
pub fn next_month(at: &DateTime<Utc>) -> DateTime<Utc> {
    let (year, month) = if at.month() == 12 { (at.year() + 1, 1) } else { (at.year(), at.month() + 1) };
    let first = NaiveDate::from_ymd_opt(year, month, 1).unwrap_or(at.date_naive());
    Utc.from_utc_datetime(&first.and_hms_opt(0, 0, 0).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn group_by_reads_its_texts() {
        crate::domain::check_text_enum(GroupBy::ALL, &["project", "session", "agent", "agent_kind", "model", "day"]);
    }

    #[test]
    fn a_window_splits_into_whole_hours_and_its_edges() {
        let s = split(&at("2026-11-25T10:15:00Z"), &at("2026-11-25T13:30:00Z"));
        assert_eq!(s.whole, Some(("2026-11-25T11".into(), "2026-11-25T13".into())));
        assert_eq!((s.days, s.hours), (None, vec![("2026-11-25T11".into(), "2026-11-25T13".into())]));
        assert_eq!(
            s.edges,
            vec![
                ("2026-11-25T10:15:00.000Z".into(), "2026-11-25T11:00:00.000Z".into()),
                ("2026-11-25T13:00:00.000Z".into(), "2026-11-25T13:30:00.000Z".into())
            ]
        );
    }

    #[test]
    fn aligned_windows_have_no_edges_and_short_ones_no_whole_hours() {
        let s = split(&at("2026-11-01T00:00:00Z"), &at("2026-12-01T00:00:00Z"));
        assert_eq!((s.whole, s.edges.len()), (Some(("2026-11-01T00".into(), "2026-12-01T00".into())), 0));
        assert_eq!((s.days, s.hours), (Some(("2026-11-01".into(), "2026-12-01".into())), vec![]));
        let s = split(&at("2026-11-25T10:15:00Z"), &at("2026-11-25T11:10:00Z"));
        assert_eq!((s.whole, s.edges.len()), (None, 1));
        let s = split(&at("2026-11-25T11:00:00Z"), &at("2026-11-25T10:00:00Z"));
        assert_eq!(s, Split { whole: None, days: None, hours: vec![], edges: vec![] });
    }

    #[test]
    fn whole_hours_split_into_whole_days_and_the_hours_around_them() {
        let s = split(&at("2026-11-24T22:30:00Z"), &at("2026-11-27T01:10:00Z"));
        assert_eq!(s.whole, Some(("2026-11-24T23".into(), "2026-11-27T01".into())));
        assert_eq!(s.days, Some(("2026-11-25".into(), "2026-11-27".into())));
        assert_eq!(
            s.hours,
            vec![("2026-11-24T23".into(), "2026-11-25T00".into()), ("2026-11-27T00".into(), "2026-11-27T01".into())]
        );
        assert_eq!(s.edges.len(), 2);
        // Across midnight with no whole day between: hours only.
        let s = split(&at("2026-11-24T22:00:00Z"), &at("2026-11-25T02:00:00Z"));
        assert_eq!((s.days, s.hours), (None, vec![("2026-11-24T22".into(), "2026-11-25T02".into())]));
        // A whole day and nothing else.
        let s = split(&at("2026-11-24T00:00:00Z"), &at("2026-11-25T00:00:00Z"));
        assert_eq!((s.days, s.hours, s.edges.len()), (Some(("2026-11-24".into(), "2026-11-25".into())), vec![], 0));
    }

    #[test]
    fn periods_roll_over_at_utc_midnight_and_month_start() {
        let t = at("2026-12-31T23:59:59Z");
        assert_eq!(stamp(&day_start(&t)), "2026-12-31T00:00:00.000Z");
        assert_eq!(stamp(&next_day(&t)), "2027-01-01T00:00:00.000Z");
        assert_eq!(stamp(&month_start(&t)), "2026-12-01T00:00:00.000Z");
        assert_eq!(stamp(&next_month(&t)), "2027-01-01T00:00:00.000Z");
    }
}
