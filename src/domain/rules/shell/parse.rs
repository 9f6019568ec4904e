//! Parsing a script with the bash grammar and walking the whole tree for simple commands.
//!
//! Commands are hostile input, so every reading is bounded: nesting is measured before the
//! (recursive) parser sees the text, nested readings (substitutions, `bash -c`, `eval`) are
//! limited in depth and in number, and a panic inside the parser is caught and reported as a
//! parse error rather than taking the engine down.

use std::io::BufReader;
use std::panic::{catch_unwind, AssertUnwindSafe};

use brush_parser::ast;

use super::limits::{nesting, MAX_BYTES, MAX_DEPTH, MAX_NESTING, MAX_PARSED_BYTES, MAX_PARTS, MAX_READINGS};
use super::CommandPart;

/// Where a reading sits: how deep among nested readings, and whether its standard input is a
/// pipe (a shell there reads its commands from another program's output).
#[derive(Debug, Clone, Copy)]
pub(super) struct Scope {
    pub depth: usize,
    pub stdin_piped: bool,
}

impl Scope {
    pub const TOP: Scope = Scope { depth: 0, stdin_piped: false };

    /// A script read from inside this one (a substitution, a `bash -c` string).
    pub fn deeper(self) -> Scope {
        Scope { depth: self.depth + 1, ..self }
    }

    fn piped(self) -> Scope {
        Scope { stdin_piped: true, ..self }
    }
}

/// The standard input of one simple command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Stdin {
    /// Whatever the command inherits (the tool's, or a pipe: see [`Scope::stdin_piped`]).
    Inherited,
    /// A here-document or here-string: its text, or `None` when it is built at run time.
    Document(Option<String>),
    /// `< file`.
    File,
    /// `<&3`: whatever was opened on another descriptor.
    Descriptor,
    /// `< <(...)`: another command's output.
    Process,
}

/// Collects the parts of one tool call.
#[derive(Default)]
pub(super) struct Reader {
    parts: Vec<CommandPart>,
    readings: usize,
    parsed_bytes: usize,
    overflowed: bool,
}

impl Reader {
    pub fn push(&mut self, part: CommandPart) {
        if self.parts.len() >= MAX_PARTS {
            self.overflowed = true;
        } else if !self.parts.contains(&part) {
            self.parts.push(part);
        }
    }

    /// A part that cannot be read: `text` is matched as plain text, `why` says what was unseen.
    pub fn opaque(&mut self, text: &str, why: impl Into<String>) {
        self.push(CommandPart::opaque(collapse_whitespace(text), why.into()));
    }

    pub fn finish(mut self) -> Vec<CommandPart> {
        if self.overflowed {
            let why = format!(
                "more than {MAX_PARTS} commands, {MAX_READINGS} nested scripts or {MAX_PARSED_BYTES} bytes to parse in one call"
            );
            self.parts.push(CommandPart::opaque(String::new(), why));
        }
        self.parts
    }

    /// Counts `bytes` more text to parse against this call's budget; false when it is spent
    /// (the call then ends with a part that is not analyzable).
    pub fn spend(&mut self, bytes: usize) -> bool {
        self.parsed_bytes = self.parsed_bytes.saturating_add(bytes);
        if self.parsed_bytes > MAX_PARSED_BYTES {
            self.overflowed = true;
        }
        !self.overflowed
    }

    /// Reads one script: the top-level command, or text a shell would run from inside it.
    pub fn read_script(&mut self, script: &str, scope: Scope) {
        self.readings += 1;
        if self.readings > MAX_READINGS {
            self.overflowed = true;
        }
        if !self.spend(script.len()) {
            return;
        }
        if scope.depth > MAX_DEPTH {
            return self.opaque(script, format!("commands nested more than {MAX_DEPTH} readings deep"));
        }
        if script.len() > MAX_BYTES {
            return self.opaque("", format!("a command longer than {MAX_BYTES} bytes"));
        }
        if nesting(script) > MAX_NESTING {
            return self.opaque(script, format!("commands nested more than {MAX_NESTING} levels deep"));
        }
        match parse_program(script) {
            Ok(program) => program.complete_commands.iter().for_each(|list| self.compound_list(list, scope)),
            Err(e) => self.opaque(script, format!("the shell grammar cannot parse it ({e})")),
        }
    }

    pub(super) fn compound_list(&mut self, list: &ast::CompoundList, scope: Scope) {
        for ast::CompoundListItem(and_or, _) in &list.0 {
            self.pipeline(&and_or.first, scope);
            for next in &and_or.additional {
                let (ast::AndOr::And(p) | ast::AndOr::Or(p)) = next;
                self.pipeline(p, scope);
            }
        }
    }

    fn pipeline(&mut self, pipeline: &ast::Pipeline, scope: Scope) {
        for (i, command) in pipeline.seq.iter().enumerate() {
            self.command(command, if i == 0 { scope } else { scope.piped() });
        }
    }

    fn command(&mut self, command: &ast::Command, scope: Scope) {
        match command {
            ast::Command::Simple(simple) => self.simple_command(simple, scope),
            ast::Command::Compound(compound, redirects) => {
                let scope = self.compound_redirects(redirects.as_ref(), scope);
                self.compound(compound, scope);
            }
            // A function's body runs when it is called: read as if it were.
            ast::Command::Function(function) => {
                let scope = self.compound_redirects(function.body.1.as_ref(), scope);
                self.compound(&function.body.0, scope);
            }
            ast::Command::ExtendedTest(test, redirects) => {
                self.compound_redirects(redirects.as_ref(), scope);
                self.extended_test(&test.expr, scope);
            }
        }
    }

    /// Redirections of a compound command; input redirected into it counts as a pipe for the
    /// shells inside (`{ sh; } <<EOF` is read no better than `... | sh`).
    fn compound_redirects(&mut self, redirects: Option<&ast::RedirectList>, scope: Scope) -> Scope {
        let mut stdin = Stdin::Inherited;
        for redirect in redirects.map(|r| r.0.as_slice()).unwrap_or_default() {
            self.redirect(redirect, scope, &mut stdin);
        }
        if stdin == Stdin::Inherited {
            scope
        } else {
            scope.piped()
        }
    }

    fn compound(&mut self, compound: &ast::CompoundCommand, scope: Scope) {
        use ast::CompoundCommand as C;
        match compound {
            C::Arithmetic(a) => self.scan_for_substitutions(&a.expr.value, scope),
            C::ArithmeticForClause(f) => {
                for expr in [&f.initializer, &f.condition, &f.updater].into_iter().flatten() {
                    self.scan_for_substitutions(&expr.value, scope);
                }
                self.compound_list(&f.body.list, scope);
            }
            C::BraceGroup(group) => self.compound_list(&group.list, scope),
            C::Subshell(subshell) => self.compound_list(&subshell.list, scope),
            C::ForClause(f) => {
                for word in f.values.iter().flatten() {
                    self.expand_word(&word.value, scope);
                }
                self.compound_list(&f.body.list, scope);
            }
            C::CaseClause(case) => {
                self.expand_word(&case.value.value, scope);
                for item in &case.cases {
                    for pattern in &item.patterns {
                        self.expand_word(&pattern.value, scope);
                    }
                    if let Some(list) = &item.cmd {
                        self.compound_list(list, scope);
                    }
                }
            }
            C::IfClause(i) => {
                self.compound_list(&i.condition, scope);
                self.compound_list(&i.then, scope);
                for clause in i.elses.iter().flatten() {
                    if let Some(condition) = &clause.condition {
                        self.compound_list(condition, scope);
                    }
                    self.compound_list(&clause.body, scope);
                }
            }
            C::WhileClause(w) | C::UntilClause(w) => {
                self.compound_list(&w.0, scope);
                self.compound_list(&w.1.list, scope);
            }
            C::Coprocess(c) => self.command(&c.body, scope),
        }
    }

    fn extended_test(&mut self, expr: &ast::ExtendedTestExpr, scope: Scope) {
        use ast::ExtendedTestExpr as E;
        match expr {
            E::And(a, b) | E::Or(a, b) => {
                self.extended_test(a, scope);
                self.extended_test(b, scope);
            }
            E::Not(a) | E::Parenthesized(a) => self.extended_test(a, scope),
            E::UnaryTest(_, word) => {
                self.expand_word(&word.value, scope);
            }
            E::BinaryTest(_, left, right) => {
                self.expand_word(&left.value, scope);
                self.expand_word(&right.value, scope);
            }
        }
    }

    fn simple_command(&mut self, simple: &ast::SimpleCommand, scope: Scope) {
        use ast::CommandPrefixOrSuffixItem as Item;
        let prefix = simple.prefix.as_ref().map(|p| p.0.as_slice()).unwrap_or_default();
        let suffix = simple.suffix.as_ref().map(|s| s.0.as_slice()).unwrap_or_default();
        let mut stdin = Stdin::Inherited;
        let mut fields = Vec::new();
        if let Some(word) = &simple.word_or_name {
            // Prefix items first: assignments and redirections run before the program word's
            // expansion matters, and none of them is a word of the command.
            for item in prefix {
                self.command_item(item, scope, &mut stdin, &mut fields, true);
            }
            fields.extend(self.expand_word(&word.value, scope));
        } else {
            for item in prefix {
                self.command_item(item, scope, &mut stdin, &mut fields, true);
            }
        }
        for item in suffix {
            self.command_item(item, scope, &mut stdin, &mut fields, matches!(item, Item::IoRedirect(_)));
        }
        if !fields.is_empty() {
            self.command_words(fields, &stdin, scope);
        }
    }

    /// One prefix or suffix item. Assignments before the program are not words of the command;
    /// after it (`export A=$(x)`) they are arguments.
    fn command_item(
        &mut self,
        item: &ast::CommandPrefixOrSuffixItem,
        scope: Scope,
        stdin: &mut Stdin,
        fields: &mut Vec<super::words::Field>,
        in_prefix: bool,
    ) {
        use ast::CommandPrefixOrSuffixItem as Item;
        match item {
            Item::IoRedirect(redirect) => self.redirect(redirect, scope, stdin),
            Item::Word(word) => fields.extend(self.expand_word(&word.value, scope)),
            Item::AssignmentWord(assignment, word) => {
                if in_prefix {
                    self.assignment(assignment, scope);
                } else {
                    fields.extend(self.expand_word(&word.value, scope));
                }
            }
            Item::ProcessSubstitution(_, subshell) => {
                self.compound_list(&subshell.list, scope);
                fields.push(super::words::Field::process_substitution(&subshell.list));
            }
        }
    }

    fn assignment(&mut self, assignment: &ast::Assignment, scope: Scope) {
        match &assignment.value {
            ast::AssignmentValue::Scalar(word) => {
                self.expand_word(&word.value, scope);
            }
            ast::AssignmentValue::Array(items) => {
                for (key, value) in items {
                    if let Some(key) = key {
                        self.expand_word(&key.value, scope);
                    }
                    self.expand_word(&value.value, scope);
                }
            }
        }
        if let ast::AssignmentName::ArrayElementName(_, index) = &assignment.name {
            self.scan_for_substitutions(index, scope);
        }
    }

    fn redirect(&mut self, redirect: &ast::IoRedirect, scope: Scope, stdin: &mut Stdin) {
        use ast::{IoFileRedirectKind as Kind, IoFileRedirectTarget as Target, IoRedirect as R};
        let is_stdin = |fd: &Option<ast::IoFd>| fd.is_none_or(|fd| fd == 0);
        match redirect {
            R::File(fd, kind, target) => {
                match target {
                    Target::Filename(word) | Target::Duplicate(word) => {
                        self.expand_word(&word.value, scope);
                    }
                    Target::ProcessSubstitution(_, subshell) => self.compound_list(&subshell.list, scope),
                    Target::Fd(_) => {}
                }
                if matches!(kind, Kind::Read | Kind::ReadAndWrite) && is_stdin(fd) {
                    *stdin = match target {
                        Target::Fd(_) | Target::Duplicate(_) => Stdin::Descriptor,
                        Target::ProcessSubstitution(..) => Stdin::Process,
                        Target::Filename(_) => Stdin::File,
                    };
                } else if matches!(kind, Kind::DuplicateInput) && is_stdin(fd) {
                    *stdin = Stdin::Descriptor;
                }
            }
            R::HereDocument(fd, doc) => {
                let text = if doc.requires_expansion {
                    self.expand_here_document(&doc.doc.value, scope)
                } else {
                    Some(doc.doc.value.clone())
                };
                if is_stdin(fd) {
                    *stdin = Stdin::Document(text);
                }
            }
            R::HereString(fd, word) => {
                let fields = self.expand_word(&word.value, scope);
                let text = fields.iter().map(|f| f.static_text()).collect::<Option<Vec<_>>>();
                if is_stdin(fd) {
                    *stdin = Stdin::Document(text.map(|t| t.join(" ")));
                }
            }
            R::OutputAndError(word, _) => {
                self.expand_word(&word.value, scope);
            }
        }
    }
}

/// The parser, with a panic inside it (it is not written against hostile input) turned into
/// an error.
fn parse_program(script: &str) -> Result<ast::Program, String> {
    let options = brush_parser::ParserOptions::default();
    let parse = || {
        brush_parser::Parser::new(BufReader::new(script.as_bytes()), &options)
            .parse_program()
            .map_err(|e| e.to_string())
    };
    catch_unwind(AssertUnwindSafe(parse)).unwrap_or_else(|_| Err("the parser failed on it".to_string()))
}

pub(super) fn collapse_whitespace(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}
