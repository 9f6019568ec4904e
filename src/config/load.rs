//! Reading the layers in order: compiled-in defaults, an optional file, the environment.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use toml::Value;

use super::layers::{Entry, Layers};
use super::{ConfigError, Settings};

/// The defaults, compiled in so the binary runs from any folder.
pub const DEFAULT_TOML: &str = include_str!("../../config/default.toml");

/// Environment variable naming an extra TOML file layered over the defaults.
pub const CONFIG_FILE_ENV: &str = "CONDUIT_CONFIG";

/// Environment variable for a key: `CONDUIT_<KEY>`, except the two logging keys.
pub fn env_name(key: &str) -> String {
    match key {
        "log_level" => "LOG_LEVEL".to_string(),
        "log_format" => "LOG_FORMAT".to_string(),
        _ => format!("CONDUIT_{}", key.to_ascii_uppercase()),
    }
}

fn parse_toml(text: &str, origin: &str) -> Result<toml::Table, ConfigError> {
    text.parse::<toml::Table>().map_err(|e| ConfigError {
        key: "(file)".to_string(),
        origin: origin.to_string(),
        problem: format!("not valid TOML: {}", e.message()),
    })
}

impl Settings {
    /// Defaults, then `file` (if any), then the process environment.
    pub fn load(file: Option<&Path>) -> Result<Settings, ConfigError> {
        let env: BTreeMap<String, String> = std::env::vars().collect();
        Self::load_from(file, &env)
    }

    /// Same as [`Settings::load`] with an explicit environment, for tests.
    pub fn load_from(file: Option<&Path>, env: &BTreeMap<String, String>) -> Result<Settings, ConfigError> {
        let defaults = parse_toml(DEFAULT_TOML, "compiled-in defaults")?;
        let known: Vec<String> = defaults.keys().cloned().collect();
        let mut entries: BTreeMap<String, Entry> = defaults
            .into_iter()
            .map(|(k, value)| (k, Entry { value, origin: "config/default.toml".to_string() }))
            .collect();

        let file = file
            .map(Path::to_path_buf)
            .or_else(|| env.get(CONFIG_FILE_ENV).filter(|s| !s.is_empty()).map(PathBuf::from));
        if let Some(path) = file.clone() {
            let origin = path.display().to_string();
            let text = std::fs::read_to_string(&path).map_err(|e| ConfigError {
                key: "(file)".to_string(),
                origin: origin.clone(),
                problem: format!("cannot read the config file: {e}"),
            })?;
            for (key, value) in parse_toml(&text, &origin)? {
                if !known.contains(&key) {
                    return Err(ConfigError {
                        key,
                        origin,
                        problem: format!("unknown key; allowed keys: {}", known.join(", ")),
                    });
                }
                entries.insert(key, Entry { value, origin: origin.clone() });
            }
        }

        for key in &known {
            let var = env_name(key);
            if let Some(value) = env.get(&var) {
                entries.insert(
                    key.clone(),
                    Entry { value: Value::String(value.clone()), origin: format!("environment {var}") },
                );
            }
        }

        let mut settings = Self::from_layers(&Layers { entries }, env.get("HOME").map(String::as_str))?;
        settings.environment.inherited = std::sync::Arc::new(crate::sandbox::environment::Inherited::new(env));
        settings.config_file = file;
        Ok(settings)
    }
}
