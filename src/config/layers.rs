//! The merged layers: each key's value with where it came from, read as the type a setting
//! wants.

use std::collections::BTreeMap;

use toml::Value;

use super::ConfigError;

/// A value plus where it came from, so errors can say which layer to fix.
pub(super) struct Entry {
    pub(super) value: Value,
    pub(super) origin: String,
}

pub(super) struct Layers {
    pub(super) entries: BTreeMap<String, Entry>,
}

impl Layers {
    pub(super) fn take(&self, key: &str) -> &Entry {
        // Every key has a default: `load` fails early if the compiled-in file lost one.
        &self.entries[key]
    }

    pub(super) fn err(&self, key: &str, problem: impl Into<String>) -> ConfigError {
        ConfigError { key: key.to_string(), origin: self.take(key).origin.clone(), problem: problem.into() }
    }

    pub(super) fn string(&self, key: &str) -> Result<String, ConfigError> {
        match &self.take(key).value {
            Value::String(s) => Ok(s.clone()),
            other => Err(self.err(key, format!("expected a string, got {other}"))),
        }
    }

    pub(super) fn optional_string(&self, key: &str) -> Result<Option<String>, ConfigError> {
        let s = self.string(key)?;
        Ok(if s.is_empty() { None } else { Some(s) })
    }

    /// A TOML table in a file; in the environment, the same as an inline table (`example`).
    pub(super) fn table(&self, key: &str, example: &str) -> Result<toml::Table, ConfigError> {
        match &self.take(key).value {
            Value::Table(t) => Ok(t.clone()),
            Value::String(s) if s.trim().is_empty() => Ok(toml::Table::new()),
            Value::String(s) => toml::from_str::<toml::Table>(&format!("table = {s}"))
                .ok()
                .and_then(|mut t| match t.remove("table") {
                    Some(Value::Table(t)) => Some(t),
                    _ => None,
                })
                .ok_or_else(|| self.err(key, format!("expected a TOML inline table such as {example}"))),
            other => Err(self.err(key, format!("expected a table, got {other}"))),
        }
    }

    pub(super) fn integer(&self, key: &str, min: i64, max: i64) -> Result<i64, ConfigError> {
        let allowed = format!("expected an integer from {min} to {max}");
        let n = match &self.take(key).value {
            Value::Integer(n) => *n,
            Value::String(s) => s.trim().parse::<i64>().map_err(|_| self.err(key, format!("{allowed}, got {s:?}")))?,
            other => return Err(self.err(key, format!("{allowed}, got {other}"))),
        };
        if n < min || n > max {
            return Err(self.err(key, format!("{allowed}, got {n}")));
        }
        Ok(n)
    }

    /// A sum of money from 0 to 1000000 USD, or `""` for none.
    pub(super) fn optional_usd(&self, key: &str) -> Result<Option<f64>, ConfigError> {
        let allowed = "expected an amount in USD from 0 to 1000000, or \"\" for none";
        let usd = match &self.take(key).value {
            Value::String(s) if s.trim().is_empty() => return Ok(None),
            Value::String(s) => s.trim().parse::<f64>().map_err(|_| self.err(key, format!("{allowed}, got {s:?}")))?,
            Value::Integer(n) => *n as f64,
            Value::Float(f) => *f,
            other => return Err(self.err(key, format!("{allowed}, got {other}"))),
        };
        if !(usd.is_finite() && (0.0..=1_000_000.0).contains(&usd)) {
            return Err(self.err(key, format!("{allowed}, got {usd}")));
        }
        Ok(Some(usd))
    }

    /// A TOML boolean; in the environment `1`, `true`, `yes`, `on` or `0`, `false`, `no`,
    /// `off`, `""`.
    pub(super) fn flag(&self, key: &str) -> Result<bool, ConfigError> {
        match &self.take(key).value {
            Value::Boolean(b) => Ok(*b),
            Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
                "1" | "true" | "yes" | "on" => Ok(true),
                "0" | "false" | "no" | "off" | "" => Ok(false),
                other => Err(self.err(key, format!("expected true or false, got {other:?}"))),
            },
            other => Err(self.err(key, format!("expected true or false, got {other}"))),
        }
    }

    pub(super) fn list(&self, key: &str) -> Result<Vec<String>, ConfigError> {
        match &self.take(key).value {
            // The environment carries lists comma separated.
            Value::String(s) => Ok(s.split(',').map(str::trim).filter(|s| !s.is_empty()).map(String::from).collect()),
            Value::Array(items) => items
                .iter()
                .map(|v| match v {
                    Value::String(s) => Ok(s.trim().to_string()),
                    other => Err(self.err(key, format!("expected a list of strings, got {other}"))),
                })
                .collect(),
            other => Err(self.err(key, format!("expected a list of strings, got {other}"))),
        }
    }

    /// A list of TCP ports (1-65535): integers in a file, comma separated in the environment.
    pub(super) fn ports(&self, key: &str) -> Result<Vec<u16>, ConfigError> {
        let bad =
            |v: &dyn std::fmt::Display| self.err(key, format!("expected a list of ports from 1 to 65535, got {v}"));
        let port = |text: &str| text.trim().parse::<u16>().ok().filter(|p| *p > 0);
        match &self.take(key).value {
            Value::String(s) => s
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(|s| port(s).ok_or_else(|| bad(&format!("{s:?}"))))
                .collect(),
            Value::Array(items) => items
                .iter()
                .map(|v| match v {
                    Value::Integer(n) => u16::try_from(*n).ok().filter(|p| *p > 0).ok_or_else(|| bad(n)),
                    Value::String(s) => port(s).ok_or_else(|| bad(&format!("{s:?}"))),
                    other => Err(bad(other)),
                })
                .collect(),
            other => Err(bad(other)),
        }
    }
}
