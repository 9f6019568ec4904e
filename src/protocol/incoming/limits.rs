//! Whether a turn's error result was a limit, and until when.
//!
//! Claude Code 2.1.330 reports a usage limit three ways, in this order: a `rate_limit_event`
//! whose `rate_limit_info` is `rejected` with `resetsAt` (seconds since the epoch; only when the
//! state changes), an assistant line with `"error":"rate_limit"`, then an error `result` with
//! `"api_error":"usage_limit_reached"` and the words "You've hit your 5-hour limit · resets
//! 6:51pm (UTC)" (the reset to the minute only, in local time). A request the API refused with
//! 429 for another reason ends, after the CLI's own retries, as an error result with
//! `"api_error_status":429`. Older CLIs only say it in words: "Claude AI usage limit
//! reached|<epoch>" or "You've hit your limit · resets ...", or "API Error: 429 ...".

use chrono::{DateTime, Utc};

use super::{LimitInfo, TurnResult};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitKind {
    /// The account's usage limit (five-hour, weekly, ...): it resets at a known time.
    UsageLimit,
    /// The API limited the rate of requests: it passes soon.
    RateLimit,
}

impl LimitKind {
    /// As events name it.
    pub const fn as_str(self) -> &'static str {
        match self {
            LimitKind::UsageLimit => "usage_limit",
            LimitKind::RateLimit => "rate_limit",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct LimitHit {
    pub kind: LimitKind,
    /// When the limit resets, when the CLI said.
    pub resets_at: Option<DateTime<Utc>>,
    /// Which limit (`five_hour`, ...), when the CLI said.
    pub limit_type: Option<String>,
    /// The CLI's own words.
    pub message: String,
}

fn epoch(seconds: i64) -> Option<DateTime<Utc>> {
    DateTime::from_timestamp(seconds, 0)
}

/// The limit behind an error result; `last` is the latest limit state the CLI reported.
pub fn limit_of(result: &TurnResult, last: Option<&LimitInfo>) -> Option<LimitHit> {
    if !result.is_error {
        return None;
    }
    let text = result.text.as_deref().unwrap_or_default();
    let lower = text.to_ascii_lowercase();
    // "Claude AI usage limit reached|1795632680": the reset after the bar.
    let stated = text
        .strip_prefix("Claude AI usage limit reached|")
        .and_then(|rest| rest.trim().parse::<i64>().ok())
        .and_then(epoch);
    let kind = if result.api_error.as_deref() == Some("usage_limit_reached")
        || stated.is_some()
        || (lower.starts_with("you've hit your") && lower.contains("limit"))
    {
        LimitKind::UsageLimit
    } else if result.api_error_status == Some(429)
        || matches!(result.api_error.as_deref(), Some("rate_limit" | "rate_limit_error"))
        || text.starts_with("API Error: 429")
        || text.contains("Request rejected (429)")
    {
        LimitKind::RateLimit
    } else {
        return None;
    };
    let rejected = last.filter(|info| info.status == "rejected");
    Some(LimitHit {
        kind,
        resets_at: stated.or_else(|| rejected.and_then(|info| info.resets_at).and_then(epoch)),
        limit_type: rejected.and_then(|info| info.limit_type.clone()),
        message: text.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::incoming::{parse, Kind};

    fn result(line: &str) -> TurnResult {
        match parse(line).kind {
            Kind::Result(r) => r,
            other => panic!("not a result: {other:?}"),
        }
    }

    fn info(line: &str) -> LimitInfo {
        match parse(line).kind {
            Kind::RateLimit(i) => i,
            other => panic!("not a limit: {other:?}"),
        }
    }

    #[test]
    fn a_usage_limit_takes_its_reset_from_the_event_before_it() {
        let event = info(
            r#"{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1795632680,"rateLimitType":"five_hour","isUsingOverage":false},"uuid":"u","session_id":"s"}"#,
        );
        assert_eq!((event.status.as_str(), event.resets_at), ("rejected", Some(1795632680)));
        let r = result(
            r#"{"type":"result","subtype":"success","is_error":true,"terminal_reason":"api_error","api_error_status":429,"api_error_type":"rate_limit_error","api_error":"usage_limit_reached","result":"You've hit your 5-hour limit · resets 6:51pm (UTC)"}"#,
        );
        let hit = limit_of(&r, Some(&event)).expect("a limit");
        assert_eq!(hit.kind, LimitKind::UsageLimit);
        assert_eq!(hit.resets_at.map(|t| t.timestamp()), Some(1795632680));
        assert_eq!(hit.limit_type.as_deref(), Some("five_hour"));
        assert!(hit.message.starts_with("You've hit"));
    }

    #[test]
    fn older_clis_say_it_in_words() {
        let r = result(
            r#"{"type":"result","subtype":"success","is_error":true,"result":"Claude AI usage limit reached|1795632680"}"#,
        );
        let hit = limit_of(&r, None).expect("a limit");
        assert_eq!((hit.kind, hit.resets_at.map(|t| t.timestamp())), (LimitKind::UsageLimit, Some(1795632680)));
        let r = result(r#"{"type":"result","is_error":true,"result":"You've hit your limit · resets 3pm"}"#);
        assert_eq!(limit_of(&r, None).map(|h| (h.kind, h.resets_at)), Some((LimitKind::UsageLimit, None)));
        let r = result(r#"{"type":"result","is_error":true,"result":"API Error: 429 {\"type\":\"error\"}"}"#);
        assert_eq!(limit_of(&r, None).map(|h| h.kind), Some(LimitKind::RateLimit));
    }

    #[test]
    fn other_results_are_no_limit() {
        for line in [
            r#"{"type":"result","subtype":"success","is_error":false,"result":"You've hit your limit"}"#,
            r#"{"type":"result","is_error":true,"api_error_status":529,"result":"API Error: Repeated 529 Overloaded errors"}"#,
            r#"{"type":"result","subtype":"error_during_execution","is_error":true}"#,
        ] {
            assert_eq!(limit_of(&result(line), None), None, "{line}");
        }
        // A state that is not `rejected` gives no reset.
        let allowed = LimitInfo { status: "allowed".into(), resets_at: Some(1), limit_type: None, utilization: None };
        let r = result(r#"{"type":"result","is_error":true,"api_error":"usage_limit_reached","result":"x"}"#);
        assert_eq!(limit_of(&r, Some(&allowed)).and_then(|h| h.resets_at), None);
        assert!(matches!(parse(r#"{"type":"rate_limit_event"}"#).kind, Kind::Other));
    }
}
