//! A run's turn that met a usage limit: the board learns it, the execution waits for the reset
//! (`waiting_for_limit`, `resumes_at`), and the next attempt's figures add to this one's.

use super::{summary_value, OneTurn};
use crate::actors::limits::{limit_reason, LimitSeen, LimitStatus};
use crate::domain::agent::ExecutionStatus;
use crate::domain::usage::stamp;
use crate::protocol::incoming::{LimitHit, LimitInfo};

/// Cost and tokens, as an execution records them.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Spent {
    pub(super) cost_usd: Option<f64>,
    pub(super) input_tokens: Option<i64>,
    pub(super) output_tokens: Option<i64>,
}

/// `a + b`, absent only when both are.
pub(super) fn add<T: std::ops::Add<Output = T> + Default>(a: Option<T>, b: Option<T>) -> Option<T> {
    match (a, b) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or_default() + b.unwrap_or_default()),
    }
}

impl OneTurn {
    /// The CLI's limit state (a `rate_limit_event`): kept for the result, told to the board.
    pub(super) fn limit_reported(&mut self, info: &LimitInfo) {
        self.limits.board.do_send(LimitSeen {
            agent: self.agent.agent.clone(),
            status: LimitStatus::from_cli(&info.status),
            resets_at: info.resets_at.and_then(|s| chrono::DateTime::from_timestamp(s, 0)),
            limit_type: info.limit_type.clone(),
            utilization: info.utilization,
            message: None,
            session_id: None,
        });
        self.limit_info = Some(info.clone());
    }

    /// The turn ended on a limit: the board learns it; the run will wait (unless it is
    /// ended first).
    pub(super) fn limit_met(&mut self, hit: LimitHit) {
        self.limits.board.do_send(LimitSeen {
            agent: self.agent.agent.clone(),
            status: LimitStatus::Limited,
            resets_at: hit.resets_at,
            limit_type: hit.limit_type.clone(),
            utilization: None,
            message: Some(hit.message.clone()),
            session_id: None,
        });
        self.limit_hit = Some(hit);
    }

    /// Stored `waiting_for_limit` until the reset (plus jitter), with the limit in `error`.
    pub(super) fn wait_for_limit(&mut self, hit: &LimitHit) -> (ExecutionStatus, Option<String>) {
        self.exec.resumes_at = Some(stamp(&self.limits.resumes_at(hit, chrono::Utc::now())));
        (ExecutionStatus::WaitingForLimit, Some(limit_reason(hit)))
    }

    /// What the limit event carries: the execution, and the limit.
    pub(super) fn limit_event(&self) -> String {
        let mut row = summary_value(&self.agent, &self.exec);
        if let (Some(obj), Some(hit)) = (row.as_object_mut(), &self.limit_hit) {
            obj.insert(
                "limit".to_string(),
                serde_json::json!({
                    "kind": hit.kind.as_str(),
                    "resets_at": hit.resets_at.as_ref().map(stamp),
                    "limit_type": hit.limit_type,
                    "message": hit.message,
                }),
            );
        }
        row.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::add;

    #[test]
    fn the_figures_of_attempts_add_up_and_stay_absent_when_none_was_reported() {
        assert_eq!(add(Some(0.25), Some(0.5)), Some(0.75));
        assert_eq!(add(None, Some(3_i64)), Some(3));
        assert_eq!(add(Some(2_i64), None), Some(2));
        assert_eq!(add::<i64>(None, None), None);
    }
}
