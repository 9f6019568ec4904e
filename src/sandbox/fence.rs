//! What one sandboxed CLI may touch, and the bubblewrap command line that fences it in.
//!
//! Inside: the whole file system read-only (`--ro-bind / /`), a private `/tmp`, its own `/dev`,
//! `/proc` and pid space (it cannot see or signal the service or other sessions), no
//! capabilities (root inside cannot remount anything writable). Writable: the project folder and
//! the CLI's own state. Hidden: the secret folders (an empty folder or file in their place).
//! Read-only again inside the writable folder: the paths of `Write`/`Edit` deny rules that name
//! a file or folder literally. `strict` adds the network limit of [`super::netlock`].
//!
//! Building a fence is cheap; [`Fence::prepare`] looks at the file system (which paths exist,
//! folders or files) and must run on the blocking pool.

use std::path::{Path, PathBuf};

use super::support::SandboxSupport;
use crate::config::SandboxSettings;
use crate::domain::sandbox::SandboxMode;

/// Where an agent CLI keeps its own state: writable inside the sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StatePath {
    /// Created when missing.
    Folder(PathBuf),
    /// Created (empty JSON object) when missing: only an existing file can be bound.
    File(PathBuf),
    /// Shown read-only (the service's own configuration for the CLI, which it must not change).
    ReadOnly(PathBuf),
}

/// Why a CLI cannot be started in the sandbox it asks for.
#[derive(Debug, Clone, thiserror::Error)]
pub enum FenceError {
    #[error(
        "the project asks for the `{mode}` sandbox, but {problem}. Conduit never runs a sandboxed CLI unsandboxed: fix that, or set the project's `sandbox` (or the `sandbox` setting) to `off`"
    )]
    Unavailable { mode: SandboxMode, problem: String },
}

/// The fence of one CLI.
#[derive(Debug, Clone)]
pub struct Fence {
    pub mode: SandboxMode,
    bwrap: String,
    folder: PathBuf,
    home: Option<PathBuf>,
    state: Vec<StatePath>,
    hidden: Vec<PathBuf>,
    /// Deny-rule paths to keep read-only inside the writable folders.
    read_only: Vec<PathBuf>,
    /// `strict`: the ports TCP connections may go to (the model API's), and the service's own
    /// executable that applies the limit.
    connect_ports: Vec<u16>,
    shim: Option<PathBuf>,
    /// Set by [`Fence::prepare`]: the hidden paths that exist, each with whether it is a folder.
    existing_hidden: Vec<(PathBuf, bool)>,
    /// Set by [`Fence::prepare`]: the CLI's executable, found the way a shell would. Looked up
    /// outside, so a missing CLI fails the launch as it does unsandboxed (bubblewrap would
    /// start, then exit), and so a CLI under `/tmp` can be shown inside.
    program: Option<PathBuf>,
    /// Set by [`Fence::prepare`]: what the private `/tmp` would hide but the CLI needs (the
    /// folders of its program and of the shim, its HOME), shown again read-only.
    shown: Vec<PathBuf>,
    /// Caches the model's builds need (`sandbox_writable`), writable where they exist.
    writable: Vec<PathBuf>,
    /// A git worktree's repository folder (`.git`), shown read-only (it may be under `/tmp`);
    /// the parts a commit writes are in `state`.
    repository: Option<PathBuf>,
}

impl Fence {
    /// The fence for `mode`, or `None` for `off`; an error when the machine cannot provide it.
    pub fn plan(
        mode: SandboxMode,
        support: &SandboxSupport,
        settings: &SandboxSettings,
        folder: &str,
        home: Option<&Path>,
        state: Vec<StatePath>,
    ) -> Result<Option<Fence>, FenceError> {
        if !mode.is_on() {
            return Ok(None);
        }
        if !support.available {
            let problem = support.problem.clone().unwrap_or_else(|| "bubblewrap is not available".to_string());
            return Err(FenceError::Unavailable { mode, problem });
        }
        let (connect_ports, shim) = if mode == SandboxMode::Strict {
            if !support.limits_network() {
                let problem = format!(
                    "its network limit needs Landlock ABI 4 (Linux 6.7+) and this kernel offers ABI {}",
                    support.landlock_abi
                );
                return Err(FenceError::Unavailable { mode, problem });
            }
            let shim = std::env::current_exe().map_err(|e| FenceError::Unavailable {
                mode,
                problem: format!("the service's executable is unknown: {e}"),
            })?;
            (model_api_ports(), Some(shim))
        } else {
            (Vec::new(), None)
        };
        Ok(Some(Fence {
            mode,
            bwrap: support.bwrap_path.clone(),
            folder: PathBuf::from(folder),
            home: home.map(Path::to_path_buf),
            state,
            hidden: settings.hidden.clone(),
            read_only: Vec::new(),
            connect_ports,
            shim,
            existing_hidden: Vec::new(),
            program: None,
            shown: Vec::new(),
            writable: settings.writable.clone(),
            repository: None,
        }))
    }

    /// The folder the fenced process works in (writable).
    pub fn folder(&self) -> &Path {
        &self.folder
    }

    /// Lets a CLI working in a git worktree commit on its branch: the repository's `.git`
    /// (`common`) is shown read-only, and writable only where a commit writes: its objects,
    /// refs and logs, and the worktree's own admin folder (`own`: index, HEAD). Its config and
    /// hooks stay read-only, so nothing the model does changes how git behaves in the user's
    /// own checkout.
    /// Sharing the same repository again changes nothing.
    pub fn share_repository(&mut self, common: &Path, own: &Path) {
        if self.repository.as_deref() == Some(common) {
            return;
        }
        self.repository = Some(common.to_path_buf());
        for part in ["objects", "refs", "logs"] {
            self.state.push(StatePath::Folder(common.join(part)));
        }
        self.state.push(StatePath::Folder(own.to_path_buf()));
    }

    /// Keeps read-only what `Write`/`Edit` deny rules name literally (their `rule_content`):
    /// an absolute path with no glob characters, or such a folder followed by `/**`. Other
    /// patterns are left to the rules.
    pub fn keep_read_only(&mut self, denied: &[String]) {
        self.read_only = denied.iter().filter_map(|content| literal_path(content)).collect();
        self.read_only.sort();
        self.read_only.dedup();
    }

    /// Looks at the file system: finds `program`, creates the CLI's missing state, notes which
    /// hidden paths exist. Blocking.
    pub fn prepare(&mut self, program: &str) -> Result<(), String> {
        let found = crate::process::executable::resolve(program)
            .ok_or_else(|| format!("cannot start the CLI {program:?}: no such executable file"))?;
        self.program = Some(found);
        for state in &self.state {
            match state {
                StatePath::Folder(dir) => std::fs::create_dir_all(dir)
                    .map_err(|e| format!("cannot create the CLI's state folder {}: {e}", dir.display()))?,
                StatePath::File(file) if !file.exists() => {
                    if let Some(parent) = file.parent() {
                        let _ = std::fs::create_dir_all(parent);
                    }
                    std::fs::write(file, "{}")
                        .map_err(|e| format!("cannot create the CLI's state file {}: {e}", file.display()))?
                }
                StatePath::File(_) | StatePath::ReadOnly(_) => {}
            }
        }
        self.existing_hidden = self
            .hidden
            .iter()
            .filter_map(|p| std::fs::symlink_metadata(p).ok().map(|m| (p.clone(), m.is_dir())))
            .collect();
        self.read_only.retain(|p| p.exists());
        let tmp = Path::new("/tmp");
        let folder_of = |p: &Path| std::fs::canonicalize(p).ok().and_then(|c| c.parent().map(Path::to_path_buf));
        let needed =
            [self.program.as_deref().and_then(folder_of), self.shim.as_deref().and_then(folder_of), self.home.clone()];
        self.shown = needed.into_iter().flatten().filter(|p| p.starts_with(tmp) && p != tmp).collect();
        self.shown.sort();
        self.shown.dedup();
        Ok(())
    }

    /// The command line that runs `program args` inside the fence. `bridge_port`: the
    /// session's WebSocket bridge, which `strict` must let it reach.
    pub fn command_line(&self, program: &str, args: Vec<String>, bridge_port: Option<u16>) -> (String, Vec<String>) {
        let program =
            self.program.as_deref().map(|p| p.to_string_lossy().into_owned()).unwrap_or_else(|| program.to_string());
        let program = program.as_str();
        let mut a: Vec<String> = Vec::with_capacity(40 + args.len());
        let mut push = |items: &[&str]| a.extend(items.iter().map(|s| s.to_string()));
        push(&["--ro-bind", "/", "/", "--dev", "/dev", "--unshare-pid", "--proc", "/proc", "--unshare-ipc"]);
        push(&["--tmpfs", "/tmp", "--cap-drop", "ALL"]);
        let path = |p: &Path| p.to_string_lossy().into_owned();
        // Tools that honour TMPDIR must find it: the service's may be a folder the private
        // /tmp does not have, or one outside it that is read-only here.
        push(&["--setenv", "TMPDIR", "/tmp"]);
        for p in &self.shown {
            a.extend(["--ro-bind".to_string(), path(p), path(p)]);
        }
        a.extend(["--bind".to_string(), path(&self.folder), path(&self.folder)]);
        if let Some(repository) = &self.repository {
            a.extend(["--ro-bind-try".to_string(), path(repository), path(repository)]);
        }
        let state = self.state.iter().filter_map(|s| match s {
            StatePath::Folder(p) | StatePath::File(p) => Some(p),
            StatePath::ReadOnly(_) => None,
        });
        for p in state.chain(&self.writable) {
            a.extend(["--bind-try".to_string(), path(p), path(p)]);
        }
        for s in &self.state {
            if let StatePath::ReadOnly(p) = s {
                a.extend(["--ro-bind-try".to_string(), path(p), path(p)]);
            }
        }
        for p in &self.read_only {
            a.extend(["--ro-bind-try".to_string(), path(p), path(p)]);
        }
        for (p, is_dir) in &self.existing_hidden {
            if *is_dir {
                a.extend(["--tmpfs".to_string(), path(p), "--remount-ro".to_string(), path(p)]);
            } else {
                a.extend(["--ro-bind".to_string(), "/dev/null".to_string(), path(p)]);
            }
        }
        a.extend(["--chdir".to_string(), path(&self.folder), "--".to_string()]);
        if let Some(shim) = &self.shim {
            a.extend([path(shim), "sandbox-exec".to_string()]);
            let mut ports = self.connect_ports.clone();
            ports.extend(bridge_port);
            for port in ports {
                a.extend(["--tcp-port".to_string(), port.to_string()]);
            }
            a.push("--".to_string());
        }
        a.push(program.to_string());
        a.extend(args);
        (self.bwrap.clone(), a)
    }
}

/// `/srv/app/.env` -> itself, `/srv/app/secrets/**` -> `/srv/app/secrets`; globs -> `None`.
fn literal_path(content: &str) -> Option<PathBuf> {
    let content = content.trim();
    let path = content.strip_suffix("/**").unwrap_or(content);
    let literal = path.starts_with('/') && !path.contains(['*', '?', '[', ']', '{', '}', '\\']);
    let normalized = crate::domain::folders::normalize_lexically(Path::new(path));
    (literal && normalized != Path::new("/")).then_some(normalized)
}

/// The model API's port, from `ANTHROPIC_BASE_URL` (as the CLI will read it), 443 by default.
fn model_api_ports() -> Vec<u16> {
    let url = std::env::var("ANTHROPIC_BASE_URL").unwrap_or_default();
    vec![port_of(&url).unwrap_or(443)]
}

/// `http://127.0.0.1:8080/v1` -> 8080, `http://host` -> 80, `https://host` -> 443; other schemes
/// are not a model API.
fn port_of(url: &str) -> Option<u16> {
    let url = reqwest::Url::parse(url.trim()).ok()?;
    matches!(url.scheme(), "http" | "https").then(|| url.port_or_known_default()).flatten()
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::{literal_path, port_of};

    #[test]
    fn only_literal_deny_paths_become_read_only_binds() {
        let p = |s: &str| literal_path(s);
        assert_eq!(p("/srv/app/.env"), Some(PathBuf::from("/srv/app/.env")));
        assert_eq!(p("/srv/app/secrets/**"), Some(PathBuf::from("/srv/app/secrets")));
        assert_eq!(p(" /srv/app/../app/x "), Some(PathBuf::from("/srv/app/x")));
        for glob in ["/srv/*.env", "**/.env", "/srv/app/[ab]", "relative/path", "", "/", "/**", "/a/{b,c}"] {
            assert_eq!(p(glob), None, "{glob:?}");
        }
    }

    #[test]
    fn the_model_api_port_is_read_from_its_url() {
        assert_eq!(port_of("http://127.0.0.1:8080/v1"), Some(8080));
        assert_eq!(port_of("https://api.anthropic.com"), Some(443));
        assert_eq!(port_of("http://example.com/x:9"), Some(80));
        assert_eq!(port_of("http://[::1]:5000"), Some(5000));
        assert_eq!(port_of("http://user:pw@host:81/"), Some(81));
        assert_eq!(port_of(""), None);
        assert_eq!(port_of("ftp://host"), None);
    }

    fn support(available: bool, landlock_abi: i32) -> super::SandboxSupport {
        super::SandboxSupport {
            mechanism: "bubblewrap",
            available,
            bwrap_path: "/usr/bin/bwrap".into(),
            version: None,
            problem: (!available).then(|| "bubblewrap (\"bwrap\") is not installed".to_string()),
            landlock_abi,
        }
    }

    fn settings(hidden: Vec<PathBuf>) -> crate::config::SandboxSettings {
        crate::config::SandboxSettings {
            default_mode: super::SandboxMode::Workspace,
            bwrap_path: "bwrap".into(),
            hidden,
            writable: vec![],
        }
    }

    #[test]
    fn the_command_line_fences_the_cli_in() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (home, folder) = (dir.path().join("home"), dir.path().join("project"));
        std::fs::create_dir_all(home.join(".ssh")).expect("ssh");
        std::fs::write(home.join(".netrc"), "secret").expect("netrc");
        std::fs::create_dir_all(&folder).expect("folder");
        let state =
            vec![super::StatePath::Folder(home.join(".claude")), super::StatePath::File(home.join(".claude.json"))];
        let hidden = vec![home.join(".ssh"), home.join(".netrc"), home.join(".aws")];
        let mut fence = super::Fence::plan(
            super::SandboxMode::Workspace,
            &support(true, 0),
            &settings(hidden),
            &folder.to_string_lossy(),
            Some(&home),
            state,
        )
        .expect("available")
        .expect("on");
        fence.prepare("/bin/sh").expect("prepare");
        assert!(home.join(".claude").is_dir() && home.join(".claude.json").is_file(), "the CLI's state is created");
        let (program, args) = fence.command_line("/bin/sh", vec!["-c".into(), "true".into()], None);
        assert_eq!(program, "/usr/bin/bwrap");
        let line = args.join(" ");
        let (h, f) = (home.display(), folder.display());
        for expected in [
            "--ro-bind / / --dev /dev --unshare-pid --proc /proc".to_string(),
            "--tmpfs /tmp --cap-drop ALL".to_string(),
            format!("--bind {f} {f}"),
            format!("--bind-try {h}/.claude {h}/.claude"),
            format!("--tmpfs {h}/.ssh --remount-ro {h}/.ssh"),
            format!("--ro-bind /dev/null {h}/.netrc"),
            format!("--chdir {f} -- /bin/sh -c true"),
        ] {
            assert!(line.contains(&expected), "{expected:?} in {line}");
        }
        assert!(!line.contains(".aws"), "a hidden path that does not exist is skipped: {line}");
        assert!(!line.contains("sandbox-exec"), "workspace leaves the network alone");
    }

    #[test]
    fn strict_limits_tcp_and_a_missing_mechanism_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let folder = dir.path().to_string_lossy().into_owned();
        let strict = super::SandboxMode::Strict;
        let mut fence = super::Fence::plan(strict, &support(true, 6), &settings(vec![]), &folder, None, vec![])
            .expect("available")
            .expect("on");
        fence.prepare("/bin/sh").expect("prepare");
        let (_, args) = fence.command_line("/bin/sh", vec![], Some(9005));
        let line = args.join(" ");
        assert!(line.contains("sandbox-exec --tcp-port"), "{line}");
        assert!(line.contains("--tcp-port 9005 -- /bin/sh"), "the bridge port is allowed: {line}");

        let refused = super::Fence::plan(strict, &support(true, 3), &settings(vec![]), &folder, None, vec![]);
        assert!(refused.is_err_and(|e| e.to_string().contains("Landlock ABI 4")));
        let refused = super::Fence::plan(
            super::SandboxMode::Workspace,
            &support(false, 6),
            &settings(vec![]),
            &folder,
            None,
            vec![],
        );
        let message = refused.expect_err("refused").to_string();
        assert!(message.contains("not installed") && message.contains("`off`"), "{message}");
        let off =
            super::Fence::plan(super::SandboxMode::Off, &support(false, 0), &settings(vec![]), &folder, None, vec![]);
        assert!(off.is_ok_and(|f| f.is_none()), "off needs nothing");

        let mut missing = super::Fence::plan(
            super::SandboxMode::Workspace,
            &support(true, 0),
            &settings(vec![]),
            &folder,
            None,
            vec![],
        )
        .expect("available")
        .expect("on");
        assert!(missing.prepare("/nonexistent/claude").is_err_and(|e| e.contains("/nonexistent/claude")));
    }
}
