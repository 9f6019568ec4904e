//! Field checks shared by every endpoint, each returning the sentence a client will read.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// The permission modes Claude Code accepts for `--permission-mode` (its published list in
/// 2.1.330: `delegate` is refused, `auto` is new).
pub const PERMISSION_MODES: [&str; 6] = ["acceptEdits", "auto", "bypassPermissions", "default", "dontAsk", "plan"];

/// A permission mode as it travels in JSON; serde rejects anything else.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub enum PermissionMode {
    AcceptEdits,
    Auto,
    BypassPermissions,
    Default,
    DontAsk,
    Plan,
}

impl PermissionMode {
    pub fn as_str(self) -> &'static str {
        match self {
            PermissionMode::AcceptEdits => "acceptEdits",
            PermissionMode::BypassPermissions => "bypassPermissions",
            PermissionMode::Default => "default",
            PermissionMode::Auto => "auto",
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

/// The longest path accepted from a client, in bytes: Linux's PATH_MAX.
pub const MAX_PATH_BYTES: usize = 4096;
/// The longest folder name within a path, in bytes: Linux's NAME_MAX.
pub const MAX_PATH_COMPONENT_BYTES: usize = 255;

/// Invisible formatting characters that change how text is shown without being seen:
/// bidirectional embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069, the marks
/// U+200E/U+200F/U+061C), zero-width characters (U+200B-U+200D, U+2060-U+2064, U+FEFF), the
/// deprecated format characters U+206A-U+206F, the soft hyphen, U+180E, interlinear annotation
/// (U+FFF9-U+FFFB) and the tag characters (U+E0000-U+E007F). In a name they can make
/// `evil\u{202E}txt.exe` read as `evilexe.txt`, or two different names look the same.
pub fn is_format_char(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{061C}'
            | '\u{180E}'
            | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{206F}'
            | '\u{FEFF}'
            | '\u{FFF9}'..='\u{FFFB}'
            | '\u{E0000}'..='\u{E007F}'
    )
}

/// Display text (names, descriptions) may hold neither control characters (but line breaks
/// and tabs) nor invisible formatting ones ([`is_format_char`]); the message names the first
/// one found.
pub fn display_text(field: &str, text: &str) -> Result<(), String> {
    if text.chars().any(|c| c.is_control() && !matches!(c, '\n' | '\r' | '\t')) {
        return Err(format!("`{field}` must not contain control characters"));
    }
    if let Some(c) = text.chars().find(|c| is_format_char(*c)) {
        return Err(format!(
            "`{field}` must not contain invisible formatting or text-direction characters (found U+{:04X})",
            u32::from(c)
        ));
    }
    Ok(())
}

/// Trims a display name and checks it is 1 to 200 characters, on one line, without control or
/// invisible formatting characters.
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
    display_text(field, trimmed)?;
    Ok(trimmed.to_string())
}

/// A path from a client: at most [`MAX_PATH_BYTES`] bytes, no folder name over
/// [`MAX_PATH_COMPONENT_BYTES`], no NUL. Checked before the disk is asked anything.
pub fn path(field: &str, raw: &str) -> Result<(), String> {
    if raw.len() > MAX_PATH_BYTES {
        return Err(format!("`{field}` must be at most {MAX_PATH_BYTES} bytes (PATH_MAX); got {} bytes", raw.len()));
    }
    if raw.contains('\0') {
        return Err(format!("`{field}` must not contain NUL bytes"));
    }
    if let Some(long) = raw.split('/').map(str::len).find(|n| *n > MAX_PATH_COMPONENT_BYTES) {
        return Err(format!(
            "`{field}` has a folder name of {long} bytes; each must be at most {MAX_PATH_COMPONENT_BYTES} bytes (NAME_MAX)"
        ));
    }
    Ok(())
}

/// At most `max` characters of `text`, for logs and messages: client-supplied values are
/// never written out unbounded.
pub fn clip(text: &str, max: usize) -> std::borrow::Cow<'_, str> {
    match text.char_indices().nth(max) {
        None => std::borrow::Cow::Borrowed(text),
        Some((cut, _)) => std::borrow::Cow::Owned(format!("{}… ({} bytes in all)", &text[..cut], text.len())),
    }
}

/// A cap on spending: more than 0 and less than 1000000 USD (a session's or a run's budget; an
/// inclusive bound cannot be told apart from the numbers just above it once read as a double).
pub fn spending_cap(field: &str, usd: f64) -> Result<f64, String> {
    if usd.is_finite() && usd > 0.0 && usd < 1_000_000.0 {
        Ok(usd)
    } else {
        Err(format!("`{field}` must be more than 0 and less than 1000000, got {usd}"))
    }
}

/// A turn inactivity timeout in milliseconds: 0 (never) or at least 100 (a shorter one would
/// stall any turn whose model takes a breath).
pub fn turn_inactivity(ms: i64) -> Result<i64, String> {
    if ms == 0 || (100..=i64::from(u32::MAX) * 1000).contains(&ms) {
        Ok(ms)
    } else {
        Err(format!("must be 0 (never) or from 100 to {}, got {ms}", i64::from(u32::MAX) * 1000))
    }
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
    if raw.chars().any(|c| c.is_whitespace() || c.is_control() || is_format_char(c)) {
        return Err(format!(
            "`{field}` must not contain whitespace, newlines, control or invisible formatting characters"
        ));
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

    /// Issue 13: names full of text-direction overrides and zero-width characters passed.
    #[test]
    fn names_refuse_bidi_and_invisible_format_characters() {
        let refused = "\u{202A}\u{202B}\u{202C}\u{202D}\u{202E}\u{2066}\u{2067}\u{2068}\u{2069}\u{200B}\u{200C}\u{200D}\u{200E}\u{200F}\u{FEFF}\u{061C}\u{2060}\u{00AD}\u{E0041}";
        for c in refused.chars() {
            let raw = format!("evil{c}txt.exe");
            let err = name("name", &raw).expect_err(&format!("U+{:04X} refused", u32::from(c)));
            assert!(err.contains(&format!("U+{:04X}", u32::from(c))), "{err}");
            assert!(display_text("description", &raw).is_err());
            assert!(identifier("model", &format!("m{c}")).is_err());
        }
        // Letters of every script, accents and emoji are still names.
        for ok in ["Café", "日本語のプロジェクト", "مشروع", "פרויקט", "🚀 launch", "naïve-name_2"]
        {
            assert_eq!(name("name", ok).as_deref(), Ok(ok));
        }
        // Descriptions may span lines.
        assert!(display_text("description", "line one\r\nline two\ttabbed").is_ok());
        assert!(display_text("description", "bell\u{7}").is_err());
    }

    #[test]
    fn paths_are_bounded_like_the_kernel_bounds_them() {
        assert!(path("folder_path", "projects/app").is_ok());
        assert!(path("folder_path", &"a/".repeat(2048)).is_ok());
        let err = path("folder_path", &"a".repeat(100_000)).expect_err("too long");
        assert!(err.contains("4096") && err.contains("PATH_MAX") && err.contains("100000"), "{err}");
        assert!(path("folder_path", &"a".repeat(4097)).is_err());
        let err = path("path", &format!("ok/{}", "b".repeat(256))).expect_err("long component");
        assert!(err.contains("255") && err.contains("NAME_MAX"), "{err}");
        assert!(path("path", &"b".repeat(255)).is_ok());
        assert!(path("path", "a\0b").is_err());
    }

    #[test]
    fn clipping_keeps_logs_short() {
        assert_eq!(clip("short", 10), "short");
        let long = "é".repeat(1000);
        let clipped = clip(&long, 10);
        assert!(clipped.starts_with(&"é".repeat(10)) && clipped.contains("2000 bytes"), "{clipped}");
        assert!(clipped.chars().count() < 40);
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
