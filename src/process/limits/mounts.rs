//! Where this process sits in each cgroup v1 hierarchy: the hierarchy's mount point (from
//! `/proc/self/mountinfo`) joined with the process's own path in it (from `/proc/self/cgroup`).
//! On a hybrid host (systemd's default before v2-only, and many CI machines) memory, pids and
//! cpu live there, while the cgroup2 mount holds no controller.

use std::path::PathBuf;

/// A v1 hierarchy a controller is mounted in.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Mount {
    /// Where it is mounted.
    point: PathBuf,
    /// Which folder of the hierarchy the mount shows (`/` but in some containers).
    root: String,
    /// Its controllers (`cpu,cpuacct` when mounted together).
    controllers: Vec<String>,
}

/// This process's folder in the v1 hierarchy of `controller`, if one is mounted and the
/// process's path in it is visible under the mount.
pub fn own_v1_folder(controller: &str) -> Option<PathBuf> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    folder_in(&mountinfo, &cgroups, controller)
}

/// [`own_v1_folder`] from the two files' text.
fn folder_in(mountinfo: &str, cgroups: &str, controller: &str) -> Option<PathBuf> {
    let mount = mountinfo.lines().filter_map(parse_v1_mount).find(|m| m.controllers.iter().any(|c| c == controller))?;
    let own = own_v1_path(cgroups, controller)?;
    // A mount of a sub-folder shows the hierarchy from there: the process's path must be in it.
    let relative = if mount.root == "/" {
        own.trim_start_matches('/').to_string()
    } else {
        let rest = own.strip_prefix(mount.root.trim_end_matches('/'))?;
        if !(rest.is_empty() || rest.starts_with('/')) {
            return None;
        }
        rest.trim_start_matches('/').to_string()
    };
    Some(if relative.is_empty() { mount.point } else { mount.point.join(relative) })
}

/// A mountinfo line of a v1 cgroup file system.
fn parse_v1_mount(line: &str) -> Option<Mount> {
    let (before, after) = line.split_once(" - ")?;
    let mut after = after.split_whitespace();
    if after.next()? != "cgroup" {
        return None;
    }
    let options = after.nth(1)?;
    let fields: Vec<&str> = before.split_whitespace().collect();
    Some(Mount {
        point: PathBuf::from(crate::process::cgroup::unescape_octal(fields.get(4)?)),
        root: crate::process::cgroup::unescape_octal(fields.get(3)?),
        controllers: options.split(',').map(String::from).collect(),
    })
}

/// This process's path in the hierarchy of `controller` (`4:memory:/some/path`).
fn own_v1_path(cgroups: &str, controller: &str) -> Option<String> {
    cgroups.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (_id, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        controllers.split(',').any(|c| c == controller).then(|| path.trim().to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";

    const CGROUPS: &str = "\
8:pids:/
4:memory:/process_api/527c
2:cpuacct:/
1:cpu:/
0::/
";

    #[test]
    fn a_hybrid_hosts_folders_are_found() {
        assert_eq!(
            folder_in(MOUNTINFO, CGROUPS, "memory"),
            Some(PathBuf::from("/sys/fs/cgroup/memory/process_api/527c"))
        );
        assert_eq!(folder_in(MOUNTINFO, CGROUPS, "pids"), Some(PathBuf::from("/sys/fs/cgroup/pids")));
        assert_eq!(folder_in(MOUNTINFO, CGROUPS, "cpu"), Some(PathBuf::from("/sys/fs/cgroup/cpu")));
        assert_eq!(folder_in(MOUNTINFO, CGROUPS, "blkio"), None, "not mounted");
    }

    #[test]
    fn co_mounted_controllers_and_sub_folder_mounts() {
        let mountinfo = "50 31 0:40 /docker/abc /sys/fs/cgroup/cpu,cpuacct ro - cgroup cgroup rw,cpu,cpuacct\n";
        let cgroups = "3:cpu,cpuacct:/docker/abc/service\n";
        let folder = Some(PathBuf::from("/sys/fs/cgroup/cpu,cpuacct/service"));
        assert_eq!(folder_in(mountinfo, cgroups, "cpu"), folder);
        assert_eq!(folder_in(mountinfo, cgroups, "cpuacct"), folder);
        // A path outside the mounted sub-folder is not reachable through it.
        assert_eq!(folder_in(mountinfo, "3:cpu,cpuacct:/docker/abcd\n", "cpu"), None);
        assert_eq!(folder_in(mountinfo, "3:cpu,cpuacct:/elsewhere\n", "cpu"), None);
    }
}
