//! What `/proc` says about processes. Linux only; every reader tolerates a process vanishing
//! between two reads (that is the normal case while ending sessions).

use std::path::Path;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stat {
    pub pid: i32,
    pub state: char,
    pub ppid: i32,
    pub pgrp: i32,
    /// Clock ticks after boot; with the pid, identifies a process across pid reuse.
    pub start_time: u64,
}

/// Parses `/proc/<pid>/stat`. The command name sits in parentheses and may contain anything,
/// so fields are counted from the last `)`.
pub fn parse_stat(pid: i32, text: &str) -> Option<Stat> {
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    Some(Stat {
        pid,
        state: fields.first()?.chars().next()?,
        ppid: fields.get(1)?.parse().ok()?,
        pgrp: fields.get(2)?.parse().ok()?,
        start_time: fields.get(19)?.parse().ok()?,
    })
}

pub fn stat(pid: i32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(pid, &text)
}

/// Every pid in `/proc`.
pub fn all_pids() -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries.flatten().filter_map(|e| e.file_name().to_str().and_then(|n| n.parse().ok())).collect()
}

/// Direct children of `pid` (all its threads), from `/proc/<pid>/task/*/children`.
pub fn children(pid: i32) -> Vec<i32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return Vec::new() };
    let mut out = Vec::new();
    for task in tasks.flatten() {
        if let Ok(text) = std::fs::read_to_string(task.path().join("children")) {
            out.extend(text.split_whitespace().filter_map(|p| p.parse::<i32>().ok()));
        }
    }
    out
}

/// True when the process's environment holds `key=value`. False for processes that are gone,
/// zombies (no environment left) or not readable.
pub fn has_env(pid: i32, key: &str, value: &str) -> bool {
    let Ok(bytes) = std::fs::read(Path::new("/proc").join(pid.to_string()).join("environ")) else { return false };
    let wanted = format!("{key}={value}");
    bytes.split(|&b| b == 0).any(|entry| entry == wanted.as_bytes())
}

/// Live (not zombie) processes carrying the session marker.
pub fn marked(key: &str, value: &str) -> Vec<i32> {
    all_pids()
        .into_iter()
        .filter(|&pid| has_env(pid, key, value) && stat(pid).is_some_and(|s| s.state != 'Z'))
        .collect()
}

/// Live members of a process group.
pub fn group_members(pgid: i32) -> Vec<i32> {
    all_pids().into_iter().filter(|&pid| stat(pid).is_some_and(|s| s.pgrp == pgid && s.state != 'Z')).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_survives_odd_command_names() {
        let text =
            "4242 (a) b (c)) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10 18446744073709551615";
        let s = parse_stat(4242, text).expect("parses");
        assert_eq!((s.state, s.ppid, s.pgrp, s.start_time), ('S', 1, 4242, 987654));
        assert_eq!(parse_stat(1, "garbage"), None);
    }

    #[test]
    fn reads_this_process() {
        let me = std::process::id() as i32;
        let s = stat(me).expect("own stat");
        assert_eq!(s.pid, me);
        assert!(s.start_time > 0);
        assert!(all_pids().contains(&me));
        std::env::var("PATH").expect("PATH set in tests");
        assert!(!has_env(me, "CONDUIT_NO_SUCH_VAR", "x"));
    }
}
