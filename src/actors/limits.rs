//! `LimitBoard`: the latest usage-limit state each agent CLI reported, for
//! `GET /api/usage/limits` (and for whoever must know before starting work).
//!
//! Conduit runs every CLI of one kind with the same credentials, so a limit belongs to the
//! account of that kind: one entry per agent kind. Sessions tell the board what their CLI
//! reported; a limit whose reset has passed reads as `allowed`.

use std::collections::BTreeMap;
use std::time::Duration;

use actix::prelude::*;
use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;

use crate::config::Settings;
use crate::domain::agent_kind::AgentKind;
use crate::domain::usage::stamp;
use crate::protocol::incoming::{LimitHit, LimitKind};

/// How a session or an agent run waits at a limit.
#[derive(Clone)]
pub struct LimitPolicy {
    /// Up to this much random delay after the reset.
    pub jitter: Duration,
    /// The wait when the CLI named no reset.
    pub retry: Duration,
    pub board: Recipient<LimitSeen>,
}

impl LimitPolicy {
    /// `CONDUIT_LIMIT_JITTER_MS` and `CONDUIT_LIMIT_RETRY_MS`, reporting to `board`.
    pub fn new(settings: &Settings, board: Recipient<LimitSeen>) -> LimitPolicy {
        LimitPolicy {
            jitter: Duration::from_millis(settings.limit_jitter_ms),
            retry: Duration::from_millis(settings.limit_retry_ms),
            board,
        }
    }

    /// When to go again after `hit`, seen at `now`: its reset (or `retry` from now when it
    /// named none), plus a random delay up to `jitter`, so the waiting work does not all
    /// start at once.
    pub fn resumes_at(&self, hit: &LimitHit, now: DateTime<Utc>) -> DateTime<Utc> {
        let wait = match hit.resets_at {
            Some(reset) if reset > now => (reset - now).to_std().unwrap_or_default(),
            Some(_) => Duration::ZERO,
            None => self.retry,
        };
        now + chrono::Duration::from_std(wait + jitter(self.jitter)).unwrap_or_default()
    }
}

/// What stopped the work, in words: "the CLI met a usage limit: <the CLI's words>".
pub fn limit_reason(hit: &LimitHit) -> String {
    let what = match hit.kind {
        LimitKind::UsageLimit => "a usage limit",
        LimitKind::RateLimit => "the API's rate limit",
    };
    format!("the CLI met {what}: {}", hit.message)
}

/// A random delay in `[0, max]`.
fn jitter(max: Duration) -> Duration {
    let span = max.as_millis() as u64;
    if span == 0 {
        return Duration::ZERO;
    }
    Duration::from_millis((uuid::Uuid::new_v4().as_u128() % u128::from(span + 1)) as u64)
}

/// Where an account stands with its limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum LimitStatus {
    /// Requests go through.
    Allowed,
    /// Requests go through, but most of the limit is used.
    Warning,
    /// Requests are refused until `resets_at`.
    Limited,
}

impl LimitStatus {
    /// From a `rate_limit_info.status`; unknown words read as allowed.
    pub fn from_cli(status: &str) -> LimitStatus {
        match status {
            "rejected" => LimitStatus::Limited,
            "allowed_warning" => LimitStatus::Warning,
            _ => LimitStatus::Allowed,
        }
    }
}

/// What a CLI reported.
#[derive(Message, Debug, Clone)]
#[rtype(result = "()")]
pub struct LimitSeen {
    pub agent: AgentKind,
    pub status: LimitStatus,
    pub resets_at: Option<DateTime<Utc>>,
    pub limit_type: Option<String>,
    pub utilization: Option<f64>,
    /// The CLI's words, when a turn failed on the limit.
    pub message: Option<String>,
    pub session_id: Option<String>,
}

/// The board, one entry per agent kind that reported anything.
#[derive(Message)]
#[rtype(result = "Vec<LimitView>")]
pub struct ListLimits;

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct LimitView {
    /// The agent CLI (`claude`, `codex`, ...): its account's limit.
    pub agent: String,
    pub status: LimitStatus,
    /// When the limit resets (RFC 3339), when known.
    pub resets_at: Option<String>,
    /// Which limit: `five_hour`, `seven_day`, ...
    pub limit_type: Option<String>,
    /// How much of the limit is used, 0 to 1, when the CLI said.
    pub utilization: Option<f64>,
    /// The CLI's words for the last turn the limit stopped.
    pub message: Option<String>,
    /// The session whose CLI reported it last.
    pub session_id: Option<String>,
    pub reported_at: String,
}

#[derive(Default)]
pub struct LimitBoard {
    entries: BTreeMap<String, (LimitSeen, DateTime<Utc>)>,
}

impl Actor for LimitBoard {
    type Context = Context<Self>;
}

impl Handler<LimitSeen> for LimitBoard {
    type Result = ();

    fn handle(&mut self, msg: LimitSeen, _ctx: &mut Context<Self>) {
        self.entries.insert(msg.agent.to_string(), (msg, Utc::now()));
    }
}

impl Handler<ListLimits> for LimitBoard {
    type Result = MessageResult<ListLimits>;

    fn handle(&mut self, _msg: ListLimits, _ctx: &mut Context<Self>) -> Self::Result {
        let now = Utc::now();
        MessageResult(
            self.entries
                .iter()
                .map(|(agent, (seen, at))| {
                    let passed = seen.resets_at.is_some_and(|reset| reset <= now);
                    let status =
                        if seen.status == LimitStatus::Limited && passed { LimitStatus::Allowed } else { seen.status };
                    LimitView {
                        agent: agent.clone(),
                        status,
                        resets_at: seen.resets_at.as_ref().map(stamp),
                        limit_type: seen.limit_type.clone(),
                        utilization: seen.utilization,
                        message: seen.message.clone(),
                        session_id: seen.session_id.clone(),
                        reported_at: stamp(at),
                    }
                })
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(jitter_ms: u64, retry_ms: u64) -> LimitPolicy {
        let board = LimitBoard::default().start().recipient();
        LimitPolicy { jitter: Duration::from_millis(jitter_ms), retry: Duration::from_millis(retry_ms), board }
    }

    fn hit(resets_at: Option<DateTime<Utc>>) -> LimitHit {
        LimitHit { kind: LimitKind::UsageLimit, resets_at, limit_type: None, message: "You've hit your limit".into() }
    }

    #[actix::test]
    async fn the_wait_ends_at_the_reset_plus_jitter_or_after_the_retry() {
        let now = Utc::now();
        let p = policy(500, 60_000);
        let reset = now + chrono::Duration::seconds(30);
        for _ in 0..20 {
            let at = p.resumes_at(&hit(Some(reset)), now);
            assert!(at >= reset && at <= reset + chrono::Duration::milliseconds(500), "{at} vs {reset}");
        }
        // A reset already passed: now (plus jitter); none named: the retry.
        let past = p.resumes_at(&hit(Some(now - chrono::Duration::seconds(5))), now);
        assert!(past >= now && past <= now + chrono::Duration::milliseconds(500));
        let none = policy(0, 60_000).resumes_at(&hit(None), now);
        assert_eq!(none, now + chrono::Duration::seconds(60));
        assert_eq!(limit_reason(&hit(None)), "the CLI met a usage limit: You've hit your limit");
    }
}
