//! Bash commands, split into the simple commands a shell would run and normalized (see the
//! parent module for what is split, what is stripped, and what cannot be seen).

/// One simple command of a Bash call.
#[derive(Debug, PartialEq, Eq)]
pub struct CommandPart {
    /// The command, normalized.
    pub primary: String,
    /// After a wrapper (`sudo -u root /bin/rm x`), any later word may be where the program
    /// starts (options can take arguments): deny rules also check these.
    pub alternatives: Vec<String>,
}

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
