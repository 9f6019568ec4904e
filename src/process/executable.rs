//! Finding an executable by name or path.

/// Finds `cli` the way a shell would: a path is checked as is, a bare name along PATH.
pub fn resolve(cli: &str) -> Option<std::path::PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let is_exec = |p: &std::path::Path| {
        std::fs::metadata(p).map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0).unwrap_or(false)
    };
    if cli.contains('/') {
        let p = std::path::PathBuf::from(cli);
        return is_exec(&p).then_some(p);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join(cli)).find(|p| is_exec(p))
}
