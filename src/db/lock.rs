//! One service per database: an exclusive `flock` on a file beside the SQLite database.
//!
//! Two services on one database would each run restart recovery (ending the other's CLIs and
//! marking its sessions `error`) and each fire every scheduled agent. So the lock is taken
//! before migrations and recovery, and a second instance refuses at once, touching nothing,
//! with the holder's pid in its message. The kernel releases the lock when the holder's process
//! ends however it ends (kill -9 included), so a crash never leaves a stale lock behind.
//!
//! The file also records what the holder contains its CLIs in (its cgroup folder): after a
//! crash, the next holder reads it back to find every leftover process tree, even one in a
//! cgroup it would not have chosen itself.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// What the holder writes into the lock file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Holder {
    pub pid: u32,
    pub started_at: String,
    /// The cgroup folder under which the holder puts each CLI's cgroup, if it uses cgroups.
    #[serde(default)]
    pub cgroup: Option<PathBuf>,
    /// Its folders in the cgroup v1 hierarchies that limit its CLIs (hybrid hosts), if any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub controllers: Vec<PathBuf>,
}

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("another Conduit (pid {pid}, started {started_at}) is already using the database {db}; stop it first, or give this one its own CONDUIT_DB_PATH")]
    Held { db: String, pid: u32, started_at: String },
    #[error("another process holds the lock file {0} of this database (it wrote nothing readable); stop it first, or give this service its own CONDUIT_DB_PATH")]
    HeldUnknown(String),
    #[error("cannot lock the database: {path}: {source}")]
    Io { path: String, source: std::io::Error },
}

/// Held for as long as the service runs; dropping it (or the process ending) releases it.
#[derive(Debug)]
pub struct InstanceLock {
    file: File,
    path: PathBuf,
    /// What the previous holder recorded, if it left anything (it crashed, or stopped).
    previous: Option<Holder>,
}

/// The lock file of a database: `<database>.lock`.
pub fn lock_path(db_path: &Path) -> PathBuf {
    let mut name = db_path.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

impl InstanceLock {
    /// Takes the lock of `db_path`'s database without waiting. Creates the folder and the
    /// lock file if needed. Blocking (file system calls): call it off the async executor.
    pub fn acquire(db_path: &Path) -> Result<InstanceLock, LockError> {
        let path = lock_path(db_path);
        let io = |source| LockError::Io { path: path.display().to_string(), source };
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(io)?;
        }
        let mut file =
            OpenOptions::new().read(true).write(true).create(true).truncate(false).open(&path).map_err(io)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(match read_holder(&mut file) {
                    Some(h) => {
                        LockError::Held { db: db_path.display().to_string(), pid: h.pid, started_at: h.started_at }
                    }
                    None => LockError::HeldUnknown(path.display().to_string()),
                })
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(io(e)),
        }
        let previous = read_holder(&mut file);
        Ok(InstanceLock { file, path, previous })
    }

    /// What the previous holder wrote (its pid, its cgroup folder), if anything.
    pub fn previous(&self) -> Option<&Holder> {
        self.previous.as_ref()
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Records this process as the holder (replacing what the previous one wrote).
    pub fn record(&mut self, holder: &Holder) -> Result<(), LockError> {
        let io = |source| LockError::Io { path: self.path.display().to_string(), source };
        let text = serde_json::to_string(holder).unwrap_or_default();
        self.file.set_len(0).map_err(io)?;
        self.file.seek(SeekFrom::Start(0)).map_err(io)?;
        self.file.write_all(text.as_bytes()).map_err(io)?;
        self.file.write_all(b"\n").map_err(io)?;
        self.file.sync_data().map_err(io)
    }
}

/// What the last holder of `db_path`'s lock wrote, read without taking the lock (a supervisor
/// or a test ending what a killed service left behind).
pub fn recorded_holder(db_path: &Path) -> Option<Holder> {
    read_holder(&mut File::open(lock_path(db_path)).ok()?)
}

fn read_holder(file: &mut File) -> Option<Holder> {
    let mut text = String::new();
    file.seek(SeekFrom::Start(0)).ok()?;
    // The file is ours and tiny; a huge one is not a holder record.
    file.take(64 * 1024).read_to_string(&mut text).ok()?;
    serde_json::from_str(text.trim()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_on_the_same_database_is_refused_with_the_holder() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("data").join("conduit.db");
        let mut first = InstanceLock::acquire(&db).expect("first lock");
        assert_eq!(first.previous(), None);
        let me =
            Holder { pid: 4242, started_at: "2026-11-22T00:00:00.000Z".into(), cgroup: None, controllers: Vec::new() };
        first.record(&me).expect("record");
        match InstanceLock::acquire(&db) {
            Err(LockError::Held { pid, .. }) => assert_eq!(pid, 4242),
            other => panic!("expected Held, got {other:?}"),
        }
        // Another database is independent.
        InstanceLock::acquire(&dir.path().join("other.db")).expect("another database");
        drop(first);
        let again = InstanceLock::acquire(&db).expect("free once dropped");
        assert_eq!(again.previous(), Some(&me), "the previous holder's record is read back");
    }

    #[test]
    fn an_unreadable_record_still_refuses() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("conduit.db");
        let _first = InstanceLock::acquire(&db).expect("first");
        assert!(matches!(InstanceLock::acquire(&db), Err(LockError::HeldUnknown(_))));
    }
}
