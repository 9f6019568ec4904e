//! The file system a sandboxed process sees, built from what it needs rather than the machine's
//! with holes: an empty read-only root, and on it only what was asked for (read-only or
//! writable), each shown at its own path. What is hidden is covered again wherever something
//! shown would reveal it. Pure: the caller looks at the disk ([`super::fence::Fence::prepare`])
//! and hands in what exists; this decides the mounts and their order.

use std::path::{Path, PathBuf};

/// How a shown path may be used, weakest first: the same path asked for twice is shown the
/// stronger way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Access {
    /// At least readable (a path inside a writable one stays writable).
    ReadOnly,
    Writable,
    /// Read-only even inside a writable path (what a deny rule on writing names).
    Protected,
}

/// A path that exists on the machine, as asked for and as its links resolve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// Where it is shown (the path as the process will use it).
    pub path: PathBuf,
    /// Its canonical form, to tell what covers what.
    pub real: PathBuf,
    pub is_dir: bool,
}

/// One step of building the view, in bubblewrap's terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mount {
    /// A link as the machine has it (`/bin -> usr/bin` on a merged-/usr system).
    Symlink {
        target: PathBuf,
        at: PathBuf,
    },
    /// The machine's `source` shown at `at`.
    Bind {
        source: PathBuf,
        at: PathBuf,
        access: Access,
    },
    /// An empty read-only folder over a hidden one.
    HideDir(PathBuf),
    /// `/dev/null` over a hidden file.
    HideFile(PathBuf),
    /// A private writable tmpfs (`/tmp`).
    Tmpfs(PathBuf),
    Dev(PathBuf),
    Proc(PathBuf),
}

impl Mount {
    fn at(&self) -> &Path {
        match self {
            Mount::Symlink { at, .. } | Mount::Bind { at, .. } => at,
            Mount::HideDir(p) | Mount::HideFile(p) | Mount::Tmpfs(p) | Mount::Dev(p) | Mount::Proc(p) => p,
        }
    }

    /// At one depth: the root's own pieces first, then what is shown, what is writable, and
    /// what is hidden last (so that at the same path, hiding wins).
    fn rank(&self) -> u8 {
        match self {
            Mount::Symlink { .. } | Mount::Dev(_) | Mount::Proc(_) | Mount::Tmpfs(_) => 0,
            Mount::Bind { access: Access::ReadOnly, .. } => 1,
            Mount::Bind { access: Access::Writable, .. } => 2,
            Mount::Bind { access: Access::Protected, .. } => 3,
            Mount::HideDir(_) | Mount::HideFile(_) => 4,
        }
    }

    /// bubblewrap's arguments for this step.
    pub fn arguments(&self) -> Vec<String> {
        let s = |p: &Path| p.to_string_lossy().into_owned();
        let pair = |flag: &str, a: &Path, b: &Path| vec![flag.to_string(), s(a), s(b)];
        match self {
            Mount::Symlink { target, at } => pair("--symlink", target, at),
            Mount::Bind { source, at, access: Access::Writable } => pair("--bind", source, at),
            Mount::Bind { source, at, access: Access::ReadOnly | Access::Protected } => pair("--ro-bind", source, at),
            Mount::HideDir(p) => vec!["--tmpfs".to_string(), s(p)],
            Mount::HideFile(p) => pair("--ro-bind", Path::new("/dev/null"), p),
            Mount::Tmpfs(p) => vec!["--tmpfs".to_string(), s(p)],
            Mount::Dev(p) => vec!["--dev".to_string(), s(p)],
            Mount::Proc(p) => vec!["--proc".to_string(), s(p)],
        }
    }
}

/// What the view is made of, every path in it known to exist.
#[derive(Debug, Default)]
pub struct Wanted {
    /// The root's own pieces: `/dev`, `/proc`, `/tmp`, an empty HOME.
    pub base: Vec<Mount>,
    /// The machine's top-level links, made again as links (`/bin -> usr/bin`): a path through
    /// one is shown wherever its target is.
    pub links: Vec<(Found, PathBuf)>,
    /// Shown at their own paths.
    pub shown: Vec<(Found, Access)>,
    /// Shown at another path (the session channel's socket), read-only.
    pub placed: Vec<(PathBuf, PathBuf)>,
    /// Hidden wherever something shown would reveal them.
    pub hidden: Vec<Found>,
}

/// The nearest entry of `shown` at or above `path` by the path the process uses, and the
/// nearest by canonical path; `None` when nothing covers it both ways.
fn covered(shown: &[(Found, Access)], links: &[Found], found: &Found) -> Option<Access> {
    // Above it, or the machine's link that is its very path.
    let lexical = shown.iter().any(|(f, _)| found.path.starts_with(&f.path) && f.path != found.path)
        || links.iter().any(|f| found.path.starts_with(&f.path));
    let nearest = shown
        .iter()
        .filter(|(f, _)| found.real.starts_with(&f.real) && f.path != found.path)
        .max_by_key(|(f, _)| f.real.components().count());
    match nearest {
        Some((_, access)) if lexical => Some(*access),
        _ => None,
    }
}

/// The mounts, in the order bubblewrap must make them (outer before inner), and the hidden
/// folders to make read-only once everything is in place.
pub fn build(wanted: Wanted) -> (Vec<Mount>, Vec<PathBuf>) {
    let Wanted { base, links, shown, placed, hidden } = wanted;
    // The same path asked for more than once: the strongest way.
    let mut merged: Vec<(Found, Access)> = Vec::new();
    for (found, access) in shown {
        match merged.iter_mut().find(|(f, _)| f.path == found.path) {
            Some((_, was)) => *was = (*was).max(access),
            None => merged.push((found, access)),
        }
    }
    let mut mounts = base;
    for (found, target) in &links {
        mounts.push(Mount::Symlink { target: target.clone(), at: found.path.clone() });
    }
    let link_paths: Vec<Found> = links.into_iter().map(|(f, _)| f).collect();
    for (found, access) in &merged {
        // Shown already: a read-only path anywhere under a shown one, a writable one under a
        // writable one. Whatever is protected is always bound again.
        let covered_by = covered(&merged, &link_paths, found);
        let needed =
            !matches!((access, covered_by), (Access::ReadOnly, Some(_)) | (Access::Writable, Some(Access::Writable)));
        if needed {
            mounts.push(Mount::Bind { source: found.path.clone(), at: found.path.clone(), access: *access });
        }
    }
    for (source, at) in placed {
        mounts.push(Mount::Bind { source, at, access: Access::ReadOnly });
    }
    let mut read_only_again = Vec::new();
    for found in &hidden {
        // A hidden path nothing shown covers is absent already: covering it would only show
        // its name.
        let revealed = merged.iter().any(|(f, _)| found.real.starts_with(&f.real) || found.path.starts_with(&f.path));
        if !revealed {
            continue;
        }
        if found.is_dir {
            mounts.push(Mount::HideDir(found.path.clone()));
            read_only_again.push(found.path.clone());
        } else {
            mounts.push(Mount::HideFile(found.path.clone()));
        }
    }
    mounts.sort_by_key(|m| (m.at().components().count(), m.rank()));
    mounts.dedup();
    read_only_again.sort();
    read_only_again.dedup();
    (mounts, read_only_again)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(path: &str, is_dir: bool) -> Found {
        Found { path: path.into(), real: path.into(), is_dir }
    }

    fn ro(path: &str) -> (Found, Access) {
        (found(path, true), Access::ReadOnly)
    }

    fn rw(path: &str) -> (Found, Access) {
        (found(path, true), Access::Writable)
    }

    fn at(mounts: &[Mount]) -> Vec<String> {
        mounts.iter().map(|m| m.arguments().join(" ")).collect()
    }

    #[test]
    fn outer_mounts_come_first_and_covered_ones_are_left_out() {
        let wanted = Wanted {
            base: vec![Mount::Tmpfs("/tmp".into()), Mount::Dev("/dev".into())],
            links: vec![],
            shown: vec![
                rw("/tmp/x/project"),
                ro("/usr"),
                ro("/usr/local/bin"),
                ro("/home/me/.cargo"),
                rw("/home/me/.cargo/registry"),
                (found("/tmp/x/project/protected.txt", false), Access::Protected),
                ro("/tmp/x/project/node_modules/.bin"),
            ],
            placed: vec![("/data/channel.sock".into(), "/run/conduit/channel.sock".into())],
            hidden: vec![
                found("/home/me/.cargo/credentials.toml", false),
                found("/home/me/.ssh", true),
                found("/tmp/x/project/nested-project", true),
                found("/data", true),
            ],
        };
        let (mounts, read_only_again) = build(wanted);
        assert_eq!(
            at(&mounts),
            [
                "--tmpfs /tmp",
                "--dev /dev",
                "--ro-bind /usr /usr",
                "--ro-bind /home/me/.cargo /home/me/.cargo",
                "--ro-bind /data/channel.sock /run/conduit/channel.sock",
                "--bind /tmp/x/project /tmp/x/project",
                "--bind /home/me/.cargo/registry /home/me/.cargo/registry",
                "--ro-bind /tmp/x/project/protected.txt /tmp/x/project/protected.txt",
                "--ro-bind /dev/null /home/me/.cargo/credentials.toml",
                "--tmpfs /tmp/x/project/nested-project",
            ],
            "/usr/local/bin is inside /usr and .bin inside the writable project; ~/.ssh and /data are inside nothing shown"
        );
        assert_eq!(read_only_again, [PathBuf::from("/tmp/x/project/nested-project")]);
    }

    #[test]
    fn a_link_is_told_from_its_target() {
        // PATH's /bin is the machine's link to /usr/bin: made again as a link, shown with /usr.
        let bin = Found { path: "/bin".into(), real: "/usr/bin".into(), is_dir: true };
        let wanted = Wanted {
            links: vec![(bin.clone(), "usr/bin".into())],
            shown: vec![ro("/usr"), (bin, Access::ReadOnly)],
            ..Default::default()
        };
        assert_eq!(at(&build(wanted).0), ["--symlink usr/bin /bin", "--ro-bind /usr /usr"]);
        // A PATH folder that links elsewhere is shown at its own path, even where its target
        // is shown too.
        let tools = Found { path: "/home/me/bin".into(), real: "/opt/tools/bin".into(), is_dir: true };
        let (mounts, _) = build(Wanted { shown: vec![ro("/opt"), (tools, Access::ReadOnly)], ..Default::default() });
        assert_eq!(at(&mounts), ["--ro-bind /opt /opt", "--ro-bind /home/me/bin /home/me/bin"]);
        // The same folder asked for twice: once, the stronger way.
        let (mounts, _) = build(Wanted { shown: vec![ro("/srv/p"), rw("/srv/p"), ro("/srv/p")], ..Default::default() });
        assert_eq!(at(&mounts), ["--bind /srv/p /srv/p"]);
    }
}
