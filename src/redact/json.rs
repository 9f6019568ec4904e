//! Redacting inside a JSON text's strings without parsing the document: each string token is
//! decoded (so a PEM key's `\n` escapes, a `\/` or a `\u0041` read as the text they stand for),
//! redacted, and written back escaped only when it changed. Everything else (keys' order,
//! numbers, spacing) stays byte for byte. Works on JSON lines too.

use std::borrow::Cow;

use super::Redactor;

/// `None` when `text` is not made of well-formed JSON strings (an unterminated one, a bad
/// escape): the caller falls back to plain text. `keywords` are where the rules' keywords start
/// in `text` (sorted): a string or gap without one holds no secret and is not searched again.
/// Keywords hold no quote, so each lies wholly inside one string or one gap.
pub(super) fn redact_strings<'a>(redactor: &Redactor, text: &'a str, keywords: &[usize]) -> Option<Cow<'a, str>> {
    let has_keyword = |from: usize, to: usize| {
        let first = keywords.partition_point(|&at| at < from);
        keywords.get(first).is_some_and(|&at| at < to)
    };
    let bytes = text.as_bytes();
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut i = 0;
    let mut gap_start = 0;
    while i < bytes.len() {
        if bytes[i] != b'"' {
            i += 1;
            continue;
        }
        // Between strings a JSON text holds only punctuation, numbers and literals: a secret
        // there means this is not JSON after all.
        if has_keyword(gap_start, i) && !redactor.find(&text[gap_start..i]).is_empty() {
            return None;
        }
        let end = string_end(bytes, i)?;
        gap_start = end + 1;
        let token = &text[i..=end];
        let searched = has_keyword(i, end + 1) || may_hide_a_keyword(token);
        if let Some(clean) = if searched { redact_token(redactor, token)? } else { None } {
            let buf = out.get_or_insert_with(|| String::with_capacity(text.len()));
            buf.push_str(&text[copied..i]);
            buf.push_str(&clean);
            copied = end + 1;
        }
        i = end + 1;
    }
    if has_keyword(gap_start, text.len()) && !redactor.find(&text[gap_start..]).is_empty() {
        return None;
    }
    Some(match out {
        None => Cow::Borrowed(text),
        Some(mut buf) => {
            buf.push_str(&text[copied..]);
            Cow::Owned(buf)
        }
    })
}

/// Whether JSON escapes in `text` could spell a keyword the raw text does not show: `\u0067hp_`
/// is `ghp_`, `:\/\/` is `://`. Such strings are always decoded and searched.
pub(super) fn may_hide_a_keyword(text: &str) -> bool {
    text.contains("\\u") || text.contains("\\/")
}

/// The index of the quote closing the string that opens at `start`.
fn string_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return Some(i),
            _ => i += 1,
        }
    }
    None
}

/// The token re-encoded without its secrets; `Some(None)` when it holds none; `None` when it
/// is not a valid JSON string.
fn redact_token(redactor: &Redactor, token: &str) -> Option<Option<String>> {
    let escaped = token.contains('\\');
    // Without escapes the token's inside is the string itself: most tokens, no decoding.
    let inner = &token[1..token.len() - 1];
    if !escaped {
        return Some(match redactor.redact(inner) {
            Cow::Borrowed(_) => None,
            // Markers need no escaping, and the rest was already valid inside quotes.
            Cow::Owned(clean) => Some(format!("\"{clean}\"")),
        });
    }
    let decoded: String = serde_json::from_str(token).ok()?;
    Some(match redactor.redact(&decoded) {
        Cow::Borrowed(_) => None,
        Cow::Owned(clean) => Some(serde_json::to_string(&clean).ok()?),
    })
}
