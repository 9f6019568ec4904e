//! What an [`AcpClient`] keeps across a restart of the service while the agent runs on under
//! its keeper: the session it talks in, the prompt counter (prompt answers are told by their
//! ids), the turn's text so far, what it offers, and the open permission requests' options.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{AcpClient, Step};
use crate::domain::offers::ModelChoice;

#[derive(Serialize, Deserialize)]
struct Kept {
    session_id: Option<String>,
    prompts: u64,
    interrupting: bool,
    turn_text: String,
    modes: Vec<String>,
    models: Vec<ModelChoice>,
    options: HashMap<String, Vec<(String, String)>>,
    tools: HashMap<String, String>,
}

impl AcpClient {
    pub(super) fn kept(&self) -> Value {
        let kept = Kept {
            session_id: self.session_id.clone(),
            prompts: self.prompts,
            interrupting: self.interrupting,
            turn_text: self.turn_text.clone(),
            modes: self.modes.clone(),
            models: self.models.clone(),
            options: self.options.clone(),
            tools: self.tools.clone(),
        };
        serde_json::to_value(kept).unwrap_or(Value::Null)
    }

    pub(super) fn take_back(&mut self, state: &Value) {
        let Ok(kept) = Kept::deserialize(state) else { return };
        self.session_id = kept.session_id;
        self.loading = false;
        self.replaying = false;
        self.step = Step::Done;
        self.session_request = None;
        self.prompts = kept.prompts;
        self.interrupting = kept.interrupting;
        self.turn_text = kept.turn_text;
        self.modes = kept.modes;
        self.models = kept.models;
        self.options = kept.options;
        self.tools = kept.tools;
    }
}
