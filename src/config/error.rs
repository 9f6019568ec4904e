//! The one error loading settings can end in.

use std::fmt;

/// One bad setting. `Display` is the single line printed at startup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub key: String,
    /// Where the value came from: an environment variable, a file, or the defaults.
    pub origin: String,
    pub problem: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid setting `{}` (from {}): {}", self.key, self.origin, self.problem)
    }
}

impl std::error::Error for ConfigError {}
