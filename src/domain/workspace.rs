//! Where a session works: the project's folder itself (`shared`), or a git worktree of its own
//! on a branch of its own (`worktree`). Plain rules here: the mode, the branch a session's
//! worktree gets, and what a project may ask to have copied into each new worktree.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// How a project's sessions share its folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum WorkspaceMode {
    /// Every session works in the project folder itself.
    Shared,
    /// Each session gets its own `git worktree` on a branch `conduit/<name>`, made from a base
    /// ref; the project folder is left alone.
    Worktree,
}

text_enum!(WorkspaceMode, "workspace mode", {
    Shared => "shared",
    Worktree => "worktree",
});

/// Patterns a project may list in `workspace_copy`, at most.
pub const MAX_COPY_PATTERNS: usize = 100;
/// A `setup_script`, at most.
pub const MAX_SETUP_SCRIPT_BYTES: usize = 100_000;

/// Checks one `workspace_copy` entry: a path or glob relative to the project folder (`.env`,
/// `config/*.local.json`, `**/.env`), never absolute, never leaving the folder, never into
/// `.git`, and a glob `globset` accepts.
pub fn copy_pattern(raw: &str) -> Result<String, String> {
    let p = raw.trim();
    if p.is_empty() || p.len() > 1024 {
        return Err("`workspace_copy` entries must be 1-1024 bytes".to_string());
    }
    if p.chars().any(|c| c.is_control()) {
        return Err(format!("`workspace_copy` entry {p:?} must not contain control characters"));
    }
    if p.starts_with('/') || p.starts_with('~') {
        return Err(format!("`workspace_copy` entry {p:?} must be relative to the project folder"));
    }
    let parts: Vec<&str> = p.split('/').collect();
    if parts.iter().any(|part| *part == ".." || part.is_empty() && parts.len() > 1) {
        return Err(format!("`workspace_copy` entry {p:?} must stay inside the project folder (no `..`, no `//`)"));
    }
    if parts.first().is_some_and(|first| *first == ".git") {
        return Err(format!("`workspace_copy` entry {p:?} must not reach into `.git`"));
    }
    globset::GlobBuilder::new(p)
        .literal_separator(true)
        .build()
        .map_err(|e| format!("`workspace_copy` entry {p:?} is not a valid glob: {e}"))?;
    Ok(p.to_string())
}

/// A project's `workspace_copy`: checked patterns, stored as one text, one pattern a line
/// (a pattern has no control characters, so the lines are exactly the patterns).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CopyList {
    patterns: Vec<String>,
    stored: String,
}

impl CopyList {
    /// Checks every pattern (at most [`MAX_COPY_PATTERNS`]).
    pub fn parse(raw: &[String]) -> Result<CopyList, String> {
        if raw.len() > MAX_COPY_PATTERNS {
            return Err(format!("`workspace_copy` holds at most {MAX_COPY_PATTERNS} entries (got {})", raw.len()));
        }
        let patterns = raw.iter().map(|p| copy_pattern(p)).collect::<Result<Vec<_>, _>>()?;
        Ok(CopyList::from_patterns(patterns))
    }

    /// The list as stored (trusted: it was checked before it was stored).
    pub fn from_stored(stored: String) -> CopyList {
        let patterns = stored.lines().filter(|l| !l.is_empty()).map(String::from).collect();
        CopyList { patterns, stored }
    }

    fn from_patterns(patterns: Vec<String>) -> CopyList {
        let stored = patterns.join("\n");
        CopyList { patterns, stored }
    }

    pub fn patterns(&self) -> &[String] {
        &self.patterns
    }

    /// The stored text.
    pub fn as_str(&self) -> &str {
        &self.stored
    }
}

impl Serialize for CopyList {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.patterns.serialize(serializer)
    }
}

/// Whether a copy pattern names one path literally (no glob characters).
pub fn is_literal(pattern: &str) -> bool {
    !pattern.contains(['*', '?', '[', ']', '{', '}', '\\'])
}

/// The branch of a session's worktree: `conduit/` and the session's name made safe for a ref
/// name (lower case letters, digits, `-`, `_`, `.`), or its short id when nothing is left.
pub fn branch_for(name: &str, short_id: &str) -> String {
    let mut slug = String::new();
    for c in name.trim().chars().flat_map(char::to_lowercase) {
        let keep = c.is_ascii_alphanumeric() || c == '_' || c == '.';
        if keep {
            slug.push(c);
        } else if !slug.ends_with('-') {
            slug.push('-');
        }
        if slug.len() >= 60 {
            break;
        }
    }
    // No leading or trailing separators, no `..`, no `.lock` ending: what git refuses.
    let mut slug = slug.replace("..", ".");
    while slug.ends_with(['-', '.']) || slug.ends_with(".lock") {
        slug = slug.trim_end_matches(['-', '.']).trim_end_matches(".lock").to_string();
    }
    let slug = slug.trim_start_matches(['-', '.']).to_string();
    if slug.is_empty() {
        format!("conduit/{short_id}")
    } else {
        format!("conduit/{slug}")
    }
}

/// Checks a `base_ref` (a branch, tag or commit the worktree starts from): what git accepts as
/// a revision, and never an option.
pub fn base_ref(raw: &str) -> Result<String, String> {
    let r = raw.trim();
    if r.is_empty() || r.len() > 256 {
        return Err("`base_ref` must be 1-256 bytes".to_string());
    }
    if r.starts_with('-') {
        return Err("`base_ref` must not start with '-'".to_string());
    }
    if r.chars().any(|c| c.is_whitespace() || c.is_control() || matches!(c, '~' | '^' | ':' | '?' | '*' | '[' | '\\'))
        || r.contains("..")
        || r.contains("@{")
    {
        return Err(format!("`base_ref` {r:?} is not a branch, tag or commit name"));
    }
    Ok(r.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_forms_agree() {
        crate::domain::check_text_enum(WorkspaceMode::ALL, &["shared", "worktree"]);
    }

    #[test]
    fn branches_are_safe_ref_names() {
        assert_eq!(branch_for("Fix the login bug", "ab12cd34"), "conduit/fix-the-login-bug");
        assert_eq!(branch_for("  ..weird..name.lock ", "ab12cd34"), "conduit/weird.name");
        assert_eq!(branch_for("ééé", "ab12cd34"), "conduit/ab12cd34");
        assert_eq!(branch_for("--", "ab12cd34"), "conduit/ab12cd34");
        assert!(branch_for(&"x".repeat(500), "id").len() <= 70);
    }

    #[test]
    fn copy_patterns_stay_inside_the_folder() {
        for ok in [".env", "config/*.local.json", "**/.env", ".env.*"] {
            assert_eq!(copy_pattern(ok).as_deref(), Ok(ok), "{ok}");
        }
        for bad in ["", "/etc/passwd", "../x", "a/../../b", ".git/config", "~/x", "a//b", "[", "a\nb"] {
            assert!(copy_pattern(bad).is_err(), "{bad:?}");
        }
        assert!(is_literal(".env") && !is_literal("*.env"));
    }

    #[test]
    fn base_refs_are_names_not_options() {
        for ok in ["main", "origin/main", "v1.2", "0123abcd", "HEAD"] {
            assert!(base_ref(ok).is_ok(), "{ok}");
        }
        for bad in ["", "-x", "--upload-pack=evil", "a b", "a..b", "HEAD~1", "a:b", "@{-1}"] {
            assert!(base_ref(bad).is_err(), "{bad:?}");
        }
    }
}
