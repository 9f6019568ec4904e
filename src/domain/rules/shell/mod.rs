//! Bash commands, read the way a shell would run them: every simple command anywhere in the
//! call, each as the words the shell would execute.
//!
//! **The grammar** is [`brush_parser`], the parser of the brush shell (a bash-compatible shell
//! in Rust). Chosen over `tree-sitter-bash` (also tried) because it gives a typed bash AST
//! *and* a word parser that already does the shell's own quote removal (single, double,
//! `$'...'`, `$"..."`), backslash escapes, line continuations and brace-expansion parsing, so
//! little is hand-written here; tree-sitter gives a concrete syntax tree whose words would all
//! have to be unquoted by hand, needs a C build, and parsed a realistic mix of commands more
//! slowly (measured on a mix of six agent commands, parse only: ~323k/s for brush-parser 0.4,
//! ~223k/s for tree-sitter-bash 0.25). Its weaknesses: recursion (a very deeply nested command
//! overflows the stack, around 200 levels on a 1 MiB stack), so nesting is bounded before
//! parsing (see [`limits`]); no `select` (a parse error, so not analyzable); and it is not
//! written against hostile input, so a panic inside it is caught and counts as a parse error.
//! A full reading costs about twice the parse (5-15 us for agent commands); the rule set keeps
//! a small cache of readings, since commands repeat.
//!
//! **What is collected** ([`read_command`]): the simple commands of lists, pipelines, `if`,
//! `for`, `while`, `until`, `case`, subshells, brace groups, function bodies (as if
//! called), coprocesses, `[[ ]]` and `(( ))`; command substitutions `$(...)` and backticks and
//! process substitutions `<(...)`/`>(...)` wherever they are (inside words, double quotes,
//! assignments, redirections, parameter defaults, here-documents that expand, arithmetic).
//! Interpreters are read recursively: `bash|sh|zsh|dash|ksh|mksh|ash -c STRING`, `eval ARGS`,
//! `env -S STRING`, `flock ... -c STRING`, `su -c STRING`, `script -c STRING`, `entr -s`,
//! `watch`, a here-document or here-string fed to a shell (`bash <<EOF ... EOF`,
//! `. /dev/stdin <<EOF`), the text of `alias NAME=TEXT` and `trap TEXT SIGNAL` (it runs later
//! in the same shell), and the command of `find -exec/-execdir/-ok/-okdir` (`find -delete`
//! reads as `rm {}`).
//!
//! **Each command's words** are what the shell would execute: brace expansion (`{rm,x}` is
//! `rm x`), quote removal, `$'...'` escapes, backslashes and line continuations. Then the
//! program word is normalized: its basename (`/bin/rm`, `./rm`, `../bin/rm` are `rm`), leading
//! `VAR=value` assignments and redirections anywhere are dropped, and wrappers are stripped with
//! their options and the arguments those take: `sudo`, `doas`, `env`, `exec`, `command`,
//! `builtin`, `nohup`, `nice`, `time`, `timeout`, `setsid`, `stdbuf`, `ionice`, `chrt`,
//! `taskset`, `flock`, `unbuffer`, `chroot`, `busybox`, `watch`, `xargs`, and launchers such as
//! `strace`, `fakeroot`, `unshare`, `nsenter`, `systemd-run`, `firejail` (see `wrappers.rs`).
//! A wrapper option that is not known makes every later word a possible program start, for
//! deny rules.
//!
//! **Not analyzable** (a part with [`CommandPart::not_analyzable`]): a program word taken from
//! a variable or a substitution (`$CMD x`, `$(echo rm) x`); a glob in the program word
//! (`/bin/r?`, `[r]m`); inline code of `python -c`, `node -e/-p`, `perl -e`, `ruby -e`,
//! `php -r`, `lua -e`, `Rscript -e`, `osascript -e`, or such an interpreter reading its program
//! from a here-document or a pipe; a shell reading its commands from a pipe (`echo x | sh`) or
//! another descriptor (`bash <&3`), or a process substitution (`bash <(...)`, `bash < <(...)`);
//! `hash -p` and `enable -f` (a name bound to another program); GNU `parallel`;
//! `bash -c`/`eval`/`alias` text built at run time (`bash -c
//! "$X"`); `xargs` or `find -exec` supplying the program word (`xargs -I{} {} x`, `xargs env`);
//! `fish`/`csh`/`tcsh -c` (another grammar); `source <(...)`; a parse error; more than
//! [`limits::MAX_DEPTH`] nested readings or [`limits::MAX_NESTING`] nesting levels; a command
//! over 1 MiB; more than 1,000 commands in one call. What the
//! permission engine does with such a part depends on the `shell_analysis` setting
//! ([`ShellAnalysis`]): see the parent module.
//!
//! **Still out of sight** in every mode: what a script file does (`bash x.sh`, `./x.sh`,
//! `source x.sh`), a program under another name (a copy or link of `rm`), aliases and functions
//! defined before the call (the user's shell profile), programs that run commands by their own
//! means (`awk 'BEGIN{system(...)}'`, `git` aliases, `make`, `npm run`, launchers not listed
//! above), commands sent to another machine (`ssh host rm x`), and the value of a variable in
//! an argument (`rm $X` is read as `rm $X`).

mod inline;
mod interpreters;
pub mod limits;
mod parse;
mod words;
mod wrappers;

use parse::{Reader, Scope};

/// What the permission engine does with a part it cannot analyze, when a deny rule could apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ShellAnalysis {
    /// Deny it, unless an allow rule with a non-empty `rule_content` matches that part.
    #[default]
    Strict,
    /// Match it as plain text, like any other part.
    Lenient,
}

impl ShellAnalysis {
    pub const ALL: [&'static str; 2] = ["strict", "lenient"];

    pub fn parse(s: &str) -> Option<ShellAnalysis> {
        match s.trim() {
            "strict" => Some(ShellAnalysis::Strict),
            "lenient" => Some(ShellAnalysis::Lenient),
            _ => None,
        }
    }
}

/// One simple command of a Bash call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandPart {
    /// The words the shell would execute, normalized, joined by single spaces.
    pub text: String,
    /// Other readings deny rules check too: the command with its wrappers
    /// (`sudo -u root rm x`), and, after a wrapper option that is not known, every later word
    /// as the program start.
    pub alternatives: Vec<String>,
    /// An interpreter's own invocation (`bash -c ...`, `eval ...`) whose commands are parts of
    /// their own: deny rules check it, allow rules need only the commands it runs.
    pub deny_only: bool,
    /// Why this part could not be analyzed, when it could not.
    pub not_analyzable: Option<String>,
}

impl CommandPart {
    pub(super) fn readable(text: String) -> CommandPart {
        CommandPart { text, alternatives: Vec::new(), deny_only: false, not_analyzable: None }
    }

    pub(super) fn opaque(text: String, why: String) -> CommandPart {
        CommandPart { text, alternatives: Vec::new(), deny_only: false, not_analyzable: Some(why) }
    }
}

/// The simple commands of a Bash command line, in the order they appear (substitutions before
/// the command that uses them), without repeats.
pub fn read_command(command: &str) -> Vec<CommandPart> {
    let mut reader = Reader::default();
    reader.read_script(command, Scope::TOP);
    reader.finish()
}
