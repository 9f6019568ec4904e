//! Looking at processes from a test: is a pid alive, which processes run a command line.

use std::time::{Duration, Instant};

/// Alive: signalable and not a zombie.
pub fn alive(pid: i32) -> bool {
    assert!(pid > 1, "refusing to probe pid {pid}");
    // SAFETY: signal 0 only checks that the process exists; pid > 1.
    if unsafe { libc::kill(pid, 0) } != 0 {
        return false;
    }
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(text) => {
            let state = text.rfind(')').and_then(|i| text[i + 1..].split_whitespace().next());
            state != Some("Z")
        }
        Err(_) => false,
    }
}

/// Polls until `pid` is gone; true if it went within `within`.
pub async fn gone_within(pid: i32, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    loop {
        if !alive(pid) {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Live processes whose command line is exactly `argv` (NUL-separated in /proc).
pub fn running(argv: &[&str]) -> Vec<i32> {
    let wanted: Vec<u8> = argv.iter().flat_map(|a| a.bytes().chain(std::iter::once(0))).collect();
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()))
        .filter(|pid| std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c == wanted) && alive(*pid))
        .collect()
}

/// Kills what a failed test left running (the test fails anyway; nothing may outlive it).
pub fn kill_all(pids: &[i32]) {
    for pid in pids {
        if *pid > 1 {
            // SAFETY: SIGKILL to a pid the test found by its unique command line.
            unsafe { libc::kill(*pid, libc::SIGKILL) };
        }
    }
}
