//! Children tokio waits for itself (session CLIs, agent runs). The service is a child
//! subreaper and reaps the orphans re-parented to it; it must never reap one of these, or tokio's
//! wait would find no child and the exit status would be lost. Spawning and reaping both run on
//! the service's main actor thread, so a child is registered before any reap can see it.

use std::collections::HashSet;
use std::sync::{Mutex, OnceLock};

fn table() -> &'static Mutex<HashSet<i32>> {
    static OWNED: OnceLock<Mutex<HashSet<i32>>> = OnceLock::new();
    OWNED.get_or_init(Default::default)
}

fn with<T>(f: impl FnOnce(&mut HashSet<i32>) -> T) -> T {
    // A poisoned lock only means a panic elsewhere mid-insert; the set itself is intact.
    f(&mut table().lock().unwrap_or_else(|p| p.into_inner()))
}

/// Call right after spawning a child that will be waited for.
pub fn own(pid: i32) {
    with(|t| t.insert(pid));
}

/// Call once the wait for it has returned.
pub fn release(pid: i32) {
    with(|t| t.remove(&pid));
}

pub fn is_owned(pid: i32) -> bool {
    with(|t| t.contains(&pid))
}
