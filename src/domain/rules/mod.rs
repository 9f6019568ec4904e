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
//! Bash commands are read with a bash grammar into the simple commands a shell would run, each
//! as the words it would execute (see [`shell`] for what is read, how, and what is not
//! analyzable). A deny rule denies the call when ANY part matches (or another reading of it:
//! the part with its wrappers, `sudo rm x`); an allow rule applies only when EVERY part
//! matches (an interpreter's own invocation, `bash -c ...`, aside: its commands are parts).
//!
//! Strict shell analysis ([`ShellAnalysis::Strict`], the default): when a deny rule whose tool
//! is `Bash` or `*` is in scope (project or global), a part that is not analyzable (a program
//! word from a variable or substitution, a glob program word, inline `python -c`/`node -e`/
//! `perl -e`/... code, a shell reading a pipe, `bash -c`/`eval` text built at run time, `xargs`
//! or `find -exec` supplying the program, a parse error, too deep or too long) denies the call,
//! naming what could not be analyzed, unless an allow rule with a non-empty `rule_content`
//! matches that part. Deny rules are checked first and still win. Lenient
//! ([`ShellAnalysis::Lenient`]): such parts are matched as plain text, like any other. With no
//! such deny rule in scope both modes decide alike.

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
