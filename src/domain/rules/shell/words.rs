//! One word of a command, expanded as far as can be known before it runs: brace expansion,
//! then quote removal, `$'...'` escapes, backslashes and line continuations. Parameter,
//! command and arithmetic expansions stay as their source text, marked dynamic; the
//! substitutions inside them are read as commands of their own.

use std::panic::{catch_unwind, AssertUnwindSafe};

use brush_parser::word::{self as bw, BraceExpressionMember, BraceExpressionOrText, WordPiece, WordPieceWithSource};

use super::parse::{Reader, Scope};

/// A word becomes at most this many words by brace expansion; more is not expanded.
const MAX_BRACE_WORDS: usize = 256;

/// Where a dynamic piece of a word comes from, for the reason a part is not analyzable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Source {
    Variable,
    CommandSubstitution,
    Arithmetic,
    ProcessSubstitution,
    /// What `xargs -I` puts in place of its replace string.
    XargsInput,
    /// A word the grammar could not take apart.
    Unreadable,
}

impl Source {
    pub fn describe(self) -> &'static str {
        match self {
            Source::Variable => "a variable",
            Source::CommandSubstitution => "a command substitution",
            Source::Arithmetic => "an arithmetic expansion",
            Source::ProcessSubstitution => "a process substitution",
            Source::XargsInput => "xargs input",
            Source::Unreadable => "a word the shell grammar cannot read",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Segment {
    /// Text known before the command runs; `quoted` text is never a glob.
    Literal { text: String, quoted: bool },
    /// Known only when it runs: its source text. Unquoted, the shell splits what it expands
    /// to into words (at `$IFS`) and globs it.
    Dynamic { source: String, from: Source, quoted: bool },
}

/// One word as the shell would pass it to the program (before field splitting and globbing).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(super) struct Field {
    pub segments: Vec<Segment>,
}

impl Field {
    pub fn literal(text: &str) -> Field {
        Field { segments: vec![Segment::Literal { text: text.to_string(), quoted: true }] }
    }

    pub fn process_substitution(list: &brush_parser::ast::CompoundList) -> Field {
        let source = format!("<({})", list.to_string().trim().trim_end_matches(';'));
        Field { segments: vec![Segment::Dynamic { source, from: Source::ProcessSubstitution, quoted: false }] }
    }

    /// The word as written once quotes are removed (dynamic pieces as their source).
    pub fn text(&self) -> String {
        self.segments
            .iter()
            .map(|s| match s {
                Segment::Literal { text, .. } => text.as_str(),
                Segment::Dynamic { source, .. } => source.as_str(),
            })
            .collect()
    }

    /// The word, when nothing in it is known only at run time.
    pub fn static_text(&self) -> Option<String> {
        self.first_dynamic().is_none().then(|| self.text())
    }

    pub fn first_dynamic(&self) -> Option<(&str, Source)> {
        self.segments.iter().find_map(|s| match s {
            Segment::Dynamic { source, from, .. } => Some((source.as_str(), *from)),
            Segment::Literal { .. } => None,
        })
    }

    pub fn is_process_substitution(&self) -> bool {
        self.first_dynamic().is_some_and(|(_, from)| from == Source::ProcessSubstitution)
    }

    /// The segments after the last literal `/`: what names the program of a path.
    fn name_segments(&self) -> Vec<Segment> {
        let mut name: Vec<Segment> = Vec::new();
        for segment in &self.segments {
            match segment {
                Segment::Literal { text, quoted } => match text.rfind('/') {
                    Some(slash) => {
                        name.clear();
                        name.push(Segment::Literal { text: text[slash + 1..].to_string(), quoted: *quoted });
                    }
                    None => name.push(segment.clone()),
                },
                Segment::Dynamic { .. } => name.push(segment.clone()),
            }
        }
        name
    }

    /// The program this word names: its basename (`/bin/rm`, `./rm` and `../x/rm` are `rm`),
    /// or why that cannot be known before it runs. A quoted dynamic directory (`"$HOME"/bin/rm`)
    /// does not hide the name; an unquoted one (`$HOME/bin/rm`) does: what it expands to is
    /// split into words, and the first of them is the program (`X='curl evil #'; $X/bin/ls`
    /// runs curl).
    pub fn program_name(&self) -> Result<String, String> {
        let name = self.literal_name()?;
        let split = self.segments.iter().find_map(|s| match s {
            Segment::Dynamic { source, from, quoted: false } => Some((source, *from)),
            _ => None,
        });
        if let Some((source, from)) = split {
            return Err(format!(
                "the program word holds an unquoted {} ({source}), which the shell splits into words",
                from.describe().trim_start_matches("a ").trim_start_matches("an ")
            ));
        }
        Ok(name)
    }

    /// The basename as written, ignoring what an unquoted directory part could split into:
    /// what a part that cannot be analyzed is matched as in lenient mode (`$HOME/bin/rm x`
    /// reads as `rm x` there). An error when the basename itself is not known before it runs.
    pub fn literal_name(&self) -> Result<String, String> {
        let whole = self.text();
        let name = self.name_segments();
        let mut text = String::new();
        for segment in &name {
            match segment {
                Segment::Dynamic { source, from, .. } => {
                    return Err(format!("the program word is taken from {} ({source})", from.describe()));
                }
                Segment::Literal { text: t, quoted } => {
                    if !quoted && is_glob(t) {
                        return Err(format!("the program word is a glob pattern ({whole})"));
                    }
                    text.push_str(t);
                }
            }
        }
        // `rm/` names a folder, not `rm`: keep the word as written.
        Ok(if text.is_empty() { whole } else { text })
    }
}

/// Unquoted text the shell would match against file names.
fn is_glob(text: &str) -> bool {
    text.contains(['*', '?'])
        || text.find('[').is_some_and(|open| text[open..].contains(']'))
        || ["@(", "!(", "+("].iter().any(|extglob| text.contains(extglob))
}

impl Reader {
    /// The words `raw` becomes; substitutions inside it are read as commands.
    pub(super) fn expand_word(&mut self, raw: &str, scope: Scope) -> Vec<Field> {
        let Some(words) = brace_expand(raw) else {
            let from = Source::Unreadable;
            let source = format!("{raw} (brace expansion to more than {MAX_BRACE_WORDS} words)");
            self.scan_for_substitutions(raw, scope);
            return vec![Field { segments: vec![Segment::Dynamic { source, from, quoted: false }] }];
        };
        words.iter().map(|word| self.expand_one(word, scope)).collect()
    }

    fn expand_one(&mut self, raw: &str, scope: Scope) -> Field {
        // Most words are plain (`git`, `--release`, `src/main.rs`): nothing for the word
        // parser to remove or expand, so it is skipped (globs stay unquoted text).
        if !raw.contains(['\'', '"', '\\', '$', '`', '~', '{']) {
            return Field { segments: vec![Segment::Literal { text: raw.to_string(), quoted: false }] };
        }
        if !self.spend(raw.len()) {
            let source = raw.to_string();
            return Field { segments: vec![Segment::Dynamic { source, from: Source::Unreadable, quoted: false }] };
        }
        let options = brush_parser::ParserOptions::default();
        match catch_unwind(AssertUnwindSafe(|| bw::parse(raw, &options))) {
            Ok(Ok(pieces)) => {
                let mut field = Field::default();
                self.pieces(&pieces, raw, false, scope, &mut field);
                field
            }
            _ => self.unreadable(raw),
        }
    }

    /// A word the grammar could not take apart: dynamic, and, when it may hide a
    /// substitution, a part that is not analyzable.
    fn unreadable(&mut self, raw: &str) -> Field {
        if raw.contains(['$', '`']) {
            self.opaque(raw, format!("a word the shell grammar cannot read ({raw})"));
        }
        Field { segments: vec![Segment::Dynamic { source: raw.to_string(), from: Source::Unreadable, quoted: false }] }
    }

    fn pieces(&mut self, pieces: &[WordPieceWithSource], raw: &str, quoted: bool, scope: Scope, out: &mut Field) {
        let literal = |out: &mut Field, text: &str, quoted: bool| {
            out.segments.push(Segment::Literal { text: text.to_string(), quoted });
        };
        for piece in pieces {
            let source = raw.get(piece.start_index..piece.end_index).unwrap_or_default().to_string();
            let dynamic = |out: &mut Field, from: Source| {
                out.segments.push(Segment::Dynamic { source: source.clone(), from, quoted });
            };
            match &piece.piece {
                WordPiece::Text(text) => literal(out, text, quoted),
                WordPiece::SingleQuotedText(text) => literal(out, text, true),
                WordPiece::AnsiCQuotedText(text) => literal(out, &ansi_c(text), true),
                WordPiece::DoubleQuotedSequence(inner) | WordPiece::GettextDoubleQuotedSequence(inner) => {
                    self.pieces(inner, raw, true, scope, out);
                }
                // A home folder: it names a folder, never the program itself.
                WordPiece::TildeExpansion(_) => literal(out, if source.is_empty() { "~" } else { &source }, true),
                WordPiece::ParameterExpansion(_) => {
                    // `${x:-$(rm x)}` runs its default: read what is inside the braces.
                    let inner = source.strip_prefix("${").and_then(|s| s.strip_suffix('}')).unwrap_or_default();
                    self.scan_for_substitutions(inner, scope);
                    dynamic(out, Source::Variable);
                }
                WordPiece::CommandSubstitution(script) | WordPiece::BackquotedCommandSubstitution(script) => {
                    self.read_script(script, scope.deeper());
                    dynamic(out, Source::CommandSubstitution);
                }
                WordPiece::EscapeSequence(escaped) => {
                    // `\x` is `x`; a backslash-newline is a line continuation and disappears.
                    let escaped = escaped.strip_prefix('\\').unwrap_or(escaped);
                    if escaped != "\n" {
                        literal(out, escaped, true);
                    }
                }
                WordPiece::ArithmeticExpression(expr) => {
                    self.scan_for_substitutions(&expr.value, scope);
                    dynamic(out, Source::Arithmetic);
                }
            }
        }
    }

    /// Reads the substitutions in text that is not a command word (arithmetic, a parameter's
    /// default, an array index).
    pub(super) fn scan_for_substitutions(&mut self, text: &str, scope: Scope) {
        if text.contains(['$', '`']) {
            self.expand_one(text, scope);
        }
    }

    /// A here-document that expands (its delimiter is unquoted): its substitutions run. The
    /// text a program would read, or `None` when part of it is known only at run time.
    pub(super) fn expand_here_document(&mut self, body: &str, scope: Scope) -> Option<String> {
        let options = brush_parser::ParserOptions::default();
        match catch_unwind(AssertUnwindSafe(|| bw::parse_heredoc(body, &options))) {
            Ok(Ok(pieces)) => {
                let mut field = Field::default();
                self.pieces(&pieces, body, true, scope, &mut field);
                field.static_text()
            }
            _ => {
                self.unreadable(body);
                None
            }
        }
    }
}

/// Brace expansion of one raw word (quotes still in place: quoted braces do not expand).
/// `None` when it would make more than [`MAX_BRACE_WORDS`] words.
fn brace_expand(raw: &str) -> Option<Vec<String>> {
    if !raw.contains('{') {
        return Some(vec![raw.to_string()]);
    }
    let options = brush_parser::ParserOptions::default();
    match catch_unwind(AssertUnwindSafe(|| bw::parse_brace_expansions(raw, &options))) {
        Ok(Ok(Some(items))) => brace_words(&items),
        // Not a brace expression the shell would expand: the word as written.
        _ => Some(vec![raw.to_string()]),
    }
}

fn brace_words(items: &[BraceExpressionOrText]) -> Option<Vec<String>> {
    let mut words = vec![String::new()];
    for item in items {
        let choices = match item {
            BraceExpressionOrText::Text(text) => vec![text.clone()],
            BraceExpressionOrText::Expr(members) => {
                let mut choices = Vec::new();
                for member in members {
                    choices.extend(brace_member(member)?);
                    if choices.len() > MAX_BRACE_WORDS {
                        return None;
                    }
                }
                choices
            }
        };
        let mut next = Vec::with_capacity(words.len() * choices.len());
        for word in &words {
            for choice in &choices {
                next.push(format!("{word}{choice}"));
            }
            if next.len() > MAX_BRACE_WORDS {
                return None;
            }
        }
        words = next;
    }
    Some(words)
}

fn brace_member(member: &BraceExpressionMember) -> Option<Vec<String>> {
    match member {
        BraceExpressionMember::Child(items) => brace_words(items),
        BraceExpressionMember::NumberSequence { start, end, increment } => {
            sequence(i128::from(*start), i128::from(*end), *increment, |n| Some(n.to_string()))
        }
        BraceExpressionMember::CharSequence { start, end, increment } => {
            sequence(u32::from(*start).into(), u32::from(*end).into(), *increment, |n| {
                u32::try_from(n).ok().and_then(char::from_u32).map(String::from)
            })
        }
    }
}

/// `{start..end..increment}`, refused before it is built when it has too many members.
fn sequence(start: i128, end: i128, increment: i64, show: impl Fn(i128) -> Option<String>) -> Option<Vec<String>> {
    let step = i128::from(increment.unsigned_abs().max(1));
    if (end - start).abs() / step >= MAX_BRACE_WORDS as i128 {
        return None;
    }
    let mut out = Vec::new();
    let mut n = start;
    while (start <= end && n <= end) || (start > end && n >= end) {
        out.push(show(n)?);
        n = if start <= end { n + step } else { n - step };
    }
    Some(out)
}

/// The text of a `$'...'` string: its backslash escapes decoded as bash does.
pub(super) fn ansi_c(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars().peekable();
    let digits = |chars: &mut std::iter::Peekable<std::str::Chars<'_>>, radix: u32, max: usize| {
        let mut value = 0u32;
        let mut count = 0;
        while count < max {
            match chars.peek().and_then(|c| c.to_digit(radix)) {
                Some(d) => {
                    value = value.saturating_mul(radix).saturating_add(d);
                    chars.next();
                    count += 1;
                }
                None => break,
            }
        }
        (count > 0).then_some((value, count))
    };
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(escape) = chars.next() else {
            out.push('\\');
            break;
        };
        let decoded = match escape {
            'a' => Some('\x07'),
            'b' => Some('\x08'),
            'e' | 'E' => Some('\x1b'),
            'f' => Some('\x0c'),
            'n' => Some('\n'),
            'r' => Some('\r'),
            't' => Some('\t'),
            'v' => Some('\x0b'),
            '\\' | '\'' | '"' | '?' => Some(escape),
            'c' => chars.next().map(|x| char::from((x as u32 & 0x1f) as u8)),
            'x' => digits(&mut chars, 16, 2).and_then(|(v, _)| char::from_u32(v)),
            'u' => digits(&mut chars, 16, 4).and_then(|(v, _)| char::from_u32(v)),
            'U' => digits(&mut chars, 16, 8).and_then(|(v, _)| char::from_u32(v)),
            '0'..='7' => {
                // One to three octal digits, this one first.
                let first = escape.to_digit(8).unwrap_or_default();
                let value = match digits(&mut chars, 8, 2) {
                    Some((rest, count)) => first * 8u32.pow(count as u32) + rest,
                    None => first,
                };
                char::from_u32(value & 0xff)
            }
            _ => None,
        };
        match decoded {
            Some(d) => out.push(d),
            None => {
                out.push('\\');
                out.push(escape);
            }
        }
    }
    out
}
