//! What this machine offers for sandboxing, probed once at startup: whether bubblewrap starts
//! a sandbox here (installed is not enough: a container may refuse it namespaces), its version,
//! and the Landlock ABI for `strict` mode's network limit.

use std::process::Stdio;

use serde::Serialize;
use utoipa::ToSchema;

/// Landlock's network rules arrived with ABI 4 (Linux 6.7).
pub const LANDLOCK_NET_ABI: i32 = 4;

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
}

impl SandboxSupport {
    /// Runs `bwrap --version` and a trivial sandbox. Blocking: call it on the blocking pool.
    pub fn probe(bwrap: &str) -> SandboxSupport {
        let resolved = crate::process::executable::resolve(bwrap);
        let bwrap_path =
            resolved.as_ref().map(|p| p.to_string_lossy().into_owned()).unwrap_or_else(|| bwrap.to_string());
        let landlock_abi = super::netlock::landlock_abi();
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
        // The smallest sandbox a CLI gets: a read-only root, its own /dev, /proc and pid space.
        let trial = std::process::Command::new(&path)
            .args(["--ro-bind", "/", "/", "--dev", "/dev", "--unshare-pid", "--proc", "/proc", "--", "true"])
            .stdin(Stdio::null())
            .output();
        match trial {
            Ok(out) if out.status.success() => SandboxSupport {
                mechanism: "bubblewrap",
                available: true,
                bwrap_path,
                version: Some(version),
                problem: None,
                landlock_abi,
            },
            Ok(out) => missing(format!("bubblewrap cannot start a sandbox here: {}", tail(&out.stderr))),
            Err(e) => missing(format!("cannot run {}: {e}", path.display())),
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
        }
    }

    /// Whether `strict` mode's network limit can be enforced.
    pub fn limits_network(&self) -> bool {
        self.landlock_abi >= LANDLOCK_NET_ABI
    }
}

fn tail(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let line = text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("no output");
    line.chars().take(300).collect()
}
