//! Environment variables Conduit gives the processes it starts: which names a client may set
//! (for a project, an exec command or a terminal), and a project's own `env` map, stored as it
//! was given and shown with its values redacted, like every other secret.
//!
//! No client may set a `CONDUIT_*` name: those are the service's settings (its token, its
//! cluster secret, its database URL) and the session channel's own variables, which only the
//! service sets (see `sandbox::environment`).

use std::collections::BTreeMap;

use serde::Serialize;

/// The prefix of every name a client may not set.
pub const RESERVED_PREFIX: &str = "CONDUIT_";

/// What a value is shown as wherever a project is shown (its real value is never sent).
pub const REDACTED_VALUE: &str = "[REDACTED:project_env]";

/// The longest value one variable may have.
pub const MAX_VALUE_BYTES: usize = 32 * 1024;

/// The most variables a project's `env` may hold.
pub const MAX_PROJECT_VARIABLES: usize = 100;

/// A name a shell can export, `[A-Za-z_][A-Za-z0-9_]*` (at most 200 bytes), and not one of
/// Conduit's own. `field` names the request field for the error.
pub fn check_name(field: &str, name: &str) -> Result<(), String> {
    let mut bytes = name.bytes();
    let portable = name.len() <= 200
        && bytes.next().is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if !portable {
        return Err(format!("`{field}` names must match [A-Za-z_][A-Za-z0-9_]* (at most 200 bytes), got {name:?}"));
    }
    if is_reserved(name) {
        return Err(format!(
            "`{field}` cannot set {name}: names starting with {RESERVED_PREFIX} are Conduit's own (its settings and the session channel)"
        ));
    }
    Ok(())
}

/// A value: no NUL byte (it could not be passed), at most [`MAX_VALUE_BYTES`].
pub fn check_value(field: &str, name: &str, value: &str) -> Result<(), String> {
    if value.contains('\0') {
        return Err(format!("`{field}.{name}` contains a NUL byte"));
    }
    if value.len() > MAX_VALUE_BYTES {
        return Err(format!("`{field}.{name}` is longer than {MAX_VALUE_BYTES} bytes"));
    }
    Ok(())
}

/// Whether `name` is one of Conduit's own (case-insensitively: the environment is
/// case-sensitive, but a lower-case twin would only confuse).
pub fn is_reserved(name: &str) -> bool {
    name.get(..RESERVED_PREFIX.len()).is_some_and(|p| p.eq_ignore_ascii_case(RESERVED_PREFIX))
}

/// A project's `env`: variables every process of the project gets (its CLIs, exec commands,
/// background processes, terminals, setup scripts), over what the service passes on. Stored as
/// a JSON object; shown with each value replaced by [`REDACTED_VALUE`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProjectEnv {
    vars: BTreeMap<String, String>,
    stored: String,
}

impl ProjectEnv {
    /// Checks every name and value (at most [`MAX_PROJECT_VARIABLES`]). A value that is the
    /// redaction marker keeps what `current` holds for that name (so a project read and sent
    /// back unchanged keeps its secrets); a marker for a name `current` lacks is refused.
    pub fn parse(raw: BTreeMap<String, String>, current: &ProjectEnv) -> Result<ProjectEnv, String> {
        if raw.len() > MAX_PROJECT_VARIABLES {
            return Err(format!("`env` holds at most {MAX_PROJECT_VARIABLES} variables (got {})", raw.len()));
        }
        let mut vars = BTreeMap::new();
        for (name, value) in raw {
            check_name("env", &name)?;
            let value = if value == REDACTED_VALUE {
                current.vars.get(&name).cloned().ok_or_else(|| {
                    format!("`env.{name}` is the redaction marker, but the project has no value for {name} to keep")
                })?
            } else {
                check_value("env", &name, &value)?;
                value
            };
            vars.insert(name, value);
        }
        Ok(ProjectEnv::from_vars(vars))
    }

    fn from_vars(vars: BTreeMap<String, String>) -> ProjectEnv {
        let stored = if vars.is_empty() { String::new() } else { serde_json::to_string(&vars).unwrap_or_default() };
        ProjectEnv { vars, stored }
    }

    /// The map as stored (it was checked before it was stored). Text that is not a JSON object
    /// of strings (written by hand) is read as no variables, never a panic.
    pub fn from_stored(stored: String) -> ProjectEnv {
        let vars: BTreeMap<String, String> = serde_json::from_str(&stored).unwrap_or_default();
        // Defense in depth: a name no client could have set is never passed on.
        let vars = vars.into_iter().filter(|(name, value)| check_name("env", name).is_ok() && !value.contains('\0'));
        ProjectEnv { vars: vars.collect(), stored }
    }

    pub fn as_str(&self) -> &str {
        &self.stored
    }

    /// The variables with their real values: only for the processes they are meant for.
    pub fn vars(&self) -> &BTreeMap<String, String> {
        &self.vars
    }

    pub fn is_empty(&self) -> bool {
        self.vars.is_empty()
    }
}

/// Shown as `{"NAME": "[REDACTED:project_env]"}`: the names, never the values.
impl Serialize for ProjectEnv {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(self.vars.len()))?;
        for name in self.vars.keys() {
            map.serialize_entry(name, REDACTED_VALUE)?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn names_are_portable_and_never_conduits_own() {
        for ok in ["PATH", "_x1", "MY_API_KEY", "conduitish"] {
            assert!(check_name("env", ok).is_ok(), "{ok}");
        }
        for bad in ["", "1X", "A-B", "A B", "A=B", "x\0", &"A".repeat(201)] {
            assert!(check_name("env", bad).is_err(), "{bad:?}");
        }
        for reserved in ["CONDUIT_AUTH_TOKEN", "CONDUIT_SESSION_TOKEN", "conduit_database_url", "Conduit_X"] {
            let e = check_name("env", reserved).expect_err("reserved");
            assert!(e.contains("Conduit's own"), "{e}");
        }
        assert!(check_value("env", "A", "x\0y").is_err());
        assert!(check_value("env", "A", &"v".repeat(MAX_VALUE_BYTES + 1)).is_err());
    }

    #[test]
    fn a_project_env_is_shown_redacted_and_survives_a_round_trip() {
        let env = ProjectEnv::parse(map(&[("API_KEY", "sk-secret"), ("MODE", "fast")]), &ProjectEnv::default())
            .expect("valid");
        let shown = serde_json::to_value(&env).expect("json");
        assert_eq!(shown, serde_json::json!({"API_KEY": REDACTED_VALUE, "MODE": REDACTED_VALUE}));
        assert!(!shown.to_string().contains("sk-secret"));
        assert_eq!(ProjectEnv::from_stored(env.as_str().to_string()), env);
        // Sent back as shown, with one value changed: the other keeps its secret.
        let back = ProjectEnv::parse(map(&[("API_KEY", REDACTED_VALUE), ("MODE", "slow")]), &env).expect("valid");
        assert_eq!(back.vars()["API_KEY"], "sk-secret");
        assert_eq!(back.vars()["MODE"], "slow");
        let unknown = ProjectEnv::parse(map(&[("NEW", REDACTED_VALUE)]), &env);
        assert!(unknown.is_err_and(|e| e.contains("no value for NEW")));
        assert!(ProjectEnv::parse(map(&[("CONDUIT_AUTH_TOKEN", "x")]), &env).is_err());
        let many: BTreeMap<String, String> =
            (0..=MAX_PROJECT_VARIABLES).map(|i| (format!("V{i}"), "x".into())).collect();
        assert!(ProjectEnv::parse(many, &env).is_err());
        assert_eq!(ProjectEnv::from_stored(String::new()), ProjectEnv::default());
        assert!(ProjectEnv::from_stored("not json".into()).is_empty());
        assert!(
            ProjectEnv::from_stored(r#"{"CONDUIT_AUTH_TOKEN":"x"}"#.into()).is_empty(),
            "a hand-written reserved name"
        );
    }
}
