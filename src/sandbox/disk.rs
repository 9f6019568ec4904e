//! What the disk holds for a sandbox's view: the machine's system folders and secrets, the
//! toolchain a PATH folder belongs to, a program's installation. Blocking: the fence's
//! preparation calls these on the blocking pool.

use std::path::{Path, PathBuf};

use super::view::Found;

/// Top-level folders of the machine every sandbox shows read-only (links made again as links).
pub(super) const SYSTEM: &[&str] =
    &["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/sys", "/nix"];

/// What `/etc` holds that no sandbox may read: password hashes, sudo's rules, the machine's
/// SSH and Kerberos keys, stored network passwords. (`/etc/ssh/ssh_host_*_key` are found by
/// name when the fence is prepared.)
pub(super) const ETC_SECRETS: &[&str] = &[
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/etc/ssl/private",
    "/etc/security/opasswd",
    "/etc/krb5.keytab",
    "/etc/NetworkManager/system-connections",
    "/etc/wireguard",
];

/// Whether HOME is a folder of its own (not `/`, `/tmp` or a system folder), which the view can
/// make empty.
pub(super) fn own_folder(home: &Path) -> bool {
    home.is_absolute()
        && home.components().count() >= 2
        && !SYSTEM.iter().chain(&["/tmp", "/dev", "/proc", "/run", "/var"]).any(|s| Path::new(s) == home)
}

/// `path` as it exists now (its canonical form, whether a folder), or `None`.
pub(super) fn look(path: &Path) -> Option<Found> {
    let path = crate::domain::folders::normalize_lexically(path);
    let real = std::fs::canonicalize(&path).ok()?;
    let is_dir = real.is_dir();
    Some(Found { path, real, is_dir })
}

/// The toolchain a PATH folder belongs to: `~/.cargo` for `~/.cargo/bin`, `/opt/node` for
/// `/opt/node/bin` (its libraries beside its binaries). Never `/`, HOME or above.
pub(super) fn toolchain_root(dir: &Path, home: Option<&Path>) -> Option<PathBuf> {
    let name = dir.file_name()?.to_str()?;
    if !matches!(name, "bin" | "sbin" | "shims") {
        return None;
    }
    let parent = dir.parent()?;
    let too_wide = parent.parent().is_none() || home.is_some_and(|h| h.starts_with(parent));
    (!too_wide).then(|| parent.to_path_buf())
}

/// What a program needs of its own installation: its folder (or, inside an npm package tree,
/// the outermost `node_modules`, which holds its dependencies and native builds), for the
/// path it was found at and for where its links lead.
pub(super) fn program_roots(program: &Path) -> Vec<PathBuf> {
    let root = |p: &Path| -> Option<PathBuf> {
        let outermost = p.ancestors().filter(|a| a.file_name().is_some_and(|n| n == "node_modules")).last();
        outermost.map(Path::to_path_buf).or_else(|| p.parent().map(Path::to_path_buf))
    };
    let mut roots: Vec<PathBuf> = root(program).into_iter().collect();
    if let Ok(real) = std::fs::canonicalize(program) {
        roots.extend(root(&real));
    }
    roots.dedup();
    roots
}

/// `/etc/ssh/ssh_host_*_key`: the machine's SSH private keys.
pub(super) fn ssh_host_keys() -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir("/etc/ssh") else { return Vec::new() };
    entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("ssh_host_") && n.ends_with("_key"))
        })
        .collect()
}
