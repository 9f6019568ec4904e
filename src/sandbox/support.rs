//! What this machine offers for sandboxing, probed once at startup: whether bubblewrap starts
//! a sandbox here (installed is not enough: a container may refuse it namespaces), its version,
//! whether a sandbox gets a network of its own (pasta attached to a network namespace, tried
//! for real), and the Landlock ABI for `strict` mode's port limit.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde::Serialize;
use utoipa::ToSchema;

use super::network::NetworkPlan;
use crate::config::SandboxSettings;
use crate::domain::sandbox::SandboxNetwork;

/// Landlock's network rules arrived with ABI 4 (Linux 6.7).
pub const LANDLOCK_NET_ABI: i32 = 4;

/// How long the network trial may take.
const NETWORK_TRIAL: Duration = Duration::from_secs(15);

/// The probe's findings.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SandboxSupport {
    /// `bubblewrap`.
    pub mechanism: &'static str,
    /// True when a sandbox could be started here.
    pub available: bool,
    /// The executable that was probed, resolved on PATH when found.
    pub bwrap_path: String,
    /// `bubblewrap 0.8.0`, when available.
    pub version: Option<String>,
    /// Why no sandbox can be started, when none can.
    pub problem: Option<String>,
    /// The kernel's Landlock ABI version (0: none); `strict` needs 4 or more.
    pub landlock_abi: i32,
    /// A sandbox's network.
    pub network: NetworkSupport,
}

/// A sandbox's network, as the `sandbox_network` setting asks and this machine allows.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct NetworkSupport {
    /// `pasta` (a network namespace of its own, `sandbox_network = "isolated"`) or `host` (the
    /// machine's network, loopback and the service's port included).
    pub mechanism: &'static str,
    /// Whether sandboxes get it (always, for `host`).
    pub available: bool,
    /// The pasta executable, resolved on PATH when found.
    pub pasta_path: Option<String>,
    /// Why sandboxes cannot get it (a sandboxed launch is then refused).
    pub problem: Option<String>,
    /// What every isolated sandbox starts from (DNS to a resolver on loopback).
    #[serde(skip)]
    pub plan: Option<NetworkPlan>,
}

impl SandboxSupport {
    /// Runs `bwrap --version` and a trivial sandbox, then (for an isolated network) a trivial
    /// sandbox with its own network through `launcher` (`conduit sandbox-net`). Blocking: call
    /// it on the blocking pool.
    pub fn probe(settings: &SandboxSettings, launcher: &Path) -> SandboxSupport {
        let bwrap = &settings.bwrap_path;
        let resolved = crate::process::executable::resolve(bwrap);
        let bwrap_path =
            resolved.as_ref().map(|p| p.to_string_lossy().into_owned()).unwrap_or_else(|| bwrap.to_string());
        let missing = |problem: String| SandboxSupport::unavailable(&bwrap_path, problem);
        let Some(path) = resolved else {
            return missing(format!(
                "bubblewrap ({bwrap:?}) is not installed: install Debian's `bubblewrap` package, or set `bwrap_path`"
            ));
        };
        let version = match std::process::Command::new(&path).arg("--version").stdin(Stdio::null()).output() {
            Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout).trim().to_string(),
            Ok(out) => return missing(format!("`{} --version` failed: {}", path.display(), tail(&out.stderr))),
            Err(e) => return missing(format!("cannot run {}: {e}", path.display())),
        };
        // The smallest sandbox a process gets: a read-only root, its own /dev, /proc and pid space.
        const TRIAL: [&str; 9] = ["--ro-bind", "/", "/", "--dev", "/dev", "--unshare-pid", "--proc", "/proc", "--"];
        let trial = std::process::Command::new(&path).args(TRIAL).arg("true").stdin(Stdio::null()).output();
        match trial {
            Ok(out) if out.status.success() => {}
            Ok(out) => return missing(format!("bubblewrap cannot start a sandbox here: {}", tail(&out.stderr))),
            Err(e) => return missing(format!("cannot run {}: {e}", path.display())),
        }
        let network = match settings.network {
            SandboxNetwork::Host => NetworkSupport::host(),
            SandboxNetwork::Isolated => probe_network(&settings.pasta_path, launcher, &bwrap_path, &TRIAL),
        };
        SandboxSupport {
            mechanism: "bubblewrap",
            available: true,
            bwrap_path,
            version: Some(version),
            problem: None,
            landlock_abi: super::netlock::landlock_abi(),
            network,
        }
    }

    /// No sandbox, for `problem`.
    pub fn unavailable(bwrap: &str, problem: String) -> SandboxSupport {
        SandboxSupport {
            mechanism: "bubblewrap",
            available: false,
            bwrap_path: bwrap.to_string(),
            version: None,
            problem: Some(problem),
            landlock_abi: super::netlock::landlock_abi(),
            network: NetworkSupport {
                mechanism: "pasta",
                available: false,
                pasta_path: None,
                problem: Some("no sandbox can be started".to_string()),
                plan: None,
            },
        }
    }

    /// Whether `strict` mode's network limit can be enforced.
    pub fn limits_network(&self) -> bool {
        self.landlock_abi >= LANDLOCK_NET_ABI
    }

    /// Whether a sandbox can be started with the network the settings ask for.
    pub fn usable(&self) -> bool {
        self.available && self.network.available
    }
}

impl NetworkSupport {
    fn host() -> NetworkSupport {
        NetworkSupport { mechanism: "host", available: true, pasta_path: None, problem: None, plan: None }
    }

    fn missing(pasta_path: Option<String>, problem: String) -> NetworkSupport {
        NetworkSupport { mechanism: "pasta", available: false, pasta_path, problem: Some(problem), plan: None }
    }
}

/// Finds pasta and starts one sandbox with a network of its own, the way every sandbox will be.
fn probe_network(pasta: &str, launcher: &Path, bwrap: &str, trial: &[&str]) -> NetworkSupport {
    let Some(found) = crate::process::executable::resolve(pasta) else {
        return NetworkSupport::missing(
            None,
            format!(
                "pasta ({pasta:?}), which gives each sandbox a network of its own, is not installed: install Debian's `passt` package, or set `pasta_path` (or `sandbox_network = \"host\"`, which leaves the service's port reachable from every session)"
            ),
        );
    };
    let shown = found.to_string_lossy().into_owned();
    let dns = std::fs::read_to_string("/etc/resolv.conf").is_ok_and(|t| super::network::resolver_on_loopback(&t));
    let plan = NetworkPlan::new(found, dns, launcher.to_path_buf());
    let mut args: Vec<String> = trial.iter().map(|s| s.to_string()).collect();
    args.push("true".to_string());
    let (program, args) = plan.wrap(bwrap, args, None, None);
    let started = Instant::now();
    // Its own process group, as every sandbox gets: a failing trial kills that group only.
    let child = std::process::Command::new(&program)
        .arg0("conduit")
        .args(&args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(child) => child,
        Err(e) => return NetworkSupport::missing(Some(shown), format!("cannot run {program:?} sandbox-net: {e}")),
    };
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Ok(status),
            Ok(None) if started.elapsed() > NETWORK_TRIAL => {
                let _ = child.kill();
                let _ = child.wait();
                break Err(format!(
                    "a sandbox with its own network did not start within {} s",
                    NETWORK_TRIAL.as_secs()
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => break Err(format!("the network trial could not be waited for: {e}")),
        }
    };
    let mut stderr = Vec::new();
    if let Some(mut pipe) = child.stderr.take() {
        let _ = std::io::Read::read_to_end(&mut pipe, &mut stderr);
    }
    match status {
        Ok(status) if status.success() => NetworkSupport {
            mechanism: "pasta",
            available: true,
            pasta_path: Some(shown),
            problem: None,
            plan: Some(plan),
        },
        Ok(status) => NetworkSupport::missing(
            Some(shown),
            format!("a sandbox cannot get a network of its own here ({status}): {}", tail(&stderr)),
        ),
        Err(e) => NetworkSupport::missing(Some(shown), e),
    }
}

fn tail(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let line = text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("no output");
    line.chars().take(300).collect()
}
