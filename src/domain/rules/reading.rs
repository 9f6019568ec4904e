//! How a Bash command was read, for the audit row (`command_reading`) and the
//! `permission.decision` event.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::shell::CommandPart;

/// Each command's text is cut to this many characters in the audit (rules see it whole).
const MAX_COMMAND_CHARS: usize = 2_000;

/// The simple commands a Bash call was read as, and what decided it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct CommandReading {
    /// Every simple command the shell would run, as the words it would execute (program
    /// basename, wrappers, assignments and redirections dropped), in order.
    pub commands: Vec<String>,
    /// The command the deciding deny rule matched (itself, or another reading of it such as
    /// the command with its wrapper, `sudo rm x`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matched: Option<String>,
    /// What could not be analyzed, when something could not (a variable as the program word,
    /// inline code, a parse error, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_analyzable: Option<String>,
}

impl CommandReading {
    pub fn of(parts: &[CommandPart]) -> CommandReading {
        CommandReading {
            commands: parts.iter().filter(|p| !p.deny_only).map(|p| clip(&p.text)).collect(),
            matched: None,
            not_analyzable: parts.iter().find_map(|p| p.not_analyzable.clone()),
        }
    }
}

fn clip(text: &str) -> String {
    match text.char_indices().nth(MAX_COMMAND_CHARS) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}
