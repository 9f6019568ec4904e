//! Interpreters of other languages given code inline (`python3 -c`, `node -e`, `perl -e`, ...)
//! or on their standard input: that code is not analyzed.

use super::interpreters::reads_program_from;
use super::parse::{Scope, Stdin};
use super::words::Field;

/// Why `name args` runs code that is not analyzed, when it does: inline code (`python3 -c`),
/// or its program read from a here-document or a pipe.
pub(super) fn inline_code(name: &str, args: &[Field], stdin: &Stdin, scope: Scope) -> Option<String> {
    let family = Family::of(name)?;
    let mut i = 0;
    while let Some(text) = args.get(i).map(Field::text) {
        i += 1;
        if text == "-" {
            break;
        }
        if !text.starts_with('-') || text == "--" {
            // The first operand is the program's file (or, for deno, its subcommand).
            return (family == Family::Deno && text == "eval")
                .then(|| "deno eval runs inline code that is not analyzed".to_string());
        }
        if let Some(option) = family.inline_option(&text) {
            return Some(format!("{name} {option} runs inline code that is not analyzed"));
        }
        if family.value_options().contains(&text.as_str()) {
            i += 1;
        }
        if family == Family::Python && text.starts_with("-m") {
            // A module runs; its arguments are its own.
            return None;
        }
    }
    reads_program_from(stdin, scope).map(|from| format!("{name} reads its program from {from}, which is not analyzed"))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    Python,
    Node,
    Deno,
    Perl,
    Ruby,
    Php,
    /// lua, Rscript, osascript: `-e CODE`.
    DashE,
}

impl Family {
    fn of(name: &str) -> Option<Family> {
        let versioned =
            |base: &str| name.strip_prefix(base).is_some_and(|v| v.chars().all(|c| c.is_ascii_digit() || c == '.'));
        Some(match name {
            _ if versioned("python") || versioned("pypy") => Family::Python,
            "node" | "nodejs" | "bun" => Family::Node,
            "deno" => Family::Deno,
            _ if versioned("perl") => Family::Perl,
            _ if versioned("ruby") => Family::Ruby,
            _ if versioned("php") => Family::Php,
            "lua" | "luajit" | "Rscript" | "R" | "osascript" | "tclsh" | "wish" => Family::DashE,
            _ if versioned("lua") => Family::DashE,
            _ => return None,
        })
    }

    /// The option (as written) that gives inline code, if `option` is one.
    fn inline_option(self, option: &str) -> Option<String> {
        let cluster = option.strip_prefix('-').filter(|c| !c.starts_with('-'));
        // Letters after which the rest of a cluster is that option's value.
        let (letters, stops): (&str, &str) = match self {
            Family::Python => ("c", "WXQm"),
            Family::Node => ("ep", "r"),
            Family::Deno => ("", ""),
            Family::Perl => ("eE", "IMmixdDl0CV"),
            Family::Ruby => ("e", "ICrEFTxWK0l"),
            Family::Php => ("rRBE", "cdfzt"),
            Family::DashE => ("e", ""),
        };
        if self == Family::Node
            && ["--eval", "--print"].iter().any(|l| option == *l || option.starts_with(&format!("{l}=")))
        {
            return Some(option.split('=').next().unwrap_or(option).to_string());
        }
        if self == Family::Php && option == "--run" {
            return Some(option.to_string());
        }
        for c in cluster?.chars() {
            if letters.contains(c) {
                return Some(format!("-{c}"));
            }
            if stops.contains(c) {
                return None;
            }
        }
        None
    }

    /// Options whose value is the next word (so it is not the program's file).
    fn value_options(self) -> &'static [&'static str] {
        match self {
            Family::Python => &["-W", "-X", "-Q"],
            Family::Node => &["-r", "--require", "--import", "--loader", "--experimental-loader", "--conditions"],
            Family::Perl | Family::Ruby => &["-I"],
            Family::Php => &["-c", "-d", "-z"],
            Family::Deno | Family::DashE => &[],
        }
    }
}
