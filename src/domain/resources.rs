//! Kernel limits on a session's CLI (its memory, its processes, its share of the CPU) and the
//! readings of what it uses. The limits are asked for at three levels, each field on its own:
//! the launch body, then the project's `session_limits`, then the `session_*` settings. Where
//! they are applied (a cgroup's files) is the process layer's (`process::limits`).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// The least memory a session may be limited to: a CLI and its sandbox need some to start.
pub const MIN_MEMORY_MB: u64 = 16;
/// The fewest processes (threads count too) a session may be limited to: the CLI itself runs
/// several (its sandbox's, its runtime's threads) before any tool starts.
pub const MIN_PIDS: u64 = 8;
/// The most memory a limit may name: 16 TiB, far past any machine, so the byte count fits.
pub const MAX_MEMORY_MB: u64 = 16 << 20;
/// cgroup v2's `pids.max` takes any count; this bounds a typo.
pub const MAX_PIDS: u64 = 4_194_304;
/// cgroup v2's `cpu.weight` range (100 is the default share).
pub const CPU_WEIGHTS: std::ops::RangeInclusive<u64> = 1..=10_000;

/// Limits on one session's CLI and everything it starts; an absent field sets no limit (or
/// leaves it to the next level).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionLimits {
    /// The most memory the session's processes may use together, in MiB (at least 16). A tool
    /// that goes over is killed by the kernel's OOM killer; the session goes on.
    #[schema(minimum = 16, maximum = 16777216)]
    pub memory_max_mb: Option<u64>,
    /// The most processes and threads the session may have at once (at least 8: the CLI itself
    /// needs several). A fork past it fails.
    #[schema(minimum = 8, maximum = 4194304)]
    pub pids_max: Option<u64>,
    /// The session's share of the CPU against others, as cgroup v2's `cpu.weight`: 1-10000,
    /// 100 being an ordinary process's.
    #[schema(minimum = 1, maximum = 10000)]
    pub cpu_weight: Option<u64>,
}

impl SessionLimits {
    /// No limit at all.
    pub fn is_empty(&self) -> bool {
        *self == SessionLimits::default()
    }

    /// Each field in range; `field` names the request field for the error.
    pub fn check(&self, field: &str) -> Result<(), String> {
        if let Some(mb) = self.memory_max_mb {
            if !(MIN_MEMORY_MB..=MAX_MEMORY_MB).contains(&mb) {
                return Err(format!(
                    "`{field}.memory_max_mb` must be from {MIN_MEMORY_MB} to {MAX_MEMORY_MB} (MiB), got {mb}: less cannot even start a CLI"
                ));
            }
        }
        if let Some(n) = self.pids_max {
            if !(MIN_PIDS..=MAX_PIDS).contains(&n) {
                return Err(format!(
                    "`{field}.pids_max` must be from {MIN_PIDS} to {MAX_PIDS}, got {n}: the CLI itself needs several processes and threads (its sandbox, its runtime) before any tool runs"
                ));
            }
        }
        if let Some(w) = self.cpu_weight {
            if !CPU_WEIGHTS.contains(&w) {
                return Err(format!(
                    "`{field}.cpu_weight` must be from 1 to 10000 (cgroup v2's cpu.weight; 100 is an ordinary process's share), got {w}"
                ));
            }
        }
        Ok(())
    }

    /// These limits, each absent field taken from `lower` (the next level down).
    pub fn over(self, lower: SessionLimits) -> SessionLimits {
        SessionLimits {
            memory_max_mb: self.memory_max_mb.or(lower.memory_max_mb),
            pids_max: self.pids_max.or(lower.pids_max),
            cpu_weight: self.cpu_weight.or(lower.cpu_weight),
        }
    }

    /// The kinds of limit set.
    pub fn kinds(&self) -> Vec<LimitKind> {
        let mut kinds = Vec::new();
        if self.memory_max_mb.is_some() {
            kinds.push(LimitKind::Memory);
        }
        if self.pids_max.is_some() {
            kinds.push(LimitKind::Pids);
        }
        if self.cpu_weight.is_some() {
            kinds.push(LimitKind::Cpu);
        }
        kinds
    }

    /// The memory limit in bytes.
    pub fn memory_bytes(&self) -> Option<u64> {
        self.memory_max_mb.map(|mb| mb << 20)
    }
}

/// What a limit holds: the cgroup controller that applies it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum LimitKind {
    Memory,
    Pids,
    Cpu,
}

text_enum!(LimitKind, "limit kind", {
    Memory => "memory",
    Pids => "pids",
    Cpu => "cpu",
});

/// How limits are applied on this machine (found once at start).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Mechanism {
    /// The session's own cgroup v2 carries memory.max, pids.max and cpu.weight.
    CgroupV2,
    /// A hybrid host: a folder per session in the memory, pids and cpu v1 hierarchies.
    CgroupV1,
    /// No controller can be used: no limits, no readings.
    None,
}

/// Limits as a project stores them (a JSON object in one column): the text is kept as it was
/// written, so storing it again writes the same bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredLimits {
    limits: SessionLimits,
    stored: String,
}

impl StoredLimits {
    pub fn new(limits: SessionLimits) -> StoredLimits {
        let stored = serde_json::to_string(&limits).unwrap_or_else(|_| "{}".to_string());
        StoredLimits { limits, stored }
    }

    /// Text read back from the database. Text that is not such an object (written by a later
    /// build, or by hand) reads as no limits, with the text kept as it was.
    pub fn from_stored(stored: String) -> StoredLimits {
        let limits = serde_json::from_str(&stored).unwrap_or_default();
        StoredLimits { limits, stored }
    }

    pub fn as_str(&self) -> &str {
        &self.stored
    }

    pub fn limits(&self) -> SessionLimits {
        self.limits
    }
}

impl Serialize for StoredLimits {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.limits.serialize(serializer)
    }
}

/// What a session's processes use, read from its cgroup's files at most once a second; a
/// field the machine cannot tell is null.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, ToSchema)]
pub struct Resources {
    /// Memory in use now (bytes; page cache included, as the kernel charges it).
    pub memory_bytes: Option<u64>,
    /// The most memory used at once since the CLI started (bytes): the kernel's peak where it
    /// keeps one, else the most this service read.
    pub memory_peak_bytes: Option<u64>,
    /// CPU time used since the CLI started, in microseconds (user and system together).
    pub cpu_usec: Option<u64>,
    /// Processes and threads alive now.
    pub pids: Option<u64>,
    /// Processes the kernel's OOM killer ended for going over the memory limit.
    pub oom_kills: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::check_text_enum;

    #[test]
    fn each_field_falls_back_on_its_own() {
        let launch = SessionLimits { memory_max_mb: Some(64), ..Default::default() };
        let project = SessionLimits { memory_max_mb: Some(512), pids_max: Some(100), cpu_weight: None };
        let setting = SessionLimits { memory_max_mb: None, pids_max: Some(50), cpu_weight: Some(20) };
        assert_eq!(
            launch.over(project).over(setting),
            SessionLimits { memory_max_mb: Some(64), pids_max: Some(100), cpu_weight: Some(20) }
        );
        assert!(SessionLimits::default().over(SessionLimits::default()).is_empty());
    }

    #[test]
    fn out_of_range_limits_are_refused_with_the_field_and_why() {
        let bad = |l: SessionLimits| l.check("limits").unwrap_err();
        let e = bad(SessionLimits { memory_max_mb: Some(15), ..Default::default() });
        assert!(e.contains("limits.memory_max_mb") && e.contains("16"), "{e}");
        let e = bad(SessionLimits { pids_max: Some(7), ..Default::default() });
        assert!(e.contains("limits.pids_max") && e.contains("the CLI itself needs"), "{e}");
        for w in [0, 10_001] {
            let e = bad(SessionLimits { cpu_weight: Some(w), ..Default::default() });
            assert!(e.contains("cpu_weight") && e.contains("1 to 10000"), "{e}");
        }
        let fine = SessionLimits { memory_max_mb: Some(16), pids_max: Some(8), cpu_weight: Some(10_000) };
        assert_eq!(fine.check("limits"), Ok(()));
        assert_eq!(fine.memory_bytes(), Some(16 << 20));
    }

    #[test]
    fn stored_limits_read_back_and_tolerate_bad_text() {
        let limits = SessionLimits { memory_max_mb: Some(64), pids_max: None, cpu_weight: Some(5) };
        let stored = StoredLimits::new(limits);
        assert_eq!(StoredLimits::from_stored(stored.as_str().to_string()).limits(), limits);
        assert!(StoredLimits::from_stored("not json".to_string()).limits().is_empty());
    }

    #[test]
    fn limit_kinds_round_trip_as_text() {
        check_text_enum(LimitKind::ALL, &["memory", "pids", "cpu"]);
    }
}
