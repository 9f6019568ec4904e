//! Timestamps are RFC 3339 UTC strings with milliseconds, so they sort correctly as text.

use chrono::{SecondsFormat, Utc};

pub fn now() -> String {
    Utc::now().to_rfc3339_opts(SecondsFormat::Millis, true)
}
