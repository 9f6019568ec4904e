//! The `at_rest` redaction: what the writer stores, without secrets. On the writer's thread,
//! off the executor; a job retried after a storage failure is scrubbed again, which changes
//! nothing (redaction is idempotent).

use super::job::WriteOp;
use crate::secrets::{scrub_any, scrub_json, scrub_optional_text};

pub(super) fn scrub(op: &mut WriteOp) {
    match op {
        WriteOp::Message(line) => {
            scrub_any(&mut line.content);
        }
        WriteOp::Event(event) => {
            scrub_json(&mut event.data);
        }
        WriteOp::Decision(decision) => {
            scrub_any(&mut decision.tool_input);
            scrub_optional_text(&mut decision.reason);
            if let Some(reading) = decision.command_reading.as_mut() {
                scrub_json(reading);
            }
        }
        WriteOp::Attempt(attempt) => {
            scrub_optional_text(&mut attempt.error);
        }
        WriteOp::Session { patch, .. } | WriteOp::TurnResult { patch, .. } => {
            for text in [&mut patch.error_message, &mut patch.status_reason].into_iter().flatten() {
                scrub_optional_text(text);
            }
        }
        WriteOp::Delivered { .. } | WriteOp::Flush => {}
    }
}
