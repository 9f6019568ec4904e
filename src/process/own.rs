//! Child processes the service waits for itself outside the registry's CLIs (git commands,
//! setup scripts): the orphan reaper (the service is a child subreaper) must leave them to
//! tokio, or tokio's wait finds no child (`ECHILD`) and their exit status is lost.
//!
//! Spawning and registering happen under a shared lock the reaper takes exclusively while it
//! picks and reaps zombies, so no sweep can see such a child before it is listed.

use std::collections::BTreeSet;
use std::sync::{Mutex, RwLock};

static SPAWNING: RwLock<()> = RwLock::new(());
static OWN: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());

/// Keeps a child listed while it lives; dropped once it has been waited for.
pub struct Own(Option<i32>);

impl Drop for Own {
    fn drop(&mut self) {
        if let Some(pid) = self.0 {
            OWN.lock().unwrap_or_else(|e| e.into_inner()).remove(&pid);
        }
    }
}

/// Spawns `cmd` and lists the child until the returned [`Own`] is dropped (keep it until the
/// child has been waited for).
pub fn spawn(cmd: &mut tokio::process::Command) -> std::io::Result<(tokio::process::Child, Own)> {
    let _spawning = SPAWNING.read().unwrap_or_else(|e| e.into_inner());
    let child = cmd.spawn()?;
    let pid = child.id().map(|p| p as i32);
    if let Some(pid) = pid {
        OWN.lock().unwrap_or_else(|e| e.into_inner()).insert(pid);
    }
    Ok((child, Own(pid)))
}

/// Runs the reaper's pick-and-reap with no spawn in between; `listed(pid)` says whether a pid
/// belongs to someone waiting for it.
pub fn reaping<R>(pick: impl FnOnce(&dyn Fn(i32) -> bool) -> R) -> R {
    let _exclusive = SPAWNING.write().unwrap_or_else(|e| e.into_inner());
    let own = OWN.lock().unwrap_or_else(|e| e.into_inner()).clone();
    pick(&|pid| own.contains(&pid))
}
