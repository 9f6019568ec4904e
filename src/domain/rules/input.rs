//! The tool input around a decision: an allow rule's changes merged in, secrets kept out of
//! the audit log.

use serde_json::Value;

/// `updated` merged over `input` (top-level keys), for an allow rule's `updated_input`.
pub fn merge_input(input: &Value, updated: &Value) -> Value {
    match (input, updated) {
        (Value::Object(base), Value::Object(over)) => {
            let mut merged = base.clone();
            for (k, v) in over {
                merged.insert(k.clone(), v.clone());
            }
            Value::Object(merged)
        }
        _ => input.clone(),
    }
}

/// The input as stored in the audit log: values under secret-looking keys are replaced.
pub fn redact(input: &Value) -> Value {
    const SECRET_WORDS: [&str; 7] = ["token", "secret", "password", "passwd", "api_key", "apikey", "authorization"];
    match input {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let lower = k.to_ascii_lowercase();
                    if SECRET_WORDS.iter().any(|w| lower.contains(w)) {
                        (k.clone(), Value::String("[redacted]".to_string()))
                    } else {
                        (k.clone(), redact(v))
                    }
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(redact).collect()),
        Value::String(s) => Value::String(redact_assignments(s)),
        other => other.clone(),
    }
}

/// `API_KEY=abc cmd` -> `API_KEY=[redacted] cmd`, for secrets typed into commands.
fn redact_assignments(s: &str) -> String {
    s.split(' ')
        .map(|word| match word.split_once('=') {
            Some((name, value))
                if !value.is_empty()
                    && ["TOKEN", "SECRET", "PASSWORD", "API_KEY", "APIKEY"]
                        .iter()
                        .any(|w| name.to_ascii_uppercase().contains(w)) =>
            {
                format!("{name}=[redacted]")
            }
            _ => word.to_string(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}
