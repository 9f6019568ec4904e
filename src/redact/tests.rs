use std::borrow::Cow;

use super::{entropy, Redactor, MARKER};

/// Characters that look random, from `seed` (the samples are built at run time: this file
/// holds no secret a scanner would flag).
fn noise(seed: u64, len: usize, alphabet: &str) -> String {
    let chars: Vec<char> = alphabet.chars().collect();
    let mut x = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            chars[(x % chars.len() as u64) as usize]
        })
        .collect()
}

const ALNUM: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const B32: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
const HEX: &str = "0123456789abcdef";

/// (kind, text holding one secret, the secret).
fn samples() -> Vec<(&'static str, String, String)> {
    let pem_line = noise(20, 64, ALNUM);
    let pem =
        ["-----BEGIN ", "RSA PRIVATE KEY-----\n", &pem_line, "\n", &pem_line, "\n-----END ", "RSA PRIVATE KEY-----"]
            .concat();
    let s = |parts: &[&str]| parts.concat();
    vec![
        ("aws-access-key", s(&["id = ", "AKIA", &noise(1, 16, B32)]), s(&["AKIA", &noise(1, 16, B32)])),
        ("github-token", s(&["token ", "ghp_", &noise(2, 36, ALNUM)]), s(&["ghp_", &noise(2, 36, ALNUM)])),
        (
            "github-fine-grained-token",
            s(&["github_pat_", &noise(3, 82, ALNUM)]),
            s(&["github_pat_", &noise(3, 82, ALNUM)]),
        ),
        ("gitlab-token", s(&["glpat-", &noise(4, 20, ALNUM)]), s(&["glpat-", &noise(4, 20, ALNUM)])),
        ("slack-token", s(&["xoxb-", &noise(5, 30, ALNUM)]), s(&["xoxb-", &noise(5, 30, ALNUM)])),
        (
            "slack-webhook-url",
            s(&["https://hooks.slack.com/services/", &noise(6, 44, ALNUM)]),
            s(&["https://hooks.slack.com/services/", &noise(6, 44, ALNUM)]),
        ),
        ("npm-token", s(&["_authToken=", "npm_", &noise(7, 36, ALNUM)]), s(&["npm_", &noise(7, 36, ALNUM)])),
        (
            "conduit-token",
            s(&["Authorization: Bearer ", "cdt_", &noise(30, 64, HEX)]),
            s(&["cdt_", &noise(30, 64, HEX)]),
        ),
        (
            "anthropic-api-key",
            s(&["key: ", "sk-ant-api03-", &noise(8, 93, ALNUM), "AA"]),
            s(&["sk-ant-api03-", &noise(8, 93, ALNUM), "AA"]),
        ),
        (
            "openai-api-key",
            s(&["sk-proj-", &noise(9, 60, ALNUM), "T3BlbkFJ", &noise(10, 60, ALNUM)]),
            s(&["sk-proj-", &noise(9, 60, ALNUM), "T3BlbkFJ", &noise(10, 60, ALNUM)]),
        ),
        (
            "huggingface-token",
            s(&["hf_", &noise(11, 34, "abcdefghijklmnopqrstuvwxyz")]),
            s(&["hf_", &noise(11, 34, "abcdefghijklmnopqrstuvwxyz")]),
        ),
        (
            "sendgrid-api-key",
            s(&["SG.", &noise(12, 22, ALNUM), ".", &noise(13, 43, ALNUM)]),
            s(&["SG.", &noise(12, 22, ALNUM), ".", &noise(13, 43, ALNUM)]),
        ),
        ("gcp-api-key", s(&["AIza", &noise(14, 35, ALNUM)]), s(&["AIza", &noise(14, 35, ALNUM)])),
        ("stripe-key", s(&["sk_live_", &noise(15, 24, ALNUM)]), s(&["sk_live_", &noise(15, 24, ALNUM)])),
        ("digitalocean-token", s(&["dop_v1_", &noise(16, 64, HEX)]), s(&["dop_v1_", &noise(16, 64, HEX)])),
        (
            "jwt",
            s(&["eyJhbGciOiJIUzI1NiJ9", ".eyJzdWIiOiJ", &noise(17, 30, ALNUM), ".", &noise(18, 43, ALNUM)]),
            s(&["eyJhbGciOiJIUzI1NiJ9", ".eyJzdWIiOiJ", &noise(17, 30, ALNUM), ".", &noise(18, 43, ALNUM)]),
        ),
        ("bearer-token", s(&["Authorization: Bearer ", &noise(19, 40, ALNUM)]), noise(19, 40, ALNUM)),
        ("url-credentials", s(&["postgres://admin:", &noise(21, 18, ALNUM), "@db:5432/app"]), noise(21, 18, ALNUM)),
        ("generic-secret", s(&["client_secret = \"", &noise(22, 32, ALNUM), "\""]), noise(22, 32, ALNUM)),
        ("private-key", pem.clone(), pem_line),
    ]
}

#[test]
fn every_kind_is_found_and_replaced_by_its_marker_keeping_the_rest() {
    let redactor = Redactor::standard();
    for (kind, text, secret) in samples() {
        let clean = redactor.redact(&text);
        assert!(!clean.contains(&secret), "{kind}: {clean}");
        assert!(clean.contains(&format!("{MARKER}{kind}]")), "{kind} named: {clean}");
    }
    let url = redactor.redact("postgres://admin:Zq8vN2rT5wX1@db.internal:5432/app");
    assert_eq!(url, "postgres://admin:[REDACTED:url-credentials]@db.internal:5432/app");
}

#[test]
fn every_kind_is_found_in_a_json_text_holding_them_all() {
    // One text, each secret in its own string and all of them together in one more: each
    // string runs only the rules whose keywords it holds, and must still find its own.
    let redactor = Redactor::standard();
    let samples = samples();
    let texts: Vec<String> = samples.iter().map(|(_, text, _)| text.clone()).collect();
    let all = texts.join("\n");
    let line = serde_json::json!({"type": "tool_result", "parts": texts, "all": all}).to_string();
    let clean = redactor.redact_json_text(&line);
    for (kind, _, secret) in &samples {
        assert!(!clean.contains(secret.as_str()), "{kind}: {clean}");
        assert!(clean.matches(&format!("{MARKER}{kind}]")).count() >= 2, "{kind} in both places: {clean}");
    }
    assert!(serde_json::from_str::<serde_json::Value>(&clean).is_ok(), "still JSON: {clean}");
}

#[test]
fn ordinary_transcript_text_is_left_alone_and_borrowed() {
    let redactor = Redactor::standard();
    let ordinary = [
        "session 1b4e28ba-2fa1-11d2-883f-0016d3cca427 started",
        "commit 9fceb02d0ae598e95dc970b74767f19372d61af8",
        "let token = getToken(apiKey);",
        "password: string;",
        "API_KEY=YOUR_API_KEY",
        "export TOKEN=${TOKEN}",
        "const key = process.env.OPENAI_API_KEY;",
        "secret = xxxxxxxxxxxxxxxx",
        "Authorization: Bearer <token>",
        "api_version = 2023-06-01",
        "src/actors/session/record.rs:42: the key is stored in the map",
        "postgres://user:pass@localhost/db",
        "https://example.com/path?q=1",
    ];
    for text in ordinary {
        assert!(matches!(redactor.redact(text), Cow::Borrowed(_)), "left alone: {text}: {:?}", redactor.find(text));
    }
}

#[test]
fn redacting_twice_changes_nothing_more() {
    let redactor = Redactor::standard();
    for (kind, text, _) in samples() {
        let once = redactor.redact(&text).into_owned();
        assert!(matches!(redactor.redact(&once), Cow::Borrowed(_)), "{kind}: {once}");
        let json = serde_json::json!({ "text": once }).to_string();
        assert!(matches!(redactor.redact_json_text(&json), Cow::Borrowed(_)), "{kind} in JSON: {json}");
    }
}

#[test]
fn secrets_inside_json_strings_are_found_through_escapes_and_the_json_stays_valid() {
    let redactor = Redactor::standard();
    for (kind, text, secret) in samples() {
        let line = serde_json::json!({
            "type": "user",
            "message": { "content": [{ "type": "tool_result", "content": format!("out:\n{text}\n\"done\"") }] },
            "n": 3
        })
        .to_string();
        let clean = redactor.redact_json_text(&line);
        let parsed: serde_json::Value = serde_json::from_str(&clean).unwrap_or_else(|e| panic!("{kind}: {e}: {clean}"));
        assert!(!clean.contains(&secret), "{kind}: {clean}");
        let content = parsed["message"]["content"][0]["content"].as_str().unwrap_or_default();
        assert!(content.contains(&format!("{MARKER}{kind}]")) && content.ends_with("\"done\""), "{kind}: {content}");
        assert_eq!(parsed["n"], 3);
    }
}

#[test]
fn keywords_spelled_with_json_escapes_are_still_found() {
    let redactor = Redactor::standard();
    let token = "ghp_R8xq2LmV7tZ4nW1pK9sD3fH6jB0cY5aE2uGo";
    // `\u0067` is `g`: the raw text shows no `ghp_`, nor any other keyword.
    let hidden = format!(r#"{{"type":"text","text":"\u0067{}"}}"#, &token[1..]);
    let clean = redactor.redact_json_text(&hidden);
    assert!(clean.contains("[REDACTED:github-token]"), "{clean}");
    // `\/` is `/`: a URL's `://` written as `:\/\/`.
    let url = r#"{"type":"text","text":"db at postgres:\/\/admin:Zq8vN3xR5tL1wK7p@db.internal:5432\/app"}"#;
    let clean = redactor.redact_json_text(url);
    assert!(!clean.contains("Zq8vN3xR5tL1wK7p") && clean.contains(MARKER), "{clean}");
    assert!(serde_json::from_str::<serde_json::Value>(&clean).is_ok(), "still JSON: {clean}");
}

#[test]
fn a_json_text_without_secrets_is_borrowed_and_kept_byte_for_byte() {
    let redactor = Redactor::standard();
    let line =
        r#"{"type":"assistant","message":{"content":[{"type":"text","text":"the api key lives in \"config\""}]}}"#;
    assert!(matches!(redactor.redact_json_text(line), Cow::Borrowed(_)));
}

#[test]
fn text_that_is_not_json_is_redacted_as_text() {
    let redactor = Redactor::standard();
    let github = ["ghp_", &noise(2, 36, ALNUM)].concat();
    for text in
        [format!("{{ unterminated \"string {github}"), format!("{{x}} token {github}"), format!("plain {github}")]
    {
        let clean = redactor.redact_json_text(&text);
        assert!(!clean.contains(&github) && clean.contains("[REDACTED:github-token]"), "{clean}");
    }
}

#[test]
fn redact_json_redacts_every_string_of_a_value() {
    let redactor = Redactor::standard();
    let github = ["ghp_", &noise(2, 36, ALNUM)].concat();
    let mut value = serde_json::json!({"a": [github.clone(), {"b": format!("x {github}")}], "n": 1});
    assert_eq!(redactor.redact_json(&mut value), 2);
    assert!(!value.to_string().contains(&github));
}

#[test]
fn arbitrary_input_never_panics_and_json_stays_json() {
    let redactor = Redactor::standard();
    let pieces =
        ["{", "}", "\"", "\\", "\\u00", "ghp_", "key=", "://a:b@", "-----BEGIN ", "é", "\n", "[REDACTED:", " "];
    let mut x = 7u64;
    for _ in 0..5000 {
        let mut text = String::new();
        for _ in 0..(x % 24) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            text.push_str(pieces[(x % pieces.len() as u64) as usize]);
            if x.is_multiple_of(3) {
                text.push_str(&noise(x, 40, ALNUM));
            }
        }
        let _ = redactor.redact(&text);
        let out = redactor.redact_json_text(&text);
        if serde_json::from_str::<serde_json::Value>(&text).is_ok() {
            assert!(serde_json::from_str::<serde_json::Value>(&out).is_ok(), "{text:?} -> {out:?}");
        }
    }
}

#[test]
fn entropy_tells_keys_from_words() {
    assert!(entropy("aaaaaaaaaaaa") < 0.1);
    assert!(entropy(&noise(1, 32, ALNUM)) > 4.0);
}

#[test]
fn a_json_line_kept_as_a_string_of_another_json_text_is_redacted_too() {
    // The messages API answers with each stored line as a string: escapes within escapes.
    let redactor = Redactor::standard();
    for (kind, text, secret) in samples() {
        let line = serde_json::json!({ "type": "assistant", "text": text }).to_string();
        let answer = serde_json::json!([{ "id": 1, "content": line }]).to_string();
        let clean = redactor.redact_json_text(&answer);
        assert!(!clean.contains(&secret), "{kind}: {clean}");
        assert!(serde_json::from_str::<serde_json::Value>(&clean).is_ok(), "{kind}: {clean}");
    }
}
