//! Which CLI version is installed, and whether it accepts `--sdk-url` on a local host (what
//! the `auto` transport asks).

use std::time::Duration;

/// How long `CLI --version` may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct CliVersion(pub u32, pub u32, pub u32);

impl std::fmt::Display for CliVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}.{}", self.0, self.1, self.2)
    }
}

/// The versions known to accept `--sdk-url ws://127.0.0.1:...`:
/// - 2.1.39 was run against Conduit's bridge (the end-to-end tests pin it);
/// - 2.1.0 and 2.1.68 were read in their published `cli.js`: the flag implies the print and
///   stream-json flags, and nothing checks its host;
/// - 2.1.330 refuses local hosts ("not an approved Anthropic endpoint").
///
/// Versions outside this range, including the unchecked ones between 2.1.68 and 2.1.330,
/// stay on stdio under `auto`.
const ACCEPTS_LOCAL_SDK_URL: (CliVersion, CliVersion) = (CliVersion(2, 1, 0), CliVersion(2, 1, 68));

impl CliVersion {
    /// The leading `X.Y.Z` of `--version`'s output, e.g. `2.1.39 (Claude Code)`.
    pub fn parse(output: &str) -> Option<CliVersion> {
        let word = output.split_whitespace().next()?;
        let mut parts = word.split('.').map(|p| p.parse::<u32>().ok());
        let version = CliVersion(parts.next()??, parts.next()??, parts.next()??);
        parts.next().is_none().then_some(version)
    }

    pub fn accepts_local_sdk_url(self) -> bool {
        (ACCEPTS_LOCAL_SDK_URL.0..=ACCEPTS_LOCAL_SDK_URL.1).contains(&self)
    }
}

/// Runs `cli --version` (with PATH and HOME only of the service's environment) and parses its
/// answer.
pub async fn probe(cli: &str) -> Result<CliVersion, String> {
    let mut cmd = tokio::process::Command::new(cli);
    cmd.env_clear();
    for name in ["PATH", "HOME"] {
        if let Some(value) = std::env::var_os(name) {
            cmd.env(name, value);
        }
    }
    let run = cmd.arg("--version").stdin(std::process::Stdio::null()).kill_on_drop(true).output();
    let output = tokio::time::timeout(PROBE_TIMEOUT, run)
        .await
        .map_err(|_| format!("`{cli} --version` did not answer within {} s", PROBE_TIMEOUT.as_secs()))?
        .map_err(|e| format!("cannot run `{cli} --version`: {e}"))?;
    let text = String::from_utf8_lossy(&output.stdout);
    CliVersion::parse(&text).ok_or_else(|| format!("`{cli} --version` printed no version: {:?}", text.trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_from_the_cli_banner() {
        assert_eq!(CliVersion::parse("2.1.39 (Claude Code)\n"), Some(CliVersion(2, 1, 39)));
        assert_eq!(CliVersion::parse("2.1.330"), Some(CliVersion(2, 1, 330)));
        for bad in ["", "Claude Code 2.1.39", "2.1", "2.1.x", "2.1.39.4", "-1.2.3"] {
            assert_eq!(CliVersion::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn only_versions_known_to_accept_a_local_sdk_url_get_the_bridge() {
        assert!(CliVersion(2, 1, 39).accepts_local_sdk_url());
        assert!(CliVersion(2, 1, 0).accepts_local_sdk_url());
        assert!(CliVersion(2, 1, 68).accepts_local_sdk_url());
        assert!(!CliVersion(2, 1, 69).accepts_local_sdk_url());
        assert!(!CliVersion(2, 1, 330).accepts_local_sdk_url());
        assert!(!CliVersion(2, 0, 64).accepts_local_sdk_url());
        assert!(CliVersion(2, 1, 9) < CliVersion(2, 1, 10), "numeric, not textual, order");
    }
}
