//! Permission rules: compiling them and deciding a tool call. Plain Rust, no I/O.
//!
//! Order of evaluation: project deny, global deny, project allow, global allow, then the default
//! (allow). Within a group: higher `priority` first, then older first. The first match wins.
//!
//! A rule matches when its `tool_name` is the tool's name or `*`, and its `rule_content` is empty
//! (any input), a prefix form `word:*` (the subject is `word` or starts with `word `), or a glob
//! against the tool's subject: `command` for Bash, `file_path` for Read/Write/Edit,
//! `notebook_path` for NotebookEdit, `path` or `pattern` for Glob and Grep, and the input's JSON
//! text for any other tool. For file subjects `*` stays within one path segment and `**` crosses
//! them; for commands and JSON `*` matches anything.
//!
//! Bash commands are split into the simple commands a shell would run (on `;`, `&`, `&&`, `||`,
//! `|`, newlines, and inside `$(...)`, `<(...)`, `>(...)` and backticks; separators inside quotes
//! do not split), and each is normalized: surrounding whitespace, leading `VAR=value`
//! assignments, wrappers (`sudo`, `env`, `exec`, `command`, `nohup`, `nice`, `time`), and an
//! absolute program path (`/bin/rm` is `rm`). A deny rule denies the call when ANY part matches;
//! an allow rule applies only when EVERY part matches. What this cannot see: commands hidden in
//! strings run by another interpreter (`bash -c "..."`, `sh -c`, `eval`, `python -c`, `xargs`,
//! `find -exec`) or in variables (`$CMD`); deny those programs themselves (`bash:*`, `sh:*`,
//! `eval:*`, ...) when that matters.

use std::collections::HashMap;
use std::path::Path;

use globset::{GlobBuilder, GlobMatcher};
use serde_json::Value;

use super::folders::normalize_lexically;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Behavior {
    Allow,
    Deny,
}

#[derive(Debug, Clone)]
pub enum Pattern {
    Any,
    /// `word:*`
    Prefix(String),
    Glob(GlobMatcher),
}

#[derive(Debug, Clone)]
pub struct CompiledRule {
    pub id: String,
    pub project_id: Option<String>,
    pub tool_name: String,
    /// The rule's text as written, for reasons and the audit.
    pub content: String,
    pub pattern: Pattern,
    pub behavior: Behavior,
    pub priority: i32,
    pub created_at: String,
    /// Merged over the tool input when this allow rule decides.
    pub updated_input: Option<Value>,
}

/// Tools whose subject is a file path (globs respect `/`).
fn is_path_tool(tool: &str) -> bool {
    matches!(tool, "Read" | "Write" | "Edit" | "MultiEdit" | "NotebookEdit" | "Glob" | "Grep")
}

/// Compiles `rule_content` for `tool_name`; the error is a sentence for a 422.
pub fn compile_pattern(tool_name: &str, content: &str) -> Result<Pattern, String> {
    let content = content.trim();
    if content.is_empty() {
        return Ok(Pattern::Any);
    }
    if let Some(prefix) = content.strip_suffix(":*") {
        let prefix = prefix.trim();
        if !prefix.is_empty() && !prefix.contains(['*', '?', '[', ']', '{', '}']) {
            return Ok(Pattern::Prefix(collapse_spaces(prefix)));
        }
    }
    GlobBuilder::new(content)
        .literal_separator(is_path_tool(tool_name))
        .backslash_escape(true)
        .build()
        .map(|g| Pattern::Glob(g.compile_matcher()))
        .map_err(|e| format!("`rule_content` is not a valid glob: {e}"))
}

fn collapse_spaces(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

impl Pattern {
    fn matches(&self, subject: &str) -> bool {
        match self {
            Pattern::Any => true,
            Pattern::Prefix(p) => {
                subject == p || subject.strip_prefix(p.as_str()).is_some_and(|rest| rest.starts_with(' '))
            }
            Pattern::Glob(g) => g.is_match(subject),
        }
    }
}

/// One simple command of a Bash call.
#[derive(Debug, PartialEq, Eq)]
pub struct CommandPart {
    /// The command, normalized.
    pub primary: String,
    /// After a wrapper (`sudo -u root /bin/rm x`), any later word may be where the program
    /// starts (options can take arguments): deny rules also check these.
    pub alternatives: Vec<String>,
}

/// What a rule is checked against, for one tool call.
#[derive(Debug, PartialEq, Eq)]
pub enum Subject {
    /// Bash: the simple commands, normalized.
    Commands(Vec<CommandPart>),
    /// File tools: normalized paths (Glob/Grep may have two).
    Paths(Vec<String>),
    /// Anything else: the input's JSON text.
    Json(String),
}

pub fn subject(tool_name: &str, input: &Value) -> Subject {
    let field = |k: &str| input.get(k).and_then(Value::as_str);
    match tool_name {
        "Bash" => Subject::Commands(bash_parts(field("command").unwrap_or(""))),
        "Read" | "Write" | "Edit" | "MultiEdit" => {
            Subject::Paths(field("file_path").map(normalize_path).into_iter().collect())
        }
        "NotebookEdit" => Subject::Paths(field("notebook_path").map(normalize_path).into_iter().collect()),
        "Glob" | "Grep" => Subject::Paths(
            [field("path").map(normalize_path), field("pattern").map(str::to_string)].into_iter().flatten().collect(),
        ),
        _ => Subject::Json(input.to_string()),
    }
}

fn normalize_path(p: &str) -> String {
    let normalized = normalize_lexically(Path::new(p)).to_string_lossy().into_owned();
    if normalized.is_empty() {
        p.to_string()
    } else {
        normalized
    }
}

impl CompiledRule {
    fn tool_matches(&self, tool: &str) -> bool {
        self.tool_name == "*" || self.tool_name == tool
    }

    /// Deny rules: any part (or any alternative reading of it). Allow rules: every part.
    fn matches(&self, tool: &str, subject: &Subject) -> bool {
        if !self.tool_matches(tool) {
            return false;
        }
        if matches!(self.pattern, Pattern::Any) {
            return true;
        }
        let deny = self.behavior == Behavior::Deny;
        match subject {
            Subject::Commands(parts) if deny => parts
                .iter()
                .any(|p| self.pattern.matches(&p.primary) || p.alternatives.iter().any(|a| self.pattern.matches(a))),
            Subject::Commands(parts) => !parts.is_empty() && parts.iter().all(|p| self.pattern.matches(&p.primary)),
            Subject::Paths(paths) if deny => paths.iter().any(|p| self.pattern.matches(p)),
            Subject::Paths(paths) => !paths.is_empty() && paths.iter().all(|p| self.pattern.matches(p)),
            Subject::Json(text) => self.pattern.matches(text),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Bash

/// Splits a command line into its simple commands, each normalized.
pub fn bash_parts(command: &str) -> Vec<CommandPart> {
    let mut raw = Vec::new();
    split_commands(command, &mut raw, 0);
    raw.into_iter().map(|p| normalize_command(&p)).filter(|p| !p.primary.is_empty()).collect()
}

/// Appends the simple commands of `s` to `out`; substitutions are split recursively.
fn split_commands(s: &str, out: &mut Vec<String>, depth: usize) {
    if depth > 16 {
        out.push(s.to_string());
        return;
    }
    let chars: Vec<char> = s.chars().collect();
    let (mut single, mut double) = (false, false);
    let mut current = String::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '\\' && !single {
            current.push(c);
            if let Some(n) = next {
                current.push(n);
            }
            i += 2;
            continue;
        }
        if c == '\'' && !double {
            single = !single;
        } else if c == '"' && !single {
            double = !double;
        }
        if !single {
            // $(...), <(...), >(...): the inside runs as its own command(s).
            if matches!(c, '$' | '<' | '>') && next == Some('(') {
                if let Some(end) = matching_paren(&chars, i + 1) {
                    let inner: String = chars[i + 2..end].iter().collect();
                    split_commands(&inner, out, depth + 1);
                    current.extend(&chars[i..=end]);
                    i = end + 1;
                    continue;
                }
            }
            if c == '`' {
                if let Some(end) = chars[i + 1..].iter().position(|&x| x == '`').map(|p| p + i + 1) {
                    let inner: String = chars[i + 1..end].iter().collect();
                    split_commands(&inner, out, depth + 1);
                    current.extend(&chars[i..=end]);
                    i = end + 1;
                    continue;
                }
            }
        }
        if !single && !double && matches!(c, ';' | '&' | '|' | '\n' | '\r') {
            out.push(std::mem::take(&mut current));
            // `&&`, `||`, `|&` count as one separator.
            if matches!((c, next), ('&', Some('&')) | ('|', Some('|')) | ('|', Some('&'))) {
                i += 1;
            }
            i += 1;
            continue;
        }
        current.push(c);
        i += 1;
    }
    out.push(current);
}

fn matching_paren(chars: &[char], open: usize) -> Option<usize> {
    let mut depth = 0;
    for (i, &c) in chars.iter().enumerate().skip(open) {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

const WRAPPERS: [&str; 7] = ["sudo", "env", "exec", "command", "nohup", "nice", "time"];

/// Drops leading `VAR=value` assignments; true when something was dropped.
fn is_assignment(word: &str) -> bool {
    word.split_once('=')
        .is_some_and(|(name, _)| !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
}

fn is_wrapper(word: &str) -> bool {
    WRAPPERS.contains(&word.rsplit('/').next().unwrap_or(word))
}

/// `/bin/rm -rf x` -> `rm -rf x`
fn with_program_basename(words: &[&str]) -> String {
    let mut words = words.to_vec();
    if let Some(first) = words.first_mut() {
        if let Some(base) = first.rsplit('/').next().filter(|b| !b.is_empty() && first.contains('/')) {
            *first = base;
        }
    }
    words.join(" ")
}

/// `  FOO=1 sudo /bin/rm   -rf x` -> `rm -rf x`
fn normalize_command(part: &str) -> CommandPart {
    let trimmed = part.trim().trim_start_matches(['(', '{', '!']).trim_end_matches([')', '}']);
    let words: Vec<&str> = trimmed.split_whitespace().collect();
    let mut start = 0;
    let mut wrapped = false;
    while let Some(word) = words.get(start) {
        if is_assignment(word) {
            start += 1;
        } else if is_wrapper(word) {
            wrapped = true;
            start += 1;
            while words.get(start).is_some_and(|w| w.starts_with('-')) {
                start += 1;
            }
        } else {
            break;
        }
    }
    let alternatives = if wrapped {
        (start + 1..words.len()).map(|i| with_program_basename(&words[i..])).collect()
    } else {
        Vec::new()
    };
    CommandPart { primary: with_program_basename(&words[start..]), alternatives }
}

// ---------------------------------------------------------------------------------------------
// The rule set

#[derive(Debug, Default, Clone)]
struct Groups {
    deny: Vec<CompiledRule>,
    allow: Vec<CompiledRule>,
}

impl Groups {
    fn push(&mut self, rule: CompiledRule) {
        match rule.behavior {
            Behavior::Deny => self.deny.push(rule),
            Behavior::Allow => self.allow.push(rule),
        }
    }

    fn sort(&mut self) {
        let order = |a: &CompiledRule, b: &CompiledRule| {
            b.priority.cmp(&a.priority).then_with(|| a.created_at.cmp(&b.created_at)).then_with(|| a.id.cmp(&b.id))
        };
        self.deny.sort_by(order);
        self.allow.sort_by(order);
    }
}

/// Every rule, compiled and ordered, ready to decide.
#[derive(Debug, Default, Clone)]
pub struct RuleSet {
    global: Groups,
    projects: HashMap<String, Groups>,
    len: usize,
}

/// The outcome for one tool call.
#[derive(Debug, Clone)]
pub struct RuleMatch<'a> {
    pub behavior: Behavior,
    /// The rule that decided; `None` for the default.
    pub rule: Option<&'a CompiledRule>,
}

impl RuleSet {
    pub fn new(rules: Vec<CompiledRule>) -> RuleSet {
        let mut set = RuleSet { len: rules.len(), ..Default::default() };
        for rule in rules {
            match &rule.project_id {
                Some(p) => set.projects.entry(p.clone()).or_default().push(rule),
                None => set.global.push(rule),
            }
        }
        set.global.sort();
        set.projects.values_mut().for_each(Groups::sort);
        set
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn evaluate(&self, project_id: Option<&str>, tool_name: &str, input: &Value) -> RuleMatch<'_> {
        let subject = subject(tool_name, input);
        let project = project_id.and_then(|p| self.projects.get(p));
        let groups =
            [project.map(|g| &g.deny), Some(&self.global.deny), project.map(|g| &g.allow), Some(&self.global.allow)];
        for rule in groups.into_iter().flatten().flatten() {
            if rule.matches(tool_name, &subject) {
                return RuleMatch { behavior: rule.behavior, rule: Some(rule) };
            }
        }
        RuleMatch { behavior: Behavior::Allow, rule: None }
    }
}

/// `updated` merged over `input` (top-level keys), for an allow rule's `updated_input`.
pub fn merge_input(input: &Value, updated: &Value) -> Value {
    match (input, updated) {
        (Value::Object(base), Value::Object(over)) => {
            let mut merged = base.clone();
            for (k, v) in over {
                merged.insert(k.clone(), v.clone());
            }
            Value::Object(merged)
        }
        _ => input.clone(),
    }
}

/// The input as stored in the audit log: values under secret-looking keys are replaced.
pub fn redact(input: &Value) -> Value {
    const SECRET_WORDS: [&str; 7] = ["token", "secret", "password", "passwd", "api_key", "apikey", "authorization"];
    match input {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let lower = k.to_ascii_lowercase();
                    if SECRET_WORDS.iter().any(|w| lower.contains(w)) {
                        (k.clone(), Value::String("[redacted]".to_string()))
                    } else {
                        (k.clone(), redact(v))
                    }
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(redact).collect()),
        Value::String(s) => Value::String(redact_assignments(s)),
        other => other.clone(),
    }
}

/// `API_KEY=abc cmd` -> `API_KEY=[redacted] cmd`, for secrets typed into commands.
fn redact_assignments(s: &str) -> String {
    s.split(' ')
        .map(|word| match word.split_once('=') {
            Some((name, value))
                if !value.is_empty()
                    && ["TOKEN", "SECRET", "PASSWORD", "API_KEY", "APIKEY"]
                        .iter()
                        .any(|w| name.to_ascii_uppercase().contains(w)) =>
            {
                format!("{name}=[redacted]")
            }
            _ => word.to_string(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rule(
        id: &str,
        project: Option<&str>,
        tool: &str,
        content: &str,
        behavior: Behavior,
        priority: i32,
    ) -> CompiledRule {
        CompiledRule {
            id: id.to_string(),
            project_id: project.map(String::from),
            tool_name: tool.to_string(),
            content: content.to_string(),
            pattern: compile_pattern(tool, content).expect("valid pattern"),
            behavior,
            priority,
            created_at: format!("2026-01-01T00:00:{:02}.000Z", id.len()),
            updated_input: None,
        }
    }

    fn decide<'a>(set: &'a RuleSet, project: Option<&str>, tool: &str, input: Value) -> (Behavior, Option<&'a str>) {
        let v = set.evaluate(project, tool, &input);
        (v.behavior, v.rule.map(|r| r.id.as_str()))
    }

    #[test]
    fn bypass_attempts_against_a_deny_rm_prefix_are_all_denied() {
        let set = RuleSet::new(vec![rule("no-rm", None, "Bash", "rm:*", Behavior::Deny, 0)]);
        for cmd in [
            "rm -rf x",
            " rm x",
            "\trm x",
            "/bin/rm x",
            "echo a; rm x",
            "true && rm x",
            "ls | rm x",
            "$(rm x)",
            "echo `rm x`",
            "false || rm x",
            "sleep 1 & rm x",
            "echo a\nrm x",
            "FOO=1 rm x",
            "sudo rm x",
            "sudo -u root /usr/bin/rm x",
            "env X=1 rm x",
            "(rm x)",
            "echo \"$(rm x)\"",
            "cat <(rm x)",
            "rm",
        ] {
            assert_eq!(decide(&set, None, "Bash", json!({"command": cmd})).0, Behavior::Deny, "{cmd:?}");
        }
        for cmd in ["ls", "rmdir x", "echo rm x", "git rm x", "echo 'a; rm x'", "grep rm file", "rmx"] {
            assert_eq!(decide(&set, None, "Bash", json!({"command": cmd})).0, Behavior::Allow, "{cmd:?}");
        }
    }

    #[test]
    fn file_paths_are_normalized_before_matching() {
        let set = RuleSet::new(vec![rule("etc", None, "Read", "/etc/**", Behavior::Deny, 0)]);
        for path in ["/etc/passwd", "/etc/../etc/passwd", "//etc/passwd", "/etc/./ssh/key", "/tmp/../etc/shadow"] {
            assert_eq!(decide(&set, None, "Read", json!({"file_path": path})).0, Behavior::Deny, "{path}");
        }
        assert_eq!(decide(&set, None, "Read", json!({"file_path": "/etcetera/x"})).0, Behavior::Allow);
        assert_eq!(decide(&set, None, "Read", json!({"file_path": "/home/etc/x"})).0, Behavior::Allow);
    }

    #[test]
    fn every_tool_subject() {
        let set = RuleSet::new(vec![
            rule("w", None, "Write", "/secret/*", Behavior::Deny, 0),
            rule("e", None, "Edit", "**/*.lock", Behavior::Deny, 0),
            rule("nb", None, "NotebookEdit", "/nb/*.ipynb", Behavior::Deny, 0),
            rule("g", None, "Glob", "/private/**", Behavior::Deny, 0),
            rule("gr", None, "Grep", "password*", Behavior::Deny, 0),
            rule("web", None, "WebFetch", "*evil.example*", Behavior::Deny, 0),
        ]);
        assert_eq!(decide(&set, None, "Write", json!({"file_path": "/secret/a"})).1, Some("w"));
        assert_eq!(decide(&set, None, "Write", json!({"file_path": "/secret/a/b"})).1, None, "* stays in one segment");
        assert_eq!(decide(&set, None, "Edit", json!({"file_path": "/p/Cargo.lock"})).1, Some("e"));
        assert_eq!(decide(&set, None, "NotebookEdit", json!({"notebook_path": "/nb/a.ipynb"})).1, Some("nb"));
        assert_eq!(decide(&set, None, "Glob", json!({"pattern": "*.rs", "path": "/private/x"})).1, Some("g"));
        assert_eq!(decide(&set, None, "Grep", json!({"pattern": "passwords"})).1, Some("gr"));
        assert_eq!(decide(&set, None, "WebFetch", json!({"url": "https://evil.example/x"})).1, Some("web"));
        assert_eq!(decide(&set, None, "WebFetch", json!({"url": "https://good.example/x"})).1, None);
    }

    #[test]
    fn glob_features() {
        let set = RuleSet::new(vec![
            rule("q", None, "Bash", "make ?", Behavior::Deny, 0),
            rule("class", None, "Bash", "deploy [ps]rod*", Behavior::Deny, 0),
            rule("star", None, "Bash", "curl *://internal/*", Behavior::Deny, 0),
        ]);
        assert_eq!(decide(&set, None, "Bash", json!({"command": "make a"})).1, Some("q"));
        assert_eq!(decide(&set, None, "Bash", json!({"command": "make ab"})).1, None);
        assert_eq!(decide(&set, None, "Bash", json!({"command": "deploy prod-eu"})).1, Some("class"));
        assert_eq!(decide(&set, None, "Bash", json!({"command": "deploy trod"})).1, None);
        assert_eq!(
            decide(&set, None, "Bash", json!({"command": "curl http://internal/a/b"})).1,
            Some("star"),
            "* crosses / in commands"
        );
        assert!(compile_pattern("Bash", "[unclosed").is_err());
        assert!(compile_pattern("Read", "a{b").is_err());
    }

    #[test]
    fn prefix_form_respects_the_word_boundary() {
        let set = RuleSet::new(vec![rule("git", None, "Bash", "git:*", Behavior::Deny, 0)]);
        assert_eq!(decide(&set, None, "Bash", json!({"command": "git"})).0, Behavior::Deny);
        assert_eq!(decide(&set, None, "Bash", json!({"command": "git push"})).0, Behavior::Deny);
        assert_eq!(decide(&set, None, "Bash", json!({"command": "git\tpush"})).0, Behavior::Deny);
        assert_eq!(decide(&set, None, "Bash", json!({"command": "gitx push"})).0, Behavior::Allow);
        let two = RuleSet::new(vec![rule("gp", None, "Bash", "git push:*", Behavior::Deny, 0)]);
        assert_eq!(decide(&two, None, "Bash", json!({"command": "git  push origin"})).0, Behavior::Deny);
        assert_eq!(decide(&two, None, "Bash", json!({"command": "git pull"})).0, Behavior::Allow);
    }

    #[test]
    fn order_priorities_project_over_global_deny_over_allow() {
        let p = Some("p1");
        let set = RuleSet::new(vec![
            rule("global-allow-ls", None, "Bash", "ls:*", Behavior::Allow, 100),
            rule("project-allow-ls", p, "Bash", "ls:*", Behavior::Allow, 0),
            rule("global-deny-ls-root", None, "Bash", "ls /root*", Behavior::Deny, 0),
            rule("project-deny-all", p, "*", "", Behavior::Deny, -5),
            rule("project-allow-cat-hi", p, "Bash", "cat:*", Behavior::Allow, 10),
            rule("project-allow-cat-lo", p, "Bash", "cat:*", Behavior::Allow, 1),
        ]);
        // Project deny comes first, whatever the priorities elsewhere.
        assert_eq!(decide(&set, p, "Bash", json!({"command": "ls"})), (Behavior::Deny, Some("project-deny-all")));
        // Another project: global deny beats global allow.
        assert_eq!(
            decide(&set, Some("p2"), "Bash", json!({"command": "ls /root"})),
            (Behavior::Deny, Some("global-deny-ls-root"))
        );
        assert_eq!(
            decide(&set, Some("p2"), "Bash", json!({"command": "ls /tmp"})),
            (Behavior::Allow, Some("global-allow-ls"))
        );
        assert_eq!(decide(&set, None, "Read", json!({"file_path": "/x"})), (Behavior::Allow, None));

        let set = RuleSet::new(vec![
            rule("global-allow-cat", None, "Bash", "cat:*", Behavior::Allow, 50),
            rule("project-allow-cat-lo", p, "Bash", "cat:*", Behavior::Allow, 1),
            rule("project-allow-cat-hi", p, "Bash", "cat:*", Behavior::Allow, 10),
        ]);
        assert_eq!(
            decide(&set, p, "Bash", json!({"command": "cat f"})).1,
            Some("project-allow-cat-hi"),
            "project allow before global, higher priority first"
        );
    }

    #[test]
    fn equal_priority_older_first() {
        let mut older = rule("a", None, "Bash", "", Behavior::Deny, 0);
        older.created_at = "2026-01-01T00:00:00.000Z".into();
        let mut newer = rule("b", None, "Bash", "", Behavior::Deny, 0);
        newer.created_at = "2026-01-02T00:00:00.000Z".into();
        let set = RuleSet::new(vec![newer, older]);
        assert_eq!(decide(&set, None, "Bash", json!({"command": "x"})).1, Some("a"));
    }

    #[test]
    fn allow_rules_need_every_part() {
        let set = RuleSet::new(vec![rule("git", None, "Bash", "git:*", Behavior::Allow, 0)]);
        assert_eq!(decide(&set, None, "Bash", json!({"command": "git status && git diff"})).1, Some("git"));
        assert_eq!(
            decide(&set, None, "Bash", json!({"command": "git status && curl x"})).1,
            None,
            "default, not the rule"
        );
    }

    #[test]
    fn merging_and_redaction() {
        assert_eq!(
            merge_input(&json!({"command": "rm x", "d": 1}), &json!({"command": "echo no"})),
            json!({"command": "echo no", "d": 1})
        );
        let r = redact(
            &json!({"command": "API_KEY=abc curl x", "headers": {"Authorization": "Bearer t"}, "password": "p"}),
        );
        assert_eq!(
            r,
            json!({"command": "API_KEY=[redacted] curl x", "headers": {"Authorization": "[redacted]"}, "password": "[redacted]"})
        );
    }
}
