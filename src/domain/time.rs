//! Timestamps are RFC 3339 UTC strings with milliseconds, so they sort correctly as text.

use chrono::{SecondsFormat, Utc};

pub fn now() -> String {
    Utc::now().to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// The timestamp `elapsed` ago, for activity the actors track as an `Instant`.
pub fn ago(elapsed: std::time::Duration) -> String {
    let elapsed = chrono::Duration::from_std(elapsed).unwrap_or(chrono::Duration::zero());
    (Utc::now() - elapsed).to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// `span` in whole seconds, a started second counted (a `Retry-After`, a cookie's `Max-Age`).
pub fn seconds_rounded_up(span: std::time::Duration) -> u64 {
    span.as_secs() + u64::from(span.subsec_nanos() > 0)
}

/// The timestamp `ahead` from now (a lease's end).
pub fn after(ahead: std::time::Duration) -> String {
    let ahead = chrono::Duration::from_std(ahead).unwrap_or(chrono::Duration::zero());
    (Utc::now() + ahead).to_rfc3339_opts(SecondsFormat::Millis, true)
}
