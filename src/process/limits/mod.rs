//! Kernel limits on each session's CLI, and the readings of what it uses: which cgroup
//! controllers this machine lets the service use, found once at start.
//!
//! - **cgroup v2**, where the memory, pids and cpu controllers reach this service's folder
//!   (`conduit-<database key>`, see [`super::cgroup`]): they are enabled in its
//!   `cgroup.subtree_control`, and each CLI's own cgroup carries `memory.max`, `pids.max`,
//!   `cpu.weight` and its readings.
//! - **cgroup v1**, on hybrid hosts whose cgroup2 mount has no controllers (v1 still holds
//!   memory, pids, cpu): a `conduit-<database key>` folder in each of those hierarchies, under
//!   this process's own path there, and in it a folder per CLI with `memory.limit_in_bytes`,
//!   `pids.max` and `cpu.shares` (`cpu.weight` × 1024 / 100). The CLI joins them as it starts
//!   (see [`ResourceGroups`]); they are removed when its tree ends, and by recovery and
//!   shutdown like the v2 cgroups.
//! - **none**: no limits can be applied; a launch that asks for one is refused, naming what is
//!   missing, and sessions have no readings.
//!
//! Every call here is blocking cgroupfs work: run it off the async executor.

mod files;
mod groups;
mod mounts;

use std::collections::HashSet;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use self::groups::ResourceGroups;
pub use crate::domain::resources::Mechanism;
use crate::domain::resources::{LimitKind, SessionLimits};

/// The service's folder in each v1 hierarchy it uses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct V1Folders {
    memory: Option<PathBuf>,
    pids: Option<PathBuf>,
    cpu: Option<PathBuf>,
    cpuacct: Option<PathBuf>,
}

/// Which limits this machine can apply, and where.
#[derive(Debug, Clone)]
pub struct Controllers {
    mechanism: Mechanism,
    kinds: Vec<LimitKind>,
    note: Option<String>,
    v1: V1Folders,
}

impl Controllers {
    /// Finds the controllers: on cgroup v2 in `v2_root` (this service's folder of CLI cgroups,
    /// when containment uses cgroup v2), else in the v1 hierarchies, where the folders named
    /// `conduit-<database_key>` are made.
    pub fn detect(database_key: &str, v2_root: Option<&Path>) -> Controllers {
        let mut why_not_v2 = "no cgroup2 folder holds this service's CLIs".to_string();
        if let Some(root) = v2_root {
            match enable_v2(root) {
                Ok(kinds) => {
                    let missing = missing_of(&kinds);
                    let note = (!missing.is_empty())
                        .then(|| format!("cgroup v2 does not delegate {} to {}", missing, root.display()));
                    return Controllers { mechanism: Mechanism::CgroupV2, kinds, note, v1: V1Folders::default() };
                }
                Err(why) => why_not_v2 = why,
            }
        }
        let name = format!("conduit-{database_key}");
        let v1 = V1Folders {
            memory: v1_folder("memory", &name, "memory.limit_in_bytes"),
            pids: v1_folder("pids", &name, "pids.max"),
            cpu: v1_folder("cpu", &name, "cpu.shares"),
            cpuacct: v1_folder("cpuacct", &name, "cpuacct.usage"),
        };
        let mut kinds = Vec::new();
        for (kind, folder) in [(LimitKind::Memory, &v1.memory), (LimitKind::Pids, &v1.pids), (LimitKind::Cpu, &v1.cpu)]
        {
            if folder.is_some() {
                kinds.push(kind);
            }
        }
        if kinds.is_empty() && v1.cpuacct.is_none() {
            return Controllers {
                mechanism: Mechanism::None,
                kinds,
                note: Some(format!("{why_not_v2}, and no cgroup v1 hierarchy of memory, pids or cpu is writable here")),
                v1,
            };
        }
        let missing = missing_of(&kinds);
        let note = Some(match missing.is_empty() {
            true => format!("a hybrid host: {why_not_v2}, so the cgroup v1 hierarchies are used"),
            false => format!("a hybrid host: {why_not_v2}; cgroup v1 has no writable {missing}"),
        });
        Controllers { mechanism: Mechanism::CgroupV1, kinds, note, v1 }
    }

    /// No limits (tests, and machines without cgroups).
    pub fn none(why: &str) -> Controllers {
        Controllers {
            mechanism: Mechanism::None,
            kinds: Vec::new(),
            note: Some(why.to_string()),
            v1: V1Folders::default(),
        }
    }

    pub fn mechanism(&self) -> Mechanism {
        self.mechanism
    }

    /// The limits it can apply.
    pub fn kinds(&self) -> &[LimitKind] {
        &self.kinds
    }

    pub fn note(&self) -> Option<&str> {
        self.note.as_deref()
    }

    /// The service's v1 folders (recorded in the lock file, for the next holder to clear).
    pub fn v1_roots(&self) -> Vec<PathBuf> {
        let v = &self.v1;
        let mut roots: Vec<PathBuf> = Vec::new();
        for dir in [&v.memory, &v.pids, &v.cpu, &v.cpuacct].into_iter().flatten() {
            if !roots.contains(dir) {
                roots.push(dir.clone());
            }
        }
        roots
    }

    /// Why `limits` cannot be applied here, if they cannot: the kinds missing, and why.
    pub fn refusal(&self, limits: &SessionLimits) -> Option<String> {
        let missing: Vec<&str> =
            limits.kinds().into_iter().filter(|k| !self.kinds.contains(k)).map(|k| k.as_str()).collect();
        if missing.is_empty() {
            return None;
        }
        let how = self.note.clone().unwrap_or_else(|| format!("the {:?} mechanism lacks them", self.mechanism));
        Some(format!(
            "this machine cannot apply the session's {} limit ({} controller missing: {how}); launch without it, or see `checks.session_limits` in GET /api/health",
            missing.join(" and "),
            missing.join(", ")
        ))
    }

    /// Makes (or reuses: a resumed session keeps its id) the resource cgroups of the CLI `id`
    /// and writes `limits` into them. `v2`: the CLI's own cgroup, where it has one. `None`
    /// when this machine has no controllers (and no limit was asked for).
    pub fn prepare(
        &self,
        id: &str,
        v2: Option<&Path>,
        limits: &SessionLimits,
    ) -> Result<Option<ResourceGroups>, String> {
        if let Some(why) = self.refusal(limits) {
            return Err(why);
        }
        let groups = match self.mechanism {
            Mechanism::None => return Ok(None),
            Mechanism::CgroupV2 => match v2 {
                Some(dir) => {
                    ResourceGroups { v2: Some(dir.to_path_buf()), memory: None, pids: None, cpu: None, cpuacct: None }
                }
                None if limits.is_empty() => return Ok(None),
                None => return Err("the CLI has no cgroup of its own to limit".to_string()),
            },
            Mechanism::CgroupV1 => {
                self.v1_groups(id, true).map_err(|e| format!("cannot make the CLI's cgroups: {e}"))?
            }
        };
        if let Err(e) = groups.apply(limits) {
            let _ = groups.remove(Duration::from_secs(1));
            return Err(e);
        }
        Ok(Some(groups))
    }

    /// The resource cgroups of a CLI that runs already (reattached after a restart), without
    /// making anything.
    pub fn existing(&self, id: &str, v2: Option<&Path>) -> Option<ResourceGroups> {
        match self.mechanism {
            Mechanism::None => None,
            Mechanism::CgroupV2 => v2.map(|dir| ResourceGroups {
                v2: Some(dir.to_path_buf()),
                memory: None,
                pids: None,
                cpu: None,
                cpuacct: None,
            }),
            Mechanism::CgroupV1 => self.v1_groups(id, false).ok().filter(|g| !g.v1_folders().is_empty()),
        }
    }

    fn v1_groups(&self, id: &str, create: bool) -> std::io::Result<ResourceGroups> {
        if id.is_empty() || id.contains('/') || id.starts_with('.') {
            return Err(std::io::Error::new(ErrorKind::InvalidInput, format!("not a cgroup name: {id:?}")));
        }
        let mut made: Vec<PathBuf> = Vec::new();
        let mut folder = |root: &Option<PathBuf>| -> std::io::Result<Option<PathBuf>> {
            let Some(root) = root else { return Ok(None) };
            let dir = root.join(id);
            if made.contains(&dir) {
                return Ok(Some(dir));
            }
            if !create {
                return Ok(dir.is_dir().then_some(dir));
            }
            match std::fs::create_dir(&dir) {
                Ok(()) => made.push(dir.clone()),
                Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
                Err(e) => {
                    for dir in &made {
                        let _ = std::fs::remove_dir(dir);
                    }
                    return Err(e);
                }
            }
            Ok(Some(dir))
        };
        let v = &self.v1;
        Ok(ResourceGroups {
            v2: None,
            memory: folder(&v.memory)?,
            pids: folder(&v.pids)?,
            cpu: folder(&v.cpu)?,
            cpuacct: folder(&v.cpuacct)?,
        })
    }

    /// Removes the v1 folders of every CLI but those in `kept` (sessions left to their
    /// keepers), and this service's folders themselves when nothing is kept and `keep` is
    /// false. Returns how many folders could not be removed.
    pub fn clear_except(&self, kept: &HashSet<String>, keep: bool) -> usize {
        clear_v1(&self.v1_roots(), kept, keep)
    }
}

/// Removes every CLI folder in these v1 folders (a previous holder's, or this service's) but
/// those named in `kept`, then the folders themselves unless `keep` or something is kept.
pub fn clear_v1(roots: &[PathBuf], kept: &HashSet<String>, keep: bool) -> usize {
    let mut failed = 0;
    for root in roots {
        let Ok(entries) = std::fs::read_dir(root) else { continue };
        for entry in entries.flatten().filter(|e| e.path().is_dir()) {
            let name = entry.file_name().to_string_lossy().into_owned();
            if kept.contains(&name) {
                continue;
            }
            if let Err(e) = groups::remove_folder(&entry.path(), Duration::from_secs(2)) {
                tracing::warn!(cgroup = %entry.path().display(), error = %e, "cannot remove a leftover v1 cgroup");
                failed += 1;
            }
        }
        if !keep && kept.is_empty() {
            let _ = std::fs::remove_dir(root);
        }
    }
    failed
}

/// "memory, pids and cpu" of what `kinds` lacks ("" when nothing).
fn missing_of(kinds: &[LimitKind]) -> String {
    let missing: Vec<&str> = LimitKind::ALL.iter().filter(|k| !kinds.contains(k)).map(|k| k.as_str()).collect();
    missing.join(", ")
}

/// Enables memory, pids and cpu in the v2 folder's `cgroup.subtree_control` (asking its parent
/// for them first when it lacks them: that fails where the parent holds processes itself, the
/// rule of no internal processes). The kinds now enabled, or why none is.
fn enable_v2(root: &Path) -> Result<Vec<LimitKind>, String> {
    let listed = |dir: &Path| files::read(dir, "cgroup.controllers").unwrap_or_default();
    let available = listed(root);
    if let Some(parent) = root.parent() {
        let offered = listed(parent);
        for kind in LimitKind::ALL {
            let name = kind.as_str();
            if !has_word(&available, name) && has_word(&offered, name) {
                let _ = std::fs::write(parent.join("cgroup.subtree_control"), format!("+{name}"));
            }
        }
    }
    let available = listed(root);
    for kind in LimitKind::ALL {
        if has_word(&available, kind.as_str()) {
            let _ = std::fs::write(root.join("cgroup.subtree_control"), format!("+{}", kind.as_str()));
        }
    }
    let enabled = files::read(root, "cgroup.subtree_control").unwrap_or_default();
    let kinds: Vec<LimitKind> = LimitKind::ALL.iter().copied().filter(|k| has_word(&enabled, k.as_str())).collect();
    if kinds.is_empty() {
        let shown = if available.trim().is_empty() { "none".to_string() } else { available.trim().to_string() };
        return Err(format!(
            "the cgroup2 folder {} offers none of memory, pids and cpu (its cgroup.controllers: {shown})",
            root.display()
        ));
    }
    Ok(kinds)
}

fn has_word(text: &str, word: &str) -> bool {
    text.split_whitespace().any(|w| w == word)
}

/// This service's folder `name` in the v1 hierarchy of `controller`, made if needed; `None`
/// when the hierarchy is not mounted, not writable, or lacks `probe` (the controller's file).
fn v1_folder(controller: &str, name: &str, probe: &str) -> Option<PathBuf> {
    let own = mounts::own_v1_folder(controller)?;
    let dir = own.join(name);
    match std::fs::create_dir(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
        Err(e) => {
            tracing::debug!(%controller, dir = %dir.display(), error = %e, "cgroup v1 hierarchy not writable");
            return None;
        }
    }
    if dir.join(probe).exists() {
        Some(dir)
    } else {
        let _ = std::fs::remove_dir(&dir);
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_names_what_is_missing_and_why() {
        let none = Controllers::none("no cgroups here");
        let limits = SessionLimits { memory_max_mb: Some(64), pids_max: Some(10), cpu_weight: None };
        let why = none.refusal(&limits).expect("refused");
        assert!(why.contains("memory and pids") && why.contains("no cgroups here"), "{why}");
        assert_eq!(none.refusal(&SessionLimits::default()), None);
        assert_eq!(none.prepare("s", None, &SessionLimits::default()), Ok(None));
        assert!(none.prepare("s", None, &limits).is_err());
    }

    #[test]
    fn v1_folders_are_made_per_cli_and_cleared() {
        let dir = tempfile::tempdir().expect("dir");
        let root = |name: &str| {
            let path = dir.path().join(name);
            std::fs::create_dir_all(&path).expect("dir");
            Some(path)
        };
        let controllers = Controllers {
            mechanism: Mechanism::CgroupV1,
            kinds: vec![LimitKind::Memory, LimitKind::Pids, LimitKind::Cpu],
            note: None,
            v1: V1Folders { memory: root("memory"), pids: root("pids"), cpu: root("cpu"), cpuacct: root("cpu") },
        };
        let limits = SessionLimits { memory_max_mb: Some(32), pids_max: None, cpu_weight: None };
        let groups = controllers.prepare("s1", None, &limits).expect("made").expect("groups");
        assert!(dir.path().join("memory/s1/memory.limit_in_bytes").is_file());
        assert_eq!(controllers.existing("s1", None), Some(groups.clone()));
        assert_eq!(controllers.existing("s2", None), None, "nothing made for it");
        assert!(controllers.prepare("../x", None, &limits).is_err());
        assert_eq!(controllers.v1_roots().len(), 3);
    }
}
