//! Field checks shared by every endpoint, each returning the sentence a client will read.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// The permission modes the CLI accepts for `--permission-mode`.
pub const PERMISSION_MODES: [&str; 6] = ["acceptEdits", "bypassPermissions", "default", "delegate", "dontAsk", "plan"];

/// A permission mode as it travels in JSON; serde rejects anything else.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub enum PermissionMode {
    AcceptEdits,
    BypassPermissions,
    Default,
    Delegate,
    DontAsk,
    Plan,
}

impl PermissionMode {
    pub fn as_str(self) -> &'static str {
        match self {
            PermissionMode::AcceptEdits => "acceptEdits",
            PermissionMode::BypassPermissions => "bypassPermissions",
            PermissionMode::Default => "default",
            PermissionMode::Delegate => "delegate",
            PermissionMode::DontAsk => "dontAsk",
            PermissionMode::Plan => "plan",
        }
    }
}

/// How a session's CLI is reached: its pipes, a WebSocket bridge it connects to
/// (`--sdk-url`, older CLIs), or whichever the installed CLI supports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    Stdio,
    Websocket,
    Auto,
}

impl Transport {
    pub const ALL: [&'static str; 3] = ["stdio", "websocket", "auto"];

    pub fn as_str(self) -> &'static str {
        match self {
            Transport::Stdio => "stdio",
            Transport::Websocket => "websocket",
            Transport::Auto => "auto",
        }
    }

    pub fn parse(raw: &str) -> Option<Transport> {
        match raw {
            "stdio" => Some(Transport::Stdio),
            "websocket" => Some(Transport::Websocket),
            "auto" => Some(Transport::Auto),
            _ => None,
        }
    }
}

/// Trims a display name and checks it is 1 to 200 characters.
pub fn name(field: &str, raw: &str) -> Result<String, String> {
    let trimmed = raw.trim();
    let len = trimmed.chars().count();
    if len == 0 {
        return Err(format!("`{field}` must not be empty"));
    }
    if len > 200 {
        return Err(format!("`{field}` must be at most 200 characters (got {len})"));
    }
    if trimmed.chars().any(|c| c.is_control()) {
        return Err(format!("`{field}` must not contain control characters"));
    }
    Ok(trimmed.to_string())
}

/// A value passed to the CLI as an argument (model name, session id): it may never look like a
/// flag or carry whitespace, so no request can smuggle another option onto a command line.
pub fn identifier(field: &str, raw: &str) -> Result<String, String> {
    if raw.is_empty() {
        return Err(format!("`{field}` must not be empty"));
    }
    if raw.len() > 200 {
        return Err(format!("`{field}` must be at most 200 bytes"));
    }
    if raw.starts_with('-') {
        return Err(format!("`{field}` must not start with '-'"));
    }
    if raw.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!("`{field}` must not contain whitespace, newlines or control characters"));
    }
    Ok(raw.to_string())
}

pub fn permission_mode(field: &str, raw: &str) -> Result<String, String> {
    if PERMISSION_MODES.contains(&raw) {
        Ok(raw.to_string())
    } else {
        Err(format!("`{field}` must be one of {}; got {raw:?}", PERMISSION_MODES.join(", ")))
    }
}

/// Free text handed to the CLI (prompts, descriptions): anything but NUL, bounded in size.
pub fn free_text(field: &str, raw: &str, max_bytes: usize) -> Result<String, String> {
    if raw.contains('\0') {
        return Err(format!("`{field}` must not contain NUL bytes"));
    }
    if raw.len() > max_bytes {
        return Err(format!("`{field}` must be at most {max_bytes} bytes (got {})", raw.len()));
    }
    Ok(raw.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_trimmed_and_bounded() {
        assert_eq!(name("name", "  My App ").as_deref(), Ok("My App"));
        assert!(name("name", "   ").is_err());
        assert!(name("name", &"x".repeat(200)).is_ok());
        assert!(name("name", &"é".repeat(201)).is_err());
        assert!(name("name", "a\nb").is_err());
    }

    #[test]
    fn identifiers_cannot_smuggle_flags() {
        assert!(identifier("model", "claude-sonnet-4-5").is_ok());
        for bad in ["-p", "--dangerously-skip-permissions", "a b", "a\nb", "a\0b", "a\tb", ""] {
            assert!(identifier("model", bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn permission_modes_are_a_closed_list() {
        for m in PERMISSION_MODES {
            assert!(permission_mode("mode", m).is_ok());
            let parsed: PermissionMode = serde_json::from_value(serde_json::json!(m)).expect("known mode");
            assert_eq!(parsed.as_str(), m);
        }
        assert!(permission_mode("mode", "ask").is_err());
        assert!(permission_mode("mode", "Default").is_err());
    }
}
