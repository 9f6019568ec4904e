//! Finding secrets in text and replacing each with `[REDACTED:<kind>]`.
//!
//! Rules are regexes modelled on gitleaks' (see [`rules`]). Most text holds no secret, so a
//! prefilter runs first: one Aho-Corasick pass over the text for every rule's keywords (a
//! `github-token` needs `ghp_`, ...); only the rules whose keywords appear run their regex.
//! Text with no keyword is returned borrowed, without a copy.
//!
//! No crate on crates.io offers such rules as a maintained library (the scanners that have them,
//! gitleaks, trufflehog, nosey parker, are programs), so the rules are data here and the engine
//! is the `regex` and `aho-corasick` crates.

use std::borrow::Cow;
use std::ops::Range;
use std::sync::OnceLock;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use regex::Regex;

mod json;
mod rules;
#[cfg(test)]
mod tests;

/// What every redaction starts with; a span holding it is already redacted.
pub const MARKER: &str = "[REDACTED:";

/// A secret found: its kind and where it is (bytes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub kind: &'static str,
    pub range: Range<usize>,
}

struct Compiled {
    id: &'static str,
    regex: Regex,
    group: usize,
    min_entropy: f32,
    placeholders: bool,
}

pub struct Redactor {
    rules: Vec<Compiled>,
    prefilter: AhoCorasick,
    /// For each prefilter pattern, the rule it belongs to.
    keyword_rule: Vec<usize>,
}

impl Redactor {
    /// The rule set every part of Conduit uses, built once.
    pub fn standard() -> &'static Redactor {
        static STANDARD: OnceLock<Redactor> = OnceLock::new();
        STANDARD.get_or_init(|| Redactor::build(rules::RULES))
    }

    fn build(table: &[rules::Rule]) -> Redactor {
        // Rule sets are bit sets of a `u64`.
        assert!(table.len() <= 64, "more than 64 secret rules");
        let mut rules = Vec::with_capacity(table.len());
        let mut keywords = Vec::new();
        let mut keyword_rule = Vec::new();
        for (index, rule) in table.iter().enumerate() {
            // The rules are constants, checked by the tests: a bad one is a build defect.
            let regex = Regex::new(rule.regex).unwrap_or_else(|e| panic!("secret rule {}: {e}", rule.id));
            rules.push(Compiled {
                id: rule.id,
                regex,
                group: rule.group,
                min_entropy: rule.min_entropy,
                placeholders: rule.placeholders,
            });
            for keyword in rule.keywords {
                keywords.push(*keyword);
                keyword_rule.push(index);
            }
        }
        let prefilter = AhoCorasickBuilder::new()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::Standard)
            .build(&keywords)
            .unwrap_or_else(|e| panic!("secret rule keywords: {e}"));
        Redactor { rules, prefilter, keyword_rule }
    }

    /// The rules whose keywords appear in `text`, as a bit set (there are fewer than 64).
    fn candidates(&self, text: &str) -> u64 {
        let mut wanted = 0u64;
        for hit in self.prefilter.find_overlapping_iter(text) {
            wanted |= 1 << self.keyword_rule[hit.pattern().as_usize()];
        }
        wanted
    }

    /// Every keyword in `text`: one prefilter pass that a JSON text's strings and gaps then
    /// consult, rather than each running its own.
    fn keyword_hits(&self, text: &str) -> KeywordHits {
        let mut hits: Vec<(usize, u8)> = self
            .prefilter
            .find_overlapping_iter(text)
            .map(|hit| (hit.start(), self.keyword_rule[hit.pattern().as_usize()] as u8))
            .collect();
        hits.sort_unstable();
        KeywordHits(hits)
    }

    /// Every secret in `text`, in order, without overlaps.
    pub fn find(&self, text: &str) -> Vec<Finding> {
        self.find_among(text, self.candidates(text))
    }

    /// Every secret in `text` of the rules in `wanted` (a bit set of rule indexes).
    fn find_among(&self, text: &str, wanted: u64) -> Vec<Finding> {
        if wanted == 0 {
            return Vec::new();
        }
        let mut found = Vec::new();
        for (index, rule) in self.rules.iter().enumerate() {
            if wanted & (1 << index) == 0 {
                continue;
            }
            for caps in rule.regex.captures_iter(text) {
                let Some(secret) = caps.get(rule.group) else { continue };
                if is_secret(rule, secret.as_str()) {
                    found.push((index, Finding { kind: rule.id, range: secret.range() }));
                }
            }
        }
        // Earlier start first; at the same start the more specific rule (lower index) wins.
        found.sort_by_key(|(index, f)| (f.range.start, *index));
        let mut merged: Vec<Finding> = Vec::with_capacity(found.len());
        for (_, finding) in found {
            match merged.last_mut() {
                Some(last) if finding.range.start < last.range.end => {
                    last.range.end = last.range.end.max(finding.range.end);
                }
                _ => merged.push(finding),
            }
        }
        merged
    }

    /// `text` with each secret replaced by `[REDACTED:<kind>]`; borrowed when it holds none.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        self.redact_among(text, self.candidates(text))
    }

    /// [`Redactor::redact`] with only the rules in `wanted`.
    fn redact_among<'a>(&self, text: &'a str, wanted: u64) -> Cow<'a, str> {
        let found = self.find_among(text, wanted);
        if found.is_empty() {
            return Cow::Borrowed(text);
        }
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        for Finding { kind, range } in found {
            out.push_str(&text[at..range.start]);
            out.push_str(MARKER);
            out.push_str(kind);
            out.push(']');
            at = range.end;
        }
        out.push_str(&text[at..]);
        Cow::Owned(out)
    }

    /// A JSON document's text (or JSON lines) with the secrets inside its strings replaced; it
    /// stays valid JSON. Text that is not JSON is redacted as plain text (markers need no
    /// escaping, so valid stays valid).
    pub fn redact_json_text<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let hits = self.keyword_hits(text);
        if hits.0.is_empty() && !json::may_hide_a_keyword(text) {
            return Cow::Borrowed(text);
        }
        match json::redact_strings(self, text, &hits) {
            Some(redacted) => redacted,
            None => self.redact(text),
        }
    }

    /// Every string of a JSON value redacted in place; returns how many secrets went.
    pub fn redact_json(&self, value: &mut serde_json::Value) -> usize {
        use serde_json::Value;
        match value {
            Value::String(s) => {
                let n = self.find(s).len();
                if n > 0 {
                    *s = self.redact(s).into_owned();
                }
                n
            }
            Value::Array(items) => items.iter_mut().map(|v| self.redact_json(v)).sum(),
            Value::Object(map) => map.values_mut().map(|v| self.redact_json(v)).sum(),
            _ => 0,
        }
    }
}

/// Where the rules' keywords start in a text, with the rule of each, sorted by start.
struct KeywordHits(Vec<(usize, u8)>);

impl KeywordHits {
    /// The rules with a keyword starting in `from..to`, as a bit set.
    fn rules_within(&self, from: usize, to: usize) -> u64 {
        let first = self.0.partition_point(|&(at, _)| at < from);
        self.0[first..].iter().take_while(|&&(at, _)| at < to).fold(0, |wanted, &(_, rule)| wanted | 1 << rule)
    }
}

/// Whether a rule's match is a secret: not already redacted, random enough, not a placeholder.
fn is_secret(rule: &Compiled, value: &str) -> bool {
    if value.contains(MARKER) {
        return false;
    }
    if rule.min_entropy > 0.0 && entropy(value) < rule.min_entropy {
        return false;
    }
    if rule.placeholders && is_placeholder(value) {
        return false;
    }
    // A generic assignment's value must look like a key, not a word or a name.
    if rule.id == "generic-secret" {
        let digits = value.bytes().any(|b| b.is_ascii_digit());
        let letters = value.bytes().any(|b| b.is_ascii_alphabetic());
        return digits && letters;
    }
    true
}

fn is_placeholder(value: &str) -> bool {
    const WORDS: &[&str] = &[
        "example",
        "placeholder",
        "your_",
        "your-",
        "yourkey",
        "xxxx",
        "****",
        "changeme",
        "redacted",
        "<",
        ">",
        "${",
        "{{",
        "%(",
        "process.env",
        "os.environ",
        "getenv",
        "dummy",
        "sample",
        "1234567",
    ];
    const WHOLE: &[&str] = &["pass", "password", "passwd", "secret", "token", "pwd", "null", "none", "undefined"];
    let lower = value.to_ascii_lowercase();
    WORDS.iter().any(|w| lower.contains(w)) || WHOLE.contains(&lower.as_str()) || value.starts_with('$')
}

/// Shannon entropy in bits per character.
pub fn entropy(value: &str) -> f32 {
    let mut counts = [0u32; 256];
    let mut total = 0u32;
    for b in value.bytes() {
        counts[b as usize] += 1;
        total += 1;
    }
    if total == 0 {
        return 0.0;
    }
    let total = total as f32;
    counts.iter().filter(|c| **c > 0).map(|c| *c as f32 / total).map(|p| -p * p.log2()).sum()
}
