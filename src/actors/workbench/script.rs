//! What bash runs for a command: the command itself, or, in an exec context, the command
//! wrapped so the context's working folder and exported variables are restored before it and
//! saved after it.
//!
//! Why a fresh `bash` per command rather than one long-lived shell per context: each command
//! is then its own process group (and cgroup) that a timeout or a kill ends whole without
//! touching the context; its output ends exactly when it exits (no sentinel to look for in a
//! stream the command controls); a command that kills its own shell, `exec`s something else or
//! reads stdin cannot wedge the context; and nothing is left running between commands. What
//! carries over is what `cd` and `export` change: the folder and the exported environment,
//! saved by an `EXIT` trap (so `exit 3` saves too) as `export -p` and a `cd`, both of which bash
//! itself quotes, and restored exactly (variables `unset` since are unset again). Shell
//! variables that are not exported, functions and options do not carry over, as between two
//! scripts.

use std::path::Path;

/// Options every command's bash starts with: no profile or rc file runs behind its back.
pub const BASH_FLAGS: [&str; 2] = ["--noprofile", "--norc"];

/// Why a command's environment cannot be written into a script.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ScriptError(pub String);

fn quote(text: &str) -> Result<String, ScriptError> {
    shlex::try_quote(text).map(|q| q.into_owned()).map_err(|_| {
        ScriptError(format!("a NUL byte cannot be passed to a shell: {:?}", crate::domain::validate::clip(text, 60)))
    })
}

/// The arguments of `bash` for `command` in a context whose state lives in `state` (the
/// command itself follows as `$1`). `cwd`: a folder to change to first (the request's `cwd`),
/// `env`: variables to export first; both carry over like a `cd` and an `export` would.
/// `marker`: the marker variable, set again after the context's state is restored (the state
/// holds the previous command's).
pub fn in_context(
    state: &Path,
    cwd: Option<&str>,
    env: &[(String, String)],
    marker: (&str, &str),
) -> Result<String, ScriptError> {
    let state = quote(&state.to_string_lossy())?;
    let mut s = String::with_capacity(512);
    s.push_str(&format!("__conduit_state={state}\n"));
    // A saved state replaces the whole exported environment, so what was unset stays unset.
    s.push_str(concat!(
        "if [ -s \"$__conduit_state\" ]; then\n",
        "  for __conduit_n in $(compgen -e); do unset \"$__conduit_n\" 2>/dev/null; done\n",
        "  . \"$__conduit_state\" 2>/dev/null\n",
        "fi\n",
        "unset __conduit_n\n",
    ));
    s.push_str(&format!("export {}={}\n", marker.0, quote(marker.1)?));
    for (name, value) in env {
        s.push_str(&format!("export {name}={}\n", quote(value)?));
    }
    if let Some(cwd) = cwd {
        s.push_str(&format!("cd -- {} || exit 126\n", quote(cwd)?));
    }
    s.push_str(concat!(
        "__conduit_save() { { export -p; printf 'cd -- %q\\n' \"$PWD\"; } > \"$__conduit_state\"; }\n",
        "trap __conduit_save EXIT\n",
        "__conduit_command=$1\n",
        "shift\n",
        "eval \"$__conduit_command\"\n",
    ));
    Ok(s)
}

/// The argv of a command given as words, joined into one command line with shell quoting so
/// the rules see exactly what runs.
pub fn join_argv(argv: &[String]) -> Result<String, ScriptError> {
    shlex::try_join(argv.iter().map(String::as_str))
        .map_err(|_| ScriptError("a NUL byte cannot be passed to a shell".to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `command` in the context held in `dir` the way the service does, without the
    /// service; returns (stdout, status).
    fn run(dir: &Path, command: &str, cwd: Option<&str>, env: &[(String, String)]) -> (String, i32) {
        let script = in_context(&dir.join("state"), cwd, env, ("CONDUIT_TEST_MARKER", "m")).expect("script");
        let out = std::process::Command::new("bash")
            .args(BASH_FLAGS)
            .arg("-c")
            .arg(&script)
            .arg("conduit-exec")
            .arg(command)
            .current_dir(dir)
            .output()
            .expect("bash runs");
        (String::from_utf8_lossy(&out.stdout).into_owned(), out.status.code().unwrap_or(-1))
    }

    #[test]
    fn cd_export_and_unset_carry_over_and_exit_codes_stay() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(dir.path().join("sub dir")).expect("sub");
        let (_, code) = run(dir.path(), "cd 'sub dir' && export A='x y\"z' B=1; exit 3", None, &[]);
        assert_eq!(code, 3, "the command's exit code survives the trap");
        let (out, code) = run(dir.path(), "pwd; printf '%s\\n' \"$A\" \"${B-unset}\"; unset B", None, &[]);
        assert_eq!(code, 0);
        let want = format!("{}\nx y\"z\n1\n", dir.path().join("sub dir").display());
        assert_eq!(out, want);
        let (out, _) =
            run(dir.path(), "echo \"${B-unset} $CONDUIT_TEST_MARKER $C\"", None, &[("C".into(), "c'c".into())]);
        assert_eq!(out, "unset m c'c\n");
        let (out, _) = run(dir.path(), "echo $C; pwd", Some("/"), &[]);
        assert_eq!(out, "c'c\n/\n", "env and cwd of the request carry over like export and cd");
    }

    #[test]
    fn argv_is_joined_with_quoting_and_nul_is_refused() {
        let joined = join_argv(&["printf".into(), "%s\n".into(), "a b".into(), "$(x)".into()]).expect("joins");
        assert_eq!(shlex::split(&joined).expect("splits back"), ["printf", "%s\n", "a b", "$(x)"]);
        assert!(join_argv(&["a\0b".into()]).is_err());
        assert!(in_context(Path::new("/s"), None, &[("A".into(), "\0".into())], ("M", "m")).is_err());
    }
}
