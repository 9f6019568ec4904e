//! The `git` program, driven through `tokio::process`: every workspace operation is a git
//! command, so git (2.47 here) does all object, index and ref handling and nothing is written
//! by hand. Chosen over `git2`/`gix`: no C build of libgit2, and the porcelain/plumbing
//! commands (`worktree add`, `merge-tree --write-tree`, `merge`) are exactly git's own
//! behaviour, hooks and all, including for repositories the user also works in by hand.
//!
//! Every command runs with an environment that cannot wander: inherited `GIT_*` variables
//! removed (a `GIT_DIR` or `GIT_INDEX_FILE` of the service's own environment would point the
//! command elsewhere), no terminal prompt, no pager, no editor, messages in English (`LC_ALL=C`)
//! so the few that are read can be, stdin closed, no hooks, and the child killed if its future
//! is dropped.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use tokio::io::AsyncReadExt;
use tokio::process::Command;

/// A git command that could not run or said no.
#[derive(Debug, Clone, thiserror::Error)]
#[error("`git {args}` failed{}: {stderr}", status.map(|s| format!(" (exit {s})")).unwrap_or_default())]
pub struct GitError {
    /// The arguments, for the message.
    pub args: String,
    /// Its exit status; `None` when it could not be started or was killed.
    pub status: Option<i32>,
    /// What git said (bounded).
    pub stderr: String,
}

/// What a finished git command printed, whatever its exit status.
#[derive(Debug)]
pub struct Output {
    pub status: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    /// `stdout` was cut at the byte cap the command was run with.
    pub truncated: bool,
}

/// A git command in a folder: `Git::new(dir).args([...]).run()`.
pub struct Git {
    dir: PathBuf,
    args: Vec<String>,
    env: Vec<(String, String)>,
    /// Read at most this much of stdout (the rest is discarded and the command killed).
    cap: Option<usize>,
}

/// stderr kept in errors, at most.
const MAX_STDERR: usize = 8 * 1024;

impl Git {
    pub fn new(dir: impl AsRef<Path>) -> Git {
        Git { dir: dir.as_ref().to_path_buf(), args: Vec::new(), env: Vec::new(), cap: None }
    }

    pub fn args<I, S>(mut self, args: I) -> Git
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    pub fn env(mut self, key: &str, value: impl Into<String>) -> Git {
        self.env.push((key.to_string(), value.into()));
        self
    }

    /// Keeps at most `bytes` of stdout.
    pub fn cap(mut self, bytes: usize) -> Git {
        self.cap = Some(bytes);
        self
    }

    fn command(&self) -> Command {
        let mut cmd = Command::new("git");
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("GIT_") {
                cmd.env_remove(&key);
            }
        }
        cmd.arg("-C")
            .arg(&self.dir)
            .args(["-c", "core.quotepath=off", "-c", "color.ui=false", "--no-pager"])
            // No hook and no fsmonitor program runs on the service's behalf: what a model wrote
            // in a worktree must never run outside its sandbox.
            .args(["-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false"])
            .args(&self.args)
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_PAGER", "cat")
            .env("GIT_EDITOR", "true")
            .env("GIT_MERGE_AUTOEDIT", "no")
            .env("LC_ALL", "C")
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        cmd
    }

    fn describe(&self) -> String {
        crate::domain::validate::clip(&self.args.join(" "), 300).into_owned()
    }

    /// Runs it and answers whatever it printed, success or not; an error only when it could
    /// not be run at all.
    pub async fn output(self) -> Result<Output, GitError> {
        let (mut child, _listed) = crate::process::own::spawn(&mut self.command()).map_err(|e| GitError {
            args: self.describe(),
            status: None,
            stderr: format!("cannot run git: {e}"),
        })?;
        let (mut out, mut err) = (child.stdout.take(), child.stderr.take());
        let cap = self.cap;
        let read_out = async move {
            let mut buf = Vec::new();
            let mut truncated = false;
            if let Some(out) = out.as_mut() {
                match cap {
                    Some(cap) => {
                        let _ = out.take(cap as u64 + 1).read_to_end(&mut buf).await;
                        if buf.len() > cap {
                            truncated = true;
                            buf.truncate(cap);
                        }
                    }
                    None => {
                        let _ = out.read_to_end(&mut buf).await;
                    }
                }
            }
            (buf, truncated)
        };
        let read_err = async move {
            let mut buf = Vec::new();
            if let Some(err) = err.as_mut() {
                let _ = err.read_to_end(&mut buf).await;
            }
            buf
        };
        let ((stdout, truncated), stderr) = tokio::join!(read_out, read_err);
        if truncated {
            // The rest is not wanted: end it rather than wait for it to write everything.
            let _ = child.start_kill();
        }
        let status = child.wait().await.map_err(|e| GitError {
            args: self.describe(),
            status: None,
            stderr: format!("waiting for git failed: {e}"),
        })?;
        let stderr = String::from_utf8_lossy(&stderr);
        Ok(Output {
            status: status.code(),
            stdout: String::from_utf8_lossy(&stdout).into_owned(),
            stderr: crate::error::bounded(stderr.trim(), MAX_STDERR).into_owned(),
            truncated,
        })
    }

    /// Runs it; its stdout when it exits 0 (or was cut at the cap), an error with git's stderr
    /// otherwise.
    pub async fn run(self) -> Result<String, GitError> {
        let args = self.describe();
        let out = self.output().await?;
        if out.status == Some(0) || out.truncated {
            Ok(out.stdout)
        } else {
            Err(GitError { args, status: out.status, stderr: out.stderr })
        }
    }

    /// Runs it; whether it exited 0 (exit 1 is `false`; other failures are errors).
    pub async fn check(self) -> Result<bool, GitError> {
        let args = self.describe();
        let out = self.output().await?;
        match out.status {
            Some(0) => Ok(true),
            Some(1) => Ok(false),
            status => Err(GitError { args, status, stderr: out.stderr }),
        }
    }
}

/// The identity commits are made with when the repository's configuration names none (a
/// service's HOME often has no `.gitconfig`): Conduit's, as environment for the command.
pub async fn identity(repo: &Path) -> Vec<(String, String)> {
    let configured = Git::new(repo).args(["config", "--get", "user.email"]).run().await;
    if configured.is_ok_and(|email| !email.trim().is_empty()) {
        return Vec::new();
    }
    ["GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME"]
        .into_iter()
        .map(|k| (k.to_string(), "Conduit".to_string()))
        .chain(
            ["GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL"]
                .into_iter()
                .map(|k| (k.to_string(), "conduit@localhost".to_string())),
        )
        .collect()
}

/// Applies [`identity`]'s environment to a command.
pub fn with_identity(mut git: Git, identity: &[(String, String)]) -> Git {
    for (k, v) in identity {
        git = git.env(k, v.clone());
    }
    git
}

/// `-z` output split into its fields.
pub fn nul_fields(text: &str) -> impl Iterator<Item = &str> {
    text.split('\0').filter(|s| !s.is_empty())
}
