//! The environment of everything Conduit starts (agent CLIs, exec commands, background
//! processes, terminals, setup scripts): built from an allow-list, never the service's whole
//! environment, so no child sees the service's settings (its token, cluster secret, webhook
//! secret, admin password, database URL) or anything else the service was given for itself.
//! Every spawner clears the environment first and sets exactly this.
//!
//! In order, later ones win:
//! 1. the basics a shell expects, as the service has them: `PATH`, `HOME`, `USER`, `LOGNAME`,
//!    `SHELL`, `LANG`, `LANGUAGE`, `LC_*`, `TERM`, `TZ`, `TMPDIR`; and what reaching a network
//!    may need: the proxy variables (`HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY`, `NO_PROXY`, in
//!    either case) and CA bundles (`SSL_CERT_FILE`, `SSL_CERT_DIR`, `NODE_EXTRA_CA_CERTS`);
//! 2. for an agent CLI, what its kind needs to reach its model ([`model_names`]);
//! 3. the names the `agent_env_passthrough` setting lists (`NAME`, or `PREFIX*`);
//! 4. the project's `env`.
//!
//! What a start sets itself comes on top (a request's `env`, a CLI's own variables, the
//! sandbox's `TMPDIR`, the marker, the session channel's token). No `CONDUIT_*` name ever
//! comes from the four layers: the service's own environment is read without them, and no
//! setting or project may name one.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::domain::agent_kind::AgentKind;
use crate::domain::environment::{is_reserved, ProjectEnv};

/// Names every child gets from the service's environment, where it has them.
const BASICS: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "TERM",
    "TZ",
    "TMPDIR",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
    "no_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "NODE_EXTRA_CA_CERTS",
];

/// Name patterns: an exact name, or a prefix (written `PREFIX*`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NamePattern {
    Exact(String),
    Prefix(String),
}

impl NamePattern {
    fn matches(&self, name: &str) -> bool {
        match self {
            NamePattern::Exact(exact) => name == exact,
            NamePattern::Prefix(prefix) => name.starts_with(prefix.as_str()),
        }
    }

    /// `NAME` or `PREFIX*` (a prefix of at least one character): `[A-Za-z_][A-Za-z0-9_]*`,
    /// never `CONDUIT_`; the error says why not.
    pub fn parse(raw: &str) -> Result<NamePattern, String> {
        let raw = raw.trim();
        let (name, prefix) = match raw.strip_suffix('*') {
            Some(prefix) => (prefix, true),
            None => (raw, false),
        };
        crate::domain::environment::check_name("agent_env_passthrough", name)?;
        // `CONDUIT*` or `CONDU*` would take the reserved names in through the back door.
        if prefix
            && crate::domain::environment::RESERVED_PREFIX.to_ascii_uppercase().starts_with(&name.to_ascii_uppercase())
        {
            return Err(format!("{raw:?} would pass Conduit's own CONDUIT_* variables on"));
        }
        Ok(if prefix { NamePattern::Prefix(name.to_string()) } else { NamePattern::Exact(name.to_string()) })
    }
}

/// What an agent kind needs to reach its model, by name pattern.
pub fn model_names(kind: &AgentKind) -> Vec<NamePattern> {
    let prefix = |p: &str| NamePattern::Prefix(p.to_string());
    let exact = |n: &str| NamePattern::Exact(n.to_string());
    match kind {
        // Claude Code's switches (DISABLE_TELEMETRY, DISABLE_AUTOUPDATER, ...), its
        // config folder and its timeouts are settings of the CLI, not secrets of the service.
        AgentKind::Claude => vec![
            prefix("ANTHROPIC_"),
            prefix("CLAUDE_CODE_"),
            prefix("DISABLE_"),
            exact("CLAUDE_CONFIG_DIR"),
            exact("MAX_THINKING_TOKENS"),
            exact("MAX_MCP_OUTPUT_TOKENS"),
            exact("BASH_DEFAULT_TIMEOUT_MS"),
            exact("BASH_MAX_TIMEOUT_MS"),
            exact("BASH_MAX_OUTPUT_LENGTH"),
            exact("MCP_TIMEOUT"),
            exact("MCP_TOOL_TIMEOUT"),
        ],
        AgentKind::Codex => vec![prefix("OPENAI_"), prefix("CODEX_")],
        AgentKind::Gemini => vec![prefix("GEMINI_"), prefix("GOOGLE_")],
        // An ACP agent's variables are its definition's `env`, given with its launch.
        AgentKind::Acp(_) => Vec::new(),
    }
}

/// The service's own environment when it started, without any `CONDUIT_*` variable: where
/// the names a child may inherit are read from. Shown by name only.
#[derive(Clone, Default)]
pub struct Inherited(BTreeMap<String, String>);

impl Inherited {
    pub fn new(env: &BTreeMap<String, String>) -> Inherited {
        Inherited(env.iter().filter(|(name, _)| !is_reserved(name)).map(|(k, v)| (k.clone(), v.clone())).collect())
    }

    fn matching<'a>(&'a self, patterns: &'a [NamePattern]) -> impl Iterator<Item = (&'a String, &'a String)> + 'a {
        self.0.iter().filter(|(name, _)| patterns.iter().any(|p| p.matches(name)))
    }
}

impl std::fmt::Debug for Inherited {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.0.keys()).finish()
    }
}

/// The service's side of every child's environment: what it inherited, and the
/// `agent_env_passthrough` setting.
#[derive(Debug, Clone, Default)]
pub struct ChildEnvironment {
    pub inherited: Arc<Inherited>,
    pub passthrough: Vec<NamePattern>,
}

impl ChildEnvironment {
    /// The environment of a child of `project`: an agent CLI of `agent`, or a plain command
    /// (exec, background process, terminal, setup script) with `None`.
    pub fn for_child(&self, agent: Option<&AgentKind>, project: &ProjectEnv) -> Vec<(String, String)> {
        let basics: Vec<NamePattern> = BASICS.iter().map(|n| NamePattern::Exact(n.to_string())).collect();
        let mut env: BTreeMap<String, String> = BTreeMap::new();
        let mut take = |pairs: &mut dyn Iterator<Item = (&String, &String)>| {
            for (k, v) in pairs {
                env.insert(k.clone(), v.clone());
            }
        };
        take(
            &mut self.inherited.0.iter().filter(|(name, _)| basics.iter().any(|p| p.matches(name)) || is_locale(name)),
        );
        if let Some(kind) = agent {
            take(&mut self.inherited.matching(&model_names(kind)));
        }
        take(&mut self.inherited.matching(&self.passthrough));
        take(&mut project.vars().iter());
        env.retain(|name, _| !is_reserved(name));
        env.into_iter().collect()
    }
}

/// `LC_ALL`, `LC_CTYPE`, ...
fn is_locale(name: &str) -> bool {
    name.starts_with("LC_")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn service() -> ChildEnvironment {
        let inherited = Inherited::new(&env(&[
            ("PATH", "/usr/bin"),
            ("HOME", "/home/me"),
            ("LC_ALL", "C.UTF-8"),
            ("HTTPS_PROXY", "http://proxy:3128"),
            ("CONDUIT_AUTH_TOKEN", "admin-secret"),
            ("CONDUIT_DATABASE_URL", "postgres://u:pw@db/conduit"),
            ("CONDUIT_WEBHOOK_SECRET", "hook-secret"),
            ("ANTHROPIC_API_KEY", "sk-ant"),
            ("DISABLE_TELEMETRY", "1"),
            ("OPENAI_API_KEY", "sk-openai"),
            ("GEMINI_API_KEY", "gem"),
            ("AWS_SECRET_ACCESS_KEY", "aws"),
            ("RUST_LOG", "warn"),
            ("MY_TOOL_HOME", "/opt/tool"),
        ]));
        let passthrough = vec![NamePattern::parse("RUST_LOG").unwrap(), NamePattern::parse("MY_*").unwrap()];
        ChildEnvironment { inherited: Arc::new(inherited), passthrough }
    }

    fn names(vars: &[(String, String)]) -> Vec<&str> {
        vars.iter().map(|(k, _)| k.as_str()).collect()
    }

    #[test]
    fn a_child_gets_the_basics_its_kind_the_passthrough_and_its_project() {
        let project = ProjectEnv::parse(env(&[("PROJECT_KEY", "p"), ("PATH", "/project/bin")]), &ProjectEnv::default())
            .expect("valid");
        let claude = service().for_child(Some(&AgentKind::Claude), &project);
        assert_eq!(
            names(&claude),
            [
                "ANTHROPIC_API_KEY",
                "DISABLE_TELEMETRY",
                "HOME",
                "HTTPS_PROXY",
                "LC_ALL",
                "MY_TOOL_HOME",
                "PATH",
                "PROJECT_KEY",
                "RUST_LOG"
            ]
        );
        assert!(claude.contains(&("PATH".to_string(), "/project/bin".to_string())), "the project wins");
        let codex = service().for_child(Some(&AgentKind::Codex), &ProjectEnv::default());
        assert!(names(&codex).contains(&"OPENAI_API_KEY") && !names(&codex).contains(&"ANTHROPIC_API_KEY"));
        let gemini = service().for_child(Some(&AgentKind::Gemini), &ProjectEnv::default());
        assert!(names(&gemini).contains(&"GEMINI_API_KEY") && !names(&gemini).contains(&"OPENAI_API_KEY"));
        let command = service().for_child(None, &ProjectEnv::default());
        assert_eq!(names(&command), ["HOME", "HTTPS_PROXY", "LC_ALL", "MY_TOOL_HOME", "PATH", "RUST_LOG"]);
        for vars in [&claude, &codex, &gemini, &command] {
            let text = format!("{vars:?}");
            for secret in ["admin-secret", "pw@db", "hook-secret", "aws"] {
                assert!(!text.contains(secret), "{secret} in {text}");
            }
        }
    }

    #[test]
    fn passthrough_patterns_never_reach_conduits_own_names() {
        assert_eq!(NamePattern::parse("AWS_*"), Ok(NamePattern::Prefix("AWS_".into())));
        assert_eq!(NamePattern::parse(" NO_COLOR "), Ok(NamePattern::Exact("NO_COLOR".into())));
        for bad in ["CONDUIT_AUTH_TOKEN", "CONDUIT_*", "CON*", "C*", "conduit_x", "*", "A-B", ""] {
            assert!(NamePattern::parse(bad).is_err(), "{bad:?}");
        }
        assert!(NamePattern::parse("CA*").is_ok(), "CA is not a prefix of CONDUIT_");
        let printed = format!("{:?}", service().inherited);
        assert!(!printed.contains("sk-ant") && !printed.contains("CONDUIT_"), "{printed}");
    }
}
