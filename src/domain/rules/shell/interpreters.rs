//! One simple command's words, once expanded: the part rules see, and what it runs in turn:
//! a shell's `-c` string or here-document, `eval`'s arguments, `find -exec`'s command. Inline
//! code of other languages is not analyzed.

use super::inline::inline_code;
use super::parse::{Reader, Scope, Stdin};
use super::words::{Field, Segment, Source};
use super::wrappers::{self, Script};
use super::CommandPart;

/// Shells whose language is read with the bash grammar.
const SHELLS: &[&str] =
    &["bash", "sh", "zsh", "dash", "ksh", "mksh", "ash", "yash", "posh", "rbash", "lksh", "oksh", "ksh93", "pdksh"];
/// Shells with a language of their own: what they run is not analyzed.
const OTHER_SHELLS: &[&str] = &["fish", "csh", "tcsh", "nu", "xonsh", "elvish", "pwsh", "powershell", "rc", "es"];

/// The words joined, the program word as its basename (as written, when an unquoted
/// directory part keeps it from being known).
fn joined(words: &[Field]) -> String {
    let mut texts: Vec<String> = words.iter().map(Field::text).collect();
    if let (Some(first), Some(Ok(name))) = (texts.first_mut(), words.first().map(Field::literal_name)) {
        *first = name;
    }
    texts.join(" ")
}

impl Reader {
    /// Records the command `fields` make and reads what it runs.
    pub(super) fn command_words(&mut self, fields: Vec<Field>, stdin: &Stdin, scope: Scope) {
        let unwrapped = wrappers::unwrap(&fields);
        let whole = joined(&fields);
        if let Some(script) = unwrapped.script {
            self.push(CommandPart { deny_only: true, ..CommandPart::readable(whole) });
            return self.read_command_string(script, stdin, scope);
        }
        let mut words = fields[unwrapped.start..].to_vec();
        if let Some(Some(replace)) = &unwrapped.xargs {
            if words.first().is_some_and(|p| !replace.is_empty() && p.text().contains(replace.as_str())) {
                let why = format!("xargs puts its input in the program word ({replace})");
                return self.opaque(&joined(&words), why);
            }
            // `xargs -I{} sh -c {}`: what replaces `{}` is known only when it runs.
            for word in words.iter_mut().filter(|w| !replace.is_empty() && w.text().contains(replace.as_str())) {
                let source = word.text();
                *word = Field { segments: vec![Segment::Dynamic { source, from: Source::XargsInput, quoted: false }] };
            }
        }
        let words = words.as_slice();
        let Some(program) = words.first() else {
            return match unwrapped.xargs {
                Some(_) => self.opaque(&whole, "xargs supplies the program word from its input"),
                None => self.push(CommandPart::readable(whole)),
            };
        };
        let name = match program.program_name() {
            Ok(name) => name,
            Err(why) => return self.opaque(&joined(words), why),
        };
        let mut part = CommandPart::readable(joined(words));
        if unwrapped.start > 0 {
            part.alternatives.push(whole);
        }
        if unwrapped.unsure {
            part.alternatives.extend((unwrapped.start + 1..fields.len()).map(|k| joined(&fields[k..])));
        }
        self.interpret(&name, words, part, stdin, scope);
    }

    fn interpret(&mut self, name: &str, words: &[Field], part: CommandPart, stdin: &Stdin, scope: Scope) {
        let args = &words[1..];
        if SHELLS.contains(&name) {
            return self.shell(name, args, part, stdin, scope);
        }
        if OTHER_SHELLS.contains(&name) {
            let runs_commands = args.iter().any(|a| matches!(a.text().as_str(), "-c" | "-Command" | "-command"));
            if runs_commands || args.is_empty() && reads_program_from(stdin, scope).is_some() {
                let why = format!("{name} runs commands in another shell's language, which is not analyzed");
                return self.opaque(&part.text, why);
            }
        }
        match name {
            "eval" => {
                self.push(CommandPart { deny_only: true, ..part });
                let script = Script { words: args.to_vec(), by: "eval".to_string() };
                self.read_command_string(script, stdin, scope);
            }
            "source" | "." if args.first().is_some_and(Field::is_process_substitution) => {
                self.opaque(&part.text, format!("{name} runs a script from a process substitution"));
            }
            // An alias's text replaces its name in later lines: read it as the commands it runs.
            "alias" => {
                self.push(CommandPart { deny_only: true, ..part });
                for value in args.iter().filter_map(|a| a.static_text()?.split_once('=').map(|(_, v)| v.to_string())) {
                    self.read_command_string(
                        Script { words: vec![Field::literal(&value)], by: "alias".to_string() },
                        stdin,
                        scope,
                    );
                }
                for word in args.iter().filter(|a| a.static_text().is_none()) {
                    self.opaque(&word.text(), format!("an alias defined at run time ({})", word.text()));
                }
            }
            // `trap 'rm x' EXIT`: the handler runs later in the same shell.
            "trap" => {
                let handler = args.iter().find(|a| !a.text().starts_with('-'));
                self.push(CommandPart { deny_only: handler.is_some(), ..part });
                if let (Some(handler), true) = (handler, args.len() > 1) {
                    self.read_command_string(
                        Script { words: vec![handler.clone()], by: "trap".to_string() },
                        stdin,
                        scope,
                    );
                }
            }
            // `hash -p /bin/rm foo` makes `foo` run rm; `enable -f lib.so` loads new builtins.
            "hash" | "enable" if args.iter().any(|a| matches!(a.text().as_str(), "-p" | "-f")) => {
                self.opaque(&part.text, format!("{name} binds a command name to a program it names"));
            }
            "parallel" => {
                self.opaque(&part.text, "GNU parallel runs commands built from its input, which are not analyzed");
            }
            "source" | "." if args.first().is_some_and(is_standard_input) => {
                match (stdin, reads_program_from(stdin, scope)) {
                    (Stdin::Document(Some(text)), _) => {
                        self.push(CommandPart { deny_only: true, ..part });
                        self.read_script(text, Scope { stdin_piped: false, ..scope.deeper() });
                    }
                    (_, Some(from)) => self.opaque(&part.text, format!("{name} reads its commands from {from}")),
                    _ => self.push(part),
                }
            }
            "su" | "runuser" | "sg" | "script" => {
                let option_at = args.iter().position(is_command_option);
                // `sg group command...` runs the rest through a shell too.
                let sg_command = name == "sg" && option_at.is_none() && args.len() > 1;
                self.push(CommandPart { deny_only: option_at.is_some() || sg_command, ..part });
                let words = match option_at {
                    Some(at) => command_option_value(&args[at..]).into_iter().collect(),
                    None if sg_command => args[1..].to_vec(),
                    None => return,
                };
                self.read_command_string(Script { words, by: format!("{name} -c") }, stdin, scope);
            }
            "find" => {
                self.push(part);
                self.find_actions(args, scope);
            }
            _ => match inline_code(name, args, stdin, scope) {
                Some(why) => self.opaque(&part.text, why),
                None => self.push(part),
            },
        }
    }

    /// `bash [options] [-c STRING | -s | SCRIPT] [args]`.
    fn shell(&mut self, name: &str, args: &[Field], part: CommandPart, stdin: &Stdin, scope: Scope) {
        let (mut command_mode, mut stdin_mode) = (false, false);
        let mut i = 0;
        while let Some(word) = args.get(i) {
            // A process substitution is a script file; after `-c`, the first word that is not an
            // option is the command string, static or not.
            if word.is_process_substitution() || (command_mode && word.static_text().is_none()) {
                break;
            }
            // `bash $FLAGS 'rm x'` may be `bash -c 'rm x'`.
            let Some(text) = word.static_text() else {
                return self.opaque(&part.text, format!("the options of {name} are built at run time"));
            };
            if text == "--" || text == "-" {
                i += 1;
                stdin_mode |= text == "-";
                break;
            }
            if text.starts_with("--") {
                i += if matches!(text.as_str(), "--rcfile" | "--init-file") { 2 } else { 1 };
                continue;
            }
            if text.len() < 2 || !text.starts_with(['-', '+']) {
                break;
            }
            i += 1;
            for c in text.chars().skip(1) {
                match c {
                    'c' => command_mode = true,
                    's' => stdin_mode = true,
                    // `-o pipefail`, `-O extglob`: the option's name is the next word.
                    'o' | 'O' => i += 1,
                    _ => {}
                }
            }
        }
        let operands = args.get(i..).unwrap_or_default();
        if command_mode {
            self.push(CommandPart { deny_only: true, ..part.clone() });
            return match operands.first() {
                Some(string) => {
                    let script = Script { words: vec![string.clone()], by: format!("{name} -c") };
                    self.read_command_string(script, stdin, scope)
                }
                None => self.opaque(&part.text, format!("{name} -c is given no command string here")),
            };
        }
        if operands.first().is_some_and(Field::is_process_substitution) {
            return self.opaque(&part.text, format!("{name} runs a script from a process substitution"));
        }
        if !operands.is_empty() && !stdin_mode && !operands.first().is_some_and(is_standard_input) {
            // A script file: what it does is out of sight, like `./script.sh`.
            return self.push(part);
        }
        match (stdin, reads_program_from(stdin, scope)) {
            (Stdin::Document(Some(text)), _) => {
                self.push(CommandPart { deny_only: true, ..part });
                self.read_script(text, Scope { stdin_piped: false, ..scope.deeper() });
            }
            (Stdin::Document(None), _) => {
                self.opaque(&part.text, format!("{name} reads its commands from a here-document built at run time"));
            }
            (_, Some(from)) => self.opaque(&part.text, format!("{name} reads its commands from {from}")),
            _ => self.push(part),
        }
    }

    /// A command string a shell runs (`bash -c`, `eval`, `env -S`, `flock -c`, `watch`): its
    /// words joined by spaces, read as a script of its own.
    fn read_command_string(&mut self, script: Script, stdin: &Stdin, scope: Scope) {
        let mut texts = Vec::with_capacity(script.words.len());
        for word in &script.words {
            match word.static_text() {
                Some(text) => texts.push(text),
                None => {
                    let (source, from) = word.first_dynamic().unwrap_or(("?", Source::Unreadable));
                    let why = format!(
                        "the command string {} runs is built at run time ({} {source})",
                        script.by,
                        from.describe()
                    );
                    let text = script.words.iter().map(Field::text).collect::<Vec<_>>().join(" ");
                    return self.opaque(&text, why);
                }
            }
        }
        let piped = scope.stdin_piped || *stdin != Stdin::Inherited;
        self.read_script(&texts.join(" "), Scope { stdin_piped: piped, ..scope.deeper() });
    }

    /// `find ... -exec CMD {} ;` runs CMD for each file; `-delete` removes them (read as
    /// `rm {}`).
    fn find_actions(&mut self, args: &[Field], scope: Scope) {
        let mut i = 0;
        while let Some(word) = args.get(i) {
            i += 1;
            let text = word.text();
            if text == "-delete" {
                self.push(CommandPart::readable("rm {}".to_string()));
            }
            if !matches!(text.as_str(), "-exec" | "-execdir" | "-ok" | "-okdir") {
                continue;
            }
            let end =
                args[i..].iter().position(|w| matches!(w.text().as_str(), ";" | "+")).map_or(args.len(), |p| i + p);
            let command = args[i..end].to_vec();
            i = end + 1;
            match command.first() {
                Some(program) if program.text().contains("{}") => {
                    self.opaque(&joined(&command), format!("find puts file names in the program word ({text} {{}})"));
                }
                Some(_) => self.command_words(command, &Stdin::Inherited, scope),
                None => {}
            }
        }
    }
}

/// `/dev/stdin` and its other names: a script read from there is the standard input.
fn is_standard_input(word: &Field) -> bool {
    matches!(word.text().as_str(), "/dev/stdin" | "/dev/fd/0" | "/proc/self/fd/0")
}

fn is_command_option(word: &Field) -> bool {
    let text = word.text();
    text == "-c" || text == "--command" || text.starts_with("--command=")
}

/// The value of `-c STRING` / `--command STRING` / `--command=STRING` at the start of `args`.
fn command_option_value(args: &[Field]) -> Option<Field> {
    let text = args.first()?.text();
    match text.strip_prefix("--command=") {
        Some(value) => Some(Field::literal(value)),
        None => args.get(1).cloned(),
    }
}

/// Where a program reads its input from when that is its program text: a here-document, a
/// here-string or a pipe. `None` for a file or the tool's own input.
pub(super) fn reads_program_from(stdin: &Stdin, scope: Scope) -> Option<&'static str> {
    match stdin {
        Stdin::Document(_) => Some("a here-document or here-string"),
        Stdin::Inherited if scope.stdin_piped => Some("a pipe"),
        Stdin::Descriptor => Some("another file descriptor"),
        Stdin::Process => Some("a process substitution"),
        _ => None,
    }
}
