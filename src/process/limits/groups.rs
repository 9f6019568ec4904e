//! One CLI's resource cgroups: where its limits are written and its readings read. On cgroup
//! v2 that is its own cgroup (the one that contains it); on v1, a folder of its own in each
//! hierarchy, which the CLI joins as it starts (the keeper writes itself into each
//! `cgroup.procs` before it runs the CLI's program; a CLI started directly is moved in at once
//! with whatever it already started). Every method blocks on cgroupfs: call them off the
//! executor.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::files::{self, Version};
use crate::domain::resources::{Resources, SessionLimits};

/// A CLI's resource cgroups.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceGroups {
    /// cgroup v2: the CLI's own cgroup.
    pub(super) v2: Option<PathBuf>,
    /// cgroup v1: its folder in the memory, pids, cpu and cpuacct hierarchies (cpu and
    /// cpuacct are one folder where they are mounted together).
    pub(super) memory: Option<PathBuf>,
    pub(super) pids: Option<PathBuf>,
    pub(super) cpu: Option<PathBuf>,
    pub(super) cpuacct: Option<PathBuf>,
}

impl ResourceGroups {
    /// The v1 folders, each once.
    pub fn v1_folders(&self) -> Vec<&Path> {
        let mut folders: Vec<&Path> = Vec::new();
        for dir in [&self.memory, &self.pids, &self.cpu, &self.cpuacct].into_iter().flatten() {
            if !folders.contains(&dir.as_path()) {
                folders.push(dir);
            }
        }
        folders
    }

    /// The `cgroup.procs` files the CLI writes itself into before its program runs (the v1
    /// folders: the v2 cgroup is its containment's, joined anyway).
    pub fn join_files(&self) -> Vec<PathBuf> {
        self.v1_folders().into_iter().map(|dir| dir.join("cgroup.procs")).collect()
    }

    /// Writes `limits` into the cgroups (a limit not set is lifted: a resumed session's folder
    /// may hold an older one). An error names the file.
    pub(super) fn apply(&self, limits: &SessionLimits) -> Result<(), String> {
        let write = |dir: &Path, name: &str, value: String| {
            std::fs::write(dir.join(name), &value)
                .map_err(|e| format!("cannot write {value} to {}: {e}", dir.join(name).display()))
        };
        if let Some(dir) = &self.v2 {
            if limits.memory_max_mb.is_some() || dir.join("memory.max").exists() {
                write(dir, "memory.max", limits.memory_bytes().map_or("max".into(), |b| b.to_string()))?;
            }
            if limits.pids_max.is_some() || dir.join("pids.max").exists() {
                write(dir, "pids.max", limits.pids_max.map_or("max".into(), |n| n.to_string()))?;
            }
            if limits.cpu_weight.is_some() || dir.join("cpu.weight").exists() {
                write(dir, "cpu.weight", limits.cpu_weight.unwrap_or(100).to_string())?;
            }
        }
        if let Some(dir) = &self.memory {
            // v1 reads -1 as no limit.
            write(dir, "memory.limit_in_bytes", limits.memory_bytes().map_or("-1".into(), |b| b.to_string()))?;
        }
        if let Some(dir) = &self.pids {
            write(dir, "pids.max", limits.pids_max.map_or("max".into(), |n| n.to_string()))?;
        }
        if let Some(dir) = &self.cpu {
            write(dir, "cpu.shares", files::shares_of_weight(limits.cpu_weight.unwrap_or(100)).to_string())?;
        }
        Ok(())
    }

    /// Moves `pid` into each v1 folder, with whatever it started before the move (as
    /// [`crate::process::cgroup::Cgroup::adopt`] does for the v2 cgroup).
    pub fn adopt(&self, pid: i32) -> std::io::Result<()> {
        for dir in self.v1_folders() {
            let add = |pid: i32| std::fs::write(dir.join("cgroup.procs"), pid.to_string());
            add(pid)?;
            let mut pending = crate::process::procfs::children(pid);
            while let Some(child) = pending.pop() {
                if add(child).is_ok() {
                    pending.extend(crate::process::procfs::children(child));
                }
            }
        }
        Ok(())
    }

    /// What the tree uses now (`memory_peak_bytes` is the kernel's, where it keeps one).
    pub fn read(&self) -> Resources {
        let mut r = Resources::default();
        if let Some(dir) = &self.v2 {
            (r.memory_bytes, r.memory_peak_bytes) = files::memory(dir, Version::V2);
            r.cpu_usec = files::cpu_usec(dir, Version::V2);
            r.pids = files::pids(dir);
            r.oom_kills = files::oom_kills(dir, Version::V2);
        }
        if let Some(dir) = &self.memory {
            (r.memory_bytes, r.memory_peak_bytes) = files::memory(dir, Version::V1);
            r.oom_kills = files::oom_kills(dir, Version::V1);
        }
        if let Some(dir) = &self.pids {
            r.pids = files::pids(dir);
        }
        if let Some(dir) = &self.cpuacct {
            r.cpu_usec = files::cpu_usec(dir, Version::V1);
        }
        r
    }

    /// The OOM kill count alone (read once more as the CLI ends).
    pub fn oom_kills(&self) -> Option<u64> {
        match (&self.v2, &self.memory) {
            (_, Some(dir)) => files::oom_kills(dir, Version::V1),
            (Some(dir), None) => files::oom_kills(dir, Version::V2),
            (None, None) => None,
        }
    }

    /// Removes the v1 folders once the tree has ended (the v2 cgroup is its containment's to
    /// remove). A folder still holding processes after `within` is left, and named.
    pub fn remove(&self, within: Duration) -> Result<(), String> {
        let mut left = Vec::new();
        for dir in self.v1_folders() {
            if let Err(e) = remove_folder(dir, within) {
                left.push(format!("{}: {e}", dir.display()));
            }
        }
        if left.is_empty() {
            Ok(())
        } else {
            Err(left.join("; "))
        }
    }
}

/// Removes one v1 cgroup folder: v1 has no `cgroup.kill`, so whatever is still listed in it
/// (a process of a tree the service could not contain otherwise) is SIGKILLed until it is
/// empty, for at most `within`.
pub(super) fn remove_folder(dir: &Path, within: Duration) -> std::io::Result<()> {
    let deadline = Instant::now() + within;
    loop {
        match std::fs::remove_dir(dir) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
            // EBUSY: processes are still in it (or were a moment ago: exit is not instant).
            Err(e) if Instant::now() >= deadline => return Err(e),
            Err(_) => {}
        }
        let listed = files::read(dir, "cgroup.procs").unwrap_or_default();
        for pid in listed.split_whitespace().filter_map(|p| p.parse::<i32>().ok()) {
            let _ = crate::process::kill::signal_pid(pid, libc::SIGKILL);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn groups_in(dir: &Path, v2: bool) -> ResourceGroups {
        let sub = |name: &str| {
            let path = dir.join(name);
            std::fs::create_dir_all(&path).expect("dir");
            path
        };
        if v2 {
            ResourceGroups { v2: Some(sub("v2")), memory: None, pids: None, cpu: None, cpuacct: None }
        } else {
            let cpu = sub("cpu");
            ResourceGroups {
                v2: None,
                memory: Some(sub("memory")),
                pids: Some(sub("pids")),
                cpu: Some(cpu.clone()),
                cpuacct: Some(cpu),
            }
        }
    }

    #[test]
    fn limits_go_to_each_versions_files() {
        let dir = tempfile::tempdir().expect("dir");
        let limits = SessionLimits { memory_max_mb: Some(64), pids_max: Some(32), cpu_weight: Some(50) };
        let v1 = groups_in(dir.path(), false);
        v1.apply(&limits).expect("applied");
        let text = |p: PathBuf| std::fs::read_to_string(p).expect("file");
        assert_eq!(text(dir.path().join("memory/memory.limit_in_bytes")), (64u64 << 20).to_string());
        assert_eq!(text(dir.path().join("pids/pids.max")), "32");
        assert_eq!(text(dir.path().join("cpu/cpu.shares")), "512");
        assert_eq!(v1.v1_folders().len(), 3, "cpu and cpuacct together are one folder");
        assert_eq!(v1.join_files().len(), 3);

        let v2 = groups_in(dir.path(), true);
        v2.apply(&limits).expect("applied");
        assert_eq!(text(dir.path().join("v2/memory.max")), (64u64 << 20).to_string());
        assert_eq!(text(dir.path().join("v2/pids.max")), "32");
        assert_eq!(text(dir.path().join("v2/cpu.weight")), "50");
        assert!(v2.join_files().is_empty(), "the v2 cgroup is the containment's");
        // Lifted on a resume without them.
        v2.apply(&SessionLimits::default()).expect("applied");
        assert_eq!(text(dir.path().join("v2/memory.max")), "max");
        assert_eq!(text(dir.path().join("v2/cpu.weight")), "100");
    }
}
