//! Making a new worktree ready: the project's `workspace_copy` files copied in from the project
//! folder (what git does not carry: `.env`, local configs), then its `setup_script` run with
//! bash in the worktree (in the session's sandbox when it has one), each line of its output
//! handed to the caller as it comes, under a time limit.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;
use tokio::sync::mpsc;

use crate::domain::workspace::is_literal;
use crate::sandbox::Fence;

/// Entries a glob walk looks at, at most (a huge folder must not stall a launch).
const MAX_WALK_ENTRIES: usize = 200_000;
/// Lines of setup output streamed, at most; the rest is only counted.
pub const MAX_STREAMED_LINES: usize = 5_000;
/// Bytes of a line streamed, at most.
const MAX_LINE_BYTES: usize = 4 * 1024;
/// The output's tail kept for the error message of a failed setup.
const TAIL_BYTES: usize = 8 * 1024;

/// Copies what `patterns` name from `from` (the project folder) into `to` (the worktree).
/// Blocking. Answers the relative paths copied.
pub fn copy_into(from: &Path, to: &Path, patterns: &[String]) -> Result<Vec<String>, String> {
    let mut copied = Vec::new();
    let mut globs = globset::GlobSetBuilder::new();
    let mut depth = Some(0usize);
    let mut any_glob = false;
    for pattern in patterns {
        if is_literal(pattern) {
            let source = from.join(pattern);
            if std::fs::symlink_metadata(&source).is_ok() {
                copy_path(&source, &to.join(pattern)).map_err(|e| format!("cannot copy {pattern}: {e}"))?;
                copied.push(pattern.clone());
            }
            continue;
        }
        let glob = globset::GlobBuilder::new(pattern)
            .literal_separator(true)
            .build()
            .map_err(|e| format!("`workspace_copy` entry {pattern:?}: {e}"))?;
        globs.add(glob);
        any_glob = true;
        // `**` may match at any depth; otherwise no deeper than the pattern's own parts.
        depth = match depth {
            Some(d) if !pattern.contains("**") => Some(d.max(pattern.split('/').count())),
            _ => None,
        };
    }
    if !any_glob {
        return Ok(copied);
    }
    let set = globs.build().map_err(|e| e.to_string())?;
    let mut stack = vec![(from.to_path_buf(), 1usize)];
    let mut seen = 0usize;
    while let Some((dir, level)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            seen += 1;
            if seen > MAX_WALK_ENTRIES {
                return Err(format!(
                    "the project folder has more than {MAX_WALK_ENTRIES} entries to look through for `workspace_copy` globs; name the files literally"
                ));
            }
            let path = entry.path();
            let Ok(relative) = path.strip_prefix(from) else { continue };
            if relative == Path::new(".git") {
                continue;
            }
            let Ok(kind) = entry.file_type() else { continue };
            if set.is_match(relative) {
                copy_path(&path, &to.join(relative)).map_err(|e| format!("cannot copy {}: {e}", relative.display()))?;
                copied.push(relative.to_string_lossy().into_owned());
            } else if kind.is_dir() && depth.is_none_or(|d| level < d) {
                stack.push((path, level + 1));
            }
        }
    }
    Ok(copied)
}

/// Copies a file, a symlink (as a symlink) or a folder (recursively), making parents.
fn copy_path(source: &Path, target: &Path) -> std::io::Result<()> {
    if let Some(parent) = target.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let meta = std::fs::symlink_metadata(source)?;
    if meta.file_type().is_symlink() {
        let link = std::fs::read_link(source)?;
        let _ = std::fs::remove_file(target);
        std::os::unix::fs::symlink(link, target)
    } else if meta.is_dir() {
        std::fs::create_dir_all(target)?;
        for entry in std::fs::read_dir(source)?.flatten() {
            copy_path(&entry.path(), &target.join(entry.file_name()))?;
        }
        Ok(())
    } else {
        std::fs::copy(source, target).map(drop)
    }
}

/// One line of setup output.
#[derive(Debug, Clone)]
pub struct OutputLine {
    /// `stdout` or `stderr`.
    pub stream: &'static str,
    pub line: String,
}

/// Why a setup script failed: a sentence and the tail of its output.
#[derive(Debug, Clone)]
pub struct SetupFailure {
    pub reason: String,
    pub tail: String,
}

impl std::fmt::Display for SetupFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.tail.is_empty() {
            write!(f, "{}", self.reason)
        } else {
            write!(f, "{}; its output ended with:\n{}", self.reason, self.tail)
        }
    }
}

/// Runs `script` with `bash -c` in `folder` (inside `fence` when given, with `env` as its whole
/// environment), handing each output
/// line to `lines` as it comes (the first [`MAX_STREAMED_LINES`]). A non-zero exit, a signal or
/// the `timeout` is a failure; the script's whole process group is killed on timeout.
pub async fn run_script(
    script: &str,
    folder: &Path,
    (fence, env): (Option<Fence>, Vec<(String, String)>),
    timeout: Duration,
    lines: mpsc::UnboundedSender<OutputLine>,
) -> Result<(), SetupFailure> {
    let fail = |reason: String| SetupFailure { reason, tail: String::new() };
    let fence = match fence {
        Some(mut fence) => {
            let prepared = tokio::task::spawn_blocking(move || fence.prepare("bash").map(|()| fence)).await;
            Some(prepared.map_err(|e| fail(format!("the setup was interrupted: {e}")))?.map_err(fail)?)
        }
        None => None,
    };
    let args = vec!["-c".to_string(), script.to_string()];
    let (program, args) = match &fence {
        Some(fence) => fence.command_line("bash", args, None),
        None => ("bash".to_string(), args),
    };
    let mut cmd = Command::new(&program);
    // Nothing of the service's own environment: `env` (the project's guest environment) is the
    // whole of it, with the worktree's path.
    cmd.args(args)
        .current_dir(folder)
        .env_clear()
        .envs(env)
        .env("CONDUIT_WORKSPACE", folder)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let (mut child, _listed) = crate::process::own::spawn(&mut cmd)
        .map_err(|e| fail(format!("cannot start the setup script with bash: {e}")))?;
    let pgid = child.id().map(|p| p as i32);
    let (tx, mut rx) = mpsc::unbounded_channel::<OutputLine>();
    for (stream, pipe) in [
        ("stdout", child.stdout.take().map(|p| Box::new(p) as Box<dyn tokio::io::AsyncRead + Unpin + Send>)),
        ("stderr", child.stderr.take().map(|p| Box::new(p) as Box<dyn tokio::io::AsyncRead + Unpin + Send>)),
    ] {
        let (Some(pipe), tx) = (pipe, tx.clone()) else { continue };
        tokio::spawn(async move {
            let mut reader = BufReader::new(pipe).lines();
            while let Ok(Some(line)) = reader.next_line().await {
                if tx.send(OutputLine { stream, line }).is_err() {
                    break;
                }
            }
        });
    }
    drop(tx);
    let mut tail: VecDeque<String> = VecDeque::new();
    let mut tail_bytes = 0usize;
    let mut streamed = 0usize;
    let pump = async {
        while let Some(mut out) = rx.recv().await {
            out.line = crate::error::bounded(&out.line, MAX_LINE_BYTES).into_owned();
            tail_bytes += out.line.len() + 1;
            tail.push_back(out.line.clone());
            while tail_bytes > TAIL_BYTES {
                match tail.pop_front() {
                    Some(old) => tail_bytes -= old.len() + 1,
                    None => break,
                }
            }
            streamed += 1;
            if streamed <= MAX_STREAMED_LINES {
                let _ = lines.send(out);
            }
        }
        child.wait().await
    };
    let finished = tokio::time::timeout(timeout, pump).await;
    let tail_text = || tail.iter().cloned().collect::<Vec<_>>().join("\n");
    match finished {
        Ok(Ok(status)) if status.success() => Ok(()),
        Ok(Ok(status)) => {
            let reason = match status.code() {
                Some(code) => format!("the setup script failed (exit {code})"),
                None => "the setup script was killed by a signal".to_string(),
            };
            Err(SetupFailure { reason, tail: tail_text() })
        }
        Ok(Err(e)) => Err(fail(format!("waiting for the setup script failed: {e}"))),
        Err(_) => {
            if let Some(pgid) = pgid {
                // SAFETY: signalling the process group the script leads (its own, made at spawn).
                unsafe { libc::kill(-pgid, libc::SIGKILL) };
            }
            let reason =
                format!("the setup script did not finish within {} ms (setup_timeout_ms)", timeout.as_millis());
            Err(SetupFailure { reason, tail: tail_text() })
        }
    }
}

/// Where the worktree of session `id` goes.
pub fn worktree_path(workspaces: &Path, id: &str) -> PathBuf {
    workspaces.join(id)
}

#[cfg(test)]
mod tests {
    use super::copy_into;

    #[test]
    fn copies_literal_paths_and_globs_but_never_git() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (from, to) = (dir.path().join("from"), dir.path().join("to"));
        std::fs::create_dir_all(from.join("config/deep")).expect("dirs");
        std::fs::create_dir_all(from.join(".git")).expect("git");
        std::fs::create_dir_all(&to).expect("to");
        for (path, text) in [
            (".env", "A=1"),
            ("config/app.local.json", "{}"),
            ("config/deep/x.local.json", "{}"),
            (".git/config", "x"),
            ("other.txt", "no"),
        ] {
            std::fs::write(from.join(path), text).expect("write");
        }
        let patterns = vec![".env".to_string(), "config/*.local.json".to_string(), "missing".to_string()];
        let mut copied = copy_into(&from, &to, &patterns).expect("copied");
        copied.sort();
        assert_eq!(copied, vec![".env", "config/app.local.json"]);
        assert_eq!(std::fs::read_to_string(to.join(".env")).expect("env"), "A=1");
        assert!(!to.join("config/deep/x.local.json").exists(), "`*` does not cross folders");
        assert!(!to.join("other.txt").exists() && !to.join(".git").exists());
        let copied = copy_into(&from, &to, &["**/*.local.json".to_string()]).expect("deep");
        assert_eq!(copied.len(), 2, "{copied:?}");
    }
}
