//! Readings of recent Bash commands. Reading a command is most of a decision's cost, and
//! agents repeat commands (`git status`, `cargo test`), and each call is decided at the hook
//! and again when the CLI asks `can_use_tool`.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use super::shell::{read_command, CommandPart};

/// Commands kept per generation: between this many and twice as many are remembered.
const GENERATION: usize = 512;
/// Longer commands are read every time (their text would be the cache's memory).
const MAX_CACHED_BYTES: usize = 4 * 1024;

type Reading = Arc<[CommandPart]>;

/// Two generations: when the newer fills up it becomes the older one and the older is
/// dropped; a hit in the older generation moves back to the newer. Bounded, and close to
/// least-recently-used without any bookkeeping per hit.
#[derive(Default)]
struct Generations {
    newer: HashMap<String, Reading>,
    older: HashMap<String, Reading>,
}

/// Shared by clones of a rule set: a reading depends on the command alone, not on the rules.
#[derive(Default, Clone)]
pub(super) struct ReadingCache(Arc<Mutex<Generations>>);

impl fmt::Debug for ReadingCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ReadingCache")
    }
}

impl ReadingCache {
    pub fn read(&self, command: &str) -> Reading {
        if command.len() > MAX_CACHED_BYTES {
            return read_command(command).into();
        }
        // A poisoned lock (a panic elsewhere while it was held) only loses the cache.
        if let Ok(mut cache) = self.0.lock() {
            if let Some(hit) = cache.newer.get(command) {
                return hit.clone();
            }
            if let Some(hit) = cache.older.remove(command) {
                cache.insert(command, hit.clone());
                return hit;
            }
        }
        let reading: Reading = read_command(command).into();
        if let Ok(mut cache) = self.0.lock() {
            cache.insert(command, reading.clone());
        }
        reading
    }
}

impl Generations {
    fn insert(&mut self, command: &str, reading: Reading) {
        if self.newer.len() >= GENERATION {
            self.older = std::mem::take(&mut self.newer);
        }
        self.newer.insert(command.to_string(), reading);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeated_command_is_read_once_and_the_cache_stays_bounded() {
        let cache = ReadingCache::default();
        let first = cache.read("git status && rm x");
        assert!(Arc::ptr_eq(&first, &cache.read("git status && rm x")), "the second call is a hit");
        for i in 0..GENERATION * 3 {
            cache.read(&format!("echo {i}"));
        }
        let held = cache.0.lock().map(|c| c.newer.len() + c.older.len()).unwrap_or_default();
        assert!(held <= GENERATION * 2, "{held}");
        assert_eq!(cache.read("git status && rm x"), first, "read again after eviction, the same");
        let long = format!("echo {}", "x".repeat(MAX_CACHED_BYTES));
        assert!(!Arc::ptr_eq(&cache.read(&long), &cache.read(&long)), "long commands are not kept");
    }
}
