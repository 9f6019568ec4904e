//! Which shell a terminal runs: the one a client names (an absolute path to an existing
//! executable file), or the service user's (`$SHELL`, then the passwd entry, then `/bin/bash`).
//! Both look at the file system: call them on the blocking pool.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

const FALLBACK: &str = "/bin/bash";

/// `path` when it names an executable file by its absolute path, or the sentence why not.
pub fn check(path: &str) -> Result<String, String> {
    if path.is_empty() || path.contains('\0') || path.len() > 4096 {
        return Err("`shell` must be an absolute path of at most 4096 bytes".to_string());
    }
    if !Path::new(path).is_absolute() {
        return Err(format!("`shell` must be an absolute path, got {path:?}"));
    }
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() && m.permissions().mode() & 0o111 != 0 => Ok(path.to_string()),
        Ok(_) => Err(format!("`shell` {path:?} is not an executable file")),
        Err(e) => Err(format!("`shell` {path:?} cannot be used: {e}")),
    }
}

/// The service user's shell.
pub fn default_shell() -> String {
    let from_env = std::env::var("SHELL").ok();
    [from_env, passwd_shell()].into_iter().flatten().find(|s| check(s).is_ok()).unwrap_or_else(|| FALLBACK.to_string())
}

/// The login shell of the passwd entry of the service's user.
fn passwd_shell() -> Option<String> {
    let mut buf = vec![0 as libc::c_char; 16 * 1024];
    // SAFETY: an all-zero passwd is a valid value for getpwuid_r to fill in.
    let mut entry: libc::passwd = unsafe { std::mem::zeroed() };
    let mut found: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: every pointer is valid for the call, and `buf` outlives every use of `entry`.
    let rc = unsafe { libc::getpwuid_r(libc::getuid(), &mut entry, buf.as_mut_ptr(), buf.len(), &mut found) };
    if rc != 0 || found.is_null() || entry.pw_shell.is_null() {
        return None;
    }
    // SAFETY: getpwuid_r succeeded, so pw_shell points at a NUL-terminated string inside `buf`.
    let shell = unsafe { std::ffi::CStr::from_ptr(entry.pw_shell) };
    shell.to_str().ok().map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::{check, default_shell};

    #[test]
    fn only_absolute_paths_of_executable_files_are_shells() {
        assert_eq!(check("/bin/sh"), Ok("/bin/sh".to_string()));
        let dir = tempfile::tempdir().expect("tempdir");
        let plain = dir.path().join("plain");
        std::fs::write(&plain, "#!/bin/sh\n").expect("write");
        let (plain, folder) = (plain.to_string_lossy().into_owned(), dir.path().to_string_lossy().into_owned());
        for bad in ["sh", "", "/nonexistent/shell", &plain, &folder, "/bin/sh\0x"] {
            assert!(check(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_default_shell_is_an_executable() {
        assert!(check(&default_shell()).is_ok());
    }
}
