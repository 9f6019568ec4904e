//! Cron schedules as people write them.
//!
//! Accepted: the standard 5-field crontab form (`minute hour day-of-month month day-of-week`),
//! and 6 or 7 fields with seconds first (and a year last). The `cron` crate wants seconds
//! first and numbers days of the week 1 (Sunday) to 7 (Saturday); crontab numbers them 0
//! (Sunday) to 6, with 7 also Sunday. Expressions are translated to the crate's form, so `1-5`
//! means Monday to Friday as in crontab. Times are UTC.

use std::str::FromStr;

use chrono::{DateTime, Utc};

/// What a user is told when an expression does not parse.
pub const EXPECTED: &str = "expected 5 fields `minute hour day-of-month month day-of-week` (e.g. `*/5 * * * *`: every five minutes; `0 9 * * 1-5`: 09:00 UTC on weekdays), or 6/7 fields with seconds first and an optional year last (e.g. `*/10 * * * * *`: every ten seconds)";

#[derive(Debug, Clone)]
pub struct CronSchedule {
    inner: cron::Schedule,
}

impl CronSchedule {
    pub fn parse(expression: &str) -> Result<CronSchedule, String> {
        let fields: Vec<&str> = expression.split_whitespace().collect();
        let (seconds, rest) = match fields.len() {
            5 => ("0", &fields[..]),
            6 | 7 => (fields[0], &fields[1..]),
            n => return Err(format!("invalid schedule {expression:?}: it has {n} fields; {EXPECTED}")),
        };
        let day_of_week =
            crontab_days_of_week(rest[4]).map_err(|e| format!("invalid schedule {expression:?}: {e}; {EXPECTED}"))?;
        let mut translated = vec![seconds, rest[0], rest[1], rest[2], rest[3], day_of_week.as_str()];
        translated.extend(rest.get(5).copied());
        let inner = cron::Schedule::from_str(&translated.join(" "))
            .map_err(|e| format!("invalid schedule {expression:?}: {e}; {EXPECTED}"))?;
        if inner.upcoming(Utc).next().is_none() {
            return Err(format!("invalid schedule {expression:?}: it never fires; {EXPECTED}"));
        }
        Ok(CronSchedule { inner })
    }

    /// The first fire time strictly after `after`.
    pub fn next_after(&self, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.inner.after(&after).next()
    }

    /// The next `n` fire times after `after`.
    pub fn upcoming(&self, after: DateTime<Utc>, n: usize) -> Vec<DateTime<Utc>> {
        self.inner.after(&after).take(n).collect()
    }
}

/// Translates crontab day-of-week numbers (0-7, Sunday = 0 or 7) to the crate's (1-7, Sunday
/// = 1). Names (`MON-FRI`), `*` and `?` pass through.
fn crontab_days_of_week(field: &str) -> Result<String, String> {
    let day = |s: &str| -> Result<Option<u32>, String> {
        match s.parse::<u32>() {
            Ok(n) if n <= 7 => Ok(Some(n)),
            Ok(n) => Err(format!("day of week {n} is out of range 0-7")),
            Err(_) => Ok(None),
        }
    };
    let crate_day = |n: u32| n % 7 + 1;
    let mut items = Vec::new();
    for item in field.split(',') {
        let (range, step) = match item.split_once('/') {
            Some((range, step)) => (range, Some(step)),
            None => (item, None),
        };
        let with_step = |r: String| match step {
            Some(step) => format!("{r}/{step}"),
            None => r,
        };
        match range.split_once('-') {
            Some((a, b)) => match (day(a)?, day(b)?) {
                (Some(a), Some(7)) if a > 0 => {
                    // `5-7` is Friday to Sunday: Friday to Saturday, and Sunday.
                    if step.is_some() {
                        return Err(format!("`{item}`: write Sunday as 0 in a stepped range"));
                    }
                    items.push(format!("{}-7", crate_day(a)));
                    items.push("1".to_string());
                }
                (Some(a), Some(b)) => items.push(with_step(format!("{}-{}", crate_day(a), crate_day(b)))),
                _ => items.push(with_step(range.to_string())),
            },
            None => match day(range)? {
                Some(n) => items.push(with_step(crate_day(n).to_string())),
                None => items.push(with_step(range.to_string())),
            },
        }
    }
    Ok(items.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{Datelike, TimeZone, Timelike, Weekday};

    fn at(y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(y, mo, d, h, mi, s).single().expect("valid time")
    }

    #[test]
    fn five_fields_are_crontab_with_minutes_first() {
        let s = CronSchedule::parse("*/15 * * * *").expect("valid");
        let next = s.upcoming(at(2026, 11, 22, 10, 7, 30), 3);
        assert_eq!(next, [at(2026, 11, 22, 10, 15, 0), at(2026, 11, 22, 10, 30, 0), at(2026, 11, 22, 10, 45, 0)]);
    }

    #[test]
    fn six_and_seven_fields_have_seconds_first() {
        let s = CronSchedule::parse("*/10 * * * * *").expect("valid");
        assert_eq!(s.next_after(at(2026, 1, 1, 0, 0, 3)), Some(at(2026, 1, 1, 0, 0, 10)));
        let s = CronSchedule::parse("0 0 12 1 1 * 2030").expect("valid with a year");
        assert_eq!(s.next_after(at(2026, 1, 1, 0, 0, 0)), Some(at(2030, 1, 1, 12, 0, 0)));
    }

    #[test]
    fn days_of_week_are_numbered_as_in_crontab() {
        // 2026-11-22 is a Sunday.
        let weekdays = CronSchedule::parse("0 9 * * 1-5").expect("valid");
        let days: Vec<Weekday> = weekdays.upcoming(at(2026, 11, 22, 0, 0, 0), 5).iter().map(|t| t.weekday()).collect();
        assert_eq!(days, [Weekday::Mon, Weekday::Tue, Weekday::Wed, Weekday::Thu, Weekday::Fri]);
        for sunday in ["0 9 * * 0", "0 9 * * 7", "0 9 * * SUN"] {
            let next = CronSchedule::parse(sunday).expect(sunday).next_after(at(2026, 11, 23, 0, 0, 0));
            assert_eq!(next.map(|t| t.weekday()), Some(Weekday::Sun), "{sunday}");
        }
        let weekend = CronSchedule::parse("0 9 * * 5-7").expect("valid");
        let days: Vec<Weekday> = weekend.upcoming(at(2026, 11, 23, 0, 0, 0), 3).iter().map(|t| t.weekday()).collect();
        assert_eq!(days, [Weekday::Fri, Weekday::Sat, Weekday::Sun]);
        let next = CronSchedule::parse("30 6 * * MON-FRI").expect("names").next_after(at(2026, 11, 22, 0, 0, 0));
        assert_eq!(next.map(|t| (t.weekday(), t.hour(), t.minute())), Some((Weekday::Mon, 6, 30)));
    }

    #[test]
    fn bad_expressions_say_what_is_expected() {
        for bad in ["", "* * * *", "* * * * * * * *", "61 * * * *", "* * * * 9", "every minute", "0 0 31 2 *"] {
            let err = CronSchedule::parse(bad).expect_err(bad);
            assert!(err.contains("expected 5 fields") && err.contains("invalid schedule"), "{bad}: {err}");
        }
    }
}
