//! Containment as systemd does it: every CLI (session or agent run) in a cgroup v2 of its own,
//! ended with `cgroup.kill`, so nothing it starts can escape (`setsid`, double forks, `env -i`
//! all stay in the cgroup: only a privileged write to another cgroup's `cgroup.procs` leaves).
//!
//! Layout: `<the service's own cgroup>/conduit-<database key>/<session or execution id>`. The
//! folder per database means two services on different databases never touch each other's
//! trees, and the next holder of a database's lock (see `db::lock`) finds every leftover of a
//! crashed predecessor by listing one folder.
//!
//! Where no writable cgroup2 with `cgroup.kill` (Linux 5.14+) is available, the service falls
//! back to process groups plus the environment marker walk, and health says which it uses.
//! Every call here is blocking file-system work on cgroupfs: run it off the async executor.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::kill;

/// The name of the keepers' cgroup in a service's folder (no session id starts with a dot).
pub const KEEPERS: &str = ".keepers";

/// How this service contains the process trees of its CLIs.
#[derive(Debug, Clone)]
pub enum Containment {
    /// A cgroup per CLI under this folder.
    Cgroups(CgroupRoot),
    /// Process groups plus the environment marker (and the subreaper); `why` says why not
    /// cgroups.
    ProcessGroups { why: String },
}

impl Containment {
    /// Finds a writable cgroup2 hierarchy with `cgroup.kill` and makes this database's folder
    /// in it; otherwise the fallback, with the reason.
    pub fn detect(database_key: &str) -> Containment {
        match CgroupRoot::create(database_key) {
            Ok(root) => Containment::Cgroups(root),
            Err(why) => Containment::ProcessGroups { why },
        }
    }

    /// `cgroup` or `process_group`, as health reports it.
    pub fn kind(&self) -> &'static str {
        match self {
            Containment::Cgroups(_) => "cgroup",
            Containment::ProcessGroups { .. } => "process_group",
        }
    }

    pub fn root(&self) -> Option<&CgroupRoot> {
        match self {
            Containment::Cgroups(root) => Some(root),
            Containment::ProcessGroups { .. } => None,
        }
    }

    /// A cgroup for the CLI of `id` (a session or execution id); `None` on the fallback, or
    /// when it cannot be made (logged: the process group and marker still apply).
    pub fn cgroup_for(&self, id: &str) -> Option<Cgroup> {
        let root = self.root()?;
        match root.child(id) {
            Ok(cgroup) => Some(cgroup),
            Err(e) => {
                tracing::warn!(id, error = %e, "cannot make a cgroup for a CLI; it is contained by its process group only");
                None
            }
        }
    }
}

/// This database's folder of per-CLI cgroups.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgroupRoot {
    dir: PathBuf,
}

impl CgroupRoot {
    fn create(database_key: &str) -> Result<CgroupRoot, String> {
        let mount = cgroup2_mount().ok_or("no cgroup2 file system is mounted")?;
        let own = own_cgroup().ok_or("this process's cgroup2 path is unknown (/proc/self/cgroup)")?;
        let parent = mount.join(own.trim_start_matches('/'));
        let dir = parent.join(format!("conduit-{database_key}"));
        match std::fs::create_dir(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
            Err(e) => return Err(format!("cannot create {}: {e}", dir.display())),
        }
        if !dir.join("cgroup.kill").exists() {
            let _ = std::fs::remove_dir(&dir);
            return Err("this kernel's cgroup2 has no cgroup.kill (Linux 5.14 or later is needed)".to_string());
        }
        Ok(CgroupRoot { dir })
    }

    /// A root at a known folder (a previous holder's, read from the lock file).
    pub fn at(dir: PathBuf) -> CgroupRoot {
        CgroupRoot { dir }
    }

    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// Makes (or reuses: a resumed session keeps its id) the cgroup of `id`.
    pub fn child(&self, id: &str) -> std::io::Result<Cgroup> {
        if id.is_empty() || id.contains('/') || id.starts_with('.') {
            return Err(std::io::Error::new(ErrorKind::InvalidInput, format!("not a cgroup name: {id:?}")));
        }
        let path = self.dir.join(id);
        match std::fs::create_dir(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
        Ok(Cgroup { path })
    }

    /// The cgroup every keeper of this service runs in (see [`crate::keeper`]): not a CLI's, so
    /// its limits and readings are the CLIs' own; killed with the rest when nothing is kept.
    pub fn keepers(&self) -> std::io::Result<Cgroup> {
        let path = self.dir.join(KEEPERS);
        match std::fs::create_dir(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
        Ok(Cgroup { path })
    }

    /// Every CLI cgroup under this folder (leftovers, after a crash).
    pub fn children(&self) -> Vec<Cgroup> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else { return Vec::new() };
        entries.flatten().filter(|e| e.path().is_dir()).map(|e| Cgroup { path: e.path() }).collect()
    }

    /// Kills and removes every CLI cgroup under this folder, then the folder itself if it is
    /// not the one in use (`keep`). Returns how many cgroups still held processes.
    pub fn clear(&self, keep: bool) -> usize {
        self.clear_but(&std::collections::HashSet::new(), keep)
    }

    /// Like [`CgroupRoot::clear`], but the cgroups named in `kept` (sessions whose CLIs run on
    /// under their keepers) stay, and so does the folder when any does.
    pub fn clear_except(&self, kept: &std::collections::HashSet<String>) -> usize {
        self.clear_but(kept, !kept.is_empty())
    }

    fn clear_but(&self, kept: &std::collections::HashSet<String>, keep: bool) -> usize {
        let mut populated = 0;
        for cgroup in self.children() {
            let name = cgroup.path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            // The keepers of the sessions kept stay with them.
            if kept.contains(name) || (name == KEEPERS && !kept.is_empty()) {
                continue;
            }
            if cgroup.is_populated() {
                populated += 1;
            }
            if let Err(e) = cgroup.kill_and_remove(Duration::from_secs(2)) {
                tracing::warn!(cgroup = %cgroup.path.display(), error = %e, "cannot remove a leftover cgroup");
            }
        }
        if !keep {
            let _ = std::fs::remove_dir(&self.dir);
        }
        populated
    }
}

/// One CLI's cgroup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cgroup {
    path: PathBuf,
}

impl Cgroup {
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Moves `pid` (and so everything it starts from now on) into this cgroup.
    /// Moves `pid` in, and with it whatever it started before the move: each process is moved
    /// before its children are listed, so a child forked after that is born inside, and one
    /// forked before is listed. (A CLI that forks in the microseconds between its spawn and the
    /// move, as the fake CLI's escapee test does, would otherwise leave a child outside.) Only
    /// this tree's `children` files are read: no walk of `/proc`.
    pub fn adopt(&self, pid: i32) -> std::io::Result<()> {
        self.add(pid)?;
        let mut pending = super::procfs::children(pid);
        while let Some(child) = pending.pop() {
            if self.add(child).is_ok() {
                pending.extend(super::procfs::children(child));
            }
        }
        Ok(())
    }

    pub fn add(&self, pid: i32) -> std::io::Result<()> {
        std::fs::write(self.path.join("cgroup.procs"), pid.to_string())
    }

    /// Live processes in the cgroup (zombies are not listed).
    pub fn pids(&self) -> Vec<i32> {
        std::fs::read_to_string(self.path.join("cgroup.procs"))
            .map(|t| t.split_whitespace().filter_map(|p| p.parse().ok()).collect())
            .unwrap_or_default()
    }

    /// True while any process lives in it. A cgroup that is gone is not populated.
    pub fn is_populated(&self) -> bool {
        match std::fs::read_to_string(self.path.join("cgroup.events")) {
            Ok(text) => text.lines().any(|l| l.trim() == "populated 1"),
            Err(_) => false,
        }
    }

    /// Sends `signal` to every process in the cgroup (a polite stop: SIGTERM or SIGINT).
    pub fn signal(&self, signal: i32) {
        for pid in self.pids() {
            let _ = kill::signal_pid(pid, signal);
        }
    }

    /// SIGKILLs every process in the cgroup at once, through the kernel (`cgroup.kill`):
    /// nothing can fork its way out while it happens.
    pub fn kill(&self) -> std::io::Result<()> {
        match std::fs::write(self.path.join("cgroup.kill"), "1") {
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
            other => other,
        }
    }

    /// Freezes (or thaws) every process in the cgroup, and waits (at most a second) until the
    /// kernel says it is done: a frozen process runs nothing until it is thawed, and SIGKILL
    /// still ends it.
    pub fn freeze(&self, frozen: bool) -> std::io::Result<()> {
        std::fs::write(self.path.join("cgroup.freeze"), if frozen { "1" } else { "0" })?;
        let deadline = Instant::now() + Duration::from_secs(1);
        loop {
            let events = std::fs::read_to_string(self.path.join("cgroup.events"))?;
            let now = events.lines().any(|l| l.trim() == "frozen 1");
            if now == frozen {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(std::io::Error::other(format!(
                    "the kernel did not {} it within a second",
                    if frozen { "freeze" } else { "thaw" }
                )));
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Kills everything in the cgroup, waits (at most `within`) until it is empty, and
    /// removes it. Errors when processes are still there at the end.
    pub fn kill_and_remove(&self, within: Duration) -> std::io::Result<()> {
        let deadline = Instant::now() + within;
        loop {
            if !self.is_populated() {
                return match std::fs::remove_dir(&self.path) {
                    Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
                    other => other,
                };
            }
            self.kill()?;
            if Instant::now() >= deadline {
                return Err(std::io::Error::other(format!("processes {:?} outlived cgroup.kill", self.pids())));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// Where the cgroup2 file system is mounted (`/sys/fs/cgroup` on unified systems,
/// `/sys/fs/cgroup/unified` on hybrid ones).
fn cgroup2_mount() -> Option<PathBuf> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    text.lines().find_map(parse_cgroup2_mount)
}

/// A mountinfo line's mount point if it is a cgroup2 mount of the hierarchy's root.
fn parse_cgroup2_mount(line: &str) -> Option<PathBuf> {
    let (before, after) = line.split_once(" - ")?;
    if after.split_whitespace().next()? != "cgroup2" {
        return None;
    }
    let fields: Vec<&str> = before.split_whitespace().collect();
    // A bind mount of a sub-folder would not line up with /proc/self/cgroup's paths.
    if *fields.get(3)? != "/" {
        return None;
    }
    Some(PathBuf::from(unescape_octal(fields.get(4)?)))
}

/// mountinfo writes spaces, tabs, newlines and backslashes as `\ooo`.
pub(super) fn unescape_octal(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' && i + 3 < bytes.len() && bytes[i + 1..i + 4].iter().all(|b| (b'0'..=b'7').contains(b)) {
            let value = (bytes[i + 1] - b'0') * 64 + (bytes[i + 2] - b'0') * 8 + (bytes[i + 3] - b'0');
            out.push(value);
            i += 4;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// This process's cgroup2 path (`0::/some/path` in /proc/self/cgroup).
fn own_cgroup() -> Option<String> {
    let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    text.lines().find_map(|l| l.strip_prefix("0::")).map(|p| p.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_cgroup2_mount_in_mountinfo() {
        let hybrid = "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw";
        assert_eq!(parse_cgroup2_mount(hybrid), Some(PathBuf::from("/sys/fs/cgroup/unified")));
        let v1 = "33 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu";
        assert_eq!(parse_cgroup2_mount(v1), None);
        let bind = "50 31 0:38 /sub /mnt/cg rw - cgroup2 cgroup2 rw";
        assert_eq!(parse_cgroup2_mount(bind), None);
        let spaced = r"60 31 0:38 / /mnt/my\040cgroups rw shared:1 - cgroup2 none rw";
        assert_eq!(parse_cgroup2_mount(spaced), Some(PathBuf::from("/mnt/my cgroups")));
    }

    #[test]
    fn cgroup_names_cannot_leave_the_folder() {
        let root = CgroupRoot::at(std::env::temp_dir().join("conduit-no-such-cgroup-root"));
        for bad in ["", "../x", "a/b", ".hidden"] {
            assert!(root.child(bad).is_err(), "{bad:?} must be refused");
        }
    }
}
