//! The cgroup files limits are written to and readings are read from, on either version, and
//! how their text reads. Plain functions of text (tested here) plus thin blocking reads.

use std::path::Path;

/// Which cgroup version a folder belongs to: the file names differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    V1,
    V2,
}

/// A file holding one number (`max` reads as none).
pub fn number(text: &str) -> Option<u64> {
    text.trim().parse().ok()
}

/// A `key value` line's value in a flat keyed file (`memory.events`, `cpu.stat`,
/// `memory.oom_control`).
pub fn keyed(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let (k, v) = line.split_once(' ')?;
        (k == key).then(|| v.trim().parse().ok()).flatten()
    })
}

/// Reads a whole small file; `None` when it is absent or unreadable.
pub fn read(dir: &Path, name: &str) -> Option<String> {
    std::fs::read_to_string(dir.join(name)).ok()
}

/// cgroup v1's `cpu.shares` for a cgroup v2 `cpu.weight`: the default weight (100) is the
/// default share (1024), and v1 refuses a share under 2.
pub fn shares_of_weight(weight: u64) -> u64 {
    (weight * 1024 / 100).max(2)
}

/// The OOM kill count of a memory cgroup: `oom_kill` of `memory.events` (v2) or
/// `memory.oom_control` (v1, Linux 4.13+).
pub fn oom_kills(dir: &Path, version: Version) -> Option<u64> {
    match version {
        Version::V2 => keyed(&read(dir, "memory.events")?, "oom_kill"),
        Version::V1 => keyed(&read(dir, "memory.oom_control")?, "oom_kill"),
    }
}

/// Memory in use and its peak (`memory.peak` is Linux 5.19+ on v2: `None` before).
pub fn memory(dir: &Path, version: Version) -> (Option<u64>, Option<u64>) {
    let (now, peak) = match version {
        Version::V2 => ("memory.current", "memory.peak"),
        Version::V1 => ("memory.usage_in_bytes", "memory.max_usage_in_bytes"),
    };
    (read(dir, now).and_then(|t| number(&t)), read(dir, peak).and_then(|t| number(&t)))
}

/// CPU time used, in microseconds: `usage_usec` of `cpu.stat` (v2), `cpuacct.usage` in
/// nanoseconds (v1).
pub fn cpu_usec(dir: &Path, version: Version) -> Option<u64> {
    match version {
        Version::V2 => keyed(&read(dir, "cpu.stat")?, "usage_usec"),
        Version::V1 => number(&read(dir, "cpuacct.usage")?).map(|ns| ns / 1000),
    }
}

/// Processes and threads alive (`pids.current`, the same on both versions).
pub fn pids(dir: &Path) -> Option<u64> {
    number(&read(dir, "pids.current")?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyed_files_read_by_key() {
        let events = "low 0\nhigh 0\nmax 12\noom 2\noom_kill 2\noom_group_kill 0\n";
        assert_eq!(keyed(events, "oom_kill"), Some(2));
        assert_eq!(keyed(events, "oom"), Some(2));
        assert_eq!(keyed(events, "missing"), None);
        let control = "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n";
        assert_eq!(keyed(control, "oom_kill"), Some(3));
        let stat = "usage_usec 123456\nuser_usec 100000\nsystem_usec 23456\n";
        assert_eq!(keyed(stat, "usage_usec"), Some(123_456));
    }

    #[test]
    fn numbers_and_max() {
        assert_eq!(number("4096\n"), Some(4096));
        assert_eq!(number("max\n"), None);
        assert_eq!(number(""), None);
    }

    #[test]
    fn weights_become_shares() {
        assert_eq!(shares_of_weight(100), 1024);
        assert_eq!(shares_of_weight(1), 10);
        assert_eq!(shares_of_weight(10_000), 102_400);
        assert_eq!(shares_of_weight(0), 2, "never under v1's minimum");
    }

    #[test]
    fn readings_come_from_each_versions_files() {
        let dir = tempfile::tempdir().expect("dir");
        let put = |name: &str, text: &str| std::fs::write(dir.path().join(name), text).expect("write");
        put("memory.current", "1000\n");
        put("memory.events", "oom 1\noom_kill 1\n");
        put("cpu.stat", "usage_usec 77\n");
        put("pids.current", "5\n");
        assert_eq!(memory(dir.path(), Version::V2), (Some(1000), None), "no memory.peak: an old kernel");
        assert_eq!(oom_kills(dir.path(), Version::V2), Some(1));
        assert_eq!(cpu_usec(dir.path(), Version::V2), Some(77));
        assert_eq!(pids(dir.path()), Some(5));
        put("memory.usage_in_bytes", "2000\n");
        put("memory.max_usage_in_bytes", "3000\n");
        put("memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 4\n");
        put("cpuacct.usage", "5000000\n");
        assert_eq!(memory(dir.path(), Version::V1), (Some(2000), Some(3000)));
        assert_eq!(oom_kills(dir.path(), Version::V1), Some(4));
        assert_eq!(cpu_usec(dir.path(), Version::V1), Some(5000));
    }
}
