//! Budgets: caps in USD per UTC day and month, for a project and for everything, and a
//! session's own cap. Which one is spent, by how much, and when it resets.

use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;

use super::usage::{next_day, next_month, stamp};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Budget {
    ProjectDaily,
    ProjectMonthly,
    GlobalDaily,
    GlobalMonthly,
    /// A session's `max_budget_usd`.
    Session,
}

impl Budget {
    fn words(self) -> &'static str {
        match self {
            Budget::ProjectDaily => "the project's daily budget",
            Budget::ProjectMonthly => "the project's monthly budget",
            Budget::GlobalDaily => "the daily budget of the service",
            Budget::GlobalMonthly => "the monthly budget of the service",
            Budget::Session => "the session's budget",
        }
    }
}

/// A spent budget.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct Exhaustion {
    pub budget: Budget,
    /// The project whose budget it is (project budgets) or whose session it is.
    pub project_id: Option<String>,
    pub limit_usd: f64,
    pub spent_usd: f64,
    /// When the period rolls over (RFC 3339); `null` for a session's budget, which never does.
    pub resets_at: Option<String>,
}

impl Exhaustion {
    /// A sentence naming the budget and when it resets.
    pub fn message(&self) -> String {
        let when = match &self.resets_at {
            Some(at) => format!("; it resets at {at}, or when it is raised"),
            None => "; it is spent for good unless raised".to_string(),
        };
        format!("{} of ${:.2} is spent (${:.4}){when}.", self.words_capitalized(), self.limit_usd, self.spent_usd)
    }

    fn words_capitalized(&self) -> String {
        let words = self.budget.words();
        let mut chars = words.chars();
        match chars.next() {
            Some(first) => first.to_uppercase().chain(chars).collect(),
            None => String::new(),
        }
    }

    /// Seconds until the reset, for `Retry-After`.
    pub fn retry_after(&self, now: DateTime<Utc>) -> Option<i64> {
        let at = DateTime::parse_from_rfc3339(self.resets_at.as_deref()?).ok()?;
        Some((at.with_timezone(&Utc) - now).num_seconds().max(1))
    }
}

/// A scope's caps.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Caps {
    pub daily: Option<f64>,
    pub monthly: Option<f64>,
}

/// What a scope spent in the current day and month.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Spent {
    pub today: f64,
    pub month: f64,
}

/// The first of a scope's caps that is spent (reached counts: a cap of 0 allows nothing).
pub fn exhausted(caps: Caps, spent: Spent, project_id: Option<&str>, now: &DateTime<Utc>) -> Option<Exhaustion> {
    let (daily, monthly) = if project_id.is_some() {
        (Budget::ProjectDaily, Budget::ProjectMonthly)
    } else {
        (Budget::GlobalDaily, Budget::GlobalMonthly)
    };
    let checks =
        [(monthly, caps.monthly, spent.month, next_month(now)), (daily, caps.daily, spent.today, next_day(now))];
    checks.into_iter().find_map(|(budget, cap, used, reset)| {
        let limit = cap?;
        (used >= limit).then(|| Exhaustion {
            budget,
            project_id: project_id.map(str::to_string),
            limit_usd: limit,
            spent_usd: used,
            resets_at: Some(stamp(&reset)),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-11-25T18:00:00Z").unwrap().with_timezone(&Utc)
    }

    #[test]
    fn the_longest_spent_period_is_named_first() {
        let caps = Caps { daily: Some(1.0), monthly: Some(5.0) };
        assert_eq!(exhausted(caps, Spent { today: 0.5, month: 4.0 }, Some("p"), &now()), None);
        let daily = exhausted(caps, Spent { today: 1.0, month: 4.0 }, Some("p"), &now()).expect("spent");
        assert_eq!(
            (daily.budget, daily.resets_at.as_deref()),
            (Budget::ProjectDaily, Some("2026-11-26T00:00:00.000Z"))
        );
        let monthly = exhausted(caps, Spent { today: 1.5, month: 5.5 }, None, &now()).expect("spent");
        assert_eq!(
            (monthly.budget, monthly.resets_at.as_deref()),
            (Budget::GlobalMonthly, Some("2026-12-01T00:00:00.000Z"))
        );
        assert!(
            monthly.message().starts_with("The monthly budget of the service of $5.00 is spent"),
            "{}",
            monthly.message()
        );
        assert_eq!(monthly.retry_after(now()), Some(5 * 24 * 3600 + 6 * 3600), "to the 1st of December");
    }

    #[test]
    fn no_caps_never_run_out_and_a_zero_cap_allows_nothing() {
        assert_eq!(exhausted(Caps::default(), Spent { today: 1e9, month: 1e9 }, None, &now()), None);
        let zero = Caps { daily: Some(0.0), monthly: None };
        assert!(exhausted(zero, Spent::default(), Some("p"), &now()).is_some());
    }
}
