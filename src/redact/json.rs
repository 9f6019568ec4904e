//! Redacting inside a JSON text's strings without parsing the document: each string token is
//! decoded (so a PEM key's `\n` escapes, a `\/` or a `\u0041` read as the text they stand for),
//! redacted, and written back escaped only when it changed. Everything else (keys' order,
//! numbers, spacing) stays byte for byte. Works on JSON lines too.

use std::borrow::Cow;

use super::{KeywordHits, Redactor};

/// `None` when `text` is not made of well-formed JSON strings (an unterminated one, a bad
/// escape): the caller falls back to plain text. `hits` are the rules' keywords in `text`: a
/// string or gap without one holds no secret and is not searched again, and one with some runs
/// only their rules. Keywords hold no quote, so each lies wholly inside one string or one gap.
pub(super) fn redact_strings<'a>(redactor: &Redactor, text: &'a str, hits: &KeywordHits) -> Option<Cow<'a, str>> {
    let bytes = text.as_bytes();
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut i = 0;
    let mut gap_start = 0;
    while let Some(quote) = memchr::memchr(b'"', &bytes[i..]) {
        i += quote;
        // Between strings a JSON text holds only punctuation, numbers and literals: a secret
        // there means this is not JSON after all.
        if gap_holds_a_secret(redactor, hits, text, gap_start, i) {
            return None;
        }
        let (end, escaped) = string_end(bytes, i)?;
        gap_start = end + 1;
        let token = &text[i..=end];
        let wanted = hits.rules_within(i, end + 1);
        let clean = match escaped {
            Escapes::None if wanted == 0 => None,
            Escapes::None => redact_plain_token(redactor, token, wanted),
            // Escapes may spell a keyword the raw text does not show (`\u0067hp_` is `ghp_`):
            // decoded and searched whatever the prefilter saw.
            Escapes::Hiding => redact_escaped_token(redactor, token)?,
            Escapes::Plain if wanted == 0 => None,
            Escapes::Plain => redact_escaped_token(redactor, token)?,
        };
        if let Some(clean) = clean {
            let buf = out.get_or_insert_with(|| String::with_capacity(text.len()));
            buf.push_str(&text[copied..i]);
            buf.push_str(&clean);
            copied = end + 1;
        }
        i = end + 1;
    }
    if gap_holds_a_secret(redactor, hits, text, gap_start, text.len()) {
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

fn gap_holds_a_secret(redactor: &Redactor, hits: &KeywordHits, text: &str, from: usize, to: usize) -> bool {
    let wanted = hits.rules_within(from, to);
    wanted != 0 && !redactor.find_among(&text[from..to], wanted).is_empty()
}

/// What escapes a JSON string holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Escapes {
    None,
    /// Only escapes that cannot be part of a keyword (`\n`, `\"`, ...).
    Plain,
    /// `\u` or `\/`: see [`may_hide_a_keyword`].
    Hiding,
}

/// The index of the quote closing the string that opens at `start`, and the escapes inside.
fn string_end(bytes: &[u8], start: usize) -> Option<(usize, Escapes)> {
    let mut escapes = Escapes::None;
    let mut i = start + 1;
    // `?`: an escape as the text's last byte leaves nothing to close the string.
    while let Some(special) = memchr::memchr2(b'\\', b'"', bytes.get(i..)?) {
        i += special;
        if bytes[i] == b'"' {
            return Some((i, escapes));
        }
        escapes = match bytes.get(i + 1) {
            Some(b'u' | b'/') => Escapes::Hiding,
            _ if escapes == Escapes::Hiding => Escapes::Hiding,
            _ => Escapes::Plain,
        };
        i += 2;
    }
    None
}

/// An unescaped token re-encoded without the secrets of the rules in `wanted`; `None` when it
/// holds none. Its inside is the string itself: no decoding.
fn redact_plain_token(redactor: &Redactor, token: &str, wanted: u64) -> Option<String> {
    match redactor.redact_among(&token[1..token.len() - 1], wanted) {
        Cow::Borrowed(_) => None,
        // Markers need no escaping, and the rest was already valid inside quotes.
        Cow::Owned(clean) => Some(format!("\"{clean}\"")),
    }
}

/// An escaped token decoded, redacted with every rule and re-encoded; `Some(None)` when it
/// holds no secret; `None` when it is not a valid JSON string.
fn redact_escaped_token(redactor: &Redactor, token: &str) -> Option<Option<String>> {
    let decoded: String = serde_json::from_str(token).ok()?;
    Some(match redactor.redact(&decoded) {
        Cow::Borrowed(_) => None,
        Cow::Owned(clean) => Some(serde_json::to_string(&clean).ok()?),
    })
}
