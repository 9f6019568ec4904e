//! What a CLI line is, typed as far as Conduit acts on it.

use serde_json::Value;

#[derive(Debug, Clone, PartialEq)]
pub struct TurnResult {
    pub subtype: Option<String>,
    pub is_error: bool,
    /// Cumulative for the CLI process, not per turn.
    pub total_cost_usd: Option<f64>,
    /// This turn's tokens (`usage`): per turn, not cumulative.
    pub input_tokens: Option<i64>,
    pub output_tokens: Option<i64>,
    /// Cumulative tokens for the process, summed over `modelUsage` (newer CLIs send it).
    pub cumulative_tokens: Option<(i64, i64)>,
    pub session_id: Option<String>,
    /// The turn's final answer (`result`), when the CLI gives one.
    pub text: Option<String>,
    /// The API's error behind an error result (`usage_limit_reached`, `rate_limit`, ...).
    pub api_error: Option<String>,
    /// The HTTP status the API answered the failed request with (429, 529, ...).
    pub api_error_status: Option<i64>,
}

/// The limit state the CLI reported: a `rate_limit_event`, or the `rate_limit_info` an
/// assistant line carries when the API refused a request for a limit.
#[derive(Debug, Clone, PartialEq)]
pub struct LimitInfo {
    /// `allowed`, `allowed_warning` or `rejected`.
    pub status: String,
    /// When the limit resets, in seconds since the epoch.
    pub resets_at: Option<i64>,
    /// Which limit: `five_hour`, `seven_day`, ...
    pub limit_type: Option<String>,
    /// How much of it is used, 0 to 1.
    pub utilization: Option<f64>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    /// `system`/`init`, sent before each turn.
    SystemInit {
        session_id: Option<String>,
        model: Option<String>,
        permission_mode: Option<String>,
    },
    /// `system`/`status`: a mode change, or `"status":"compacting"` (and back to null).
    SystemStatus {
        status: Option<String>,
        permission_mode: Option<String>,
    },
    Result(TurnResult),
    /// The CLI reported its usage-limit state.
    RateLimit(LimitInfo),
    /// `system`/`task_started`: a background task began (the CLI keeps working after the
    /// turn's result until it reports the task's end). `None` when no id could be found.
    TaskStarted {
        task_id: Option<String>,
    },
    /// `system`/`task_notification`: news of a background task; `finished` unless its status
    /// says it still runs (an unknown status counts as the end, so no task is held forever).
    TaskNotification {
        task_id: Option<String>,
        finished: bool,
    },
    /// The CLI asks something (`can_use_tool`, `hook_callback`, ...); it waits for an answer.
    ControlRequest {
        request_id: String,
        subtype: String,
        request: Value,
    },
    /// The CLI answers one of Conduit's requests.
    ControlResponse {
        request_id: String,
        outcome: Result<Value, String>,
    },
    /// The CLI gave up on one of its requests: send nothing for it.
    ControlCancel {
        request_id: String,
    },
    /// Anything else that is valid JSON (`assistant`, `user`, `stream_event`, unknown kinds...).
    Other,
    /// Not JSON, or JSON that is not an object.
    Invalid {
        error: String,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Incoming {
    /// The `type` field, or `invalid` for a line that is not a JSON object.
    pub message_type: String,
    pub message_subtype: Option<String>,
    pub kind: Kind,
}
