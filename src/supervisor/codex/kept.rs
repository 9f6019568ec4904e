//! What a [`Codex`] adapter keeps across a restart of the service while the app-server runs on
//! under its keeper: the thread, the turn running and its figures so far, the request counter
//! (so new request ids never repeat one the server still knows), and the file changes awaiting
//! their approval.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Codex, Step};

#[derive(Serialize, Deserialize)]
struct Kept {
    model: Option<String>,
    thread_id: Option<String>,
    turn_id: Option<String>,
    turn_requests: u64,
    interrupting: bool,
    turn_tokens: (i64, i64),
    turn_text: Option<String>,
    /// File paths with their rule subject (`Write` or `Edit`), by item id.
    changes: HashMap<String, Vec<(String, String)>>,
}

impl Codex {
    pub(super) fn kept(&self) -> Value {
        let changes = self
            .changes
            .iter()
            .map(|(id, files)| (id.clone(), files.iter().map(|(p, k)| (p.clone(), k.to_string())).collect()))
            .collect();
        let kept = Kept {
            model: self.model.clone(),
            thread_id: self.thread_id.clone(),
            turn_id: self.turn_id.clone(),
            turn_requests: self.turn_requests,
            interrupting: self.interrupting,
            turn_tokens: self.turn_tokens,
            turn_text: self.turn_text.clone(),
            changes,
        };
        serde_json::to_value(kept).unwrap_or(Value::Null)
    }

    pub(super) fn take_back(&mut self, state: &Value) {
        let Ok(kept) = Kept::deserialize(state) else { return };
        self.model = kept.model;
        self.thread_id = kept.thread_id;
        self.resuming = false;
        self.step = Step::Done;
        self.thread_request = None;
        self.turn_id = kept.turn_id;
        self.turn_requests = kept.turn_requests;
        self.interrupting = kept.interrupting;
        self.turn_tokens = kept.turn_tokens;
        self.turn_text = kept.turn_text;
        self.changes = kept
            .changes
            .into_iter()
            .map(|(id, files)| {
                let files = files.into_iter().map(|(p, k)| (p, if k == "Edit" { "Edit" } else { "Write" })).collect();
                (id, files)
            })
            .collect();
    }
}
