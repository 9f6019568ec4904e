//! The bounds of one reading. Commands are hostile input: the parser recurses once per
//! nesting level, and brace expansion and nested readings multiply work, so each is capped and
//! what is over a cap is not analyzable (denied in strict mode).

/// Nested readings (a substitution in a `bash -c` string in an `eval` ...) before giving up.
pub const MAX_DEPTH: usize = 8;
/// Bracket and keyword nesting of one script before giving up. The parser recurses per level;
/// 128 levels were measured to fit a 1 MiB stack, so 32 leaves room for debug builds and for
/// the readings above it.
pub const MAX_NESTING: usize = 32;
/// Longer commands are not parsed (parsing is linear, ~9 ms per 100 KB; this bounds the time).
pub const MAX_BYTES: usize = 1 << 20;
/// Simple commands recorded for one call, and scripts parsed for it (brace expansion can
/// repeat a substitution), before the rest is reported as not analyzable.
pub const MAX_PARTS: usize = 1_000;
pub const MAX_READINGS: usize = 2_000;
/// Text parsed for one call, every nested reading and word counted (brace expansion repeats
/// a substitution per word): about 0.4 s of parsing at most.
pub const MAX_PARSED_BYTES: usize = 4 << 20;

/// How deeply `script` nests, over-estimated from its text alone: brackets of every kind
/// (quoted or not) and the keywords that open a compound command where a command starts.
/// Cheap and linear, so the recursive parser never sees what could exhaust its stack.
pub fn nesting(script: &str) -> usize {
    // Counted apart: a `)` closing a case pattern must not cancel the `case` keyword.
    let (mut brackets, mut keywords, mut deepest) = (0usize, 0usize, 0usize);
    let mut word = String::new();
    // At the start of a command a keyword opens or closes a compound command; elsewhere
    // (`echo for`) it is a plain word.
    let mut command_start = true;
    let end_word = |word: &mut String, keywords: &mut usize, command_start: &mut bool| {
        if word.is_empty() {
            return;
        }
        if *command_start {
            match word.as_str() {
                "if" | "case" | "for" | "while" | "until" | "select" => *keywords += 1,
                "fi" | "esac" | "done" => *keywords = keywords.saturating_sub(1),
                _ => {}
            }
        }
        *command_start = matches!(word.as_str(), "then" | "do" | "else" | "elif" | "if" | "while" | "until" | "time");
        word.clear();
    };
    for c in script.chars() {
        match c {
            '(' | '{' | '[' => brackets += 1,
            ')' | '}' | ']' => brackets = brackets.saturating_sub(1),
            _ => {}
        }
        if c.is_alphanumeric() || c == '_' {
            // Keywords are short: a long word only has to be told apart from them.
            if word.len() < 8 {
                word.push(c);
            }
            continue;
        }
        end_word(&mut word, &mut keywords, &mut command_start);
        if matches!(c, ';' | '&' | '|' | '\n' | '(' | '{' | ')' | '}' | '!') {
            command_start = true;
        } else if !c.is_whitespace() {
            command_start = false;
        }
        deepest = deepest.max(brackets + keywords);
    }
    end_word(&mut word, &mut keywords, &mut command_start);
    deepest.max(brackets + keywords)
}
