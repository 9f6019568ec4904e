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

mod cache;
mod input;
mod pattern;
mod reading;
mod rule;
mod set;
pub mod shell;
mod subject;

pub use input::{merge_input, redact};
pub use pattern::{compile_pattern, Pattern};
pub use reading::CommandReading;
pub use rule::{Behavior, CompiledRule};
pub use set::{RuleMatch, RuleSet};
pub use shell::{read_command, CommandPart, ShellAnalysis};
pub use subject::{subject, Subject};

#[cfg(test)]
mod reading_tests;
#[cfg(test)]
mod shell_tests;
#[cfg(test)]
mod tests;
